"""Importing a TMD with the operator users run: a golden dump, and the pose and skinning the game shows.

- Golden dump: the demo creature (tools/demo_creature.py) written to disk and
  imported with ``import_scene.toshi_tmd`` (all LODs), dumped by
  ``scene_dump.dump`` and compared with ``golden/toshi_demo_creature.txt``.
  The dump is the same on Blender 4.2 and 5.0. After an intended change,
  regenerate the reference and review its diff::

      RETRO_REGENERATE_GOLDEN=1 .venv/bin/python -m pytest tests/blender/test_toshi_import.py \
          -p no:pytest-blender -q

- Pose and skinning fidelity: every animation at its start, between two keys
  (frame 12.5, a sub-frame) and at its end; Blender's bone matrices and
  deformed vertices are compared with ``formats.toshi.evaluate`` (the game's
  pose: lerp / slerp of parent-relative keys, linear blend skinning), with the
  operator's axis conversion applied, within 1e-4.
"""

import difflib
import os
from pathlib import Path

import bpy
import demo_creature
import numpy as np
import pytest
import scene_dump
from retro_models.formats import scene as sc
from retro_models.formats.toshi import convert, evaluate, tkl, tmd
from retro_models.operators import toshi as toshi_operators
from retro_models.operators.blender import compat, props

