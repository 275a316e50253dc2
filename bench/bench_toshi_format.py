"""Speed of the Toshi (JPOG) format layer on a large generated model.

    .venv/bin/python bench/bench_toshi_format.py [TRIANGLES]

Prints TMD parse and write throughput (best of 3) and the to_scene / from_scene times.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import demo_creature  # noqa: E402  (loads the add-on package)
from retro_models.formats.toshi import convert, tkl, tmd, tml  # noqa: E402


def best_of(runs: int, work) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    triangles = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    start = time.perf_counter()
    files = demo_creature.large_model(triangles=triangles)
    print(
        f"generated {triangles} triangles in {time.perf_counter() - start:.2f} s: "
        + ", ".join(f"{name} {len(data) / 1e6:.2f} MB" for name, data in files.items())
    )
    data = files["large.tmd"]
    megabytes = len(data) / 1e6
    parse, model = best_of(3, lambda: tmd.read(data))
    write, _ = best_of(3, lambda: tmd.write(model))
    print(f"TMD parse: {megabytes / parse:8.1f} MB/s ({parse * 1000:.1f} ms)")
    print(f"TMD write: {megabytes / write:8.1f} MB/s ({write * 1000:.1f} ms)")
    library, materials = tkl.read(files["large.tkl"]), tml.read(files["large.tml"])
    seconds, scene = best_of(1, lambda: convert.to_scene(model, library, materials))
    print(f"to_scene:   {seconds:.3f} s")
    seconds, _ = best_of(1, lambda: convert.from_scene(scene, tkl=library))
    print(f"from_scene: {seconds:.3f} s (unchanged scene: imported pieces reused)")
    for mesh in scene.meshes:
        mesh.extras.clear()  # force the from-scratch path: stripify, palettes, splitting
    seconds, _ = best_of(1, lambda: convert.from_scene(scene, tkl=library))
    print(f"from_scene: {seconds:.3f} s (meshes rebuilt from scratch)")


if __name__ == "__main__":
    main()
