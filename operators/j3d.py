"""J3D (Nintendo GameCube/Wii JSystem): animations and material sets applied to the selection.

- BCK: one action on the active (or first selected) armature; joints are matched
  by index in the armature's joint order, as the game matches them.
- BTK, BRK, BPK, BTP: actions on the node trees of the selected objects' materials,
  matched by material name as the game matches them (every material when nothing is selected).
- BMT: the set's materials replace those of the same name (their users switch), the others are new.

Export writes one animation back: the active armature's action as .bck (joints in the armature's
joint order), the active material's node-tree action as .btk .brk .bpk .btp; the extension chosen
says which. Unedited animations come back byte for byte.
"""

from __future__ import annotations

import os

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, StringProperty

from ..formats.errors import ExportError, FormatError, SelectionError
from ..formats.j3d import bck, bmt, bpk, brk, btk, btp, convert, material_set
from ..formats.scene import Animation, Channel, Scene, Skeleton, quat_to_matrix
from .common import FileExporter, FileImporter, target_armature, write_files

READERS = {".bck": bck, ".btk": btk, ".brk": brk, ".bpk": bpk, ".btp": btp}
EXTENSIONS = (*READERS, ".bmt")
JOINT_COUNT_OFFSET = 0x20 + 0x0C  # ANK1 is the file's only section; its joint count
LOOP_MIRROR = 4  # ping-pong forever: the Cycles modifiers mirror


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


def to_blender_uv(scene: Scene) -> None:
    """Texture transforms of a BTK from the GameCube's UV space (V down) to Blender's (V up).

    Flipping V turns the transform ``S·R(θ)·(uv − c) + c + t`` into the same form with
    −θ, −t_v and the centre's V at 1 − c_v: per-channel sign changes, so keys stay exact.
    """
    for animation in scene.animations:
        animation.extras["uv_v_up"] = True
        for channel in animation.channels:
            match = convert.TEXTURE_PATH.match(channel.path)
            if match is None:
                continue
            if "center" in channel.extras:
                u, v, w = channel.extras["center"]
                channel.extras["center"] = [u, 1.0 - v, w]
            if match.group(2) == "rotate" or (match.group(2) == "translate" and channel.index == 1):
                channel.values = -np.asarray(channel.values, np.float64)
                for side in ("handles_left", "handles_right"):
                    handles = getattr(channel, side)
                    if handles is not None:
                        handles = np.array(handles, np.float64)
                        handles[..., 1] *= -1
                        setattr(channel, side, handles)


def load_j3d(path: str, *, joint_names: list[str] | None = None) -> Scene:
    """A J3D animation (one Animation) or material set (materials and images) as a Scene.

    A BCK needs the joint names of the armature it goes to, in joint order.
    """
    with open(path, "rb") as f:
        data = f.read()
    extension = os.path.splitext(path)[1].lower()
    name = os.path.splitext(os.path.basename(path))[0]
    if extension == ".bmt":
        return material_set.bmt_to_scene(bmt.read(data, path), name, path)
    if extension not in READERS:
        raise OSError(f"{path}: not a J3D animation or material set ({', '.join(EXTENSIONS)})")
    model = READERS[extension].read(data, path)
    if extension == ".bck":
        if joint_names is None:
            raise ValueError("a BCK is matched to an armature's joints: give their names")
        if len(joint_names) != model.joint_count:
            raise FormatError(
                path,
                JOINT_COUNT_OFFSET,
                f"the animation has {model.joint_count} joints but the armature has {len(joint_names)}: "
                "it belongs to another model",
            )
    scene = convert.to_scene(model, joint_names, name)
    if extension == ".btk":
        to_blender_uv(scene)
    return scene


def pattern_textures(context, scene: Scene, textures_path: str = "") -> dict[int, bpy.types.Image]:
    """Blender images for the texture indices a BTP uses: from ``textures_path`` (a model or
    material set, decoded and packed), else the images a material set applied before brought."""
    from .blender import props
    from .blender.build import build_images

    used = sorted(
        {
            int(v)
            for a in scene.animations
            for c in a.channels
            if convert.IMAGE_INDEX_PATH.match(c.path)
            for v in np.rint(np.asarray(c.values)).ravel()
        }
    )
    if textures_path:
        with open(textures_path, "rb") as f:
            data = f.read()
        is_set = textures_path.lower().endswith(".bmt")
        textures = (bmt.read if is_set else bmt.cut_from_model)(data, textures_path).tex1
        if textures is None:
            raise FormatError(
                textures_path, 0, "expected a TEX1 section (the textures a BTP switches between)"
            )
        used = [i for i in used if i < len(textures.headers)]
        images = [material_set.tex1_image(textures, i, textures_path) for i in used]
        return dict(zip(used, build_images(images), strict=True))
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


