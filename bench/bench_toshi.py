"""End-to-end speed of the Toshi (JPOG) importer and exporter on a large generated model.

    .venv/bin/python bench/bench_toshi.py [--triangles N] [--bones N] [--animations N] [--keys N]
                                          [--runs N] [--no-gltf] [--profile]

Generates a large TMD/TKL/TML with ``tools/demo_creature.large_model`` (by
default 500,000 triangles, 60 bones, 10 animations × 100 keys on every bone),
writes it to a temporary folder and times, best of ``--runs`` (default 3; the import and its floor
in turns, after one import not counted):

- import: read (tmd/tkl/tml ``read`` from the file bytes), to_scene
  (``convert.to_scene``) and build (``build_scene`` into an empty Blender scene,
  with its mesh, normals, weights, actions and armature parts timed);
- the floor: the same arrays put into Blender with the bulk calls alone
  (the armature, positions, corners, loop starts, custom normals, UVs, vertex groups with
  the grouping by (bone, weight) done before the clock, actions with their
  F-curves grouped by bone as the import makes them, ``keyframe_points.add`` +
  ``foreach_set``); every array is prepared before
  the clock, so this is Blender's own cost;
- Blender's bundled glTF importer on the same scene: the built scene is
  exported once to GLB (skins and every action; this alone takes ~25 s) and
  ``import_scene.gltf`` with its default options is timed in an empty scene
  (best of at most 2);
- export: ``extract_scene`` + ``convert.from_scene`` (appending to the
  imported keyframe library, as the export operator does by default) +
  tmd/tkl/tml ``write``, and whether the files written equal the files read.

It prints a table, the ratios import/floor, import/glTF and export/import,
and a verdict against the aims (``AIM_FLOOR``, ``AIM_GLTF``: issue 20). When the
import misses an aim, or with ``--profile``, it profiles ``build_scene``,
prints the hot spots.
"""

from __future__ import annotations

import argparse
import atexit
import cProfile
import io
import json
import os
import pstats
import resource
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="retro_models_bench_"))
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tools"))

import bpy  # noqa: E402
import demo_creature  # noqa: E402  (loads the add-on package as retro_models)
import numpy as np  # noqa: E402
from retro_models.formats.toshi import convert, tkl, tmd, tml  # noqa: E402
from retro_models.operators.blender import build, compat  # noqa: E402
from retro_models.operators.blender import extract as extract_module  # noqa: E402
from retro_models.operators.blender import mesh as mesh_module  # noqa: E402
from retro_models.operators.blender.extract import extract_scene  # noqa: E402

# Process CPU time (all its threads): on a shared machine, wall time also counts other processes' work.
# RETRO_BENCH_CLOCK=wall times the wall clock instead.
clock = time.perf_counter if os.environ.get("RETRO_BENCH_CLOCK") == "wall" else time.process_time
AIM_FLOOR, AIM_GLTF = 1.25, 0.25  # issue 20


def empty_scene() -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)


# -- import -------------------------------------------------------------------


_PARTS = {  # (module, function) the builder calls -> part of the breakdown
    (build, "build_mesh"): "mesh",
    (mesh_module, "set_normals"): "normals",
    (mesh_module, "add_vertex_groups"): "weights",
    (build, "build_animation"): "actions",
    (build, "build_armature"): "armature",
}


def timed_build(scene) -> tuple[object, dict[str, float]]:
    """build_scene with its main functions timed (mesh excludes normals and weights)."""
    parts: dict[str, float] = defaultdict(float)
    # Only the functions the modules still have: a missing part reads as 0.
    originals = {
        (module, name): getattr(module, name)
        for module, name in _PARTS
        if callable(getattr(module, name, None))
    }

    def timed(name, function):
        def wrapper(*args, **kwargs):
            start = clock()
            try:
                return function(*args, **kwargs)
            finally:
                parts[_PARTS[name]] += clock() - start

        return wrapper

    for (module, name), function in originals.items():
        setattr(module, name, timed((module, name), function))
    try:
        start = clock()
        result = build.build_scene(scene, bpy.context)
        parts["build"] = clock() - start
    finally:
        for (module, name), function in originals.items():
            setattr(module, name, function)
    parts["mesh"] -= parts["normals"] + parts["weights"]
    parts["other"] = parts["build"] - sum(parts[p] for p in _PARTS.values())
    return result, dict(parts)


