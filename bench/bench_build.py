"""How fast ``build_scene`` turns a large Scene into Blender data, against the bare bulk-API floor.

Builds a synthetic Scene (a 500k-triangle skinned mesh with per-vertex
normals, 60 bones, 10 animations × 60 bones × 100 quaternion and location
keys) and prints the build time per stage, then the time Blender's bulk
calls alone take for the same arrays (no bookkeeping, no conversions;
for weights, which have no bulk setter, the same vertex-group calls with
the grouping done beforehand).

    .venv/bin/python bench/bench_build.py [--float-weights]

``--float-weights`` uses unquantised weights (one vertex-group call per
distinct weight; file formats usually store 8- or 16-bit weights).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="retro_models_bench_"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import addon_package  # noqa: E402
import bpy  # noqa: E402
import numpy as np  # noqa: E402

addon_package.load()
from retro_models.formats import scene as sc  # noqa: E402
from retro_models.operators.blender import build, compat, mesh  # noqa: E402

BONES, ANIMATIONS, KEYS = 60, 10, 100
GRID = 501  # 500 × 500 quads = 500,000 triangles, 251,001 vertices


def synthetic_scene(float_weights: bool) -> sc.Scene:
    rng = np.random.default_rng(0)
    parents = np.arange(-1, BONES - 1, dtype=np.int32)
    local = sc.compose(np.tile([0.0, 0.1, 0.0], (BONES, 1)), np.tile([1.0, 0, 0, 0], (BONES, 1)))
    rest = np.cumsum(local[:, :3, 3], axis=0)
    rest_matrices = np.tile(np.eye(4), (BONES, 1, 1))
    rest_matrices[:, :3, 3] = rest
    skeleton = sc.Skeleton("Rig", [f"bone{i}" for i in range(BONES)], parents, rest_matrices)

    x, y = np.meshgrid(np.linspace(0, 1, GRID), np.linspace(0, BONES * 0.1, GRID))
    positions = np.stack([x.ravel(), y.ravel(), np.zeros(x.size)], 1).astype(np.float32)
    cells = (np.arange(GRID - 1)[:, None] * GRID + np.arange(GRID - 1)[None, :]).ravel()
    quads = np.stack([cells, cells + 1, cells + GRID + 1, cells + GRID], 1)
    triangles = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]]).astype(np.int32)
    v = len(positions)
    normals = np.tile(np.float32([0, 0, 1]), (v, 1))
    joints = rng.integers(0, BONES, (v, 4)).astype(np.int32)
    weights = rng.uniform(0.1, 1, (v, 4))
    weights /= weights.sum(axis=1, keepdims=True)
    if not float_weights:
        weights = np.round(weights * 255) / 255
    mesh = sc.Mesh(
        "Grid",
        positions,
        triangles,
        normals=sc.Layer("normal", normals),
        skeleton=0,
        uv_layers=[sc.Layer("UVMap", positions[:, :2].copy())],
        skin_joints=joints,
        skin_weights=weights.astype(np.float32),
    )
    times = np.arange(KEYS, dtype=np.float64)
    animations = []
    for a in range(ANIMATIONS):
        channels = []
        for bone in skeleton.bone_names:
            q = rng.normal(size=(KEYS, 4))
            q /= np.linalg.norm(q, axis=1, keepdims=True)
            channels.append(sc.Channel("bone", bone, "rotation_quaternion", times, q))
            channels.append(sc.Channel("bone", bone, "location", times, rng.normal(size=(KEYS, 3))))
        animations.append(sc.Animation(f"anim{a}", channels, skeleton=0))
    return sc.Scene("bench", [skeleton], [mesh], animations=animations)


def timed(stages, name, function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            stages[name] += time.perf_counter() - start

    return wrapper


def build_breakdown(scene: sc.Scene) -> dict[str, float]:
    stages: dict[str, float] = defaultdict(float)
    stage_of = {  # (module, function) the builder calls -> stage
        (mesh, "add_vertex_groups"): "weights",
        (mesh, "set_normals"): "normals",
        (build, "build_mesh"): "mesh (all)",
        (build, "build_animation"): "actions",
    }
    originals = {(module, name): getattr(module, name) for module, name in stage_of}
    for (module, name), function in originals.items():
        setattr(module, name, timed(stages, stage_of[module, name], function))
    try:
        start = time.perf_counter()
        build.build_scene(scene, bpy.context, set_frame_rate=False)
        stages["total"] = time.perf_counter() - start
    finally:
        for (module, name), function in originals.items():
            setattr(module, name, function)
    stages["mesh"] = stages.pop("mesh (all)") - stages["weights"] - stages["normals"]
    return stages


def floor(scene: sc.Scene) -> dict[str, float]:
    """Blender's bulk calls alone for the same arrays."""
    mesh = scene.meshes[0]
    stages = {}
    start = time.perf_counter()
    data = bpy.data.meshes.new("floor")
    corners = mesh.triangles.ravel()
    data.vertices.add(len(mesh.positions))
    data.loops.add(len(corners))
    data.polygons.add(len(mesh.triangles))
    data.attributes["position"].data.foreach_set("vector", mesh.positions.ravel())
    data.attributes[".corner_vert"].data.foreach_set("value", corners)
    data.polygons.foreach_set("loop_start", np.arange(0, len(corners), 3, dtype=np.int32))
    data.update(calc_edges=True)
    data.uv_layers.new(name="UVMap").data.foreach_set("uv", mesh.uv_layers[0].data[corners].ravel())
    stages["mesh"] = time.perf_counter() - start
    start = time.perf_counter()
    data.normals_split_custom_set_from_vertices(mesh.normals.data)
    stages["normals"] = time.perf_counter() - start
    # Weights: the same vertex-group calls, with the grouping done before the clock starts.
    obj = bpy.data.objects.new("floor", data)
    vertex = np.repeat(np.arange(len(mesh.positions)), mesh.skin_joints.shape[1])
    key = (mesh.skin_joints.ravel().astype(np.int64) << 32) | mesh.skin_weights.ravel().view(np.uint32)
    order = np.argsort(key, kind="stable")
    key, vertex = key[order], vertex[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    sorted_weights = mesh.skin_weights.ravel()[order]
    calls = [
        (bone, weight, vertex[s:e].tolist())
        for s, e, bone, weight in zip(
            starts,
            np.r_[starts[1:], len(key)],
            (key[starts] >> 32).tolist(),
            sorted_weights[starts].tolist(),
            strict=True,
        )
    ]
    start = time.perf_counter()
    groups = [obj.vertex_groups.new(name=f"bone{i}") for i in range(BONES)]
    for bone, weight, vertices in calls:
        groups[bone].add(vertices, weight, "REPLACE")
    stages["weights"] = time.perf_counter() - start
    start = time.perf_counter()
    action = bpy.data.actions.new("floor")
    fcurve_keys = sum(c.values.shape[1] for a in scene.animations for c in a.channels)
    co = np.zeros((KEYS, 2), np.float32)
    co[:, 0] = np.arange(KEYS)
    interpolation = np.ones(KEYS, np.int32)
    if compat.SLOTTED_ACTIONS:
        slot = action.slots.new(id_type="OBJECT", name="floor")
        bag = action.layers.new("Layer").strips.new(type="KEYFRAME").channelbag(slot, ensure=True)
        curves = bag.fcurves
    else:
        curves = action.fcurves
    for i in range(fcurve_keys):
        fcurve = curves.new(f'pose.bones["b{i // 7}"].x', index=i % 7)
        fcurve.keyframe_points.add(KEYS)
        fcurve.keyframe_points.foreach_set("co", co.ravel())
        fcurve.keyframe_points.foreach_set("interpolation", interpolation)
        fcurve.update()
    stages["actions"] = time.perf_counter() - start
    return stages


def main():
    float_weights = "--float-weights" in sys.argv
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = synthetic_scene(float_weights)
    mesh = scene.meshes[0]
    print(
        f"bpy {bpy.app.version_string}: {len(mesh.triangles):,} triangles, {len(mesh.positions):,} vertices, "
        f"{BONES} bones, {ANIMATIONS} animations × {BONES} bones × {KEYS} keys, "
        f"{'float' if float_weights else '8-bit'} weights"
    )
    base = floor(scene)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    stages = build_breakdown(scene)
    for name in ("mesh", "normals", "weights", "actions"):
        print(f"  {name:8} build {stages[name]:6.2f} s   floor {base[name]:6.2f} s")
    print(f"  total    build {stages['total']:6.2f} s")


if __name__ == "__main__":
    main()
