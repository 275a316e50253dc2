"""What the TTYD Blender tests share: the playback fixture (the format tests' model with a scaled,
rotated texture transform, rest scales and a second animation) and checks against the evaluator."""

import copy
import math

import bpy
import numpy as np
import ttyd_fixtures as F
from retro_models.formats.textures import gx
from retro_models.formats.textures import tpl as tpl_format
from retro_models.formats.ttyd import convert
from retro_models.formats.ttyd import model as fmt
from retro_models.formats.ttyd.evaluate import Evaluator, texcoord_matrix, world_matrices
from retro_models.formats.ttyd.skeleton import append_group
from retro_models.operators.blender import props

ROOT_NODE, BODY_NODE = 0, 24
ARM_SCALE = (1.5, 0.5, 1.0)
TEXTURE_SCALE, TEXTURE_ROTATE = (2.0, 0.5), 30.0
TOLERANCE = 1e-4


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


def walk_keyed_at(times) -> bytes:
    """``model_bytes`` with walk's two keyframes at ``times`` (walk loops over 0…20)."""
    model = fmt.read(model_bytes())
    model.animations[0].data.keyframes["time"] = times
    return fmt.write(model)


def scaled_arm_bytes(compensate: bool = False) -> bytes:
    """``model_bytes`` with a group "arm" between the root and the body: an uneven scale (1.5, 0.5, 1),
    turned 30° about Z, above the body that both animations move (its turn about X in the arm's scaled
    frame shears, unless the body ``compensate``s the arm's scale)."""
    model = fmt.read(model_bytes())
    arm = append_group(model, "arm", len(model.groups) - 1, visibility=1)
    groups, root, body = model.groups, len(model.groups) - 1, 0
    groups["child"][root], groups["next"][arm], groups["child"][arm], groups["next"][body] = arm, -1, body, -1
    node = int(groups["node"][arm])
    model.node_floats[node : node + 12] = (0.25, 0.5, 0.0, *ARM_SCALE, 0.0, 0.0, 0.0, 0.0, 0.0, 30.0)
    model.node_floats[BODY_NODE + 3 : BODY_NODE + 6] = 1.0
    groups["compensate"][body] = compensate
    return fmt.write(model)


def tpl_bytes() -> bytes:
    rng = np.random.default_rng(5)
    images = [
        tpl_format.image_from_pixels(rng.integers(0, 256, (8, 8, 4), np.uint8), gx.RGBA8) for _ in range(2)
    ]
    return tpl_format.write(tpl_format.TPL(images))


def set_frame(frame: float) -> None:
    """Show ``frame``, fractions before 0 included (Blender takes sub-frames in [0, 1) only)."""
    whole = math.floor(frame)
    bpy.context.scene.frame_set(whole, subframe=frame - whole)


def played_positions(obj, frames) -> np.ndarray:
    """(F, V, 3) float64: ``obj``'s evaluated vertices at each of ``frames``."""
    played = []
    for frame in frames:
        set_frame(frame)
        played.append(evaluated_positions(obj))
    return np.array(played, np.float64)


def shift_keys(fcurve, keys, by: float) -> None:
    """Move the keys (and their handles) of ``fcurve`` at the indices ``keys`` up by ``by``."""
    for key in (fcurve.keyframe_points[i] for i in keys):
        for point in (key.co, key.handle_left, key.handle_right):
            point.y += by
    fcurve.update()


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
        assert body.hide_viewport == (not pose.visibility[0][1]), frame
        if not body.hide_viewport:  # Blender evaluates no hidden mesh (and the game draws none)
            # Vertices: the shape-key morph and the scaled bone together, as the game draws them.
            expected = pose.positions[0] @ world[0][:3, :3].T + world[0][:3, 3]
            np.testing.assert_allclose(
                evaluated_positions(body), expected, atol=TOLERANCE, err_msg=f"@ {frame}"
            )
        np.testing.assert_allclose(
            shown_uvs(tree, body.data), game_uvs(model, pose, body.data), atol=TOLERANCE, err_msg=f"@ {frame}"
        )
        tpl_image = convert.texture_image(model, 0, pose.frame_offsets[0, 0])
        assert props.scene_name(shown_image(tree)) == images[tpl_image], frame
