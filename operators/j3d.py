"""J3D (Nintendo GameCube/Wii JSystem) in Blender: animations and material sets applied to the
selection, and the animation to export.

- BCK, BCA: one action on the active (or first selected) armature; joints are matched
  by index in the armature's joint order, as the game matches them.
- BVA: the visibility of the model's shapes: actions on the hide flags of the meshes named
  shape<index> among the selected objects and the children of the selected armatures (every
  object when nothing is selected).
- BLA, BLK: cluster weights as an action on the shape keys cluster<index> of the active (or first
  selected) mesh; missing key blocks are added empty (the model's cluster shapes are not imported).
- BTK, BRK, BPK, BTP: actions on the node trees of the selected objects' materials,
  matched by material name as the game matches them (every material when nothing is selected).
- BMT: the set's materials replace those of the same name (their users switch), the others are new.

Export writes one animation back: the active armature's action as .bck .bca (joints in the
armature's joint order), the active object's visibility action as .bva, its shape keys' action as
.bla .blk, the active material's node-tree action as .btk .brk .bpk .btp; the extension chosen
says which, or, into an archive, the member the animation came from (or the one named). Visibility
and cluster weights keyed in Blender (no import record) come from the selected shapes and the
active mesh's shape keys (``keyed_scene``). Reading and writing the files is formats/j3d/files.py; the Scene steps between the
files and Blender, formats/j3d/apply.py.
"""

from __future__ import annotations

import os
import re

import bpy
import numpy as np

from ..formats.errors import ExportError, SelectionError
from ..formats.j3d import apply, convert, files
from ..formats.scene import Animation, Channel, Scene
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


def _record(owner, group: str | None) -> None:
    """Remember an action group applied to a material or object, for the sidebar panel and the export's
    list (armatures keep theirs)."""
    from .blender import props

    if group is not None:
        owner[props.ANIMATIONS] = props.to_python(owner.get(props.ANIMATIONS, [])) + [group]


def apply_to_selection(context, scene: Scene, path: str, options: files.ImportOptions):
    """Apply a loaded J3D Scene to the selection: (BuildResult, notes on what went where)."""
    from .blender import props

    materials = target_materials(context)
    by_name = {props.scene_name(m): m for m in materials}
    if scene.materials:
        return _replace_materials(context, scene, materials, by_name)
    animation = scene.animations[0]
    kind = convert.animation_kind(animation)
    armature = None
    used, skipped, objects, added_keys = [], [], [], []
    if kind in files.JOINT_KINDS:
        armature = target_armature(context)
        if armature is None:
            raise SelectionError(
                f"{os.path.basename(path)}: select the armature to apply the joint animation to"
            )
        apply.bind_joints(scene, armature_skeleton(context, armature), path)
    elif kind == "bva":
        shapes = {props.scene_name(o): o for o in target_shapes(context)}
        objects = [shapes[t] for t in sorted({c.target for c in animation.channels}) if t in shapes]
        skipped = sorted({c.target for c in animation.channels} - set(shapes))
        animation.channels = [c for c in animation.channels if c.target in shapes]
        if not objects:
            raise SelectionError(
                f"{scene.name}: select the model whose shapes it shows and hides (meshes named "
                f"{', '.join(skipped[:4])}…, as the J3D model import names them)"
            )
    elif kind in ("bla", "blk"):
        mesh = target_mesh(context)
        if mesh is None:
            raise SelectionError(
                f"{scene.name}: select the mesh whose shape keys its cluster weights animate"
            )
        for channel in animation.channels:
            channel.target = props.scene_name(mesh)
        added_keys = add_cluster_keys(mesh, animation.channels)
        objects = [mesh]
    else:
        targets = sorted({c.target for c in animation.channels})
        used = [by_name[t] for t in targets if t in by_name]
        skipped = [t for t in targets if t not in by_name]
        animation.channels = [c for c in animation.channels if c.target in by_name]
        if not used:
            raise SelectionError(
                f"{scene.name}: no selected object has a material it animates ({', '.join(targets[:8])})"
            )
    try:
        result, notes = _add_animation(context, scene, armature, used, options.set_frame_range, objects)
    except BaseException:
        remove_shape_keys(objects[0] if added_keys else None, added_keys)
        raise
    if kind == "btp":
        notes += _switch_textures(scene, by_name, pattern_textures(scene, options.textures_file))
    if added_keys:
        notes.append(
            f"{scene.name}: added {len(added_keys)} empty shape keys to {objects[0].name!r} "
            f"({', '.join(added_keys[:4])}{'…' if len(added_keys) > 4 else ''}): the cluster shapes live in the "
            "model's cluster data, which the import does not read; sculpt them to see the weights act"
        )
    what = "shape" if kind == "bva" else "material"
    scene.warnings += [f"no selected {what} named {t!r}: its animation skipped" for t in skipped]
    scene.warnings += result.warnings
    return result, notes