def import_once(files: dict[str, Path]) -> dict[str, float]:
    data = {name: path.read_bytes() for name, path in files.items()}
    times = {}
    start = clock()
    model, library, materials = tmd.read(data["tmd"]), tkl.read(data["tkl"]), tml.read(data["tml"])
    times["read"] = clock() - start
    start = clock()
    scene = convert.to_scene(model, library, materials)
    times["to_scene"] = clock() - start
    empty_scene()
    result, parts = timed_build(scene)
    times.update(parts)
    times["import"] = times["read"] + times["to_scene"] + times["build"]
    return times, scene, result


def import_and_floor(files, runs):
    """Best of ``runs`` per stage of the import (and per part of build) and of its floor, the two in
    turns so that both meet the machine in the same state: CPU seconds of the same Blender call (custom
    normals, which run on threads) swing by up to 1.6× over a few minutes. A first import, not counted,
    gives the floor its arrays; the scene of the last import stays built in Blender."""
    imports: dict[str, float] = defaultdict(lambda: float("inf"))
    floors: dict[str, float] = defaultdict(lambda: float("inf"))
    _, scene, result = import_once(files)
    prepared = (*_prepare_floor(scene), armature_arrays(result.armatures[0]))
    for _ in range(runs):
        empty_scene()
        for name, seconds in _floor_once(*prepared).items():
            floors[name] = min(floors[name], seconds)
        times, scene, result = import_once(files)
        for name, seconds in times.items():
            imports[name] = min(imports[name], seconds)
    return dict(imports), dict(floors), scene, result


# -- export -------------------------------------------------------------------


def export_best(result, runs, files) -> dict[str, float]:
    """Best of ``runs`` per stage, and whether the files written equal the files imported.

    Like the export operator's default ("append"), new keys go into the model's
    existing keyframe library, read (untimed) from the imported TKL.
    """
    base = tkl.read(files["tkl"].read_bytes())
    stages: dict[str, float] = defaultdict(lambda: float("inf"))
    read_weights = extract_module.vertex_group_weights  # the name the extractor calls
    weights = [0.0]

    def timed_weights(*args, **kwargs):
        start = clock()
        try:
            return read_weights(*args, **kwargs)
        finally:
            weights[0] += clock() - start

    for _ in range(runs):
        weights[0] = 0.0
        extract_module.vertex_group_weights = timed_weights
        start = clock()
        try:
            extracted = extract_scene(bpy.context, result.armatures[0], result.objects)
        finally:
            extract_module.vertex_group_weights = read_weights
        extract = clock() - start
        stages["weights"] = min(stages["weights"], weights[0])
        start = clock()
        model, library, materials = convert.from_scene(extracted, tkl=base)
        from_scene = clock() - start
        start = clock()
        written = {"tmd": tmd.write(model), "tkl": tkl.write(library), "tml": tml.write(materials)}
        write = clock() - start
        for name, seconds in (("extract", extract), ("from_scene", from_scene), ("write", write)):
            stages[name] = min(stages[name], seconds)
        stages["export"] = min(stages["export"], extract + from_scene + write)
    same = {kind: written[kind] == path.read_bytes() for kind, path in files.items()}
    return dict(stages), same


# -- floor --------------------------------------------------------------------


