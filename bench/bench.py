"""`make bench`: every workload of issue 20 in one run, each in a process of its own, with its ratios
against the bulk floor and Blender's glTF importer/exporter printed next to the goals.

    .venv/bin/python bench/bench.py [--quick] [--only NAME ...]

Workloads (``WORKLOADS``; a new one is a function returning its numbers and a ``Row`` list):

- ``toshi``: the JPOG benchmark model (``bench_toshi.py``: 500k triangles, 60 bones, 10 animations);
- ``ttyd``: a TTYD model with many animations (the format tests' model, its two animations repeated);
- ``tmrf N``: a TMRF skeleton chain of N bones (1000/2000/4000/8000) with a 30-frame animation on every
  bone, written by the project's TMRF writer; the growth ratio is time(2N) / time(N) (2: linear);
- ``tmrf1000-keys``: the 1000-bone chain with 4 × the frames (120): growth in keys, time(4K) / time(K)
  (4: linear);
- ``keys10m``: ten million keys (10 animations × 60 bones × 7 F-curves × 2,381 keys): memory;
- ``j3d``: a J3D model (``bench_j3d_model.py``'s generated tube: 129,600 triangles, 100 joints, weighted);
- ``j3d-quarter``: the same tube with a quarter of its columns: growth in vertices, time(4V) / time(V)
  (4: linear);
- ``j3d-archive``: the corpus's SunshineMario.arc with every animation that belongs to its models;
- ``batch``: the batch import of the corpus (``tools/batch_import.py --out-dir``) with one worker process
  and with two: the wall-clock speed-up, and the speed-up in CPU seconds (the one-worker run's CPU time
  over the two-worker run's planning plus its busier worker's CPU time: what two idle cores would give).

The floor of a workload is Blender's own bulk calls for what the import made, its arrays prepared
before the clock (``floor_of``): the armature (edit bones made one by one, placed by ``foreach_set``),
mesh attributes by ``foreach_set``, custom normals, vertex groups grouped by (bone, weight), and each
action's F-curves, in the action groups the import made them in (Blender's keying groups by bone; a
grouped curve costs Blender about twice an ungrouped one), by ``fcurves.new`` + ``keyframe_points.add``
+ ``foreach_set``. glTF: the imported scene exported once with ``export_scene.gltf`` (GLB, skins and
every action), then ``import_scene.gltf`` timed in an empty scene. Memory: the peak resident size of the
workload's process (``ru_maxrss``) above its size once the input was in memory. Times are the process's
CPU seconds (``clock``), so that other work on a shared machine skews them less.

``--readme README.md`` rewrites the table between README's two ``make bench`` markers with the run's
rows and the machine it ran on (``make bench`` does).
"""

from __future__ import annotations

import argparse
import copy
import importlib.metadata
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Process CPU time (all its threads): on a shared machine, wall time also counts other processes' work.
# RETRO_BENCH_CLOCK=wall times the wall clock instead.
clock = time.perf_counter if os.environ.get("RETRO_BENCH_CLOCK") == "wall" else time.process_time
CHAIN = (1000, 2000, 4000, 8000)
GLTF_CHAIN = 1000  # the longest chain also imported through glTF (its exporter recurses down the chain)
GOALS = {  # issue 20
    "import/floor": 1.25,
    "import/glTF": 0.25,
    "export/glTF": 0.08,
    "weights/export": 0.10,
    "µs per F-curve": 15.0,
    "memory/floor": 1.5,
    "archive import s": 60.0,  # issue 15: an archive with hundreds of animations in well under a minute
}
AT_LEAST = {"speed-up, wall": 1.6, "speed-up, CPU": 1.6}  # issue 18: -j 2 on this 2-core machine
MARKERS = ("<!-- make bench: start -->", "<!-- make bench: end -->")


