"""J3D (Nintendo GameCube/Wii JSystem) in Blender: animations and material sets applied to the
selection, and the animation to export.

- BCK: one action on the active (or first selected) armature; joints are matched
  by index in the armature's joint order, as the game matches them.
- BTK, BRK, BPK, BTP: actions on the node trees of the selected objects' materials,
  matched by material name as the game matches them (every material when nothing is selected).
- BMT: the set's materials replace those of the same name (their users switch), the others are new.

Export writes one animation back: the active armature's action as .bck (joints in the armature's
joint order), the active material's node-tree action as .btk .brk .bpk .btp; the extension chosen
says which, or, into an archive, the member the animation came from (or the one named). Reading and writing the files is formats/j3d/files.py; the Scene steps between the
files and Blender, formats/j3d/apply.py.
"""

from __future__ import annotations

import os

import bpy

from ..formats.errors import ExportError, SelectionError
from ..formats.j3d import apply, convert, files
from ..formats.scene import Scene
from .blender import records
from .blender.objects import target_armature


def target_materials(context) -> list[bpy.types.Material]:
    """The materials of the selected objects (of every object when nothing is selected)."""
    objects = list(context.selected_objects) or list(context.view_layer.objects)
    found: dict[int, bpy.types.Material] = {}
    for obj in objects:
        for slot in getattr(obj, "material_slots", ()):
            if slot.material is not None:
                found.setdefault(slot.material.as_pointer(), slot.material)
    return list(found.values())


def armature_skeleton(context, armature_obj):
    """The armature's skeleton in joint order (the recorded one, else bone order), Blender's bone names."""
    from .blender.extract import extract_scene

    return extract_scene(context, armature_obj, [], actions=[]).skeletons[0]


def pattern_textures(scene: Scene, textures_path: str = "") -> dict[int, bpy.types.Image]:
    """Blender images for the texture indices a BTP uses: from ``textures_path`` (a model or
    material set, decoded and packed), else the images a material set applied before brought."""
    from .blender import props
    from .blender.build import build_images

    used = files.pattern_indices(scene)
    if textures_path:
        images = files.pattern_images(textures_path, used)
        return dict(zip(images, build_images(list(images.values())), strict=True))
    found: dict[int, bpy.types.Image] = {}
    for image in bpy.data.images:
        index = props.get_extras(image).get("tex1_index")
        if index in used:
            found.setdefault(index, image)
    return found


def _record(material, group: str) -> None:
    """Remember an action group applied to a material, for the sidebar panel (armatures keep theirs)."""
    from .blender import props

    material[props.ANIMATIONS] = props.to_python(material.get(props.ANIMATIONS, [])) + [group]


def apply_to_selection(context, scene: Scene, path: str, options: files.ImportOptions):
    """Apply a loaded J3D Scene to the selection: (BuildResult, notes on what went where)."""
    from .blender import props

    materials = target_materials(context)
    by_name = {props.scene_name(m): m for m in materials}
    if scene.materials:
        return _replace_materials(context, scene, materials, by_name)
    animation = scene.animations[0]
    armature = None
    used, skipped = [], []
    if convert.animation_kind(animation) == "bck":
        armature = target_armature(context)
        if armature is None:
            raise SelectionError(
                f"{os.path.basename(path)}: select the armature to apply the joint animation to"
            )
        apply.bind_joints(scene, armature_skeleton(context, armature), path)
    else:
        targets = sorted({c.target for c in animation.channels})
        used = [by_name[t] for t in targets if t in by_name]
        skipped = [t for t in targets if t not in by_name]
        animation.channels = [c for c in animation.channels if c.target in by_name]
        if not used:
            raise SelectionError(
                f"{scene.name}: no selected object has a material it animates ({', '.join(targets[:8])})"
            )
    result, notes = _add_animation(context, scene, armature, used, options.set_frame_range)
    if convert.animation_kind(animation) == "btp":
        notes += _switch_textures(scene, by_name, pattern_textures(scene, options.textures_file))
    scene.warnings += [f"no selected material named {t!r}: its animation skipped" for t in skipped]
    scene.warnings += result.warnings
    return result, notes


def _replace_materials(context, scene: Scene, materials, by_name):
    from .blender.build import replace_materials

    replaced = sorted(m.name for m in scene.materials if m.name in by_name)
    result = replace_materials(scene, context, materials)
    created = sorted(m.name for m in scene.materials if m.name not in by_name)
    note = f"{scene.name}: materials updated: {', '.join(replaced) or 'none'}; new: {', '.join(created) or 'none'}"
    return result, [note]


def _add_animation(context, scene: Scene, armature, materials, set_frame_range: bool):
    """The animation's actions on the armature or the materials, looping as the file says; and notes."""
    from .blender import compat
    from .blender.build import add_animations

    animation = scene.animations[0]
    result = add_animations(scene, context, armature, materials, set_frame_rate=set_frame_range)
    if animation.extras.get("loop_mode") == convert.LOOP_MIRROR:
        for action in result.actions:
            for fcurve in compat.action_fcurves(action):
                for modifier in fcurve.modifiers:
                    if modifier.type == "CYCLES":
                        modifier.mode_before = modifier.mode_after = "MIRROR"
    notes = []
    if armature is not None:
        how = (
            f"baked once per frame for {len(result.baked)} channels (rest orientations mix the axes)"
            if result.baked
            else "the file's keys kept with exact Bézier handles"
        )
        notes.append(f"{scene.name}: action {result.actions[0].name!r} on armature {armature.name!r}; {how}")
    group = records.record_group(result.actions[0])
    for material in materials:
        _record(material, group)
    if materials:
        notes.append(f"{scene.name}: animates material(s) {', '.join(m.name for m in materials)}")
    return result, notes


