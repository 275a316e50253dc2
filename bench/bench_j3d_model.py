"""Speed of the J3D model (BMD) import on a large generated model, and of every corpus model.

    .venv/bin/python bench/bench_j3d_model.py [--rings N] [--columns N] [--joints N] [--runs N] [--no-gltf]

Generates a skinned tube with ``formats/j3d/model_build.py`` (by default 163 rings × 400
columns = 129,600 triangles on 65,200 positions, near the 65,536 a display list's 16-bit index
reaches; 100 joints in a chain, every ring weighted between two joints: 163 envelopes, 4 materials
with their textures, packets of up to 10 draw matrices) and times, best of
``--runs`` (default 3): read (``model.read``), to_scene (``model_convert.to_scene``), build
(``build_scene`` into an empty Blender scene) and the whole ``import_file``; the floor (the same
arrays put into Blender with bulk calls alone, ``bench_toshi.floor``); Blender's glTF
importer on the same content (the imported scene exported once to GLB), and every model in
../shared/corpus/j3d-models and j3d (the aim: each under 2 s) with its to_scene, build and floor.
Times are the process's CPU seconds (``RETRO_BENCH_CLOCK=wall`` for wall time): on a shared
machine, wall time also counts other processes' work.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="retro_models_bench_"))
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tools"))

import addon_package  # noqa: E402

addon_package.load()

import bpy  # noqa: E402
import numpy as np  # noqa: E402
import retro_models  # noqa: E402
from retro_models.formats.j3d import model, model_build, model_convert  # noqa: E402
from retro_models.operators.blender.build import build_scene  # noqa: E402

CORPUS = HERE.parent.parent / "shared" / "corpus"
clock = time.perf_counter if os.environ.get("RETRO_BENCH_CLOCK") == "wall" else time.process_time


def tube(rings: int, columns: int, joints: int, materials: int = 4) -> model.Model:
    """A tube along X skinned to a chain of joints; each ring has its own two-joint envelope."""
    step = (rings - 1) / (joints - 1)
    chain = [model_build.Joint(f"joint{j}", j - 1, (step if j else 0.0, 0.0, 0.0)) for j in range(joints)]
    angle = 2 * np.pi * np.arange(columns) / columns
    ring, column = np.meshgrid(np.arange(rings), np.arange(columns), indexing="ij")
    radius = 10 + np.sin(ring / 7.0)
    positions = np.stack([ring, radius * np.cos(angle[column]), radius * np.sin(angle[column])], -1).reshape(
        -1, 3
    )
    normals = np.stack(
        [np.zeros_like(angle[column]), np.cos(angle[column]), np.sin(angle[column])], -1
    ).reshape(-1, 3)
    uvs = np.stack([column / columns, ring / rings], -1).reshape(-1, 2)
    where = np.arange(rings) / step
    first = np.minimum(np.floor(where).astype(int), joints - 2)
    weight = where - first
    envelopes = [([int(a), int(a) + 1], [float(1 - w), float(w)]) for a, w in zip(first, weight, strict=True)]
    world = np.tile(np.eye(4), (joints, 1, 1))
    world[:, 0, 3] = np.arange(joints) * step
    shapes = []
    per_material = columns // materials
    for m in range(materials):
        cols = np.arange(m * per_material, (m + 1) * per_material if m < materials - 1 else columns)
        packets = []
        for start in range(0, rings - 1, 9):
            rs = np.arange(start, min(start + 9, rings - 1))
            r, c = np.meshgrid(rs, cols, indexing="ij")
            c1 = (c + 1) % columns
            a, b, d, e = r * columns + c, r * columns + c1, (r + 1) * columns + c, (r + 1) * columns + c1
            triangles = np.stack([a, d, b, b, d, e], -1).reshape(-1, 3)  # clockwise seen from outside
            vertices = triangles.reshape(-1)
            slot = vertices // columns - start
            corners = np.stack([slot, vertices, vertices, vertices], -1)
            packets.append(model_build.Packet(list(range(start, start + len(rs) + 1)), corners))
        shapes.append(model_build.Shape(m, packets))
    images = [
        (f"tex{m}", ((np.indices((32, 32)).sum(0) // 4 % 2) * (60 + 60 * m)).astype(np.uint8))
        for m in range(materials)
    ]
    return model_build.build(
        chain, positions.astype(np.float32), normals.astype(np.float32), uvs.astype(np.float32), envelopes, [],
        shapes, [f"material{m}" for m in range(materials)], images, np.linalg.inv(world),
    )  # fmt: skip


def best(runs: int, work) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        start = clock()
        result = work()
        times.append(clock() - start)
    return min(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rings", type=int, default=163)
    parser.add_argument("--columns", type=int, default=400)
    parser.add_argument("--joints", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-gltf", action="store_true")
    args = parser.parse_args()
    retro_models.register()
    folder = Path(tempfile.mkdtemp(prefix="j3d_bench_"))
    path = folder / "tube.bmd"
    start = time.perf_counter()
    data = model.write(tube(args.rings, args.columns, args.joints))
    path.write_bytes(data)
    print(f"generated {path.name}: {len(data) / 1e6:.1f} MB in {time.perf_counter() - start:.1f} s")

    read_time, parsed = best(args.runs, lambda: model.read(data, str(path)))
    convert_time, scene = best(args.runs, lambda: model_convert.to_scene(parsed, "tube", str(path)))
    triangles = sum(len(m.triangles) for m in scene.meshes)
    build_time, _ = best(args.runs, lambda: build_scene(scene, bpy.context, collection_name="tube"))
    import_time, report = best(args.runs, lambda: retro_models.import_file(bpy.context, str(path)))
    print(
        f"{triangles} triangles, {sum(len(m.positions) for m in scene.meshes)} vertices, "
        f"{len(scene.skeletons[0])} joints, {len(parsed.evp1.counts)} envelopes, {len(scene.materials)} materials"
    )
    print(f"{'step':<12}{'seconds':>9}")
    for name, seconds in (
        ("read", read_time),
        ("to_scene", convert_time),
        ("build", build_time),
        ("import", import_time),
    ):
        print(f"{name:<12}{seconds:>9.3f}")
    glb = folder / "tube.glb"
    if not args.no_gltf:  # the imported scene, still in Blender after the last run
        bpy.ops.export_scene.gltf(filepath=str(glb), export_format="GLB", export_animations=False)
    from bench_toshi import armature_arrays, floor  # the same arrays through Blender's bulk calls alone

    def built_armature():  # of the import just made, before the floor empties the scene
        return armature_arrays(next(o for o in bpy.data.objects if o.type == "ARMATURE"))

    base = floor(scene, args.runs, built_armature())["floor"]
    print(f"{'floor':<12}{base:>9.3f}   import / floor = {import_time / base:.2f}")
    if not args.no_gltf:
        gltf_time, _ = best(min(args.runs, 2), lambda: bpy.ops.import_scene.gltf(filepath=str(glb)))
        print(f"{'glTF import':<12}{gltf_time:>9.3f}   import / glTF = {import_time / gltf_time:.2f}")
    print("corpus models (best of 2; import is the whole import_file):")
    print(f"  {'model':<28}{'to_scene':>9}{'build':>8}{'import':>8}{'floor':>8}  import / floor")
    for model_path in sorted([*CORPUS.glob("j3d*/*.bmd"), *CORPUS.glob("j3d*/*.bdl")]):
        parsed = model.read(model_path.read_bytes(), str(model_path))
        convert_time, scene = best(
            2, lambda m=parsed, p=model_path: model_convert.to_scene(m, p.stem, str(p))
        )
        build_time, _ = best(2, lambda s=scene: build_scene(s, bpy.context))
        seconds, _ = best(2, lambda p=model_path: retro_models.import_file(bpy.context, str(p)))
        base = floor(scene, 2, built_armature())["floor"]
        print(
            f"  {model_path.name:<28}{convert_time:>9.3f}{build_time:>8.3f}{seconds:>8.3f}{base:>8.3f}"
            f"  {seconds / base:5.2f}  {'ok' if seconds < 2 else 'SLOW (aim: < 2 s)'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
