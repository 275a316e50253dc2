"""The Blender target: a fuzzed file imported with the add-on's own operator into an empty scene.

Right answers: the operator finishes with nothing non-finite in Blender, or it reports the file's
problem and leaves ``bpy.data`` as it was. A Python traceback out of the operator, datablocks left
by a failed import, or NaN or infinity in what an import made (vertex positions, bone and pose
matrices, keys) are defects. J3D files apply to a selection, so their scene holds what the seed file applies to
(an armature with its joints, an object with its materials, the shapes a BVA shows), made before the counts are taken.
"""

from __future__ import annotations

import os
import shutil
import sys

import bpy
import numpy as np

from .protocol import OperatorTraceback
from .targets import ROOT, ImportRefused, Seed, joint_count

sys.path.insert(0, str(ROOT / "tests" / "blender"))

import j3d_support  # noqa: E402
import retro_models  # noqa: E402
from retro_models.formats.j3d.files import READERS  # noqa: E402
from retro_models.operators.blender import compat  # noqa: E402

retro_models.register()

DATA_KINDS = ("objects", "meshes", "materials", "images", "actions", "armatures", "collections")
TRACEBACK = "Traceback (most recent call last)"
FOLDER = os.environ["FUZZ_SCRATCH"]  # the pool's, removed with its logs


class DataLeftBehind(Exception):
    """A failed import left datablocks behind."""

    def __init__(self, operator: str, before: dict[str, int], after: dict[str, int]):
        changed = ", ".join(f"{k} {before[k]}→{after[k]}" for k in DATA_KINDS if before[k] != after[k])
        super().__init__(f"failed import changed bpy.data: {changed}")
        self.where = f"import_scene.{operator}"


class NonFiniteInBlender(Exception):
    """An import put NaN or infinity into Blender."""

    def __init__(self, operator: str, what: str):
        super().__init__(f"non-finite values in {what}")
        self.where = f"import_scene.{operator} ({what.split(' ')[0]})"


def non_finite() -> str | None:
    """What holds NaN or infinity among the vertex positions, bone and pose matrices and keys, if any."""

    def values(collection, field: str, size: int) -> np.ndarray:
        out = np.empty(len(collection) * size, np.float32)
        collection.foreach_get(field, out)
        return out

    for mesh in bpy.data.meshes:
        if not np.isfinite(values(mesh.vertices, "co", 3)).all():
            return f"mesh {mesh.name!r} positions"
    for obj in bpy.data.objects:
        if not np.isfinite(np.array(obj.matrix_world)).all():
            return f"object {obj.name!r} matrix"
        if obj.pose is not None:
            if not np.isfinite(values(obj.data.bones, "matrix_local", 16)).all():
                return f"armature {obj.name!r} rest matrices"
            if not np.isfinite(values(obj.pose.bones, "matrix", 16)).all():
                return f"armature {obj.name!r} pose matrices"
    for action in bpy.data.actions:
        for fcurve in compat.action_fcurves(action):
            if not np.isfinite(values(fcurve.keyframe_points, "co", 2)).all():
                return f"action {action.name!r} keys of {fcurve.data_path}"
    return None


def data_counts() -> dict[str, int]:
    return {kind: len(getattr(bpy.data, kind)) for kind in DATA_KINDS}


def make_scene(seed: Seed) -> None:
    """The empty scene, with what a J3D seed applies to."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    extension = os.path.splitext(seed.name)[1]
    if extension in (".bck", ".bca"):
        j3d_support.make_armature(bpy.context, joint_count(seed.data, extension), rotated=False)
    elif extension == ".bva":
        j3d_support.shape_objects(bpy.context, len(READERS[extension].read(seed.data, seed.name).tracks))
    elif extension in (".bla", ".blk"):
        j3d_support.material_object(bpy.context, {})
    elif extension in READERS:
        model = READERS[extension].read(seed.data, seed.name)
        groups = (model.register, model.konst) if extension == ".brk" else (model,)
        names = sorted({name for group in groups for name in group.material_names})
        j3d_support.material_object(bpy.context, dict.fromkeys(names, 2))


class PreparedScene:
    """The scene made for a seed: made again only when the seed changes or an import added to it
    (a failed import must leave it as it was, so most inputs reuse it)."""

    seed_name: str | None = None
    counts: dict[str, int] = {}


def set_up(seed: Seed) -> None:
    """Runs before each input, outside its time and memory limits: resetting Blender after a
    large import takes memory the next input must not be charged with."""
    if seed.name != PreparedScene.seed_name or data_counts() != PreparedScene.counts:
        make_scene(seed)
        PreparedScene.seed_name, PreparedScene.counts = seed.name, data_counts()


def write_files(data: bytes, seed: Seed) -> str:
    """The fuzzed file and its unchanged partners in a fresh folder; returns the path to import."""
    shutil.rmtree(FOLDER, ignore_errors=True)
    os.makedirs(FOLDER)
    for name, content in {**seed.partners, seed.name: data}.items():
        with open(os.path.join(FOLDER, name), "wb") as f:
            f.write(content)
    return os.path.join(FOLDER, seed.imported or seed.name)


def run(data: bytes, seed: Seed):
    before = PreparedScene.counts
    path = write_files(data, seed)
    operator = getattr(bpy.ops.import_scene, seed.operator)
    try:
        result = operator(filepath=path)
    except RuntimeError as error:
        result, report = {"CANCELLED"}, str(error)
    else:
        report = "cancelled without a report"
    if TRACEBACK in report:
        raise OperatorTraceback(report)
    if result != {"FINISHED"}:
        if data_counts() != before:
            raise DataLeftBehind(seed.operator, before, data_counts())
        raise ImportRefused(report.strip().splitlines()[0])
    bpy.context.view_layer.update()  # the pose matrices of the first frame
    found = non_finite()
    if found:
        raise NonFiniteInBlender(seed.operator, found)
    return result