def target_shapes(context) -> list[bpy.types.Object]:
    """Meshes a BVA may show and hide: the selected objects and the children of the selected
    armatures (the model's shapes); every object when nothing is selected."""
    selected = list(context.selected_objects)
    if not selected:
        return [o for o in context.view_layer.objects if o.type == "MESH"]
    found = {o.as_pointer(): o for o in selected if o.type == "MESH"}
    for armature in (o for o in selected if o.type == "ARMATURE"):
        found.update({c.as_pointer(): c for c in armature.children_recursive if c.type == "MESH"})
    return list(found.values())


def target_mesh(context):
    """The active mesh, else the first selected one."""
    candidates = [context.active_object, *context.selected_objects]
    return next((o for o in candidates if o is not None and o.type == "MESH"), None)


def add_cluster_keys(mesh, channels) -> list[str]:
    """Add the shape keys the cluster ``channels`` animate that the mesh lacks (empty: the mesh looks
    the same; their sliders reach the weights the channel takes, as far as Blender allows), with a
    basis first when it has none; the names added (the basis included)."""
    added = []
    if mesh.data.shape_keys is None:
        mesh.shape_key_add(name="Basis", from_mix=False)
        added.append("Basis")
    blocks = mesh.data.shape_keys.key_blocks
    for channel in channels:
        if channel.path in blocks:
            continue
        block = mesh.shape_key_add(name=channel.path, from_mix=False)
        values = np.asarray(channel.values, np.float64)
        block.slider_min = float(np.clip(min(values.min(initial=0.0), 0.0), -10.0, 0.0))
        block.slider_max = float(np.clip(max(values.max(initial=1.0), 1.0), 1.0, 10.0))
        added.append(channel.path)
    return added


def remove_shape_keys(mesh, names: list[str]) -> None:
    """Undo ``add_cluster_keys``."""
    if mesh is None or mesh.data.shape_keys is None:
        return
    if "Basis" in names:
        mesh.shape_key_clear()
        return
    for name in names:
        block = mesh.data.shape_keys.key_blocks.get(name)
        if block is not None:
            mesh.shape_key_remove(block)


def _replace_materials(context, scene: Scene, materials, by_name):
    from .blender.build import replace_materials

    replaced = sorted(m.name for m in scene.materials if m.name in by_name)
    result = replace_materials(scene, context, materials)
    created = sorted(m.name for m in scene.materials if m.name not in by_name)
    note = f"{scene.name}: materials updated: {', '.join(replaced) or 'none'}; new: {', '.join(created) or 'none'}"
    return result, [note]


