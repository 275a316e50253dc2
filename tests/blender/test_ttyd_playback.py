"""TTYD playback in Blender against the game's evaluator: texture swaps, texture-coordinate transforms
with scale and rotation, bones with a rest scale, and switching between two animations.

The model is the format tests' hand-built fixture (tests/formats/ttyd/ttyd_fixtures.py), written
again by the project's writer with: a scaled, rotated texture transform; a uniform rest scale on
the root and an uneven one on the animated body; and a second animation "idle" (the fixture's
"walk" deltas on other keyframe times, scrolling the other way).
"""

import bpy
import numpy as np
import pytest
import ttyd_fixtures as F
from retro_models.formats.ttyd import convert
from retro_models.formats.ttyd import model as fmt
from retro_models.formats.ttyd.evaluate import world_matrices
from retro_models.operators.animation import use_animation
from retro_models.operators.blender import compat, props
from retro_models.operators.blender.records import read_record
from ttyd_support import (
    BODY_NODE,
    TEXTURE_ROTATE,
    TEXTURE_SCALE,
    TOLERANCE,
    assert_plays,
    evaluated_positions,
    model_bytes,
    scaled_arm_bytes,
    set_frame,
    shown_image,
    tpl_bytes,
    walk_keyed_at,
)

# Inside each animation's keyed range (walk: keys at 0 and 10; idle: 0 and 6), sub-frames included.
WALK_FRAMES = (0.0, 2.5, 5.0, 7.5, 9.5)
IDLE_FRAMES = (0.0, 1.5, 3.0, 4.5, 5.5)
# Walk loops over 0…20: before 0 the game holds the start, at 20, 40, … it shows the start again.
# (F-curves cannot step: a curve that moves up to the end holds its value over the last 0.02 frames
# before each end, which these frames leave out.)
LOOP_FRAMES = (-1.0, -0.5, 0.0, 0.25, 19.75, 20.0, 20.5, 39.75, 40.0, 45.5)


