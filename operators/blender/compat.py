"""The Blender API facts the other modules share: every version difference (4.2 LTS to 5.0), bulk
reads, and how close F-curve keys may be.

- Actions: 4.2/4.3 keep F-curves on the action (``action.fcurves``); 4.4 added
  slotted, layered actions whose F-curves live in a channelbag per slot, and
  5.0 removed ``Action.fcurves``. Each action this add-on makes animates one
  datablock, so it has one slot (4.4+) and one layer with one keyframe strip.
- Materials: 5.0 creates the node tree with the material; earlier versions
  need ``use_nodes`` (which 5.0 deprecates).
"""

from __future__ import annotations

import bpy
import numpy as np

SLOTTED_ACTIONS = bpy.app.version >= (4, 4, 0)
# Frames: FCurve.update merges keys up to 0.01 apart (BEZT_BINARYSEARCH_THRESH, float32 times a little over).
MERGE_DISTANCE = 0.02


def read_array(collection, field: str, count: int, width: int, dtype=np.float32) -> np.ndarray:
    """``collection.foreach_get(field)`` as a (count, width) array, (count,) when ``width`` is 1."""
    out = np.empty(count * width, dtype)
    collection.foreach_get(field, out)
    return out.reshape(count, width) if width > 1 else out


def new_action(name: str, id_type: str, slot_name: str) -> tuple[bpy.types.Action, object]:
    """An empty action for one datablock of ``id_type`` ('OBJECT', 'NODETREE', 'KEY'…) and its slot.

    The slot is None before 4.4.
    """
    action = bpy.data.actions.new(name)
    if not SLOTTED_ACTIONS:
        action.id_root = id_type
        return action, None
    slot = action.slots.new(id_type=id_type, name=slot_name)
    action.layers.new("Layer").strips.new(type="KEYFRAME")
    return action, slot


def _group_keyword() -> str | None:
    """The keyword of ``fcurves.new`` that puts the new curve in a group by name (None: assign it after)."""
    collection = bpy.types.ActionChannelbagFCurves if SLOTTED_ACTIONS else bpy.types.ActionFCurves
    names = {p.identifier for p in collection.bl_rna.functions["new"].parameters}
    return next((k for k in ("group_name", "action_group") if k in names), None)


_GROUP_KEYWORD = _group_keyword()


class ActionCurves:
    """Makes the F-curves of one action: the channelbag (4.4+) looked up once, groups by name in C where
    ``fcurves.new`` takes one, else each group made once and kept in a dict (RNA's ``groups.get`` scans)."""

    def __init__(self, action, slot):
        if SLOTTED_ACTIONS:
            bag = action.layers[0].strips[0].channelbag(slot, ensure=True)
            self._curves, self._groups = bag.fcurves, bag.groups
        else:
            self._curves, self._groups = action.fcurves, action.groups
        self._made = {} if _GROUP_KEYWORD else {g.name: g for g in self._groups}

    def new(self, data_path: str, indices, group: str = "") -> list[bpy.types.FCurve]:
        """New F-curves of ``data_path`` for each array index in ``indices``, in the action group ``group``."""
        new = self._curves.new
        if _GROUP_KEYWORD or not group:
            grouped = {_GROUP_KEYWORD: group} if group else {}
            return [new(data_path, index=i, **grouped) for i in indices]
        action_group = self._made.get(group)
        if action_group is None:
            action_group = self._made[group] = self._groups.new(group)
        curves = [new(data_path, index=i) for i in indices]
        for fcurve in curves:
            fcurve.group = action_group
        return curves


def new_fcurves(action, slot, data_path: str, indices, group: str = "") -> list[bpy.types.FCurve]:
    """New F-curves of ``data_path`` for each array index in ``indices``, in the action group ``group``."""
    return ActionCurves(action, slot).new(data_path, indices, group)


def action_fcurves(action) -> list[bpy.types.FCurve]:
    """All F-curves of an action (of every slot)."""
    if not SLOTTED_ACTIONS:
        return list(action.fcurves)
    return [
        fc
        for layer in action.layers
        for strip in layer.strips
        for bag in strip.channelbags
        for fc in bag.fcurves
    ]


def animated_paths(id_data) -> set[str]:
    """The data paths the active action of ``id_data`` animates."""
    action = id_data.animation_data.action if id_data.animation_data else None
    return {fc.data_path for fc in action_fcurves(action)} if action is not None else set()


def assign_action(id_data, action, slot) -> None:
    anim = id_data.animation_data or id_data.animation_data_create()
    anim.action = action
    if slot is not None:
        anim.action_slot = slot


def action_slot(action):
    """The slot of an action this add-on made (None before 4.4), for ``assign_action``."""
    return action.slots[0] if SLOTTED_ACTIONS and len(action.slots) else None


def new_material(name: str) -> bpy.types.Material:
    """A material with its default node tree (Principled BSDF → Material Output)."""
    material = bpy.data.materials.new(name)
    if material.node_tree is None:
        material.use_nodes = True
    return material
