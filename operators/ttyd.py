"""Paper Mario: The Thousand-Year Door models (the game's ``a/`` files) with their TPL textures.

The game's model files have no extension ("a/c_mario"); neither has the TPL
that goes with one, named after the header's texture name plus "-"
("a/c_mario-"). So the file browser shows every file (filter "*") and a file
is accepted by its content (``formats.ttyd.inspect.detect``). There is no
drag-and-drop handler: Blender's file handlers match files by extension only.
"""

from __future__ import annotations

import os

import bpy
import numpy as np
from bpy.props import EnumProperty, StringProperty
from bpy_extras.io_utils import orientation_helper

from ..formats.errors import ExportError, FormatError
from ..formats.scene import Scene
from ..formats.textures import gx
from ..formats.textures import tpl as tpl_format
from ..formats.ttyd import convert, inspect
from ..formats.ttyd import model as fmt
from .blender.objects import deformed_meshes
from .common import FileExporter, FileImporter, axis_matrix_from, draw_transform, target_armature, write_files

# The file is Y-up with characters facing +Z (convert.default_axis).
AXIS_FORWARD, AXIS_UP = "-Z", "Y"
TPL_SUFFIX = "-"
# GX formats offered for re-encoding edited textures (palette formats need a palette and keep theirs).
TEXTURE_FORMATS = (gx.I4, gx.I8, gx.IA4, gx.IA8, gx.RGB565, gx.RGB5A3, gx.RGBA8, gx.CMPR)


def find_tpl(model_path: str, texture_name: str) -> str | None:
    """The TPL the header names ("<texture name>-") next to the model, whatever the case of its name."""
    if not texture_name:
        return None
    folder = os.path.dirname(model_path)
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return None
    wanted = (texture_name + TPL_SUFFIX).lower()
    return next((os.path.join(folder, n) for n in sorted(names) if n.lower() == wanted), None)


def load_ttyd(path: str, *, tpl_path: str = "", axis=None) -> Scene:
    """Read a model and its TPL into a Scene. Empty ``tpl_path``: find it next to the model.

    A missing TPL is a warning (the materials then show placeholder images).
    """
    with open(path, "rb") as f:
        data = f.read()
    if not inspect.detect(data, path):
        raise FormatError(
            path, 0, "not a Paper Mario TTYD model (no 0x1B0-byte header with its tables inside the file)"
        )
    model = fmt.read(data, path)
    texture_name = fmt.text(model.header.texture_name)
    tpl_path = tpl_path or find_tpl(path, texture_name)
    tpl = None
    warnings = []
    if tpl_path:
        with open(tpl_path, "rb") as f:
            tpl = tpl_format.read(f.read(), tpl_path)
    else:
        warnings.append(f"texture file {texture_name + TPL_SUFFIX!r} not found next to the model")
    scene = convert.to_scene(model, tpl, axis=convert.default_axis() if axis is None else axis)
    scene.warnings[:0] = warnings
    return scene


def show_texture_swaps(scene: Scene, result) -> None:
    """Make every texture slot whose image an animation swaps show the swap during playback.

    The builder keys the swapped image (a scene image index) as ``texture.<slot>.image_index`` on
    the material's node tree, which export reads back; ``switch_images`` makes the slot's image
    node follow that value, with one image node per image any animation shows in the slot.
    """
    from .blender.build import switch_images

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


# -- export -------------------------------------------------------------------


def export_objects(context) -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """The armature to export (active or selected, or the active mesh's) and every mesh it deforms."""
    armature = target_armature(context)
    if armature is None:
        raise ExportError("select the armature of the model to export (its groups are the bones)")
    return armature, deformed_meshes(armature, context.view_layer.objects, parented=True)


def save_ttyd(
    context, path: str, armature_obj, mesh_objs, *, texture_format: str = "ORIGINAL", axis=None
) -> tuple[list[str], list[str]]:
    """Write the model at ``path`` and its TPL ("<texture name>-") next to it; returns (paths, warnings).

    Unedited textures keep their encoded bytes; edited and new ones are encoded
    in their original GX format, or in ``texture_format`` (a ``gx.NAMES`` value)
    when it is not "ORIGINAL". Nothing is written unless every file could be made.
    """
    from .blender.extract import extract_scene

    scene = extract_scene(context, armature_obj, mesh_objs)
    if texture_format != "ORIGINAL":
        chosen = next(f for f in TEXTURE_FORMATS if gx.NAMES[f] == texture_format)
        for image in scene.images:
            if image.source_bytes is None:  # edited or new: encoded afresh
                image.extras["format"] = chosen
                image.extras.pop("palette", None)
    model, tpl = convert.from_scene(scene, axis=convert.default_axis() if axis is None else axis)
    files = {path: fmt.write(model)}
    if tpl is not None:
        tpl_name = fmt.text(model.header.texture_name) + TPL_SUFFIX
        files[os.path.join(os.path.dirname(os.path.abspath(path)), tpl_name)] = tpl_format.write(tpl)
    else:
        scene.warnings.append("the model has no image data: no TPL written")
    write_files(files)
    return list(files), scene.warnings


