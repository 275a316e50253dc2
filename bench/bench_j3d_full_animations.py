"""Speed of the full-frame J3D animations on a large generated BCA.

    .venv/bin/python bench/bench_j3d_full_animations.py [--joints N] [--frames N] [--runs N]

Generates a BCA (by default 40 joints × 500 frames, every rotation and translation a value per
frame: 60,001 rotation entries, near a bank's 65,535) and times, best of ``--runs`` (default 3):
read + to_scene, from_scene + write (byte-identical), one edited track written again (one
table entry changes, the bank grows by that track), and in Blender (an armature of the joints):
the apply (``import_scene.j3d_animation``) and the export, which must give the same bytes.
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
sys.path.insert(0, str(HERE.parent / "tests" / "blender"))

import addon_package  # noqa: E402
import numpy as np  # noqa: E402

addon_package.load()
from retro_models.formats.j3d import bca, convert  # noqa: E402
from retro_models.formats.j3d.bca import FULL_DTYPE  # noqa: E402


def generated(joints: int, frames: int) -> bytes:
    rng = np.random.default_rng(0)
    tracks = np.zeros((joints, 3, 3), FULL_DTYPE)
    tracks["count"] = 1  # scale: bank index 0 (1.0) for every joint
    per_track = np.arange(joints * 3).reshape(joints, 3) * frames + 1
    tracks["count"][..., 1:] = frames
    tracks["first"][..., 1] = per_track
    tracks["first"][..., 2] = per_track
    rotations = np.cumsum(rng.integers(-300, 300, (joints * 3, frames)), axis=1).astype(np.int16)
    translations = rng.normal(size=(joints * 3, frames)).astype(np.float32)
    model = bca.BCA(
        2,
        frames,
        tracks,
        np.ones(1, np.float32),
        np.concatenate([[0], rotations.ravel()]).astype(np.int16),
        np.concatenate([[0.0], translations.ravel()]).astype(np.float32),
    )
    return bca.write(model)


def best(action, runs: int) -> tuple[float, object]:
    results = []
    for _ in range(runs):
        start = time.perf_counter()
        value = action()
        results.append((time.perf_counter() - start, value))
    return min(results, key=lambda r: r[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--joints", type=int, default=40)
    parser.add_argument("--frames", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    data = generated(args.joints, args.frames)
    names = [f"joint{i}" for i in range(args.joints)]
    print(f"BCA: {args.joints} joints × {args.frames} frames, {len(data):,} bytes")

    seconds, scene = best(lambda: convert.to_scene(bca.read(data), names), args.runs)
    print(f"  read + to_scene      {seconds:.3f} s")
    seconds, out = best(lambda: bca.write(convert.from_scene(scene, joint_names=names)), args.runs)
    print(f"  from_scene + write   {seconds:.3f} s  identical: {out == data}")
    edited = next(
        c for c in scene.animations[0].channels if (c.target, c.path, c.index) == ("joint5", "location", 1)
    )
    edited.values = edited.values + 1.0
    edited.origin = None
    seconds, out = best(lambda: bca.write(convert.from_scene(scene, joint_names=names)), args.runs)
    before, after = bca.read(data), bca.read(out)
    grew = len(after.translation_bank) - len(before.translation_bank)
    changed = int((after.tracks != before.tracks).sum())
    print(f"  one edited track     {seconds:.3f} s  table entries changed: {changed}, bank grew by {grew}")

    import bpy
    import retro_models
    from j3d_support import make_armature

    retro_models.register()
    folder = Path(tempfile.mkdtemp(prefix="retro_models_bench_"))
    (folder / "big.bca").write_bytes(data)
    apply_seconds, export_seconds, same = [], [], True
    for _ in range(args.runs):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        make_armature(bpy.context, args.joints, rotated=False)
        start = time.perf_counter()
        bpy.ops.import_scene.j3d_animation(filepath=str(folder / "big.bca"))
        apply_seconds.append(time.perf_counter() - start)
        start = time.perf_counter()
        bpy.ops.export_scene.j3d_animation(filepath=str(folder / "out.bca"))
        export_seconds.append(time.perf_counter() - start)
        same = same and (folder / "out.bca").read_bytes() == data
    print(f"  Blender apply        {min(apply_seconds):.2f} s")
    print(f"  Blender export       {min(export_seconds):.2f} s  identical: {same}")


if __name__ == "__main__":
    main()