GOLDEN = Path(__file__).resolve().parent / "golden" / "toshi_demo_creature.txt"
REGENERATE = os.environ.get("RETRO_REGENERATE_GOLDEN") == "1"
TOLERANCE = 1e-4
# Start, halfway between the keys at frames 10 and 15 (a sub-frame), end.
MIDDLE_FRAME = 12.5


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo files on disk, and the parsed model and keyframe library."""
    folder = tmp_path_factory.mktemp("demo_creature")
    files = demo_creature.demo_files()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder / "demo.tmd", tmd.read(files["demo.tmd"]), tkl.read(files["demo.tkl"])


def operator_axis() -> np.ndarray:
    """The file → Blender matrix the operator uses by default."""
    return sc.axis_matrix(toshi_operators.AXIS_FORWARD, toshi_operators.AXIS_UP)


def import_tmd(path: Path) -> bpy.types.Collection:
    before = set(bpy.data.collections)
    assert bpy.ops.import_scene.toshi_tmd(filepath=str(path), lods="ALL") == {"FINISHED"}
    (collection,) = [c for c in bpy.data.collections if c not in before and props.SCENE in c]
    return collection


def armature_of(collection) -> bpy.types.Object:
    (armature,) = [o for o in collection.all_objects if o.type == "ARMATURE"]
    return armature


def set_frame(frame: float) -> None:
    whole = int(np.floor(frame))
    bpy.context.scene.frame_set(whole, subframe=frame - whole)


def play(armature, action) -> None:
    """Show ``action`` from the rest pose, as the game starts an animation.

    Bones the action does not key (channels the file marks unused) keep
    whatever pose they had, so the pose is cleared first.
    """
    for pose_bone in armature.pose.bones:
        pose_bone.location = (0.0, 0.0, 0.0)
        pose_bone.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
        pose_bone.scale = (1.0, 1.0, 1.0)
    compat.assign_action(armature, action, action.slots[0] if compat.SLOTTED_ACTIONS else None)


def frames_of(animation: tmd.Animation) -> list[float]:
    return [0.0, MIDDLE_FRAME, float(np.float32(animation.duration)) * convert.FPS]


def test_import_matches_golden_dump(empty_scene, demo):
    path, _, _ = demo
    text = scene_dump.dump(import_tmd(path))
    if REGENERATE:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text, encoding="utf-8")
    assert GOLDEN.exists(), f"no golden dump {GOLDEN}: run with RETRO_REGENERATE_GOLDEN=1 to write it"
    expected = GOLDEN.read_text(encoding="utf-8")
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(True), text.splitlines(True), str(GOLDEN.name), "this import"
        )
    )
    assert text == expected, (
        f"import differs from the golden dump (RETRO_REGENERATE_GOLDEN=1 rewrites it):\n{diff}"
    )


def test_pose_matches_the_game(empty_scene, demo):
    path, model, library = demo
    armature = armature_of(import_tmd(path))
    axis = operator_axis()
    display_inverse = np.linalg.inv(convert.BONE_DISPLAY)
    names = model.node_names()
    checked = 0
    for index, animation in enumerate(model.animations):
        play(armature, bpy.data.actions[animation.name])
        for frame in frames_of(animation):
            set_frame(frame)
            world = np.array(armature.matrix_world)
            got = np.array([world @ np.array(armature.pose.bones[n].matrix) for n in names])
            expected = axis @ evaluate.pose(model, library, index, frame / convert.FPS)
            np.testing.assert_allclose(
                got @ display_inverse,
                expected,
                atol=TOLERANCE,
                err_msg=f"{animation.name} at frame {frame}",
            )
            checked += 1
    assert checked == 3 * len(model.animations) >= 6


def test_skinning_matches_the_game(empty_scene, demo):
    path, model, library = demo
    collection = import_tmd(path)
    armature = armature_of(collection)
    objects = {props.scene_name(o): o for o in collection.all_objects if o.type == "MESH"}
    axis = operator_axis()
    index = next(i for i, a in enumerate(model.animations) if a.name == "walk_lp")
    play(armature, bpy.data.actions["walk_lp"])
    set_frame(MIDDLE_FRAME)
    world = evaluate.pose(model, library, index, MIDDLE_FRAME / convert.FPS)
    depsgraph = bpy.context.evaluated_depsgraph_get()
    for mi, mesh in enumerate(model.lods[0].meshes):
        obj = objects[f"{mesh.material}_LOD0_{mi}"]
        evaluated = obj.evaluated_get(depsgraph)
        deformed = evaluated.to_mesh()
        got = np.empty(len(deformed.vertices) * 3, np.float32)
        deformed.vertices.foreach_get("co", got)
        evaluated.to_mesh_clear()
        got = got.reshape(-1, 3).astype(np.float64) @ np.array(obj.matrix_world)[:3, :3].T
        got += np.array(obj.matrix_world)[:3, 3]
        # The importer keeps the TMD's vertex order (pieces concatenated, nothing merged).
        expected = evaluate.skin(model, 0, mi, world) @ axis[:3, :3].T
        rest = np.concatenate([p.vertices["position"] for p in mesh.pieces]) @ axis[:3, :3].T
        assert np.abs(expected - rest).max() > 0.01, "the frame should move this mesh"
        np.testing.assert_allclose(got, expected, atol=TOLERANCE, err_msg=obj.name)


KEY_STEP = 5  # the demo keys every node at frames 0, 5, … 30


def componentwise_pose(model, library, index: int, frame: float) -> np.ndarray:
    """The game's keys interpolated as Blender's F-curves do: each quaternion component linearly
    (after the builder's sign continuity), normalised when the matrix is made."""
    k0 = np.floor(frame / KEY_STEP) * KEY_STEP
    u = (frame - k0) / KEY_STEP
    t0, q0 = evaluate.local_pose(model, library, index, k0 / convert.FPS)
    t1, q1 = evaluate.local_pose(model, library, index, (k0 + KEY_STEP) / convert.FPS)
    q1 = np.where((q0 * q1).sum(axis=-1, keepdims=True) < 0, -q1, q1)
    local = sc.compose((1 - u) * t0[0] + u * t1[0], (1 - u) * q0[0] + u * q1[0])
    return evaluate.world_matrices(model, local)


def test_between_keys_rotations_are_interpolated_componentwise(empty_scene, demo):
    """Off the halfway point between two keys Blender's pose differs a little from the game's.

    Quaternion F-curves interpolate each component linearly and Blender
    normalises the result (nlerp); the game slerps. Both agree at keys and
    exactly halfway between them (what the fidelity test checks); elsewhere
    the demo's keys, at most 25° apart, differ by less than 1e-3.
    """
    path, model, library = demo
    key_frames = np.concatenate([c.keys["time"] for c in model.channels]) * convert.FPS
    assert np.allclose(key_frames / KEY_STEP, np.round(key_frames / KEY_STEP), atol=1e-4)
    armature = armature_of(import_tmd(path))
    axis = operator_axis()
    display_inverse = np.linalg.inv(convert.BONE_DISPLAY)
    names = model.node_names()
    largest = 0.0
    for index, animation in enumerate(model.animations):
        play(armature, bpy.data.actions[animation.name])
        for frame in (1.0, 2.0, 7.0, 21.25):
            set_frame(frame)
            got = np.array([np.array(armature.pose.bones[n].matrix) for n in names]) @ display_inverse
            got = np.array(armature.matrix_world) @ got
            nlerp = axis @ componentwise_pose(model, library, index, frame)
            np.testing.assert_allclose(got, nlerp, atol=TOLERANCE, err_msg=f"{animation.name} at {frame}")
            game = axis @ evaluate.pose(model, library, index, frame / convert.FPS)
            largest = max(largest, float(np.abs(got - game).max()))
    assert TOLERANCE < largest < 1e-3