def _add_animation(
    context, scene: Scene, armature, materials, set_frame_range: bool, objects=(), place: int | None = None
):
    """The animation's actions on the armature, the materials or the objects, looping as the file
    says; and notes. ``place``: its place among the import's animations (``build.add_animations``)."""
    from .blender import compat
    from .blender.build import add_animations

    animation = scene.animations[0]
    result = add_animations(
        scene, context, armature, materials, objects, set_frame_rate=set_frame_range, place=place
    )
    if animation.extras.get("loop_mode") == convert.LOOP_MIRROR:
        for action in result.actions:
            for fcurve in compat.action_fcurves(action):
                for modifier in fcurve.modifiers:
                    if modifier.type == "CYCLES":
                        modifier.mode_before = modifier.mode_after = "MIRROR"
    notes = []
    if armature is not None:
        how = (
            f"baked for {len(result.baked)} channels (rest orientations mix the axes)"
            if result.baked
            else "a key at every frame"
            if convert.animation_kind(animation) == "bca"
            else "the file's keys kept with exact Bézier handles"
        )
        notes.append(f"{scene.name}: action {result.actions[0].name!r} on armature {armature.name!r}; {how}")
    group = records.record_group(result.actions[0]) if result.actions else None
    for owner in [*materials, *objects]:
        _record(owner, group)
    if materials:
        notes.append(f"{scene.name}: animates material(s) {', '.join(m.name for m in materials)}")
    if objects:
        what = "visibility" if convert.animation_kind(animation) == "bva" else "shape keys"
        notes.append(f"{scene.name}: animates the {what} of {', '.join(o.name for o in objects[:8])}")
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
    if obj is not None and obj.type == "MESH":
        owners.append(obj)
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
    active armature (BCK, BCA), the active object (BVA), its shape keys (BLA, BLK) or its active
    material (the others)."""
    from .animation import group_actions, primary_action

    armature = target_armature(context) if kind in files.JOINT_KINDS else None
    if kind in files.JOINT_KINDS and armature is None:
        raise ExportError(f"select the armature whose animation to export as .{kind}")
    if group != files.PLAYING:
        action = primary_action(group_actions(group))
        if action is None:
            raise ExportError(f"the animation {group!r} has no actions left")
        return armature, action
    obj = context.active_object
    if kind in files.JOINT_KINDS:
        owner, action = f"armature {armature.name!r}", _playing(armature)
    elif kind == "bva":
        if obj is None:
            raise ExportError("select a shape of the model whose .bva visibility animation to export")
        owner, action = f"object {obj.name!r}", _playing(obj)
    elif kind in ("bla", "blk"):
        keys = obj.data.shape_keys if obj is not None and obj.type == "MESH" else None
        if keys is None:
            raise ExportError(f"select the mesh whose shape keys play the .{kind} animation")
        owner, action = f"the shape keys of {obj.name!r}", _playing(keys)
    else:
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
        # A shape playing its own visibility (or cluster) animation names that one first.
        shape_keys = obj.data.shape_keys if obj is not None and obj.type == "MESH" else None
        action = (
            (_playing(obj) if obj is not None and obj.type == "MESH" else None)
            or _playing(shape_keys)
            or _playing(armature)
            or (_playing(material.node_tree) if material is not None else None)
        )
    group = records.record_group(action) if action is not None else None
    if group is not None:  # the group's first action holds its extras
        action = primary_action(group_actions(group)) or action
    kind = props.get_extras(action).get("j3d_type", "") if action is not None else ""
    if not kind:
        raise ExportError(
            f"{os.path.basename(path)}: name the archive member to replace (Archive Member), or select the "
            "armature, material or shape playing the J3D animation to export"
        )
    return kind


def export_scene(context, path: str, options: files.ExportOptions) -> Scene:
    """The chosen (or playing) animation, of the kind ``path``'s extension names, as a Scene for
    ``files.save``."""
    from .blender import compat
    from .blender.extract import extract_scene

    kind = _archive_kind(context, path, options) if files.is_archive_path(path) else files.kind_of(path)
    armature, action = export_action(context, kind, options.animation)
    if kind in ("bva", "bla", "blk") and records.read_record(action) is None:
        scene = keyed_scene(context, kind, action)
    else:
        scene = extract_scene(context, armature, [], actions=[action])
    animation = scene.animations[0] if scene.animations else None
    found = convert.animation_kind(animation) if animation is not None and animation.channels else None
    if found is None:
        raise ExportError(f"action {action.name!r} has no J3D channels to export as .{kind}")
    if {found, kind} == set(files.JOINT_KINDS):  # keyed ⇄ a value per frame
        convert.as_joint_kind(animation, kind)
    elif found != kind:
        raise ExportError(
            f"action {action.name!r} is a {found.upper()} animation with no {kind.upper()} channels: "
            f"export it as .{found}"
        )
    cycles = [m for fc in compat.action_fcurves(action) for m in fc.modifiers if m.type == "CYCLES"]
    looping = bool(cycles) or (action.use_frame_range and action.use_cyclic)
    mirrored = bool(cycles) and all(m.mode_after == "MIRROR" for m in cycles)
    apply.set_playback(animation, looping, mirrored)
    return scene


CLUSTER_DATA_PATH = re.compile(r'key_blocks\["(cluster\d+)"\]\.value$')


def keyed_scene(context, kind: str, action) -> Scene:
    """Visibility (BVA) or cluster weights (BLA, BLK) keyed in Blender rather than imported: the Hide in
    Viewport keys of every selected shape<index> (a shape without them always shown), or the
    cluster<index> shape-key keys of the active mesh."""
    from .blender import compat, props
    from .blender.animation import fcurve_rows

    def curves(id_data):
        playing = _playing(id_data)
        return compat.action_fcurves(playing) if playing is not None else []

    channels = []
    if kind == "bva":
        for obj in target_shapes(context):
            name = props.scene_name(obj)
            if convert.SHAPE_TARGET.match(name):
                curve = next((fc for fc in curves(obj) if fc.data_path == "hide_viewport"), None)
                rows = fcurve_rows(curve) if curve is not None else np.zeros((1, 7))
                channels.append(_keyed_channel("object", name, "hide", rows))
    else:
        mesh = target_mesh(context)
        for curve in curves(mesh.data.shape_keys):
            match = CLUSTER_DATA_PATH.match(curve.data_path)
            if match and len(curve.keyframe_points):
                channels.append(_keyed_channel("shape_key", mesh.name, match.group(1), fcurve_rows(curve)))
    if not channels:
        raise ExportError(
            f"action {action.name!r} keys no {'shape visibility' if kind == 'bva' else 'cluster'}"
        )
    start, end = action.frame_range
    animation = Animation(action.name, channels, frame_start=float(start), frame_end=float(end))
    animation.extras["j3d_type"] = kind
    return Scene(name=action.name, animations=[animation])


def _keyed_channel(kind: str, target: str, path: str, rows: np.ndarray) -> Channel:
    """A Scene channel of F-curve keys (``fcurve_rows``): Bézier when its first key is, else as the key says."""
    from .blender.animation import INTERPOLATION_CODES

    names = {code: name for name, code in INTERPOLATION_CODES.items()}
    interpolation = names.get(int(rows[0, 6]), "LINEAR")
    bezier = interpolation == "BEZIER"
    return Channel(
        kind,
        target,
        path,
        rows[:, 0].copy(),
        rows[:, 1:2].copy(),
        interpolation,
        rows[:, None, 2:4].copy() if bezier else None,
        rows[:, None, 4:6].copy() if bezier else None,
    )