def apply_scene(context, scene: Scene, *, set_frame_range: bool = False, textures_path: str = ""):
    """Apply a loaded J3D Scene to the selection: (BuildResult, notes on what went where, skipped targets).

    ``textures_path``: the model or material set whose textures a BTP switches between.
    """
    from .blender import compat, props
    from .blender.build import add_animations, replace_materials, switch_images

    name = scene.name
    materials = target_materials(context)
    by_name = {props.scene_name(m): m for m in materials}
    if scene.materials:
        replaced = sorted(m.name for m in scene.materials if m.name in by_name)
        result = replace_materials(scene, context, materials)
        created = sorted(m.name for m in scene.materials if m.name not in by_name)
        notes = [
            f"{name}: materials updated: {', '.join(replaced) or 'none'}; new: {', '.join(created) or 'none'}"
        ]
        return result, notes, []
    animation = scene.animations[0]
    armature = None
    skipped = []
    if convert.animation_kind(animation) == "bck":
        armature = target_armature(context)
        scene.skeletons = [armature_skeleton(context, armature)]
        animation.skeleton = 0
        used = []
    else:
        targets = sorted({c.target for c in animation.channels})
        skipped = [t for t in targets if t not in by_name]
        used = [by_name[t] for t in targets if t in by_name]
        animation.channels = [c for c in animation.channels if c.target in by_name]
        if not used:
            raise SelectionError(
                f"{name}: no selected object has a material it animates ({', '.join(targets[:8])})"
            )
    result = add_animations(scene, context, armature, used, set_frame_rate=set_frame_range)
    group = result.actions[0][props.ANIMATION]["group"]
    if animation.extras.get("loop_mode") == LOOP_MIRROR:
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
        notes.append(f"{name}: action {result.actions[0].name!r} on armature {armature.name!r}; {how}")
    for material in used:
        _record(material, group)
    if used:
        notes.append(f"{name}: animates material(s) {', '.join(m.name for m in used)}")
    if convert.animation_kind(animation) == "btp":
        images = pattern_textures(context, scene, textures_path)
        switched = [
            f"{c.target} texture {c.path.split('.')[1]}"
            for c in animation.channels
            if images and switch_images(by_name[c.target], int(c.path.split(".")[1]), images)
        ]
        if switched:
            notes.append(f"{name}: switches between {len(images)} textures on {', '.join(switched)}")
        else:
            scene.warnings.append(
                "no textures to switch between (apply the model's .bmt first, or choose Textures From): "
                "the texture index is keyed for export only"
            )
    return result, notes, skipped


class IMPORT_SCENE_OT_j3d_animation(bpy.types.Operator, FileImporter):
    """Apply J3D animations (.bck to the active armature; .btk .brk .bpk .btp to the selected objects'
    materials, by name) and material sets (.bmt)"""

    bl_idname = "import_scene.j3d_animation"
    bl_label = "Apply J3D Animation / Material Set"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".bck"
    filter_glob: StringProperty(default=";".join(f"*{e}" for e in EXTENSIONS), options={"HIDDEN"})

    set_frame_range: BoolProperty(
        name="Set Frame Range",
        description="Set the scene's frame rate (30) and range from the animation's length",
        default=False,
    )

    textures_file: StringProperty(
        name="Textures From",
        description="The model (.bmd .bdl) or material set (.bmt) whose textures a .btp switches between; "
        "empty: the textures of a material set applied before",
        subtype="FILE_PATH",
    )

    def load(self, context, path: str) -> Scene:
        joint_names = None
        if path.lower().endswith(".bck"):
            armature = target_armature(context)
            if armature is None:
                raise SelectionError(
                    f"{os.path.basename(path)}: select the armature to apply the joint animation to"
                )
            joint_names = armature_skeleton(context, armature).bone_names
        return load_j3d(path, joint_names=joint_names)

    def build(self, context, scene: Scene, path: str, progress):
        result, notes, skipped = apply_scene(
            context,
            scene,
            set_frame_range=self.set_frame_range,
            textures_path=bpy.path.abspath(self.textures_file),
        )
        for note in notes:
            self.report({"INFO"}, note)
        scene.warnings += [f"no selected material named {t!r}: its animation skipped" for t in skipped]
        scene.warnings += result.warnings
        return result

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        header, body = layout.panel("RETRO_j3d_import_playback", default_closed=False)
        header.label(text="Playback")
        if body:
            body.prop(self, "set_frame_range")
        header, body = layout.panel("RETRO_j3d_import_textures", default_closed=True)
        header.label(text="Texture Patterns")
        if body:
            body.prop(self, "textures_file")