@dataclass
class Row:
    workload: str
    measure: str
    value: float
    detail: str = ""

    def goal(self) -> tuple[str, str]:
        """The goal (``≤ 1.25``) and whether the value meets it; empty without a goal."""
        if self.measure in AT_LEAST:
            goal = AT_LEAST[self.measure]
            return f"≥ {goal:g}", "meets" if self.value >= goal else "MISSES"
        if self.measure in GOALS:
            goal = GOALS[self.measure]
            return f"≤ {goal:g}", "meets" if self.value <= goal else "MISSES"
        return "", ""

    def line(self) -> str:
        goal, verdict = self.goal()
        return f"  {self.workload:12} {self.measure:16} {self.value:9.3f}  {goal:8} {verdict:7} {self.detail}"


# -- in the workload's process ----------------------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _blender():
    """bpy, the add-on package and bench_toshi's helpers (glTF, quiet, empty scene)."""
    sys.path.insert(0, str(HERE))
    import bench_toshi  # noqa: F401  (imports bpy and loads the add-on as retro_models)

    return bench_toshi


def floor_of(scene, result) -> dict:
    """What the import made, as arrays for the bulk calls (read before the clock)."""
    bench_toshi = _blender()
    import numpy as np
    from retro_models.operators.blender import compat
    from retro_models.operators.blender.animation import INTERPOLATION_CODES

    bezier = INTERPOLATION_CODES["BEZIER"]

    meshes = []
    for mesh in scene.meshes:
        corners = np.ascontiguousarray(mesh.triangles, np.int32).ravel()
        entry = {
            "positions": np.ascontiguousarray(mesh.positions, np.float32).ravel(),
            "count": len(mesh.positions),
            "corners": corners,
            "loop_starts": np.arange(0, len(corners), 3, dtype=np.int32),
            "normals": None if mesh.normals is None else np.asarray(mesh.normals.data, np.float32),
            "uvs": [
                np.asarray(u.data, np.float32)[corners].ravel() for u in mesh.uv_layers if u.domain == "POINT"
            ],
            "weights": [],
        }
        if mesh.skin_joints is not None and mesh.skin_weights is not None:
            entry["weights"] = bench_toshi._weight_calls(
                np.asarray(mesh.skin_joints), np.asarray(mesh.skin_weights)
            )
            entry["bones"] = len(scene.skeletons[mesh.skeleton or 0].bone_names)
        meshes.append(entry)
    actions = []
    for action in result.actions:
        curves = []
        for fcurve in compat.action_fcurves(action):
            points = fcurve.keyframe_points
            n = len(points)
            arrays = {
                "co": compat.read_array(points, "co", n, 2).ravel(),
                "interpolation": compat.read_array(points, "interpolation", n, 1, np.int32),
            }
            if (arrays["interpolation"] == bezier).any():  # others' handles are Blender's (update)
                for side in ("handle_left", "handle_right"):
                    arrays[side] = compat.read_array(points, side, n, 2).ravel()
            group = fcurve.group.name if fcurve.group else ""
            curves.append((fcurve.data_path, fcurve.array_index, group, n, arrays))
        actions.append(curves)
    armatures = [bench_toshi.armature_arrays(a) for a in result.armatures]
    return {"meshes": meshes, "actions": actions, "armatures": armatures}