def import_model(files, data: bytes):
    (files / "c_test").write_bytes(data)
    (files / "c_test_tex-").write_bytes(tpl_bytes())
    assert bpy.ops.import_scene.ttyd_model(filepath=str(files / "c_test")) == {"FINISHED"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    return files, fmt.read(data), armature, bpy.data.objects["body"]


@pytest.fixture
def imported(empty_scene, tmp_path):
    return import_model(tmp_path, model_bytes())


def export(files, armature) -> bytes:
    out = files / "out"
    out.mkdir(exist_ok=True)
    bpy.context.view_layer.objects.active = armature
    assert bpy.ops.export_scene.ttyd_model(filepath=str(out / "c_test")) == {"FINISHED"}
    return (out / "c_test").read_bytes()


def test_walk_plays_as_the_game_draws_it(imported):
    _, model, armature, body = imported
    assert model.node_floats[BODY_NODE + 4] == 0.5  # the uneven rest scale the edit bone cannot hold
    assert_plays(model, 0, armature, body, WALK_FRAMES)
    # The swap is visible: the image changes between the keyframes.
    tree = body.data.materials[0].node_tree
    set_frame(0)
    before = shown_image(tree)
    set_frame(10)
    assert shown_image(tree) != before


# Keyframes at 0 and 10: the pose of 10 holds up to the end; at 0 and 20: it moves right up to the end,
# through per-component curves or (with both rotations on the body) baked ones.
@pytest.mark.parametrize("times, rotation_a", [((0.0, 10.0), 0.0), ((0.0, 20.0), 0.0), ((0.0, 20.0), 5.0)])
def test_loop_ends_play_as_the_game(empty_scene, tmp_path, times, rotation_a):
    model = fmt.read(walk_keyed_at(times))
    model.node_floats[BODY_NODE + 6] = rotation_a
    files, model, armature, body = import_model(tmp_path, fmt.write(model))
    paths = {fc.data_path for fc in compat.action_fcurves(armature.animation_data.action)}
    assert ('pose.bones["body"].rotation_quaternion' in paths) == bool(rotation_a)  # baked
    assert model.animations[0].data.loop
    assert_plays(model, 0, armature, body, LOOP_FRAMES)
    assert export(files, armature) == (files / "c_test").read_bytes()


# The body inherits the arm's uneven scale (the arm's scale rides in the pose), or compensates it
# (its channels are taken relative to the arm's pose without the scale).
@pytest.mark.parametrize("compensate", [False, True])
def test_children_of_an_uneven_scale_play_as_the_game(empty_scene, tmp_path, compensate):
    files, model, armature, body = import_model(tmp_path, scaled_arm_bytes(compensate))
    assert props.get_extras(armature.data.bones["arm"]).get("scale_in_pose", False) != compensate
    assert_plays(model, 0, armature, body, WALK_FRAMES + LOOP_FRAMES)
    use_animation(armature, props.to_python(armature.data[props.ANIMATIONS])[1])
    assert_plays(model, 1, armature, body, IDLE_FRAMES + (-0.5, 12.0, 12.25))
    assert export(files, armature) == (files / "c_test").read_bytes()


def test_switching_animation_switches_every_action(imported):
    _, model, armature, body = imported
    groups = props.to_python(armature.data[props.ANIMATIONS])
    assert len(groups) == 2
    tree = body.data.materials[0].node_tree
    key = body.data.shape_keys
    walk = {id_data.animation_data.action.name for id_data in (armature, body, key, tree)}
    use_animation(armature, groups[1])
    idle = {read_record(id_data.animation_data.action).group for id_data in (armature, body, key, tree)}
    assert idle == {groups[1]} and not walk & {
        a.animation_data.action.name for a in (armature, body, key, tree)
    }
    assert_plays(model, 1, armature, body, IDLE_FRAMES)
    use_animation(armature, groups[0])
    assert_plays(model, 0, armature, body, WALK_FRAMES[1::2])


def test_unchanged_model_exports_byte_identical(imported):
    files, _, armature, _ = imported
    assert export(files, armature) == (files / "c_test").read_bytes()


def test_edited_texture_transform_exports_the_game_values(imported):
    files, model, armature, body = imported
    mapping = body.data.materials[0].node_tree.nodes["Mapping 0"]
    node = next(n for n in mapping.outputs["Vector"].links[0].to_node.id_data.nodes if props.SLOT in n)
    slot = props.to_python(node[props.SLOT])
    # The rest transform, moved as a user would in the game's terms: translate S by 0.125.
    moved = convert.mapping_location([0.375, 0.0], TEXTURE_SCALE, TEXTURE_ROTATE)
    np.testing.assert_allclose(slot["translate"], convert.mapping_location(F.TRANSLATE, TEXTURE_SCALE, 30.0))
    slot["translate"] = moved.tolist()
    node[props.SLOT] = slot
    out = files / "out"
    out.mkdir()
    bpy.context.view_layer.objects.active = armature
    assert bpy.ops.export_scene.ttyd_model(filepath=str(out / "c_test")) == {"FINISHED"}
    written = fmt.read((out / "c_test").read_bytes()).texcoord_transforms[0]
    np.testing.assert_allclose(written["translate"], [0.375, 0.0], atol=1e-6)
    np.testing.assert_allclose(written["scale"], TEXTURE_SCALE)
    assert written["rotate"] == pytest.approx(TEXTURE_ROTATE)


def rest_positions(model) -> np.ndarray:
    """The body's vertices as the game draws them when no animation plays."""
    world = convert.default_axis() @ world_matrices(model, model.node_floats)
    return model.positions.astype(np.float64) @ world[0][:3, :3].T + world[0][:3, 3]


@pytest.mark.parametrize("animations", [True, False])
def test_rest_pose_without_an_action_shows_the_uneven_scale(empty_scene, tmp_path, animations):
    """No action plays (none imported, or the one playing unassigned): the arm's scale, which rides in
    the pose, still shows, and every other bone is at rest, as the game draws the model at rest."""
    data = scaled_arm_bytes()
    (tmp_path / "c_test").write_bytes(data)
    (tmp_path / "c_test_tex-").write_bytes(tpl_bytes())
    assert bpy.ops.import_scene.ttyd_model(
        filepath=str(tmp_path / "c_test"), import_animations=animations
    ) == {"FINISHED"}
    armature, body = next(o for o in bpy.data.objects if o.type == "ARMATURE"), bpy.data.objects["body"]
    set_frame(5.0)  # walk, when imported, moves the body here
    for owner in (armature, body, body.data.shape_keys, body.data.materials[0].node_tree):
        if owner is not None and owner.animation_data is not None:
            owner.animation_data.action = None
    bpy.context.view_layer.update()  # as the Action editor's unlink does
    for key in body.data.shape_keys.key_blocks[1:] if body.data.shape_keys else ():
        key.value = 0.0
    set_frame(6.0)
    np.testing.assert_allclose(evaluated_positions(body), rest_positions(fmt.read(data)), atol=TOLERANCE)
