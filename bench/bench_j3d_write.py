"""Speed of the J3D model writer (``model_write.replace_shapes``) and the stripper's index counts.

    .venv/bin/python bench/bench_j3d_write.py [--runs N] [--rings N] [--columns N]

- The largest corpus model (../shared/corpus, archives included) with every shape re-encoded
  from its own import (nothing new to append), then with every vertex moved (every position
  new), best of ``--runs``.
- The generated tube of ``bench_j3d_model.py`` (by default 80 × 400: 63,200 triangles, 100
  joints, 80 envelopes, 32,000 positions: moving them all needs 64,000 entries, within the u16
  indices' 65,536) re-encoded whole.
- Vertices sent by the stripper over every corpus shape, against the original files' display
  lists and against plain triangle lists (the same shapes, whole: the writer strips per packet).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tools"))

import addon_package  # noqa: E402

addon_package.load()

import numpy as np  # noqa: E402
from retro_models.formats import archives  # noqa: E402
from retro_models.formats.j3d import model, model_convert, model_geometry, model_write, strips  # noqa: E402

CORPUS = HERE.parent.parent / "shared" / "corpus"


def corpus_models() -> dict[str, bytes]:
    out = {}
    for path in sorted([*CORPUS.glob("j3d*/*.bmd"), *CORPUS.glob("j3d*/*.bdl"), *CORPUS.glob("j3d*/*.arc")]):
        if path.suffix != ".arc":
            out[path.name] = path.read_bytes()
            continue
        for member in archives.read_archive(path.read_bytes(), path.name).members():
            if member.data[:4] == b"J3D2":
                out[f"{path.name}/{member.path}"] = member.data
    return out


def best(runs: int, work) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return min(times), result


def every_shape(m: model.Model, nudge: float = 0.0) -> dict[int, model_write.ShapeData]:
    shapes = {}
    for s, mesh in enumerate(model_convert.to_scene(m).meshes):
        data = model_write.shape_data(mesh)
        data.positions = data.positions + nudge
        shapes[s] = data
    return shapes


def rewrite(name: str, data: bytes, runs: int) -> None:
    m = model.read(data, name)
    triangles = sum(
        len(g.triangles) for g in map(lambda s: model_geometry.decode_shape(m, s), range(len(m.shp1.remap)))
    )
    for label, nudge in (("as imported", 0.0), ("every vertex moved", 0.125)):
        shapes = every_shape(m, nudge)
        seconds, out = best(runs, lambda shapes=shapes: model.write(model_write.replace_shapes(m, shapes)))
        print(
            f"  {name} ({len(shapes)} shapes, {triangles} triangles), {label}: {seconds:.3f} s, "
            f"{len(data)} → {len(out)} bytes"
        )


def strip_counts(models: dict[str, bytes]) -> None:
    original = stripped = listed = 0
    seconds = 0.0
    for data in models.values():
        m = model.read(data)
        for s in range(len(m.shp1.remap)):
            g = model_geometry.decode_shape(m, s)
            columns = np.stack([g.draw] + [g.indices[a] for a in sorted(g.indices)], axis=1)
            _, vertex = np.unique(columns, axis=0, return_inverse=True)
            triangles = vertex.reshape(-1)[g.triangles]
            start = time.perf_counter()
            primitives = strips.strip(triangles)
            seconds += time.perf_counter() - start
            original += len(g.draw)
            stripped += sum(len(v) for _, v in primitives)
            listed += triangles.size
    print(
        f"stripper over {len(models)} corpus models: {stripped} vertices sent; original files {original} "
        f"({stripped / original:.3f}×); triangle lists {listed} ({stripped / listed:.3f}×); {seconds:.2f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rings", type=int, default=80)
    parser.add_argument("--columns", type=int, default=400)
    args = parser.parse_args()
    models = corpus_models()
    if models:
        name = max(models, key=lambda n: len(models[n]))
        print("replace_shapes, every shape edited (best of runs):")
        rewrite(name, models[name], args.runs)
        strip_counts(models)
    sys.path.insert(0, str(HERE))
    from bench_j3d_model import tube  # noqa: E402  (imports bpy: after the corpus part)

    generated = model.read(model.write(tube(args.rings, args.columns, 100)))
    rewrite("tube", model.write(generated), 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