# -- export -----------------------------------------------------------------------------------

PLAYING = "PLAYING"
_animation_items_alive: list = []  # Blender reads enum item strings after the callback returns


def _animation_items(self, context):
    """The J3D animations applied to the active armature and its active material, after "the one playing"."""
    from .animation import group_actions
    from .blender import props

    items = [(PLAYING, "Playing", "The armature's action for .bck, the active material's for the others")]
    obj = context.active_object if context else None
    owners = []
    if obj is not None and obj.type == "ARMATURE":
        owners.append(obj.data)
    if obj is not None and obj.active_material is not None:
        owners.append(obj.active_material)
    for owner in owners:
        for group in props.to_python(owner.get(props.ANIMATIONS, [])):
            primary = _primary(group_actions(group))
            if primary is not None:
                kind = props.get_extras(primary).get("j3d_type", "")
                items.append((group, f"{primary.name} ({kind.upper()})" if kind else primary.name, ""))
    _animation_items_alive[:] = items
    return items


def _primary(actions):
    """The action of a group that holds the animation's name, range and extras."""
    from .blender import props

    return next((a for a in actions if props.to_python(a[props.ANIMATION]).get("primary")), None)


def _playing(id_data):
    return id_data.animation_data.action if id_data is not None and id_data.animation_data else None


def export_action(context, kind: str, group: str = PLAYING):
    """(armature or None, action) to export as ``kind``: the chosen group's, else the one playing on the
    active armature (BCK) or on the active object's active material (the others)."""
    from .animation import group_actions
    from .blender import props

    armature = target_armature(context) if kind == "bck" else None
    if kind == "bck" and armature is None:
        raise ExportError("select the armature whose animation to export as .bck")
    if group != PLAYING:
        action = _primary(group_actions(group))
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
    if props.ANIMATION in action:  # the group's first action holds its extras
        action = _primary(group_actions(props.to_python(action[props.ANIMATION])["group"])) or action
    return armature, action


def quaternions_to_eulers(animation: Animation) -> None:
    """Bone rotations keyed as quaternions (Blender's default) as the XYZ eulers a BCK keys, sampled at
    every whole frame of their keyed range (rotation keys sit on whole frames in the file)."""
    from ..formats.curves import matrix_to_euler, sample

    for channel in animation.channels:
        if channel.target_kind != "bone" or channel.path != "rotation_quaternion":
            continue
        times = np.asarray(channel.times, np.float64)
        frames = np.arange(np.rint(times[0]), np.rint(times[-1]) + 1)
        quats = sample(
            times, channel.values, channel.interpolation, channel.handles_left, channel.handles_right, frames
        )
        quats /= np.linalg.norm(quats, axis=1, keepdims=True)
        channel.path, channel.times, channel.interpolation = "rotation_euler", frames, "LINEAR"
        channel.values = matrix_to_euler(quat_to_matrix(quats))
        channel.handles_left = channel.handles_right = None


def hold_rest(animation: Animation, skeleton: Skeleton) -> None:
    """Joint components the action does not key hold their rest: a BCK track without keys means
    scale 1, rotation 0 and translation 0, not the model's rest."""
    from ..formats.curves import matrix_to_euler

    local = skeleton.local_rest()
    scales = np.linalg.norm(local[:, :3, :3], axis=1)
    eulers = matrix_to_euler(local[:, :3, :3] / scales[:, None, :])
    rests = {
        "scale": scales,
        "rotation_euler": (eulers + np.pi) % (2 * np.pi) - np.pi,
        "location": local[:, :3, 3],
    }
    keyed = convert.ChannelIndex(animation.channels).by_key
    for joint, name in enumerate(skeleton.bone_names):
        for path, values in rests.items():
            animation.channels += [
                Channel(
                    "bone", name, path, np.zeros(1), np.array([[values[joint, axis]]]), "LINEAR", index=axis
                )
                for axis in range(3)
                if (name, path, axis) not in keyed
            ]


