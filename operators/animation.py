"""Switching between the animations an import made (every family): the sidebar's Animations list."""

from __future__ import annotations

import bpy
from bpy.props import StringProperty

from .blender import compat, props


def group_actions(group: str) -> list[bpy.types.Action]:
    """The actions of one imported animation (one per animated datablock)."""
    return [a for a in bpy.data.actions if props.to_python(a.get(props.ANIMATION, {})).get("group") == group]


def use_animation(owner, group: str) -> None:
    """Play the animation ``group`` on ``owner`` (an armature object or a material).

    An armature starts from its rest pose, as the games start an animation:
    bones the animation does not key stay at rest instead of keeping the
    previous animation's pose.
    """
    is_material = isinstance(owner, bpy.types.Material)
    id_data = owner.node_tree if is_material else owner
    name = props.scene_name(owner)
    if not is_material:
        for bone in owner.pose.bones:
            bone.location = (0, 0, 0)
            bone.rotation_quaternion = (1, 0, 0, 0)
            bone.rotation_euler = (0, 0, 0)
            bone.scale = (1, 1, 1)
    for action in group_actions(group):
        channels = props.to_python(action[props.ANIMATION]).get("channels", [])
        if is_material and not any(c["kind"] == "material" and c["target"] == name for c in channels):
            continue
        if not is_material and any(c["kind"] == "material" for c in channels):
            continue
        compat.assign_action(id_data, action, compat.action_slot(action))
        return


class RETRO_MODELS_OT_use_animation(bpy.types.Operator):
    """Play this animation on the armature or material it was imported for"""

    bl_idname = "retro_models.use_animation"
    bl_label = "Use Animation"
    bl_options = {"REGISTER", "UNDO"}

    group: StringProperty(options={"HIDDEN"})
    material: StringProperty(options={"HIDDEN"})  # empty: the active armature

    def execute(self, context):
        obj = context.active_object
        owner = bpy.data.materials.get(self.material) if self.material else obj
        if owner is None or not (self.material or obj.type == "ARMATURE"):
            self.report({"ERROR"}, "nothing to play the animation on")
            return {"CANCELLED"}
        use_animation(owner, self.group)
        return {"FINISHED"}


classes = (RETRO_MODELS_OT_use_animation,)
