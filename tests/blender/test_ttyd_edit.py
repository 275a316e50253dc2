"""TTYD animations edited in Blender: one moved key re-encodes only its channel, and a new action
keyed in Blender exports and plays back in the game's evaluator as Blender played it; a zero rest
scale poses without NaN and exports unit normals.

The model is the playback fixture (tests/blender/ttyd_support.py): "walk" keys the body's
location Y (node float 25) and rotation B X (float 33) as per-component Bézier channels.
"""

import bmesh
import bpy
import numpy as np
import pytest
import ttyd_fixtures as F
from retro_models.formats.ttyd import convert
from retro_models.formats.ttyd import model as fmt
from retro_models.formats.ttyd.channels import node_entries
from retro_models.formats.ttyd.evaluate import Evaluator, world_matrices
from retro_models.operators.blender import compat
from ttyd_support import (
    ARM_SCALE,
    BODY_NODE,
    TOLERANCE,
    model_bytes,
    played_positions,
    scaled_arm_bytes,
    set_frame,
    shift_keys,
    tpl_bytes,
)

LOCATION_Y, ROTATION_X = 25, 33
# The file keeps node values in 1/16 steps and tangents in whole degrees of slope: a curve keyed
# freely in Blender plays back within these steps, not within float noise.
QUANTISED = 0.06


@pytest.fixture
def imported(empty_scene, tmp_path):
    return import_model(tmp_path, model_bytes())