def run_floor(prepared: dict) -> dict[str, float]:
    """Blender's bulk calls alone for ``floor_of``'s arrays, in an empty scene."""
    import bpy
    from retro_models.operators.blender import compat

    bench_toshi = _blender()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    start = clock()
    for armature in prepared["armatures"]:
        bench_toshi.make_armature(armature)
    for m in prepared["meshes"]:
        data = bpy.data.meshes.new("floor")
        data.vertices.add(m["count"])
        data.loops.add(len(m["corners"]))
        data.polygons.add(len(m["loop_starts"]))
        data.attributes["position"].data.foreach_set("vector", m["positions"])
        if len(m["corners"]):
            data.attributes[".corner_vert"].data.foreach_set("value", m["corners"])
            data.polygons.foreach_set("loop_start", m["loop_starts"])
        data.update(calc_edges=True)
        for uvs in m["uvs"]:
            data.attributes[data.uv_layers.new().name].data.foreach_set("vector", uvs)
        if m["normals"] is not None and len(m["normals"]) == m["count"]:
            data.normals_split_custom_set_from_vertices(m["normals"])
        elif m["normals"] is not None:  # per corner
            data.normals_split_custom_set(m["normals"])
        obj = bpy.data.objects.new("floor", data)
        if m["weights"]:
            groups = [obj.vertex_groups.new(name=f"b{i}") for i in range(m["bones"])]
            for bone, weight, vertices in m["weights"]:
                groups[bone].add(vertices, weight, "REPLACE")
    meshes = clock() - start
    start = clock()
    curves = 0
    for i, action_curves in enumerate(prepared["actions"]):
        action, slot = compat.new_action(f"floor {i}", "OBJECT", "floor")
        fcurves = compat.ActionCurves(action, slot)
        # Every curve first, then the keys: each new curve scans those already there, faster without keys
        # between them (as the import does).
        made = [fcurves.new(path, (index,), group)[0] for path, index, group, _, _ in action_curves]
        for fcurve, (_, _, _, count, arrays) in zip(made, action_curves, strict=True):
            points = fcurve.keyframe_points
            points.add(count)
            for field, values in arrays.items():
                points.foreach_set(field, values)
            fcurve.update()
            curves += 1
    actions = clock() - start
    return {"floor": meshes + actions, "floor actions": actions, "fcurves": curves}


def _timed_actions():
    """Patch build.build_animation to add up its time; returns the running total (a one-element list)."""
    from retro_models.operators.blender import build

    total = [0.0]
    original = build.build_animation

    def timed(*args, **kwargs):
        start = clock()
        try:
            return original(*args, **kwargs)
        finally:
            total[0] += clock() - start

    build.build_animation = timed
    return total


def import_and_floor(load, folder: Path, gltf: bool, floor: bool = True, runs: int = 2) -> dict:
    """Import (``load()`` → Scene, then ``build_scene``), its floor and, with ``gltf``, glTF's import.
    With ``runs`` > 1, the import and its floor in turns, the best of each: CPU seconds of the same
    Blender calls swing with the machine's state over minutes. Memory: the first import's."""
    bench_toshi = _blender()
    import bpy
    from retro_models.operators.blender.build import build_scene

    numbers: dict = {}
    prepared = None
    for run in range(runs):
        bench_toshi.empty_scene()
        base = _rss_mb()
        actions = _timed_actions()
        start = clock()
        scene = load()
        result = build_scene(scene, bpy.context)
        seconds = clock() - start
        if run == 0:
            numbers.update({"import": seconds, "actions": actions[0], "memory MB": _peak_mb() - base})
        elif seconds < numbers["import"]:
            numbers.update({"import": seconds, "actions": actions[0]})
        if floor:
            prepared = prepared or floor_of(scene, result)
            ran = run_floor(prepared)
            if run == 0 or ran["floor"] < numbers["floor"]:
                numbers.update(ran)
    if gltf:
        bench_toshi.empty_scene()
        build_scene(scene, bpy.context)
        reference = bench_toshi.gltf(folder, 1)
        numbers.update({k: reference[k] for k in ("gltf import", "gltf export")})
    return numbers


def workload_ttyd(folder: Path, quick: bool) -> dict:
    sys.path.insert(0, str(HERE.parent / "tests" / "formats" / "ttyd"))
    _blender()
    import ttyd_fixtures  # the format tests' model, written by the project's TTYD writer
    from retro_models.formats.ttyd import convert
    from retro_models.formats.ttyd import model as fmt

    model = fmt.read(ttyd_fixtures.build())
    kinds = list(model.animations)
    count = 50 if quick else 200
    model.animations = [
        fmt.Animation(b"anim%03d" % i, copy.deepcopy(kinds[i % len(kinds)].data)) for i in range(count)
    ]
    path = folder / "many.ttyd"
    path.write_bytes(fmt.write(model))
    numbers = import_and_floor(lambda: convert.to_scene(fmt.read(path.read_bytes())), folder, gltf=True)
    numbers["animations"] = count
    return numbers