def _weight_calls(joints: np.ndarray, weights: np.ndarray) -> list[tuple[int, float, list[int]]]:
    """(bone, weight, vertices) per distinct (bone, weight): the fewest vertex-group calls."""
    vertex = np.repeat(np.arange(len(joints)), joints.shape[1])
    joints, weights = joints.ravel().astype(np.int64), weights.ravel().astype(np.float32)
    used = weights > 0
    vertex, joints, weights = vertex[used], joints[used], weights[used]
    key = (joints << 32) | weights.view(np.uint32).astype(np.int64)
    order = np.argsort(key, kind="stable")
    key, vertex, weights = key[order], vertex[order], weights[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], len(key)]
    return [
        (int(key[s] >> 32), float(weights[s]), vertex[s:e].tolist())
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
    ]


def _prepare_floor(scene):
    meshes = []
    for mesh in scene.meshes:
        corners = np.ascontiguousarray(mesh.triangles, np.int32).ravel()
        uvs = None
        if mesh.uv_layers:  # the first UV map (J3D models may have none, or several)
            uv = mesh.uv_layers[0]
            uv_data = np.asarray(uv.data, np.float32)
            uvs = np.ascontiguousarray(uv_data[corners] if uv.domain == "POINT" else uv_data).ravel()
        meshes.append(
            {
                "name": mesh.name,
                "count": len(mesh.positions),
                "positions": np.ascontiguousarray(mesh.positions, np.float32).ravel(),
                "corners": corners,
                "loop_starts": np.arange(0, len(corners), 3, dtype=np.int32),
                "normals": None
                if mesh.normals is None
                else np.ascontiguousarray(mesh.normals.data, np.float32),
                "normals per vertex": mesh.normals is not None and mesh.normals.domain == "POINT",
                "uvs": uvs,
                "weights": []
                if mesh.skin_joints is None
                else _weight_calls(np.asarray(mesh.skin_joints), np.asarray(mesh.skin_weights)),
            }
        )
    actions = []
    for animation in scene.animations:
        curves = []
        for channel in animation.channels:
            values = np.asarray(channel.values, np.float32).reshape(len(channel.times), -1)
            path = f'pose.bones["{channel.target}"].{channel.path}'
            for c in range(values.shape[1]):
                co = np.empty((len(channel.times), 2), np.float32)
                co[:, 0] = channel.times
                co[:, 1] = values[:, c]
                curves.append((path, c, channel.target, co.ravel(), np.ones(len(channel.times), np.int32)))
        actions.append((animation.name, curves))
    return meshes, actions, list(scene.skeletons[0].bone_names)


def armature_arrays(obj) -> dict:
    """A built armature's bones as the floor makes them again: names, parent indices, rest matrices (as
    ``foreach_get`` gives them, the layout ``foreach_set`` takes) and tails (their lengths along Y), read
    before the clock."""
    bones = obj.data.bones
    names = [b.name for b in bones]
    index = {name: i for i, name in enumerate(names)}
    matrices = np.empty(len(bones) * 16, np.float32)
    bones.foreach_get("matrix_local", matrices)
    tails = np.zeros((len(bones), 3), np.float32)
    tails[:, 1] = [b.length for b in bones]
    parents = [index[b.parent.name] if b.parent else -1 for b in bones]
    return {"names": names, "parents": parents, "matrices": matrices, "tails": tails.ravel()}


def make_armature(arrays: dict) -> None:
    """The armature of ``armature_arrays`` with Blender's calls alone: edit bones made one by one (there is
    no bulk call), placed in bulk, parented one by one."""
    armature = bpy.data.armatures.new("floor")
    obj = bpy.data.objects.new("floor", armature)
    bpy.context.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = [armature.edit_bones.new(name) for name in arrays["names"]]
    armature.edit_bones.foreach_set("head", np.zeros(len(arrays["tails"]), np.float32))
    armature.edit_bones.foreach_set("tail", arrays["tails"])
    armature.edit_bones.foreach_set("matrix", arrays["matrices"])
    for bone, parent in zip(edit_bones, arrays["parents"], strict=True):
        if parent >= 0:
            bone.parent = edit_bones[parent]
    bpy.ops.object.mode_set(mode="OBJECT")


