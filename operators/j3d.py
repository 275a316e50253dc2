"""J3D (Nintendo GameCube/Wii JSystem): animations and material sets applied to the selection.

- BCK: one action on the active (or first selected) armature; joints are matched
  by index in the armature's joint order, as the game matches them.
- BTK, BRK, BPK, BTP: actions on the node trees of the selected objects' materials,
  matched by material name as the game matches them (every material when nothing is selected).
- BMT: the set's materials replace those of the same name (their users switch), the others are new.
"""

from __future__ import annotations

import os

import bpy
import numpy as np
from bpy.props import BoolProperty, StringProperty

from ..formats.binary import FormatError
from ..formats.j3d import bck, bmt, bpk, brk, btk, btp, convert, material_set
from ..formats.scene import Scene
from .common import FileImporter

READERS = {".bck": bck, ".btk": btk, ".brk": brk, ".bpk": bpk, ".btp": btp}
EXTENSIONS = (*READERS, ".bmt")
JOINT_COUNT_OFFSET = 0x20 + 0x0C  # ANK1 is the file's only section; its joint count
LOOP_MIRROR = 4  # ping-pong forever: the Cycles modifiers mirror


class SelectionError(OSError):
    """The selection holds nothing the file applies to (an OSError: FileImporter reports it and rolls back)."""


def target_armature(context):
    """The active armature, else the first selected one."""
    candidates = [context.active_object, *context.selected_objects]
    return next((o for o in candidates if o is not None and o.type == "ARMATURE"), None)


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
        {int(v) for a in scene.animations for c in a.channels if convert.IMAGE_INDEX_PATH.match(c.path)
         for v in np.rint(np.asarray(c.values)).ravel()}
    )
    if textures_path:
        with open(textures_path, "rb") as f:
            data = f.read()
        is_set = textures_path.lower().endswith(".bmt")
        textures = (bmt.read if is_set else bmt.cut_from_model)(data, textures_path).tex1
        if textures is None:
            raise FormatError(textures_path, 0, "expected a TEX1 section (the textures a BTP switches between)")
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
        notes = [f"{name}: materials updated: {', '.join(replaced) or 'none'}; new: {', '.join(created) or 'none'}"]
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
                raise SelectionError(f"{os.path.basename(path)}: select the armature to apply the joint animation to")
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


classes = (IMPORT_SCENE_OT_j3d_animation,)
IMPORTERS = {".bmt": load_j3d}
IMPORT_MENU = (
    (IMPORT_SCENE_OT_j3d_animation.bl_idname, "J3D animation / material set (.bck .btk .brk .btp .bpk .bmt)"),
)
EXPORT_MENU = ()
FILE_HANDLERS = (
    ("IO_FH_retro_j3d_animation", "J3D animation / material set", IMPORT_SCENE_OT_j3d_animation.bl_idname, "",
     ";".join(EXTENSIONS)),
)
