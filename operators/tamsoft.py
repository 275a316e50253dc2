"""Tamsoft engine (Senran Kagura and others): tmd0 models, bare or inside their CAT container."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import bpy
from bpy.props import StringProperty
from bpy_extras.io_utils import orientation_helper

from ..formats.errors import FormatError
from ..formats.scene import Scene
from ..formats.tamsoft import cat, convert, names, tmd0
from .blender.objects import deformed_meshes
from .common import FileExporter, FileImporter, axis_matrix_from, draw_transform, target_armature, write_files

# The file is Y-up with -Z forward (as glTF): the default turns it to Blender's Z-up.
AXIS_FORWARD, AXIS_UP = "-Z", "Y"
EXTENSIONS = (".tmd", ".cat")
# Import collection extras: the file the model came from, and its CAT without the model payload.
SOURCE_FILE = "source_file"
CONTAINER = "cat"
# ... and its texture CAT without the texture payloads (those travel on the images).
TEXTURE_CONTAINER = "texture_cat"
TOSHI_MAGIC = b"TMDL"  # JPOG models share the .tmd extension


def detect(path: str) -> bool:
    """Whether the file is a tmd0 model or a CAT holding one (tells these .tmd from JPOG's)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] in tmd0.MAGICS:
        return True
    try:
        cat.model_index(cat.read(data, path), path)
    except FormatError:
        return False
    return True


def read_names(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        return names.parse_names(f.read())


def _stored_container(package: cat.Package) -> dict:
    """The model's CAT minus the model itself (kept by its hash), to write an edited model back into."""
    container = package.cat
    return {
        "endian": container.endian,
        "header_size": container.header_size,
        "name_block": container.name_block.hex(),
        "index": package.index,
        "model_sha1": hashlib.sha1(container.payloads[package.index]).hexdigest(),
        "payloads": [
            "" if i == package.index else base64.b64encode(p).decode("ascii")
            for i, p in enumerate(container.payloads)
        ],
    }


def container_bytes(stored: dict, model_bytes: bytes) -> bytes:
    """The stored CAT with ``model_bytes`` as its model payload."""
    index = stored["index"]
    payloads = [base64.b64decode(p) for p in stored["payloads"]]
    # An unchanged model goes back as it was; replace_payload pads only a changed one.
    unchanged = hashlib.sha1(model_bytes).hexdigest() == stored["model_sha1"]
    payloads[index] = model_bytes if unchanged else b""
    container = cat.CAT(
        stored["endian"], stored["header_size"], bytes.fromhex(stored["name_block"]), payloads
    )
    return cat.write(cat.replace_payload(container, index, model_bytes))


def _stored_texture_container(package: cat.Package) -> dict:
    """The texture CAT minus the payloads of the model's textures (each image keeps its own)."""
    container = package.texture_cat
    count = min(len(container.payloads), len(package.model.textures))
    return {
        "endian": container.endian,
        "header_size": container.header_size,
        "name_block": container.name_block.hex(),
        "texture_count": count,
        "other_payloads": [base64.b64encode(p).decode("ascii") for p in container.payloads[count:]],
    }


def texture_container_bytes(stored: dict, images) -> tuple[bytes, list[str]]:
    """The stored texture CAT with its textures taken from ``images`` (the exported model's), and warnings."""
    payloads, warnings = convert.texture_payloads(images, stored["texture_count"])
    payloads += [base64.b64decode(p) for p in stored["other_payloads"]]
    container = cat.CAT(
        stored["endian"], stored["header_size"], bytes.fromhex(stored["name_block"]), payloads
    )
    return cat.write(container), warnings


def load_tamsoft(path: str, *, names_file: str = "", axis=None) -> Scene:
    """Read a bare tmd0 or a model CAT (with the texture CAT next to it) into a Scene.

    ``names_file``: one bone name per line; names whose hash matches a bone
    name it, the others keep ``bone_<hash>``.
    """
    with open(path, "rb") as f:
        if f.read(4) == TOSHI_MAGIC:
            raise FormatError(path, 0, "a Toshi / JPOG model (TMDL), not a Tamsoft tmd0: use its importer")
    package = cat.open_model(Path(path))
    candidates = read_names(names_file) if names_file else []
    scene = convert.to_scene(package.model, package.textures, candidates, axis=axis, name=package.name)
    scene.warnings[:0] = package.warnings
    if candidates and scene.skeletons:
        bones = scene.skeletons[0].bone_names
        matched = sum(not names.FALLBACK.match(b) for b in bones)
        if not matched:
            scene.warnings.append(
                f"none of the {len(candidates)} names in {os.path.basename(names_file)} "
                f"matches any of the {len(bones)} bone hashes"
            )
    scene.extras[SOURCE_FILE] = path
    if package.cat is not None:
        scene.extras[CONTAINER] = _stored_container(package)
    if package.texture_cat is not None:
        scene.extras[TEXTURE_CONTAINER] = _stored_texture_container(package)
    return scene


# -- export -------------------------------------------------------------------


def export_objects(context) -> tuple[bpy.types.Object | None, list[bpy.types.Object]]:
    """The armature (active, selected, or the active mesh's) and the meshes it deforms; else the selected meshes."""
    armature = target_armature(context)
    if armature is not None:
        meshes = deformed_meshes(armature, context.view_layer.objects)
        if not meshes:
            raise convert.TamsoftExportError(f"armature {armature.name!r} deforms no mesh")
    else:
        meshes = [
            o
            for o in [context.active_object, *context.selected_objects]
            if o is not None and o.type == "MESH"
        ]
        if not meshes:
            raise convert.TamsoftExportError("select the model's armature or its meshes")
    return armature, sorted(set(meshes), key=lambda o: o.name)


def save_tamsoft(context, path: str, armature_obj, mesh_objs, *, axis=None) -> tuple[list[str], list[str]]:
    """Write the model at ``path``: a bare tmd0, or (for a ``.cat`` path) the CAT it was imported from
    with the model replaced, and the texture CAT next to it (``_mdl_`` → ``_tex_``) with the images.
    Returns the written paths and the warnings; writes nothing on error."""
    from .blender.extract import extract_scene

    scene = extract_scene(context, armature_obj, mesh_objs)
    model_bytes = tmd0.write(convert.from_scene(scene, axis=axis))
    if os.path.splitext(path)[1].lower() != ".cat":
        write_files({path: model_bytes})  # a bare tmd0 has no texture container
        return [path], scene.warnings
    stored = scene.extras.get(CONTAINER)
    if stored is None:
        raise convert.TamsoftExportError("the model was not imported from a CAT: export it as .tmd")
    files = {path: container_bytes(stored, model_bytes)}
    stored_textures = scene.extras.get(TEXTURE_CONTAINER)
    if stored_textures is not None:
        texture_path = cat.texture_cat_name(Path(path))
        if texture_path is None:
            scene.warnings.append(
                f"{os.path.basename(path)} has no _mdl_ in its name: its texture CAT was not written"
            )
        else:
            files[str(texture_path)], warnings = texture_container_bytes(stored_textures, scene.images)
            scene.warnings.extend(warnings)
    write_files(files)
    return list(files), scene.warnings


def _source_of(context) -> str:
    """The file the model to export was imported from ("" when unknown)."""
    from .blender import props

    try:
        armature, meshes = export_objects(context)
    except convert.TamsoftExportError:
        return ""
    record = props.import_record([o for o in [armature, *meshes] if o is not None])
    return props.get_extras(record).get(SOURCE_FILE, "") if record is not None else ""


IMPORTERS = {".tmd": load_tamsoft, ".cat": load_tamsoft}


@orientation_helper(axis_forward=AXIS_FORWARD, axis_up=AXIS_UP)
class IMPORT_SCENE_OT_tamsoft_tmd0(bpy.types.Operator, FileImporter):
    """Import Tamsoft models (Senran Kagura and others): bare tmd0 (.tmd) or inside a CAT (.cat)"""

    bl_idname = "import_scene.tamsoft_tmd0"
    bl_label = "Import Tamsoft Model"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    filename_ext = ".tmd"
    filter_glob: StringProperty(default="*.tmd;*.cat", options={"HIDDEN"})

    names_file: StringProperty(
        name="Bone Names",
        subtype="FILE_PATH",
        description="A text file with one bone name per line: a name whose hash matches a bone names it "
        "(the file stores hashes only)",
    )

    def load(self, context, path: str) -> Scene:
        names_file = bpy.path.abspath(self.names_file) if self.names_file else ""
        return load_tamsoft(path, names_file=names_file, axis=axis_matrix_from(self))

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        header, body = layout.panel("RETRO_tamsoft_import_bones", default_closed=False)
        header.label(text="Bones")
        if body:
            body.prop(self, "names_file")
        draw_transform(layout, self, "RETRO_tamsoft_import_transform")


@orientation_helper(axis_forward=AXIS_FORWARD, axis_up=AXIS_UP)
class EXPORT_SCENE_OT_tamsoft_tmd0(bpy.types.Operator, FileExporter):
    """Export the selected armature and the meshes it deforms as a Tamsoft model: a bare tmd0 (.tmd), or
    the CAT it was imported from with the model replaced (.cat)"""

    bl_idname = "export_scene.tamsoft_tmd0"
    bl_label = "Export Tamsoft Model"
    bl_options = {"REGISTER", "PRESET"}

    filename_ext = ".tmd"
    check_extension = None  # both .tmd and .cat are kept; see check()
    filter_glob: StringProperty(default="*.tmd;*.cat", options={"HIDDEN"})

    def invoke(self, context, event):
        # Offer the name of the file the model came from: a model from a CAT goes back into a CAT.
        source = _source_of(context)
        if not self.filepath and source:
            folder = os.path.dirname(bpy.data.filepath) or os.path.dirname(source)
            self.filepath = os.path.join(folder, os.path.basename(source))
        return super().invoke(context, event)

    def check(self, context):
        changed = super().check(context)  # axis options
        root, extension = os.path.splitext(self.filepath)
        if os.path.basename(self.filepath) and extension.lower() not in EXTENSIONS:
            self.filepath = root + self.filename_ext
            changed = True
        return changed

    def save(self, context):
        path = self.filepath
        if os.path.splitext(path)[1].lower() not in EXTENSIONS:
            path += self.filename_ext
        armature, meshes = export_objects(context)
        return save_tamsoft(context, path, armature, meshes, axis=axis_matrix_from(self))

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        layout.label(text="A .cat name writes the model and texture CATs", icon="INFO")
        draw_transform(layout, self, "RETRO_tamsoft_export_transform")


classes = (IMPORT_SCENE_OT_tamsoft_tmd0, EXPORT_SCENE_OT_tamsoft_tmd0)
IMPORT_MENU = ((IMPORT_SCENE_OT_tamsoft_tmd0.bl_idname, "Tamsoft model (.tmd, .cat)"),)
EXPORT_MENU = ((EXPORT_SCENE_OT_tamsoft_tmd0.bl_idname, "Tamsoft model (.tmd)"),)
# Both this handler and the JPOG one accept .tmd: Blender then lets the user pick from a menu.
FILE_HANDLERS = (
    (
        "IO_FH_retro_tamsoft_tmd0",
        "Tamsoft model",
        IMPORT_SCENE_OT_tamsoft_tmd0.bl_idname,
        EXPORT_SCENE_OT_tamsoft_tmd0.bl_idname,
        ".tmd;.cat",
    ),
)