FORMAT_ITEMS = [
    ("ORIGINAL", "Original", "Each texture's format in the imported TPL (RGB5A3 for new ones)")
] + [(gx.NAMES[f], gx.NAMES[f], f"Encode edited and new textures as {gx.NAMES[f]}") for f in TEXTURE_FORMATS]

# The game's files have no extension: "" routes extensionless files of a batch run here.
IMPORTERS = {"": load_ttyd}


@orientation_helper(axis_forward=AXIS_FORWARD, axis_up=AXIS_UP)
class IMPORT_SCENE_OT_ttyd_model(bpy.types.Operator, FileImporter):
    """Import Paper Mario: The Thousand-Year Door models (files under a/) with their TPL textures and animations"""

    bl_idname = "import_scene.ttyd_model"
    bl_label = "Import Paper Mario TTYD Model"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    filename_ext = ""
    filter_glob: StringProperty(default="*", options={"HIDDEN"})

    tpl_mode: EnumProperty(
        name="Textures",
        items=(
            ("AUTO", "Automatic", 'The TPL the model names (texture name + "-"), from the model\'s folder'),
            ("FILE", "Chosen File", "A TPL file chosen below"),
        ),
    )
    tpl_file: StringProperty(name="TPL File", subtype="FILE_PATH")

    def load(self, context, path: str) -> Scene:
        return load_ttyd(
            path,
            tpl_path=bpy.path.abspath(self.tpl_file) if self.tpl_mode == "FILE" else "",
            axis=axis_matrix_from(self),
        )

    def build(self, context, scene: Scene, path: str, progress):
        result = super().build(context, scene, path, progress)
        show_texture_swaps(scene, result)
        return result

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        header, body = layout.panel("RETRO_ttyd_import_textures", default_closed=False)
        header.label(text="Textures")
        if body:
            body.prop(self, "tpl_mode")
            if self.tpl_mode == "FILE":
                body.prop(self, "tpl_file")
        draw_transform(layout, self, "RETRO_ttyd_import_transform")


@orientation_helper(axis_forward=AXIS_FORWARD, axis_up=AXIS_UP)
class EXPORT_SCENE_OT_ttyd_model(bpy.types.Operator, FileExporter):
    """Export the selected armature and its meshes as a Paper Mario TTYD model and its TPL ("<texture name>-")"""

    bl_idname = "export_scene.ttyd_model"
    bl_label = "Export Paper Mario TTYD Model"
    bl_options = {"REGISTER", "PRESET"}

    filename_ext = ""
    filter_glob: StringProperty(default="*", options={"HIDDEN"})

    texture_format: EnumProperty(
        name="Texture Format",
        description="GX format of edited and new textures (unedited ones keep their bytes)",
        items=FORMAT_ITEMS,
        default="ORIGINAL",
    )

    def invoke(self, context, event):
        if not self.filepath:  # the model's own name, as the game's files are named
            from .blender import props

            record = props.import_record([o for o in [context.active_object] if o is not None])
            name = props.to_python(record[props.SCENE])["name"] if record is not None else ""
            if name:
                self.filepath = name
        return super().invoke(context, event)

    def save(self, context):
        armature, meshes = export_objects(context)
        return save_ttyd(
            context,
            self.filepath,
            armature,
            meshes,
            texture_format=self.texture_format,
            axis=axis_matrix_from(self),
        )

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        header, body = layout.panel("RETRO_ttyd_export_textures", default_closed=False)
        header.label(text="Textures")
        if body:
            body.prop(self, "texture_format")
        draw_transform(layout, self, "RETRO_ttyd_export_transform")


classes = (IMPORT_SCENE_OT_ttyd_model, EXPORT_SCENE_OT_ttyd_model)
IMPORT_MENU = ((IMPORT_SCENE_OT_ttyd_model.bl_idname, "Paper Mario TTYD model"),)
EXPORT_MENU = ((EXPORT_SCENE_OT_ttyd_model.bl_idname, "Paper Mario TTYD model"),)
FILE_HANDLERS = ()  # the game's files have no extension to match (see the module docstring)