def floor(scene, runs: int, armature: dict | None = None) -> dict[str, float]:
    """Blender's bulk calls alone for the scene's arrays and the armature's bones (``armature_arrays``, when
    given): the best of ``runs`` per stage."""
    prepared = _prepare_floor(scene)
    best: dict[str, float] = defaultdict(lambda: float("inf"))
    for _ in range(runs):
        empty_scene()
        for name, seconds in _floor_once(*prepared, armature).items():
            best[name] = min(best[name], seconds)
    return dict(best)


def _floor_once(meshes, actions, bone_names, armature) -> dict[str, float]:
    stages: dict[str, float] = defaultdict(float)
    if armature is not None:
        start = clock()
        make_armature(armature)
        stages["armature"] = clock() - start
    for m in meshes:
        start = clock()
        data = bpy.data.meshes.new(m["name"])
        data.vertices.add(m["count"])
        data.loops.add(len(m["corners"]))
        data.polygons.add(len(m["loop_starts"]))
        data.attributes["position"].data.foreach_set("vector", m["positions"])
        data.attributes[".corner_vert"].data.foreach_set("value", m["corners"])
        data.polygons.foreach_set("loop_start", m["loop_starts"])
        data.update(calc_edges=True)
        # A UV map is a FLOAT2 corner attribute: its generic setter is ~6x faster than uv_layers[].data.
        if m["uvs"] is not None:
            data.attributes[data.uv_layers.new(name="UVMap").name].data.foreach_set("vector", m["uvs"])
        stages["mesh"] += clock() - start
        start = clock()
        if m["normals per vertex"]:
            data.normals_split_custom_set_from_vertices(m["normals"])
        elif m["normals"] is not None:
            data.normals_split_custom_set(m["normals"])
        stages["normals"] += clock() - start
        start = clock()
        obj = bpy.data.objects.new(m["name"], data)
        groups = [obj.vertex_groups.new(name=name) for name in bone_names]
        for bone, weight, vertices in m["weights"]:
            groups[bone].add(vertices, weight, "REPLACE")
        stages["weights"] += clock() - start
        if (
            bpy.app.version >= (4, 5, 0) and m["normals per vertex"]
        ):  # for the report: free normals, a plain attribute (not deformed)
            copy = bpy.data.meshes.new("free normals")
            copy.vertices.add(m["count"])
            start = clock()
            copy.attributes.new("custom_normal", "FLOAT_VECTOR", "POINT").data.foreach_set(
                "vector", m["normals"].ravel()
            )
            stages["free normals"] += clock() - start
    start = clock()
    for name, curves in actions:
        action, slot = compat.new_action(name, "OBJECT", "Rig")
        fcurves = compat.ActionCurves(action, slot)  # grouped by bone, as the import and Blender's keying
        # Every curve first, then the keys (as the import does): each new curve scans those already there.
        made = [fcurves.new(path, (index,), group)[0] for path, index, group, _, _ in curves]
        for fcurve, (_, _, _, co, interpolation) in zip(made, curves, strict=True):
            points = fcurve.keyframe_points
            points.add(len(interpolation))
            points.foreach_set("co", co)
            points.foreach_set("interpolation", interpolation)
            fcurve.update()
    stages["actions"] = clock() - start
    stages["floor"] = sum(v for k, v in stages.items() if k != "free normals")
    return dict(stages)


# -- profile -------------------------------------------------


def profile_build(scene, lines: int = 18) -> str:
    empty_scene()
    profiler = cProfile.Profile()
    profiler.enable()
    build.build_scene(scene, bpy.context)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(lines)
    text = out.getvalue()
    # Keep the table, drop the header lines pstats prints before it.
    return text[text.find("   ncalls") :].rstrip()


# -- glTF -----------------------------------------------------------------------