def chain_scene(bones: int, frames: int = 30):
    import numpy as np
    from retro_models.formats import scene as sc

    parents = np.arange(-1, bones - 1, dtype=np.int32)
    rest = np.tile(np.eye(4), (bones, 1, 1))
    rest[:, 1, 3] = np.arange(bones) * 0.1
    skeleton = sc.Skeleton("chain", [f"b{i}" for i in range(bones)], parents, rest)
    times = np.arange(frames, dtype=np.float64)
    rng = np.random.default_rng(0)
    channels = []
    for name in skeleton.bone_names:
        q = rng.normal(size=(frames, 4))
        channels.append(
            sc.Channel("bone", name, "rotation_quaternion", times, q / np.linalg.norm(q, axis=1)[:, None])
        )
        channels.append(sc.Channel("bone", name, "location", times, rng.normal(size=(frames, 3)) * 0.01))
    animation = sc.Animation("wave", channels, fps=30, frame_end=frames - 1.0, skeleton=0)
    return sc.Scene("chain", [skeleton], [], animations=[animation])


def workload_tmrf(folder: Path, quick: bool, bones: int, frames: int = 30) -> dict:
    _blender()
    from retro_models.formats.tmrf import convert, media

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * bones))  # glTF's exporter recurses down the chain
    path = folder / f"chain{bones}x{frames}.tmdl"
    path.write_bytes(media.write(convert.from_scene(chain_scene(bones, frames))))
    numbers = import_and_floor(
        lambda: convert.to_scene(media.read(path.read_bytes())),
        folder,
        gltf=bones <= GLTF_CHAIN and frames == 30,
        runs=2 if bones <= 2000 else 1,  # the longer chains take 7 to 60 s a run
    )
    numbers["bones"] = bones
    return numbers


def keys_scene(quick: bool):
    """Ten million keys (one million with ``quick``): the 60-bone chain, 10 animations."""
    from retro_models.formats import scene as sc

    keys = 238 if quick else 2381  # × 60 bones × 7 F-curves × 10 animations
    scene = chain_scene(60, keys)
    first = scene.animations[0]
    scene.animations = [
        sc.Animation(f"a{i}", first.channels, fps=30, frame_end=keys - 1.0, skeleton=0) for i in range(10)
    ]
    return scene


def workload_keys10m(folder: Path, quick: bool) -> dict:
    _blender()
    import numpy as np

    scene = keys_scene(quick)
    numbers = import_and_floor(lambda: scene, folder, gltf=False, floor=False, runs=1)
    numbers["keys"] = int(sum(np.asarray(c.values).size for a in scene.animations for c in a.channels))
    return numbers


def workload_floor_memory(folder: Path, quick: bool) -> dict:
    """The floor of ``keys10m`` alone, for its memory: its arrays made from the Scene, then the bulk calls."""
    bench_toshi = _blender()
    import numpy as np

    scene = keys_scene(quick)
    curves = []
    for channel in scene.animations[0].channels:
        values = np.asarray(channel.values, np.float32).reshape(len(channel.times), -1)
        path = f'pose.bones["{channel.target}"].{channel.path}'
        for c in range(values.shape[1]):
            co = np.empty((len(channel.times), 2), np.float32)
            co[:, 0], co[:, 1] = channel.times, values[:, c]
            arrays = {"co": co.ravel(), "interpolation": np.ones(len(co), np.int32)}
            curves.append((path, c, channel.target, len(co), arrays))
    prepared = {"armatures": [], "meshes": [], "actions": [curves] * len(scene.animations)}
    bench_toshi.empty_scene()
    base = _rss_mb()
    run_floor(prepared)
    return {"memory MB": _peak_mb() - base}


def workload_toshi(folder: Path, quick: bool) -> dict:
    out = folder / "toshi.json"
    command = [
        sys.executable,
        str(HERE / "bench_toshi.py"),
        "--runs",
        "1" if quick else "2",
        "--json",
        str(out),
    ]
    if quick:
        command += ["--triangles", "100000"]
    subprocess.run(command, check=True, stdout=sys.stderr)
    return json.loads(out.read_text())


