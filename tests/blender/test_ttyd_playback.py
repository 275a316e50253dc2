"""TTYD playback in Blender against the game's evaluator: texture swaps, texture-coordinate transforms
with scale and rotation, bones with a rest scale, and switching between two animations.

The model is the format tests' hand-built fixture (tests/formats/ttyd/ttyd_fixtures.py), written
again by the project's writer with: a scaled, rotated texture transform; a uniform rest scale on
the root and an uneven one on the animated body; and a second animation "idle" (the fixture's
"walk" deltas on other keyframe times, scrolling the other way).
"""

import copy

import bpy
import numpy as np
import pytest
import ttyd_fixtures as F
from retro_models.formats.textures import gx
from retro_models.formats.textures import tpl as tpl_format
from retro_models.formats.ttyd import convert
from retro_models.formats.ttyd import model as fmt
from retro_models.formats.ttyd.evaluate import Evaluator, texcoord_matrix, world_matrices
from retro_models.operators.animation import use_animation
from retro_models.operators.blender import props

TOLERANCE = 1e-4
ROOT_NODE, BODY_NODE = 0, 24
TEXTURE_SCALE, TEXTURE_ROTATE = (2.0, 0.5), 30.0
# Inside each animation's keyed range (walk: keys at 0 and 10; idle: 0 and 6), sub-frames included.
WALK_FRAMES = (0.0, 2.5, 5.0, 7.5, 9.5)
IDLE_FRAMES = (0.0, 1.5, 3.0, 4.5, 5.5)


def model_bytes() -> bytes:
    model = fmt.read(F.build())
    model.texcoord_transforms["scale"][0] = TEXTURE_SCALE
    model.texcoord_transforms["rotate"][0] = TEXTURE_ROTATE
    model.node_floats[ROOT_NODE + 3 : ROOT_NODE + 6] = 2.0  # uniform: the body's parent
    model.node_floats[BODY_NODE + 3 : BODY_NODE + 6] = (1.5, 0.5, 1.25)
    idle = copy.deepcopy(model.animations[0].data)
    idle.keyframes["time"] = (0.0, 6.0)
    idle.base["end"] = 12.0
    idle.texture_deltas["translate"][0] = (-0.25, 0.125)
    model.animations[1] = fmt.Animation(model.animations[1].name, idle)
    return fmt.write(model)


def tpl_bytes() -> bytes:
    rng = np.random.default_rng(5)
    images = [
        tpl_format.image_from_pixels(rng.integers(0, 256, (8, 8, 4), np.uint8), gx.RGBA8) for _ in range(2)
    ]
    return tpl_format.write(tpl_format.TPL(images))


