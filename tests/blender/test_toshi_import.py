"""Importing a TMD with the operator users run: the pose and skinning the game shows.

(The demo creature's golden dump is one of tests/blender/test_golden.py's cases.)

- Pose and skinning fidelity: every animation at every whole frame and at
  sub-frames between keys; Blender's bone matrices and deformed vertices are
  compared with ``formats.toshi.evaluate`` (the game's pose: lerp / slerp of
  parent-relative keys, linear blend skinning), with the operator's axis
  conversion applied, within 1e-4. (Blender's quaternion curves are linear per
  component; the importer adds the game's slerp at whole frames between
  distant keys, so they follow it.)
"""

from pathlib import Path

import bpy
import demo_creature
import numpy as np
import pytest
from retro_models.formats import scene as sc
from retro_models.formats.toshi import convert, evaluate, tkl, tmd
from retro_models.operators.blender import compat, props

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
    return sc.axis_matrix(*convert.AXES)


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
    end = float(np.float32(animation.duration)) * convert.FPS
    return [*np.arange(0.0, np.floor(end) + 1), 7.25, MIDDLE_FRAME, 21.75, end]


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
    assert checked >= 2 * 35


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