def _switch_textures(scene: Scene, by_name, images) -> list[str]:
    """Make the texture slots a BTP animates show its texture swaps during playback; notes."""
    from .blender.build import switch_images

    switched = [
        f"{c.target} texture {c.path.split('.')[1]}"
        for c in scene.animations[0].channels
        if images and switch_images(by_name[c.target], int(c.path.split(".")[1]), images)
    ]
    if switched:
        return [f"{scene.name}: switches between {len(images)} textures on {', '.join(switched)}"]
    scene.warnings.append(
        "no textures to switch between (apply the model's .bmt first, or choose Textures From): "
        "the texture index is keyed for export only"
    )
    return []


# -- export -----------------------------------------------------------------------------------

_animation_items_alive: list = []  # Blender reads enum item strings after the callback returns


def animation_items(self, context):
    """The J3D animations applied to the active armature and its active material, after "the one playing"."""
    from .animation import group_actions, primary_action
    from .blender import props

    items = [
        (files.PLAYING, "Playing", "The armature's action for .bck, the active material's for the others")
    ]
    obj = context.active_object if context else None
    owners = []
    if obj is not None and obj.type == "ARMATURE":
        owners.append(obj.data)
    if obj is not None and obj.active_material is not None:
        owners.append(obj.active_material)
    for owner in owners:
        for group in props.to_python(owner.get(props.ANIMATIONS, [])):
            primary = primary_action(group_actions(group))
            if primary is not None:
                kind = props.get_extras(primary).get("j3d_type", "")
                items.append((group, f"{primary.name} ({kind.upper()})" if kind else primary.name, ""))
    _animation_items_alive[:] = items
    return items


def _playing(id_data):
    return id_data.animation_data.action if id_data is not None and id_data.animation_data else None


def export_action(context, kind: str, group: str = files.PLAYING):
    """(armature or None, action) to export as ``kind``: the chosen group's, else the one playing on the
    active armature (BCK) or on the active object's active material (the others)."""
    from .animation import group_actions, primary_action

    armature = target_armature(context) if kind == "bck" else None
    if kind == "bck" and armature is None:
        raise ExportError("select the armature whose animation to export as .bck")
    if group != files.PLAYING:
        action = primary_action(group_actions(group))
        if action is None:
            raise ExportError(f"the animation {group!r} has no actions left")
        return armature, action
    if kind == "bck":
        owner, action = f"armature {armature.name!r}", _playing(armature)
    else:
        obj = context.active_object
        material = obj.active_material if obj is not None else None
        if material is None:
            raise ExportError(f"select an object whose active material has the .{kind} animation")
        owner, action = f"material {material.name!r}", _playing(material.node_tree)
    if action is None:
        raise ExportError(f"{owner} plays no action to export as .{kind}")
    group = records.record_group(action)
    if group is not None:  # the group's first action holds its extras
        action = primary_action(group_actions(group)) or action
    return armature, action


def _archive_kind(context, path: str, options: files.ExportOptions) -> str:
    """The kind of animation an export into an archive writes: the named member's, else that of the
    chosen animation (or of the one playing on the active armature, else on the active material)."""
    from .animation import group_actions, primary_action
    from .blender import props

    if options.member:
        return files.kind_of(options.member)
    if options.animation != files.PLAYING:
        action = primary_action(group_actions(options.animation))
    else:
        armature = target_armature(context)
        obj = context.active_object
        material = obj.active_material if obj is not None else None
        action = _playing(armature) or (_playing(material.node_tree) if material is not None else None)
    group = records.record_group(action) if action is not None else None
    if group is not None:  # the group's first action holds its extras
        action = primary_action(group_actions(group)) or action
    kind = props.get_extras(action).get("j3d_type", "") if action is not None else ""
    if not kind:
        raise ExportError(
            f"{os.path.basename(path)}: name the archive member to replace (Archive Member), or select the "
            "armature or material playing the J3D animation to export"
        )
    return kind


def export_scene(context, path: str, options: files.ExportOptions) -> Scene:
    """The chosen (or playing) animation, of the kind ``path``'s extension names, as a Scene for
    ``files.save``."""
    from .blender import compat
    from .blender.extract import extract_scene

    kind = _archive_kind(context, path, options) if files.is_archive_path(path) else files.kind_of(path)
    armature, action = export_action(context, kind, options.animation)
    scene = extract_scene(context, armature, [], actions=[action])
    animation = scene.animations[0] if scene.animations else None
    found = convert.animation_kind(animation) if animation is not None and animation.channels else None
    if found is None:
        raise ExportError(f"action {action.name!r} has no J3D channels to export as .{kind}")
    if found != kind:
        raise ExportError(
            f"action {action.name!r} is a {found.upper()} animation with no {kind.upper()} channels: "
            f"export it as .{found}"
        )
    cycles = [m for fc in compat.action_fcurves(action) for m in fc.modifiers if m.type == "CYCLES"]
    looping = bool(cycles) or (action.use_frame_range and action.use_cyclic)
    mirrored = bool(cycles) and all(m.mode_after == "MIRROR" for m in cycles)
    apply.set_playback(animation, looping, mirrored)
    return scene