def workload_j3d(folder: Path, quick: bool, share: int = 1) -> dict:
    """The generated skinned tube of bench_j3d_model.py (129,600 triangles, 100 joints; quick: 11,800),
    with 1 / ``share`` of its columns."""
    _blender()
    import bench_j3d_model
    from retro_models.formats.j3d import model, model_convert

    rings, columns = (60, 100) if quick else (163, 400)
    path = folder / f"tube{share}.bmd"
    path.write_bytes(model.write(bench_j3d_model.tube(rings, columns // share, 100)))
    return import_and_floor(
        lambda: model_convert.to_scene(model.read(path.read_bytes(), str(path)), "tube", str(path)),
        folder,
        gltf=share == 1,
    )


def workload_j3d_archive(folder: Path, quick: bool) -> dict:
    """The corpus's SunshineMario.arc, every model with every animation that belongs to it (quick: one
    model with its animations); nothing when the corpus is absent."""
    bench_toshi = _blender()
    import bpy
    import retro_models

    path = HERE.parent.parent / "shared" / "corpus" / "j3d-models" / "SunshineMario.arc"
    if not path.exists():
        return {}
    bench_toshi.empty_scene()
    start = clock()
    report = retro_models.import_file(bpy.context, str(path), model="ma_mdl1" if quick else "")
    seconds = clock() - start
    return {"import": seconds, "actions": report.counts["actions"], "models": report.counts["armatures"]}


def workload_batch(folder: Path, quick: bool) -> dict:
    """The corpus through the batch import with one worker and with two (quick: its j3d folder): wall
    and CPU seconds (this process's children: the batch and its workers), and each worker's CPU seconds;
    nothing when the corpus is absent."""
    corpus = HERE.parent.parent / "shared" / "corpus"
    if not corpus.exists():
        return {}
    numbers = {}
    for jobs in (1, 2):
        summary = folder / f"batch{jobs}.json"
        before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                str(HERE.parent / "tools" / "batch_import.py"),
                str(corpus / "j3d" if quick else corpus),
                *("--out-dir", str(folder / f"batch{jobs}"), "-j", str(jobs), "--json", str(summary)),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        workers = json.loads(summary.read_text())["worker_cpu_seconds"]
        numbers[f"j{jobs}"] = {"wall": wall, "cpu": cpu, "workers": workers}
    return numbers


WORKLOADS = {
    "toshi": workload_toshi,
    "ttyd": workload_ttyd,
    **{f"tmrf{n}": partial(workload_tmrf, bones=n) for n in CHAIN},
    "tmrf1000-keys": partial(workload_tmrf, bones=1000, frames=120),
    "keys10m": workload_keys10m,
    "keys10m-floor": workload_floor_memory,
    "j3d": workload_j3d,
    "j3d-quarter": partial(workload_j3d, share=4),
    "j3d-archive": workload_j3d_archive,
    "batch": workload_batch,
}


# -- the driver ---------------------------------------------------------------------------


def run(name: str, folder: Path, quick: bool) -> dict:
    """One workload in a process of its own (its memory peak its own); its numbers."""
    out = folder / f"{name}.result.json"
    command = [sys.executable, __file__, "--in-process", name, "--out", str(out)] + (
        ["--quick"] if quick else []
    )
    start, load = time.perf_counter(), os.getloadavg()[0]
    # One BLAS thread, as the batch's workers run: numpy's idle threads spin, and that counts as CPU time.
    one_thread = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    subprocess.run(
        command, check=True, stdout=subprocess.DEVNULL if name != "toshi" else None, env=one_thread
    )
    numbers = json.loads(out.read_text())
    numbers["wall"] = time.perf_counter() - start
    numbers["load"] = [load, os.getloadavg()[0]]
    return numbers


def rows(results: dict) -> list[Row]:
    table = []
    toshi = results.get("toshi")
    if toshi:
        table += [
            Row(
                "toshi",
                "import/floor",
                toshi["import"] / toshi["floor"],
                f"{toshi['import']:.2f} s / {toshi['floor']:.2f} s",
            ),
            Row(
                "toshi",
                "export/glTF",
                toshi["export"] / toshi["gltf export"],
                f"{toshi['export']:.2f} s / {toshi['gltf export']:.1f} s",
            ),
            Row(
                "toshi",
                "weights/export",
                toshi["weights"] / toshi["export"],
                f"{toshi['weights']:.2f} s of the export",
            ),
            Row(
                "toshi",
                "µs per F-curve",
                toshi["actions"] / toshi["fcurves"] * 1e6,
                f"{toshi['fcurves']:,} F-curves (floor {toshi['floor actions'] / toshi['fcurves'] * 1e6:.1f})",
            ),
            Row("toshi", "peak MB", toshi["peak MB"], "whole process"),
        ]
        if "gltf import" in toshi:
            table.insert(
                1,
                Row(
                    "toshi",
                    "import/glTF",
                    toshi["import"] / toshi["gltf import"],
                    f"{toshi['import']:.2f} s / {toshi['gltf import']:.2f} s",
                ),
            )
    for name in ["ttyd"] + [f"tmrf{n}" for n in CHAIN]:
        r = results.get(name)
        if not r:
            continue
        table.append(
            Row(name, "import/floor", r["import"] / r["floor"], f"{r['import']:.2f} s / {r['floor']:.2f} s")
        )
        if "gltf import" in r:
            table.append(
                Row(
                    name,
                    "import/glTF",
                    r["import"] / r["gltf import"],
                    f"{r['import']:.2f} s / {r['gltf import']:.2f} s",
                )
            )
        table.append(
            Row(
                name,
                "µs per F-curve",
                r["actions"] / r["fcurves"] * 1e6,
                f"{r['fcurves']:,} F-curves (floor {r['floor actions'] / r['fcurves'] * 1e6:.1f})",
            )
        )
        table.append(Row(name, "memory MB", r["memory MB"], "peak above the input"))
    sizes = [n for n in CHAIN if f"tmrf{n}" in results]
    for small, large in pairwise(sizes):
        a, b = results[f"tmrf{small}"], results[f"tmrf{large}"]
        table.append(_growth("tmrf", f"growth {small}→{large}", a, b, "2: linear, 4: quadratic"))
    keyed, base = results.get("tmrf1000-keys"), results.get("tmrf1000")
    if keyed and base:
        table.append(_growth("tmrf1000-keys", "growth keys ×4", base, keyed, "4: linear"))
    j3d, quarter = results.get("j3d"), results.get("j3d-quarter")
    if j3d and quarter:
        table.append(_growth("j3d-quarter", "growth verts ×4", quarter, j3d, "4: linear"))
    if j3d:
        table += [
            Row(
                "j3d",
                "import/floor",
                j3d["import"] / j3d["floor"],
                f"{j3d['import']:.2f} s / {j3d['floor']:.2f} s",
            ),
            Row(
                "j3d",
                "import/glTF",
                j3d["import"] / j3d["gltf import"],
                f"{j3d['import']:.2f} s / {j3d['gltf import']:.2f} s",
            ),
            Row("j3d", "memory MB", j3d["memory MB"], "peak above the input"),
        ]
    archive = results.get("j3d-archive")
    if archive:
        table.append(
            Row(
                "j3d-archive",
                "archive import s",
                archive["import"],
                f"{archive['models']} models, {archive['actions']} actions "
                f"({archive['import'] / archive['actions'] * 1e3:.0f} ms per action)",
            )
        )
    batch = results.get("batch")
    if batch:
        one, two = batch["j1"], batch["j2"]
        critical = two["cpu"] - sum(two["workers"]) + max(two["workers"])
        table += [
            Row(
                "batch",
                "speed-up, wall",
                one["wall"] / two["wall"],
                f"-j 1: {one['wall']:.1f} s, -j 2: {two['wall']:.1f} s",
            ),
            Row(
                "batch",
                "speed-up, CPU",
                one["cpu"] / critical,
                f"{one['cpu']:.1f} s / {critical:.1f} s (workers {' + '.join(f'{w:.1f}' for w in two['workers'])} s)",
            ),
        ]
    keys, floor = results.get("keys10m"), results.get("keys10m-floor")
    if keys and floor:
        table.append(
            Row(
                "keys10m",
                "memory/floor",
                keys["memory MB"] / floor["memory MB"],
                f"{keys['memory MB']:.0f} MB / {floor['memory MB']:.0f} MB for {keys['keys']:,} keys",
            )
        )
    return table


def _growth(workload: str, measure: str, small: dict, large: dict, scale: str) -> Row:
    """How much longer the larger import takes than the smaller, next to its floor's."""
    return Row(
        workload,
        measure,
        large["import"] / small["import"],
        f"floor {large['floor'] / small['floor']:.2f} ({scale})",
    )


def every_row() -> list[tuple[str, str]]:
    """(workload, measure) of every row a full run makes, in order (``rows`` of stand-in numbers)."""

    class Ones(dict):
        """Every number 1; every key there but ``absent``."""

        def __init__(self, absent=()):
            super().__init__(one=1)
            self.absent = set(absent)

        def __missing__(self, key):
            return [1] if key == "workers" else Ones() if key in ("j1", "j2") else 1

        def __contains__(self, key):
            return key not in self.absent

    chains = {f"tmrf{n}": Ones(() if n <= GLTF_CHAIN else ("gltf import",)) for n in CHAIN}
    return [(r.workload, r.measure) for r in rows({name: chains.get(name) or Ones() for name in WORKLOADS})]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_line(row: Row, when: str) -> str:
    goal, verdict = row.goal()
    return f"| {row.workload} | {row.measure} | {row.value:.3g} | {f'{goal} {verdict}'.strip()} | {row.detail} | {when} |"


def write_readme(path: Path, table: list[Row], results: dict, machine: str) -> None:
    """README's table between ``MARKERS``: a line for each of ``every_row``: this run's value, else the
    one the table had (workloads not run this time), else "not measured"."""
    text = path.read_text(encoding="utf-8")
    start, end = (text.index(m) for m in MARKERS)
    previous = {
        tuple(_cells(line)[:2]): line for line in text[start:end].splitlines() if line.startswith("| ")
    }
    loads = [v for r in results.values() for v in r["load"]]
    when = f"{time.strftime('%Y-%m-%d', time.gmtime())}, load {min(loads):.1f}–{max(loads):.1f}"
    made = {(row.workload, row.measure): table_line(row, when) for row in table}
    lines = [
        MARKERS[0],
        machine,
        "",
        "| workload | measure | value | goal | detail | measured |",
        "|---|---|---|---|---|---|",
    ]
    for key in every_row():
        goal, _ = Row(*key, 0.0).goal()
        lines.append(
            made.get(key) or previous.get(key) or f"| {key[0]} | {key[1]} | — | {goal} | not measured yet | |"
        )
    path.write_text(text[:start] + "\n".join(lines) + "\n" + text[end:], encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a check that it runs")
    parser.add_argument("--only", nargs="*", choices=list(WORKLOADS), help="these workloads only")
    parser.add_argument("--readme", type=Path, help="rewrite the table between the markers of this README")
    parser.add_argument("--in-process", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="retro_models_bench_"))
    folder = Path(tempfile.mkdtemp(prefix="retro_models_bench_all_"))
    if args.in_process:
        numbers = WORKLOADS[args.in_process](folder, args.quick)
        Path(args.out).write_text(json.dumps(numbers))
        return 0
    wall = time.perf_counter()
    import platform

    load = os.getloadavg()[0]
    results = {}
    for name in args.only or list(WORKLOADS):
        print(f"[{time.strftime('%H:%M:%S')}] {name}…", file=sys.stderr, flush=True)
        results[name] = run(name, folder, args.quick)
    machine = (
        f"`make bench` ({'wall' if clock is time.perf_counter else 'CPU'} seconds): "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, bpy {importlib.metadata.version('bpy')}, "
        f"Python {platform.python_version()}, load average {load:.1f} → {os.getloadavg()[0]:.1f}"
    )
    print(f"\n{machine}")
    print(f"  {'workload':12} {'measure':16} {'value':>9}  {'goal':8} verdict")
    table = rows(results)
    for row in table:
        print(row.line())
    print(f"(total {time.perf_counter() - wall:.0f} s)")
    if args.readme:
        write_readme(
            args.readme,
            table,
            results,
            machine + (f"; this run: {', '.join(args.only)}" if args.only else ""),
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
