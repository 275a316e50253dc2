"""Paper Mario: The Thousand-Year Door models in Blender: texture swaps shown during playback,
what to export, and the file name offered.

The game's files have no extension, so the file browser shows every file and a file is
accepted by its content; there is no drag-and-drop handler, as Blender's match extensions.
Reading and writing the model and its TPL is formats/ttyd/files.py.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..formats.errors import ExportError
from ..formats.scene import Scene
from ..formats.ttyd import files
from ..formats.ttyd.skeleton import rest_pose_scales
from .blender.objects import deformed_meshes, target_armature


def after_build(scene: Scene, result) -> None:
    """Pose the bones whose uneven scale rides in the pose with it (``rest_pose``), and make every
    texture slot whose image an animation swaps show the swap during playback.

    The builder keys the swapped image (a scene image index) as ``texture.<slot>.image_index`` on
    the material's node tree, which export reads back; ``switch_images`` makes the slot's image
    node follow that value, with one image node per image any animation shows in the slot.
    """
    from .blender.build import switch_images

    for skeleton, armature in zip(scene.skeletons, result.armatures, strict=False):
        rest_pose(skeleton, armature)
    shown: dict[tuple[str, int], set[int]] = {}
    for animation in scene.animations:
        for channel in animation.channels:
            if channel.target_kind == "material" and channel.path.endswith(".image_index"):
                images = shown.setdefault((channel.target, int(channel.path.split(".")[1])), set())
                images.update(np.rint(np.asarray(channel.values)).astype(np.int64).ravel().tolist())
    materials = {m.name: built for m, built in zip(scene.materials, result.materials, strict=True)}
    for (material, slot), images in shown.items():
        switch_images(
            materials[material],
            slot,
            {i: result.images[i] for i in sorted(images) if 0 <= i < len(result.images)},
        )


def rest_pose(skeleton, armature) -> None:
    """Give the bones whose scale rides in the pose (``skeleton.rest_pose_scales``) that scale as their
    pose and as the rest the armature goes back to when no action keys it (``props.REST_POSE``), so the
    model shows as the game draws it at rest, and actions made in Blender play with it."""
    from .blender import props
    from .blender.armature import bone_maps

    scales = rest_pose_scales(skeleton)
    if not scales:
        return
    maps = bone_maps(skeleton)
    names = dict(zip(skeleton.bone_names, armature.data[props.JOINT_ORDER], strict=True))
    rest = {}
    for bone, scale in scales.items():
        a, b = maps[bone].maps["scale"]
        rest[names[bone]] = {"scale": (a @ np.asarray(scale, np.float64) + b).tolist()}
        armature.pose.bones[names[bone]].scale = rest[names[bone]]["scale"]
    armature.data[props.REST_POSE] = rest


# -- export -------------------------------------------------------------------


def export_objects(context) -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """The armature to export (active or selected, or the active mesh's) and every mesh it deforms."""
    armature = target_armature(context)
    if armature is None:
        raise ExportError("select the armature of the model to export (its groups are the bones)")
    return armature, deformed_meshes(armature, context.view_layer.objects, parented=True)


def export_scene(context, path: str, options: files.ExportOptions) -> Scene:
    """The armature and its meshes as a Scene for ``files.save``."""
    from .blender.extract import extract_scene
    from .import_export import included

    armature, meshes = export_objects(context)
    return extract_scene(
        context,
        armature,
        included(context, meshes, options),
        apply_modifiers=options.use_mesh_modifiers,
        scale=options.global_scale,
    )


def default_path(context) -> str:
    """The model's own name, as the game's files are named ("" when the active object was not imported)."""
    from .blender import props

    record = props.import_record([o for o in [context.active_object] if o is not None])
    return props.to_python(record[props.SCENE])["name"] if record is not None else ""
