"""J3D models (BMD/BDL) in Blender: what the import needs beyond the shared builder.

The model's armature keeps the file's Y-up joint space (the space of a BCK's joint values, so
the J3D animation import applies to it unchanged); the axis conversion is the armature object's
matrix, which the meshes parented to it follow. Joints with Maya segment scale compensation
inherit no scale from their parent (Blender's "None" inherit-scale mode), as the game poses them.

The animations loaded with the model (``ModelScene.paired``) go onto the new armature and
materials through the same steps as applying each file with the J3D animation import
(operators/j3d.py), so each action is the one that import makes; a BTP switches between the
model's own images.
"""

from __future__ import annotations

import copy

import bpy
import numpy as np
from mathutils import Matrix

from ..formats.j3d import apply, convert, files
from ..formats.j3d.model_geometry import MAYA
from . import j3d
from .blender import compat, props


def after_build(scene, result) -> list[str]:
    """Turn each armature object from the file's axes to Blender's; scale compensation on its bones;
    then the model's animations. Notes on what was applied."""
    matrix = scene.extras.get("object_matrix")
    if matrix is None:
        return []
    maya = scene.extras.get("scaling_rule") == MAYA
    for armature, skeleton in zip(result.armatures, scene.skeletons, strict=True):
        armature.matrix_world = Matrix(np.asarray(matrix, np.float64).reshape(4, 4).tolist())
        if not maya:
            continue
        for name, extras in zip(armature.data[props.JOINT_ORDER], skeleton.bone_extras, strict=True):
            if extras.get("scale_compensate") == 1 and armature.data.bones[name].parent is not None:
                armature.data.bones[name].inherit_scale = "NONE"
    return _apply_paired(scene, result)


def _apply_paired(scene, result) -> list[str]:
    """Each paired animation as an action on the armature (BCK, BCA), the shapes (BVA) or the materials
    it animates."""
    paired = getattr(scene, "paired", [])
    if not paired:
        return []
    context = bpy.context
    armature = result.armatures[0]
    # Read once: the rest pose the J3D import reads before each file (the animations leave it as it is).
    skeleton = j3d.armature_skeleton(context, armature)
    by_name = {props.scene_name(m): m for m in result.materials}
    images = {
        image.extras["tex1_index"]: built
        for image, built in zip(scene.images, result.images, strict=True)
        if "tex1_index" in image.extras
    }
    first = None
    shapes = {props.scene_name(o): o for o in result.objects}
    for animation_scene in paired:
        animation = animation_scene.animations[0]
        kind = convert.animation_kind(animation)
        materials, objects = [], []
        if kind in files.JOINT_KINDS:
            apply.bind_joints(animation_scene, copy.deepcopy(skeleton), animation_scene.name)
        elif kind == "bva":
            objects = [shapes[t] for t in sorted({c.target for c in animation.channels}) if t in shapes]
            animation.channels = [c for c in animation.channels if c.target in shapes]
        else:
            materials = [by_name[t] for t in sorted({c.target for c in animation.channels}) if t in by_name]
            animation.channels = [c for c in animation.channels if c.target in by_name]
        on_armature = not materials and not objects
        added, _ = j3d._add_animation(
            context, animation_scene, armature if on_armature else None, materials, False, objects
        )
        if convert.animation_kind(animation) == "btp":  # the images it shows, as the J3D import picks them
            used = {i: images[i] for i in files.pattern_indices(animation_scene) if i in images}
            j3d._switch_textures(animation_scene, by_name, used)
        result.actions += added.actions
        scene.warnings += animation_scene.warnings + added.warnings
        first = first or (added.actions[0] if on_armature else None)
    if first is not None:  # each application assigned its own: the armature plays the first instead
        compat.assign_action(armature, first, compat.action_slot(first))
    return [f"{scene.name}: {len(paired)} animations loaded with the model"]
