"""Switching between the animations an import made (every family): the sidebar's Animations list,
and the Action editor or NLA switching an imported armature's action (``rest_on_switch``)."""

from __future__ import annotations

import bpy
from bpy.app.handlers import persistent
from bpy.props import StringProperty

from .blender import compat, props, records
from .blender.animation import pose_target
from .blender.build import mapping_node_name
from .blender.objects import deformed_by


def group_actions(group: str) -> list[bpy.types.Action]:
    """The actions of one imported animation (one per animated datablock)."""
    return [a for a in bpy.data.actions if records.record_group(a) == group]


def primary_action(actions):
    """The action of a group that holds the animation's name, range and extras."""
    return next((a for a in actions if records.is_primary(a)), None)


def use_animation(owner, group: str) -> None:
    """Play the animation ``group`` on ``owner`` (an armature object or a material).

    On an armature every action of the group is assigned to what it animates: the
    armature, the visibility of its meshes, their shape keys and their materials.
    Everything the previous animation animated goes back to rest first, as the games
    start an animation from the model's rest: bones, shape-key weights, visibility,
    texture transforms and swapped images.
    """
    if isinstance(owner, bpy.types.Material):
        name = props.scene_name(owner)
        for action in group_actions(group):
            if ("material", name) in records.channel_targets(action):
                compat.assign_action(owner.node_tree, action, compat.action_slot(action))
                return
        return
    pose_to_rest(owner)
    targets = _animated_data(owner)
    chosen = {}
    for action in group_actions(group):
        targets_keyed = records.channel_targets(action)
        kind, target = targets_keyed[0] if targets_keyed else ("bone", "")
        id_data = owner if kind == "bone" else targets.get((kind, target))
        if id_data is not None:
            chosen[id_data.as_pointer()] = (id_data, action)
    for id_data in {t.as_pointer(): t for t in targets.values()}.values():
        if id_data.animation_data and id_data.animation_data.action:
            id_data.animation_data.action = None
            _to_rest(id_data)  # what the new action does not key stays at rest
    for id_data, action in chosen.values():
        compat.assign_action(id_data, action, compat.action_slot(action))


def _animated_data(armature) -> dict[tuple[str, str], bpy.types.ID]:
    """(channel kind, scene name) → the datablock its channels animate, for the armature's meshes."""
    found: dict[tuple[str, str], bpy.types.ID] = {("object", props.scene_name(armature)): armature}
    for obj in bpy.data.objects:
        if obj.type != "MESH" or not deformed_by(obj, armature):
            continue
        found[("object", props.scene_name(obj))] = obj
        if obj.data.shape_keys is not None:
            found[("shape_key", props.scene_name(obj))] = obj.data.shape_keys
        for material in obj.data.materials:
            if material is not None and material.node_tree is not None:
                found[("material", props.scene_name(material))] = material.node_tree
    return found


def _to_rest(id_data) -> None:
    """Values an unassigned action left behind, back at the model's rest."""
    if isinstance(id_data, bpy.types.Key):
        for block in id_data.key_blocks[1:]:
            block.value = 0.0
    elif isinstance(id_data, bpy.types.Object) and props.HIDDEN in id_data:  # a mesh's visibility
        id_data.hide_viewport = id_data.hide_render = bool(id_data[props.HIDDEN])
    elif isinstance(id_data, bpy.types.NodeTree):
        for node in id_data.nodes:
            slot = props.to_python(node.get(props.SLOT, {}))
            mapping = id_data.nodes.get(mapping_node_name(slot.get("index", -1)))
            if node.type != "TEX_IMAGE" or mapping is None or f"{mapping.name} Rotation" in id_data.nodes:
                continue  # a centred chain's rest lives in several nodes: left as the animation left it
            mapping.inputs["Location"].default_value[:2] = slot["translate"]
            mapping.inputs["Rotation"].default_value[2] = slot["rotate"]
            mapping.inputs["Scale"].default_value[:2] = slot["scale"]
        for key in [k for k in id_data.keys() if k.endswith(".image_index")]:
            id_data[key] = -1.0  # no swapped image matches: the slot shows its own


POSE_PATHS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")
_REST = {
    "location": (0.0, 0.0, 0.0),
    "rotation_quaternion": (1.0, 0.0, 0.0, 0.0),
    "rotation_euler": (0.0, 0.0, 0.0),
    "rotation_axis_angle": (0.0, 0.0, 1.0, 0.0),
    "scale": (1.0, 1.0, 1.0),
}
_playing: dict[int, int] = {}  # imported armature object → the action it played at the last update


@persistent
def rest_on_switch(scene, depsgraph) -> None:
    """An imported armature got another action (Action editor, NLA tweak, a script) or none: the bone
    channels the new action does not key (all, without one) go back to rest, as the games start every
    animation from the model's rest, instead of keeping what the previous action left."""
    for update in depsgraph.updates:
        obj = update.id.original if isinstance(update.id, bpy.types.Object) else None
        if obj is None or obj.type != "ARMATURE" or props.ANIMATIONS not in obj.data:
            continue
        action = obj.animation_data.action if obj.animation_data else None
        current = action.as_pointer() if action is not None else 0
        if _playing.get(obj.as_pointer(), current) != current:
            pose_to_rest(obj, _keyed(action) if action is not None else set())
        _playing[obj.as_pointer()] = current


@persistent
def forget_playing(*_args) -> None:
    """A new file: the armatures seen so far are gone."""
    _playing.clear()


def _keyed(action) -> set:
    return {pose_target(fcurve.data_path) for fcurve in compat.action_fcurves(action)}


def pose_to_rest(armature, keyed=frozenset()) -> None:
    """The pose channels not in ``keyed`` ((bone, path) pairs) at the model's rest: the identity, or
    what the import gave a bone to show with no action keying it (``props.REST_POSE``: a rest scale
    the bone cannot hold)."""
    rest = props.to_python(armature.data.get(props.REST_POSE, {}))
    for bone in armature.pose.bones:
        own = rest.get(bone.name, {})
        for path in POSE_PATHS:
            if (bone.name, path) not in keyed:
                setattr(bone, path, own.get(path, _REST[path]))


class RETRO_MODELS_OT_use_animation(bpy.types.Operator):
    """Play this animation on the armature or material it was imported for"""

    bl_idname = "retro_models.use_animation"
    bl_label = "Use Animation"
    bl_options = {"REGISTER", "UNDO"}

    group: StringProperty(description="The imported animation to play", options={"HIDDEN"})
    material: StringProperty(
        description="The material whose animation it is (empty: the selected model's armature)",
        options={"HIDDEN"},
    )

    def execute(self, context):
        from .blender.objects import target_armature

        owner = bpy.data.materials.get(self.material) if self.material else target_armature(context)
        if owner is None:
            self.report({"ERROR"}, "nothing to play the animation on")
            return {"CANCELLED"}
        use_animation(owner, self.group)
        return {"FINISHED"}


classes = (RETRO_MODELS_OT_use_animation,)