@contextmanager
def quiet():
    """Send what Blender and the glTF add-on print to a file; show it only if the block raises."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile("w+") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            log.seek(0)
            print(log.read(), file=sys.stderr)
            raise
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def ensure_gltf() -> None:
    import addon_utils  # Blender's module, on the path once bpy is imported

    if not addon_utils.check("io_scene_gltf2")[1]:
        addon_utils.enable("io_scene_gltf2", default_set=True)


def gltf(folder: Path, runs: int) -> dict[str, float]:
    """Export the scene now in Blender to GLB (once), then time importing it into an empty scene."""
    ensure_gltf()
    path = folder / "large.glb"
    with quiet():
        start = clock()
        bpy.ops.export_scene.gltf(
            filepath=str(path),
            export_format="GLB",
            export_skins=True,
            export_animations=True,
            export_animation_mode="ACTIONS",
            export_normals=True,
            export_texcoords=True,
        )
        exported = clock() - start
    imported = float("inf")
    for _ in range(runs):
        empty_scene()
        ensure_gltf()
        with quiet():
            start = clock()
            bpy.ops.import_scene.gltf(filepath=str(path))  # default options, as a user would
            imported = min(imported, clock() - start)
    # In the scene only: the importer also makes a bone-shape mesh that no object in the scene shows.
    triangles = sum(len(o.data.polygons) for o in bpy.context.scene.objects if o.type == "MESH")
    fcurves = sum(len(compat.action_fcurves(a)) for a in bpy.data.actions)
    return {
        "gltf export": exported,
        "gltf import": imported,
        "gltf triangles": triangles,
        "gltf actions": len(bpy.data.actions),
        "gltf fcurves": fcurves,
        "gltf MB": path.stat().st_size / 1e6,
    }


# -- main -------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--triangles", type=int, default=500_000)
    parser.add_argument("--bones", type=int, default=60)
    parser.add_argument("--animations", type=int, default=10)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3, help="best of N for import, floor and export")
    parser.add_argument("--no-gltf", action="store_true", help="skip the glTF comparison")
    parser.add_argument(
        "--profile", action="store_true", help="profile build_scene even when the aims are met"
    )
    parser.add_argument("--json", help="also write the numbers to this file (for bench/bench.py)")
    args = parser.parse_args(argv)
    wall = time.perf_counter()
    load_before = os.getloadavg()[0]

    start = clock()
    generated = demo_creature.large_model(
        triangles=args.triangles, bones=args.bones, animations=args.animations, keys=args.keys
    )
    generate = clock() - start
    folder = Path(tempfile.mkdtemp(prefix="retro_models_bench_toshi_"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # the model and the GLB: ~30 MB
    files = {}
    for name, data in generated.items():
        (folder / name).write_bytes(data)
        files[name.rsplit(".", 1)[1]] = folder / name
    del generated

    imp, base, scene, result = import_and_floor(files, args.runs)
    meshes = scene.meshes
    triangles = sum(len(m.triangles) for m in meshes)
    vertices = sum(len(m.positions) for m in meshes)
    channels = [c for a in scene.animations for c in a.channels]
    fcurves = sum(np.asarray(c.values).reshape(len(c.times), -1).shape[1] for c in channels)
    keyframes = sum(np.asarray(c.values).size for c in channels)
    keys = sorted({len(c.times) for c in channels})

    exp, same = export_best(result, args.runs, files)
    ref = gltf(folder, min(args.runs, 2)) if not args.no_gltf else {}

    sizes = " | ".join(f"{p.name} {p.stat().st_size / 1e6:.2f} MB" for p in sorted(folder.glob("large.t*")))
    print(
        f"bpy {bpy.app.version_string}, {os.cpu_count()} CPUs, "
        f"{'wall' if clock is time.perf_counter else 'CPU'} seconds; model generated in {generate:.1f} s ({sizes})"
    )
    print(
        f"  {triangles:,} triangles, {vertices:,} vertices in {len(meshes)} meshes, "
        f"{len(scene.skeletons[0].bone_names)} bones, {len(scene.animations)} animations, "
        f"{len(channels)} channels with {'/'.join(map(str, keys))} keys, "
        f"{fcurves:,} F-curves, {keyframes:,} keyframes"
    )
    load = max(load_before, os.getloadavg()[0])
    if load > 0.5:
        print(
            f"  note: load average up to {load:.1f} during the run; other work on the machine skews the times"
        )
    print(
        f"  best of {args.runs} per stage for import, floor and export"
        + (f", of {min(args.runs, 2)} for the glTF import; glTF export once" if ref else "")
    )
    print()
    print("  stage              seconds   | build part  build   floor   ratio")
    parts = ("mesh", "normals", "weights", "actions", "armature")
    part_build = imp
    rows = [
        ("read", imp["read"]),
        ("to_scene", imp["to_scene"]),
        ("build", imp["build"]),
        ("import (total)", imp["import"]),
        ("floor", base["floor"]),
    ]
    if ref:
        rows += [("glTF import", ref["gltf import"]), ("glTF export (info)", ref["gltf export"])]
    rows += [
        ("extract", exp["extract"]),
        ("from_scene", exp["from_scene"]),
        ("write", exp["write"]),
        ("export (total)", exp["export"]),
        ("  weights read", exp["weights"]),
    ]
    right = []
    for part in parts:
        b, f = part_build[part], base[part]
        right.append(f"{part:10}  {b:6.2f}  {f:6.2f}  {b / f:5.1f}×")
    right.append(f"{'other':10}  {imp['other']:6.2f}       -")
    right.append(
        f"{'build':10}  {imp['build']:6.2f}  {base['floor']:6.2f}  {imp['build'] / base['floor']:5.1f}×"
    )
    for i in range(max(len(rows), len(right))):
        left = f"  {rows[i][0]:18} {rows[i][1]:7.2f}" if i < len(rows) else " " * 28
        print(f"{left}   | {right[i] if i < len(right) else ''}")
    if "free normals" in base:
        print(
            f"  (free normals, a FLOAT_VECTOR 'custom_normal' attribute set by foreach_set, take "
            f"{base['free normals']:.3f} s instead of {base['normals']:.2f} s, but armatures do not deform them)"
        )
    if ref:
        print(
            f"  glTF: {ref['gltf MB']:.1f} MB GLB, imported {ref['gltf triangles']:,} triangles, "
            f"{ref['gltf actions']} actions with {ref['gltf fcurves']:,} F-curves"
        )
    print(
        "  export = import files byte for byte: "
        + ", ".join(f"{kind.upper()} {'yes' if equal else 'NO'}" for kind, equal in same.items())
    )
    print()
    vs_floor = imp["import"] / base["floor"]
    line = f"  import/floor {vs_floor:.2f}×"
    met = vs_floor <= AIM_FLOOR
    if ref:
        vs_gltf = imp["import"] / ref["gltf import"]
        line += f"   import/glTF {vs_gltf:.2f}×"
        met = met and vs_gltf <= AIM_GLTF
    line += f"   export/import {exp['export'] / imp['import']:.2f}×"
    print(line)
    verdict = (
        f"verdict: import {imp['import']:.2f} s is {vs_floor:.2f}× the floor (aim ≤ {AIM_FLOOR:g}×)"
        + (f" and {vs_gltf:.2f}× glTF (aim ≤ {AIM_GLTF:g}×)" if ref else " (glTF skipped)")
        + (": MEETS the aims" if met else ": MISSES the aims")
    )
    print(verdict)
    if not met or args.profile:
        print("\nbuild_scene profile (top functions by own time):")
        print(profile_build(scene))
    print(f"\n(total bench time {time.perf_counter() - wall:.0f} s)")
    if args.json:
        numbers = {
            "import": imp["import"],
            "floor": base["floor"],
            "actions": imp["actions"],
            "floor actions": base["actions"],
            "fcurves": fcurves,
            "export": exp["export"],
            "weights": exp["weights"],
            "peak MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "same": all(same.values()),
        }
        numbers.update({k: ref[k] for k in ("gltf import", "gltf export") if k in ref})
        Path(args.json).write_text(json.dumps(numbers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
