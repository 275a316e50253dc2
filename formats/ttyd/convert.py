"""TTYD models (and their TPL) ⇄ the neutral Scene.

Groups → one Skeleton (``skeleton``): each group is a bone whose rest is the group's world
matrix from the node floats (without an uneven scale that rides in the pose: ``scene_world``). A skeleton rather than an object hierarchy: the Scene has no
object parenting, one armature keeps the whole tree, its names and order in one place, and
every node animation of a file animation lands in one action. Shapes → meshes rigidly
skinned to the bone of the group that draws them (``meshes``); subshapes → materials
(``materials``); TPL images → images (``images``); animation entries → animations with
bone, shape-key, material and object channels (``channels``), and back to delta tables
(``deltas``).

Re-export: the scene extras keep every table of the file, the layout and the header
(``tables``). ``from_scene`` starts from them and writes the scene's values back where they
differ from the kept ones by more than the tolerance (``kept``): vertex positions, normals,
UVs and colours (when the topology is unchanged, else the geometry of every mesh is
rebuilt), node floats of bones whose rest changed, samplers, texture transforms, display
and cull modes, names. Animations are written from their kept tables when the scene's
channels still match them; changed ones are encoded again from the channels.
"""

from __future__ import annotations

import numpy as np

from ..errors import ExportError, FormatError
from ..scene import Scene, axis_matrix, tree_order
from ..textures import tpl as tpl_format
from . import model as fmt
from .channels import AnimationConverter
from .deltas import animations_from_scene, sample_channel
from .images import image_lookup, scene_images, texture_image, tpl_from_scene
from .kept import unique_names
from .materials import mapping_location, scene_materials, update_materials
from .meshes import rebuild_geometry, scene_mesh, update_geometry, uvs_to_file
from .model import Model, text
from .skeleton import (
    bone_rests,
    freed_groups,
    groups_from_skeleton,
    scale_in_pose,
    scene_skeleton,
    scene_world,
)
from .tables import base_model, model_extras

# Names other modules use from here, besides to_scene, from_scene and default_axis.
__all__ = [
    "EXTRAS_KEY",
    "default_axis",
    "from_scene",
    "mapping_location",
    "sample_channel",
    "texture_image",
    "to_scene",
    "uvs_to_file",
]

EXTRAS_KEY = "ttyd"
AXES = ("-Z", "Y")  # the default (forward, up): the file is Y-up with characters facing +Z


def default_axis() -> np.ndarray:
    """The file is Y-up with characters facing +Z."""
    return axis_matrix(*AXES)


def to_scene(
    model: Model, tpl: tpl_format.TPL | None = None, axis: np.ndarray | None = None, filename: str = "<model>"
) -> Scene:
    """The scene of a model and its TPL (None: placeholder images); ``filename`` names the model in errors."""
    fmt.validate(model, filename)
    axis = default_axis() if axis is None else np.asarray(axis, np.float64)
    name = text(model.header.name)
    scene = Scene(name=name, extras={EXTRAS_KEY: model_extras(model, tpl)})
    parents = fmt.group_parents(model.groups)
    # Every animation's running indices, worked out together: the evaluators and scale_in_pose use them.
    with_data = [a for a, animation in enumerate(model.animations) if animation.data is not None]
    anims = [model.animations[a].data for a in with_data]
    running = dict(zip(with_data, fmt.animations_running_indices(anims), strict=True))
    freed = scale_in_pose(model, parents, list(running.values()))
    world = scene_world(model, parents, freed)
    order = tree_order(parents)
    bone_of = np.full(len(parents), -1, np.int64)
    bone_of[order] = np.arange(len(order))
    if len(order):
        rest = bone_rests(axis, world)[order]
        scene.skeletons.append(scene_skeleton(model, name, parents, order, bone_of, rest, freed))

    scene.images = scene_images(model, tpl)
    image_of = image_lookup(scene)
    material_of = scene_materials(model, scene, tpl, image_of)
    visible = model.visibility != 0
    for s in range(len(model.shapes)):
        scene.meshes.append(scene_mesh(model, s, axis, world, parents, bone_of, material_of, visible))
    mesh_names = unique_names([m.name for m in scene.meshes])
    for mesh, mesh_name in zip(scene.meshes, mesh_names, strict=True):
        mesh.name = mesh.extras["label"] = mesh_name

    animation_names = unique_names([text(a.name) for a in model.animations])
    converter = AnimationConverter(model, scene, axis, world, parents, bone_of, image_of, filename)
    entries = list(zip(range(len(model.animations)), model.animations, animation_names, strict=True))
    for result, shape_keys in converter.convert(entries, running):
        scene.animations.append(result)
        for m, key in shape_keys:
            scene.meshes[m].shape_keys.append(key)
    return scene


def from_scene(
    scene: Scene, axis: np.ndarray | None = None, texture_format: int | None = None
) -> tuple[Model, tpl_format.TPL | None]:
    """The model (and its TPL, None when the scene has no image data) described by ``scene``.

    ``texture_format``: the GX format of edited and new images (None: each image's own).
    Raises ExportError when the tables kept with the scene and its edits do not make a valid model.
    """
    axis = default_axis() if axis is None else np.asarray(axis, np.float64)
    try:
        return _from_scene(scene, axis, texture_format)
    except FormatError as error:
        raise ExportError(
            f"{scene.name or 'the scene'}: the model it makes is not valid: {error.problem}"
        ) from error


def _from_scene(
    scene: Scene, axis: np.ndarray, texture_format: int | None
) -> tuple[Model, tpl_format.TPL | None]:
    extras = scene.extras.get(EXTRAS_KEY, {})
    model = base_model(scene, extras)
    group_of_bone = groups_from_skeleton(model, scene, axis)
    skeleton = scene.skeletons[0] if scene.skeletons else None
    parents = fmt.group_parents(model.groups)
    world = scene_world(model, parents, freed_groups(model, skeleton, group_of_bone))
    rebuilt = not update_geometry(model, scene, axis, world)
    if rebuilt:
        slot_samplers = rebuild_geometry(model, scene, axis, group_of_bone)
        parents = fmt.group_parents(model.groups)
        world = scene_world(model, parents, freed_groups(model, skeleton, group_of_bone))
        shape_of = list(range(len(scene.meshes)))
    else:
        slot_samplers = update_materials(model, scene)
        shape_of = [mesh.extras["shape"] for mesh in scene.meshes]
    mapping = (slot_samplers, shape_of)
    animations_from_scene(model, scene, axis, parents, world, group_of_bone, rebuilt, mapping)
    fmt.validate(model)
    return model, tpl_from_scene(scene, extras, texture_format)