def set_playback(animation: Animation, action) -> None:
    """Loop mode and length for the file: the imported ones while the action still loops as imported,
    else from its Cycles modifiers (mirrored: ping-pong) or cyclic flag; J3D frames count from 0."""
    from .blender import compat

    cycles = [m for fc in compat.action_fcurves(action) for m in fc.modifiers if m.type == "CYCLES"]
    looping = bool(cycles) or (action.use_frame_range and action.use_cyclic)
    mirrored = bool(cycles) and all(m.mode_after == "MIRROR" for m in cycles)
    stored = animation.extras.get("loop_mode")
    if (
        stored is None
        or (stored in (convert.LOOP_REPEAT, LOOP_MIRROR)) != looping
        or (looping and (stored == LOOP_MIRROR) != mirrored)
    ):
        animation.extras["loop_mode"] = (LOOP_MIRROR if mirrored else convert.LOOP_REPEAT) if looping else 0
    animation.frame_start, animation.frame_end = 0.0, max(float(animation.frame_end), 0.0)
    if animation.frame_end > 0x7FFF:
        raise ExportError(
            f"action {action.name!r}: {animation.frame_end:g} frames, a J3D file holds at most 32767"
        )


def save_j3d(context, path: str, group: str = PLAYING) -> tuple[list[str], list[str]]:
    """Write the chosen (or playing) animation as the J3D file ``path``'s extension names."""
    from .blender.extract import extract_scene

    extension = os.path.splitext(path)[1].lower()
    if extension not in READERS:
        raise ExportError(
            f"{os.path.basename(path)}: name the file .bck, .btk, .brk, .bpk or .btp (its kind)"
        )
    kind = extension[1:]
    armature, action = export_action(context, kind, group)
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
    set_playback(animation, action)
    joint_names = None
    if kind == "bck":
        quaternions_to_eulers(animation)
        hold_rest(animation, scene.skeletons[0])
        joint_names = scene.skeletons[0].bone_names
    elif kind == "btk":
        to_blender_uv(scene)  # its own inverse: back to the GameCube's V-down UV space
    try:
        data = READERS[extension].write(convert.from_scene(scene, joint_names=joint_names))
    except ValueError as e:
        raise ExportError(f"action {action.name!r}: {e}") from e
    write_files({path: data})
    return [path], scene.warnings


class EXPORT_SCENE_OT_j3d_animation(bpy.types.Operator, FileExporter):
    """Export a J3D animation: the active armature's action as .bck, the active material's as .btk .brk .bpk
    .btp (the file extension chooses)"""

    bl_idname = "export_scene.j3d_animation"
    bl_label = "Export J3D Animation"
    bl_options = {"REGISTER", "PRESET"}

    filename_ext = ".bck"
    check_extension = None  # the extension the user types chooses the kind: keep it
    filter_glob: StringProperty(default=";".join(f"*{e}" for e in READERS), options={"HIDDEN"})

    animation: EnumProperty(
        name="Animation",
        description="The J3D animation applied to the active armature or material to export",
        items=_animation_items,
    )

    def save(self, context):
        return save_j3d(context, self.filepath, self.animation)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        layout.prop(self, "animation")


classes = (IMPORT_SCENE_OT_j3d_animation, EXPORT_SCENE_OT_j3d_animation)
IMPORTERS = {".bmt": load_j3d}
IMPORT_MENU = (
    (IMPORT_SCENE_OT_j3d_animation.bl_idname, "J3D animation / material set (.bck .btk .brk .btp .bpk .bmt)"),
)
EXPORT_MENU = ((EXPORT_SCENE_OT_j3d_animation.bl_idname, "J3D animation (.bck .btk .brk .bpk .btp)"),)
FILE_HANDLERS = (
    (
        "IO_FH_retro_j3d_animation",
        "J3D animation / material set",
        IMPORT_SCENE_OT_j3d_animation.bl_idname,
        EXPORT_SCENE_OT_j3d_animation.bl_idname,
        ";".join(EXTENSIONS),
    ),
)