@pytest.fixture
def imported(empty_scene, tmp_path):
    (tmp_path / "c_test").write_bytes(model_bytes())
    (tmp_path / "c_test_tex-").write_bytes(tpl_bytes())
    assert bpy.ops.import_scene.ttyd_model(filepath=str(tmp_path / "c_test")) == {"FINISHED"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    model = fmt.read((tmp_path / "c_test").read_bytes())
    return tmp_path, model, armature, bpy.data.objects["body"]


def set_frame(frame: float) -> None:
    bpy.context.scene.frame_set(int(frame), subframe=frame - int(frame))


def evaluated_positions(obj) -> np.ndarray:
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = evaluated.to_mesh()
    co = np.empty(len(mesh.vertices) * 3, np.float32)
    mesh.vertices.foreach_get("co", co)
    evaluated.to_mesh_clear()
    return co.reshape(-1, 3)


def shown_uvs(tree, mesh) -> np.ndarray:
    """The UVs the image node samples: the Mapping node's (scale, rotate, translate) on UV0."""
    mapping = tree.nodes["Mapping 0"]
    location = np.array(mapping.inputs["Location"].default_value[:2])
    angle = mapping.inputs["Rotation"].default_value[2]
    scale = np.array(mapping.inputs["Scale"].default_value[:2])
    uv = np.empty(len(mesh.loops) * 2, np.float32)
    mesh.uv_layers["UV0"].data.foreach_get("uv", uv)
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    return (uv.reshape(-1, 2) * scale) @ rotation.T + location


def game_uvs(model, pose, mesh) -> np.ndarray:
    """The game's transformed texture coordinates of the same corners, as Blender UVs (V = 1 − T)."""
    transform = model.texcoord_transforms[0]
    matrix = texcoord_matrix(pose.translate[0, 0], transform["scale"], transform["rotate"])
    uv = np.empty(len(mesh.loops) * 2, np.float32)
    mesh.uv_layers["UV0"].data.foreach_get("uv", uv)
    st = convert.uvs_to_file(uv.reshape(-1, 2))  # the corners' own file coordinates
    moved = st @ matrix[:2, :2].T + matrix[:2, 2]
    return np.stack([moved[:, 0], 1.0 - moved[:, 1]], axis=1)


def shown_image(tree):
    """The image the swapped slot shows: the switcher's image whose index the driven value picks."""
    value = tree.nodes["Image Index 0"].outputs[0].default_value
    switched = [n for n in tree.nodes if n.type == "TEX_IMAGE" and props.SWITCHED_IMAGE in n]
    picked = [n for n in switched if abs(n[props.SWITCHED_IMAGE] - value) < 0.5]
    slot = next(n for n in tree.nodes if n.type == "TEX_IMAGE" and props.SLOT in n)
    return (picked[0] if picked else slot).image


def assert_plays(model, animation, armature, body, frames) -> None:
    evaluator = Evaluator(model, model.animations[animation].data)
    axis = convert.default_axis()
    tree = body.data.materials[0].node_tree
    images = props.to_python(next(c for c in bpy.data.collections if props.SCENE in c)[props.SCENE])["images"]
    for frame in frames:
        set_frame(frame)
        pose = evaluator.at([frame])
        world = axis @ world_matrices(model, pose.node_floats[0])
        # Vertices: the shape-key morph and the scaled bone together, as the game draws them.
        expected = pose.positions[0] @ world[0][:3, :3].T + world[0][:3, 3]
        np.testing.assert_allclose(evaluated_positions(body), expected, atol=TOLERANCE, err_msg=f"@ {frame}")
        assert body.hide_viewport == (not pose.visibility[0][1]), frame
        np.testing.assert_allclose(
            shown_uvs(tree, body.data), game_uvs(model, pose, body.data), atol=TOLERANCE, err_msg=f"@ {frame}"
        )
        tpl_image = convert.texture_image(model, 0, pose.frame_offsets[0, 0])
        assert props.scene_name(shown_image(tree)) == images[tpl_image], frame


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


def test_switching_animation_switches_every_action(imported):
    _, model, armature, body = imported
    groups = props.to_python(armature.data[props.ANIMATIONS])
    assert len(groups) == 2
    tree = body.data.materials[0].node_tree
    key = body.data.shape_keys
    walk = {id_data.animation_data.action.name for id_data in (armature, body, key, tree)}
    use_animation(armature, groups[1])
    idle = {
        id_data.animation_data.action[props.ANIMATION]["group"] for id_data in (armature, body, key, tree)
    }
    assert idle == {groups[1]} and not walk & {
        a.animation_data.action.name for a in (armature, body, key, tree)
    }
    assert_plays(model, 1, armature, body, IDLE_FRAMES)
    use_animation(armature, groups[0])
    assert_plays(model, 0, armature, body, WALK_FRAMES[1::2])


def test_unchanged_model_exports_byte_identical(imported):
    files, _, armature, _ = imported
    out = files / "out"
    out.mkdir()
    bpy.context.view_layer.objects.active = armature
    assert bpy.ops.export_scene.ttyd_model(filepath=str(out / "c_test")) == {"FINISHED"}
    assert (out / "c_test").read_bytes() == (files / "c_test").read_bytes()


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