def import_model(tmp_path, data: bytes):
    (tmp_path / "c_test").write_bytes(data)
    (tmp_path / "c_test_tex-").write_bytes(tpl_bytes())
    assert bpy.ops.import_scene.ttyd_model(filepath=str(tmp_path / "c_test")) == {"FINISHED"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    return tmp_path, armature, bpy.data.objects["body"]


def export(files, armature):
    out = files / "out"
    out.mkdir(exist_ok=True)
    bpy.context.view_layer.objects.active = armature
    assert bpy.ops.export_scene.ttyd_model(filepath=str(out / "c_test")) == {"FINISHED"}
    return out / "c_test"


def test_one_moved_key_reencodes_only_its_channel(imported):
    files, armature, _ = imported
    original = fmt.read((files / "c_test").read_bytes())
    location = next(
        fc
        for fc in compat.action_fcurves(armature.animation_data.action)
        if fc.data_path.endswith("location")
    )
    shift_keys(location, [1], 0.5)  # the file's keyframe at frame 10
    path = export(files, armature)
    written = fmt.read(path.read_bytes())
    before, after = original.animations[0].data, written.animations[0].data
    assert np.array_equal(after.keyframes["time"], before.keyframes["time"])  # no keyframe added
    others = np.setdiff1d(np.arange(len(original.node_floats)), [LOCATION_Y])
    assert node_entries(after, others) == node_entries(before, others)  # rotation bit for bit
    assert node_entries(after, [LOCATION_Y]) != node_entries(before, [LOCATION_Y])
    assert len(path.read_bytes()) - len((files / "c_test").read_bytes()) <= 4 * 2  # the edited entries
    # The other animation and every other table stay as they were.
    assert (
        written.animations[1].data.node_deltas.tobytes() == original.animations[1].data.node_deltas.tobytes()
    )
    for table in ("position_deltas", "texture_deltas", "visibility_deltas", "normal_deltas"):
        assert getattr(after, table).tobytes() == getattr(before, table).tobytes(), table


def game_positions(model, animation: int, frames) -> list[np.ndarray]:
    """The body's vertices as the game draws them at each of ``frames``."""
    evaluator = Evaluator(model, model.animations[animation].data)
    axis = convert.default_axis()
    out = []
    for frame in frames:
        pose = evaluator.at([frame])
        world = axis @ world_matrices(model, pose.node_floats[0])
        out.append(pose.positions[0] @ world[0][:3, :3].T + world[0][:3, 3])
    return out


def test_edited_child_of_an_uneven_scale_exports_what_blender_plays(empty_scene, tmp_path):
    """The body under the arm's uneven scale (``scaled_arm_bytes``): its moved key plays in the game as
    in Blender, and the arm keeps its scale."""
    files, armature, body = import_model(tmp_path, scaled_arm_bytes())
    location = next(
        fc
        for fc in compat.action_fcurves(armature.animation_data.action)
        if fc.data_path == 'pose.bones["body"].location'
    )
    shift_keys(location, [1], 0.5)  # the file's keyframe at frame 10
    frames = np.arange(0.0, 10.0, 0.25)  # the body hides at 10
    played = played_positions(body, frames)
    written = fmt.read(export(files, armature).read_bytes())
    arm = int(written.groups["node"][list(written.groups["name"]).index(b"arm")])
    assert tuple(written.node_floats[arm + 3 : arm + 6]) == ARM_SCALE
    game = game_positions(written, 0, frames)
    np.testing.assert_allclose(played, np.array(game), atol=TOLERANCE)


def test_edited_compensating_child_of_an_uneven_scale_exports_what_blender_plays(empty_scene, tmp_path):
    """The body compensates the arm's uneven scale (``scaled_arm_bytes``); its baked location, moved
    0.25 along its pose Y, plays in the game as in Blender within the file's 1/16 steps (× the arm's
    scale 1.5 on the three axes)."""
    files, armature, body = import_model(tmp_path, scaled_arm_bytes(compensate=True))
    location = [
        fc
        for fc in compat.action_fcurves(armature.animation_data.action)
        if fc.data_path == 'pose.bones["body"].location'
    ]
    assert len(location) == 3  # baked: every component
    shift_keys(location[1], range(len(location[1].keyframe_points)), 0.25)
    frames = np.arange(0.0, 10.0, 0.5)  # the body hides at 10
    played = played_positions(body, frames)
    written = fmt.read(export(files, armature).read_bytes())
    game = np.array(game_positions(written, 0, frames))
    assert np.abs(played - game).max() < 1.5 * np.sqrt(3) / 32


@pytest.mark.parametrize("scaled_arm", [False, True])
def test_new_action_exports_and_plays_as_keyed(empty_scene, tmp_path, scaled_arm):
    """A new action keys the body's rotation and location; on the scaled-arm model it does not key the
    arm's scale, which rides in the pose: Blender plays it with the arm's rest scale, as the game does."""
    files, armature, body = import_model(tmp_path, scaled_arm_bytes() if scaled_arm else model_bytes())
    bpy.context.view_layer.update()  # the viewport's redraw, between the import and the user's switch
    # The game plays one animation: nothing but the new action may move the body in Blender.
    for owner in (body, body.data.shape_keys, body.data.materials[0].node_tree):
        owner.animation_data.action = None
    for key in body.data.shape_keys.key_blocks[1:]:
        key.value = 0.0
    action = bpy.data.actions.new("wave")
    armature.animation_data.action = action
    bpy.context.view_layer.update()
    bone = armature.pose.bones["body"]
    bone.rotation_mode = "XYZ"
    for frame, angle in ((0, 0.0), (10, 0.8), (20, -0.3)):
        bone.rotation_euler = (angle, 0.2 * angle, 0.0)
        bone.location = (0.0, angle, 0.0)
        bone.keyframe_insert("rotation_euler", frame=frame)  # Bézier keys, auto-clamped handles
        bone.keyframe_insert("location", frame=frame)
    frames = np.arange(0.0, 20.01, 0.25)
    played = played_positions(body, frames)

    model = fmt.read(export(files, armature).read_bytes())
    assert [a.name for a in model.animations] == [b"walk", b"idle", b"wave"]
    evaluator = Evaluator(model, model.animations[2].data)
    axis = convert.default_axis()
    worst = 0.0
    for frame, shown in zip(frames, played, strict=True):
        pose = evaluator.at([frame])
        world = axis @ world_matrices(model, pose.node_floats[0])
        game = pose.positions[0] @ world[0][:3, :3].T + world[0][:3, 3]
        worst = max(worst, float(np.abs(shown - game).max()))
    assert worst < QUANTISED, worst


@pytest.mark.parametrize("node, scale", [(24, (0.0, 0.0, 0.0)), (24, (1.0, 0.0, 1.0)), (0, (0.0, 0.0, 0.0))])
def test_zero_rest_scale_poses_without_nan_and_keeps_unit_normals(empty_scene, tmp_path, node, scale):
    model = fmt.read(F.build())
    model.node_floats[node + 3 : node + 6] = scale  # the body (24) or the root (0) collapses its shape
    (tmp_path / "c_test").write_bytes(fmt.write(model))
    assert bpy.ops.import_scene.ttyd_model(filepath=str(tmp_path / "c_test")) == {"FINISHED"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    for frame in (0.0, 2.5, 5.0, 7.25):
        set_frame(frame)
        for bone in armature.pose.bones:
            assert np.isfinite(np.array(bone.matrix)).all(), (frame, bone.name)
    body = bpy.data.objects["body"]
    mesh = bmesh.new()
    mesh.from_mesh(body.data)
    mesh.faces.ensure_lookup_table()
    bmesh.ops.delete(mesh, geom=[mesh.faces[0]], context="FACES_ONLY")  # new topology: rebuilt on export
    mesh.to_mesh(body.data)
    mesh.free()
    written = fmt.read(export(tmp_path, armature).read_bytes())
    assert len(written.normals) and np.allclose(np.linalg.norm(written.normals, axis=1), 1.0, atol=1e-5)


def test_location_edit_on_a_rotated_bone_exports_every_changed_component(empty_scene, tmp_path):
    """The body rests turned 30° about Z: walk keys its location Y only (float 25), which Blender shows
    on two pose components. Moving the bone along its pose X moves it along the file's X and Y: export
    writes both (float 24 gains entries), the rotation keeps its entries, and the game plays what
    Blender played."""
    model = fmt.read(model_bytes())
    model.node_floats[BODY_NODE + 11] = 30.0  # rotation B about Z
    files, armature, body = import_model(tmp_path, fmt.write(model))
    location = {
        fc.array_index: fc
        for fc in compat.action_fcurves(armature.animation_data.action)
        if fc.data_path == 'pose.bones["body"].location'
    }
    shift_keys(location[0], range(len(location[0].keyframe_points)), 0.5)
    frames = np.arange(0.0, 10.0, 0.5)  # the body hides at 10
    played = played_positions(body, frames)
    written = fmt.read(export(files, armature).read_bytes())
    before, after = fmt.read(model_bytes()).animations[0].data, written.animations[0].data
    assert node_entries(after, [BODY_NODE])  # the file's X moves now
    others = np.arange(BODY_NODE + 3, BODY_NODE + 24)
    assert node_entries(after, others) == node_entries(before, others)  # the rotation bit for bit
    game = np.array(game_positions(written, 0, frames))
    assert np.abs(played - game).max() < QUANTISED
