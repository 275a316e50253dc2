"""Toshi engine (Jurassic Park: Operation Genesis): TMD models with their TKL and TML."""

from __future__ import annotations

import base64
import os

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, StringProperty
from bpy_extras.io_utils import ImportHelper, orientation_helper

from ..formats.errors import FormatError
from ..formats.scene import Scene, axis_matrix
from ..formats.toshi import convert, tkl, tmd, tml
from .blender.objects import deformed_by, deformed_meshes
from .common import FileExporter, FileImporter, axis_matrix_from, draw_transform, target_armature, write_files

# The existing JPOG tools keep the file's axes: its models stand upright in Blender's Z-up view.
AXIS_FORWARD, AXIS_UP = "Y", "Z"
# Collection extras key: the keyframe library read at import (base64), appended to on export.
TKL_LIBRARY = "tkl_library"


def _files_in(folder: str, extension: str) -> dict[str, str]:
    """Lower-cased file name → path, for the case-insensitive look-ups the game's folders need."""
    try:
        names = os.listdir(folder)
    except OSError:
        return {}
    return {n.lower(): os.path.join(folder, n) for n in names if n.lower().endswith(extension)}


def find_tkl(tmd_path: str, tkl_name: str) -> str | None:
    """The TKL the TMD header names, next to the TMD, whatever the case of its file name."""
    if not tkl_name:
        return None
    return _files_in(os.path.dirname(tmd_path), ".tkl").get(f"{tkl_name.lower()}.tkl")


def find_tml(tmd_path: str, material_names: set[str]) -> str | None:
    """A TML with the TMD's stem, else the first TML in the folder defining every material it uses."""
    tmls = _files_in(os.path.dirname(tmd_path), ".tml")
    stem = os.path.splitext(os.path.basename(tmd_path))[0].lower()
    if f"{stem}.tml" in tmls:
        return tmls[f"{stem}.tml"]
    wanted = {n.lower() for n in material_names}
    for path in sorted(tmls.values()):
        try:
            with open(path, "rb") as f:
                names = tml.material_names(f.read(), path)
        except (OSError, ValueError):
            continue
        if wanted <= {n.lower() for n in names}:
            return path
    return None


def _read(path: str, module):
    with open(path, "rb") as f:
        return module.read(f.read(), path)


def load_tmd(
    path: str,
    *,
    lods: str = "FIRST",
    animations: bool = True,
    tkl_path: str = "",
    tml_path: str = "",
    axis=None,
) -> Scene:
    """Read a TMD and the TKL and TML that go with it into a Scene.

    Empty ``tkl_path`` / ``tml_path`` mean "find automatically"; a missing
    partner is a warning in the scene, not an error.
    """
    model = _read(path, tmd)
    warnings = []
    tkl_model = tml_model = tkl_bytes = None
    if animations and model.animations:
        tkl_path = tkl_path or find_tkl(path, model.tkl_name)
        if tkl_path:
            with open(tkl_path, "rb") as f:
                tkl_bytes = f.read()
            tkl_model = tkl.read(tkl_bytes, tkl_path)
        else:
            warnings.append(f"keyframe library {model.tkl_name!r}.tkl not found next to the model")
    tml_path = tml_path or find_tml(path, model.material_names())
    if tml_path:
        tml_model = _read(tml_path, tml)
    else:
        warnings.append("no material library (.tml) defining the model's materials was found")
    if axis is None:
        axis = axis_matrix(AXIS_FORWARD, AXIS_UP)
    scene = convert.to_scene(
        model, tkl_model if animations else None, tml_model, axis=axis, lods=lods, animations=animations
    )
    scene.name = os.path.splitext(os.path.basename(path))[0]
    scene.warnings[:0] = warnings
    if tkl_bytes is not None:
        scene.extras[TKL_LIBRARY] = base64.b64encode(tkl_bytes).decode("ascii")
    scene.skeletons[0].extras.update(
        source_file=path,
        tkl_file=tkl_path or "",
        tml_file=tml_path or "",
        axis=np.asarray(axis, np.float64).ravel().tolist(),  # for re-reading animations the same way
    )
    return scene


def stored_library(record) -> tkl.TKL | None:
    """The keyframe library kept with an import (``record``: its collection), if any."""
    from .blender import props

    extras = props.get_extras(record) if record is not None else {}
    if TKL_LIBRARY not in extras:
        return None
    return tkl.read(base64.b64decode(extras[TKL_LIBRARY]), f"{record.name} (stored keyframe library)")


def library_name(header: dict) -> str:
    """The keyframe library name a TMD header's extras hold ("" for a model made in Blender)."""
    field = bytes.fromhex(header.get("tkl_field", ""))
    return field.split(b"\0", 1)[0].decode("ascii", "replace")


def load_library(context, armature_obj, tkl_path: str) -> tuple[int, list[str]]:
    """Re-read the armature's model animations against another keyframe library.

    The animation table lives in the TMD, so the model's file must still exist;
    the axis conversion is the one the model was imported with.
    Returns the number of actions made and the warnings.
    """
    from .blender import props
    from .blender.build import replace_animations

    imported = props.get_extras(armature_obj.data)
    source = imported.get("source_file", "")
    axis = np.reshape(imported["axis"], (4, 4)) if "axis" in imported else axis_matrix(AXIS_FORWARD, AXIS_UP)
    if not os.path.isfile(source):
        raise OSError(f"{armature_obj.name}: its model file {source!r} is needed for the animation table")
    model = _read(source, tmd)
    with open(tkl_path, "rb") as f:
        data = f.read()
    library = tkl.read(data, tkl_path)
    scene = convert.to_scene(model, library, None, axis=axis, lods="FIRST", filename=source)
    result = replace_animations(scene, armature_obj)
    extras = props.get_extras(armature_obj.data)
    extras["tkl_file"] = tkl_path
    props.set_extras(armature_obj.data, extras)
    record = props.import_record([armature_obj])
    if record is not None:
        extras = props.get_extras(record)
        extras.update(tkl=scene.extras["tkl"], **{TKL_LIBRARY: base64.b64encode(data).decode("ascii")})
        props.set_extras(record, extras)
    animation_warnings = [w for w in scene.warnings if w.startswith("animation ")]
    return len(result.actions), animation_warnings + result.warnings


# -- export -------------------------------------------------------------------


def export_objects(context) -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """The armature to export (active or selected, or the active mesh's) and every mesh it deforms."""
    armature = target_armature(context)
    active = context.active_object
    if armature is None and active is not None and active.type == "MESH":
        raise convert.ToshiExportError(
            f"mesh {active.name!r} has no armature (add an Armature modifier: TMD meshes are skinned)"
        )
    if armature is None:
        raise convert.ToshiExportError("select the armature of the model to export")
    meshes = deformed_meshes(armature, context.view_layer.objects)
    if not meshes:
        raise convert.ToshiExportError(f"armature {armature.name!r} deforms no mesh")
    return armature, meshes


def _weight_unweighted(scene: Scene, mesh_objs) -> None:
    """Give vertices without weights to the object's parent bone (else the root), with a warning."""
    names = scene.skeletons[0].bone_names
    for mesh, obj in zip(scene.meshes, mesh_objs, strict=True):
        if mesh.skin_weights is None:
            mesh.skin_joints = np.zeros((len(mesh.positions), 1), np.int32)
            mesh.skin_weights = np.zeros((len(mesh.positions), 1), np.float32)
        unweighted = ~(np.asarray(mesh.skin_weights) > 0).any(axis=1)
        if not unweighted.any():
            continue
        bone = obj.parent_bone if obj.parent_type == "BONE" and obj.parent_bone in names else names[0]
        mesh.skin_joints[unweighted] = 0
        mesh.skin_joints[unweighted, 0] = names.index(bone)
        mesh.skin_weights[unweighted] = 0
        mesh.skin_weights[unweighted, 0] = 1
        scene.warnings.append(
            f"mesh {obj.name!r}: {int(unweighted.sum())} vertices without weights given to bone {bone!r}"
        )


def save_tmd(
    context,
    path: str,
    armature_obj,
    mesh_objs,
    *,
    tkl_mode: str = "APPEND",
    new_tkl_name: str = "",
    write_tml: bool = True,
    lods: str = "ALL",
    axis=None,
) -> tuple[list[str], list[str]]:
    """Write the TMD at ``path`` and its TKL (and TML) next to it; returns (written paths, warnings).

    ``tkl_mode`` "APPEND": new keys are appended to the model's library (the
    one in the destination folder when it exists, else the one stored at
    import) so every index other models use stays valid. "NEW": a library of
    this model's keys only, named ``new_tkl_name``, which the TMD then names.
    Nothing is written unless every file could be made.
    """
    from .blender import props
    from .blender.extract import extract_scene

    if axis is None:
        axis = axis_matrix(AXIS_FORWARD, AXIS_UP)
    for obj in mesh_objs:
        if not deformed_by(obj, armature_obj, parented=False):
            raise convert.ToshiExportError(
                f"mesh {obj.name!r} is not deformed by armature {armature_obj.name!r}"
            )
    scene = extract_scene(context, armature_obj, mesh_objs)
    _weight_unweighted(scene, mesh_objs)
    for obj in mesh_objs:
        skipped = [m.name for m in obj.modifiers if m.type != "ARMATURE" and m.show_viewport]
        if skipped:
            scene.warnings.append(
                f"mesh {obj.name!r}: modifiers {skipped} are not applied (apply them first)"
            )
    folder = os.path.dirname(os.path.abspath(path))
    if tkl_mode == "NEW":
        if not new_tkl_name:
            raise convert.ToshiExportError("give the new keyframe library a name")
        base, name = None, new_tkl_name
    else:
        name = library_name(scene.extras) or os.path.splitext(os.path.basename(path))[0][:7]
        existing = find_tkl(path, name)
        base = _read(existing, tkl) if existing else stored_library(props.import_record([armature_obj]))
        if base is None:
            scene.warnings.append(f"no keyframe library {name!r} to append to: writing a new one")
    model, library, materials = convert.from_scene(scene, axis=axis, lods=lods, tkl=base, tkl_name=name)
    if len(library.name) > 7:
        scene.warnings.append(
            f"keyframe library name {library.name!r} is longer than 7 characters: the game reads it, "
            "some older JPOG tools do not"
        )
    files = {path: tmd.write(model), os.path.join(folder, f"{library.name}.tkl"): tkl.write(library)}
    if write_tml:
        files[os.path.splitext(path)[0] + ".tml"] = tml.write(materials)
    if base is not None:
        added = (len(library.positions) - len(base.positions), len(library.rotations) - len(base.rotations))
        if any(added):
            scene.warnings.append(
                f"appended {added[0]} positions and {added[1]} rotations to keyframe library {library.name!r}"
            )
    write_files(files)
    return list(files), scene.warnings


IMPORTERS = {".tmd": load_tmd}


@orientation_helper(axis_forward=AXIS_FORWARD, axis_up=AXIS_UP)
class IMPORT_SCENE_OT_toshi_tmd(bpy.types.Operator, FileImporter):
    """Import Jurassic Park: Operation Genesis models (.tmd) with their animations and materials"""

    bl_idname = "import_scene.toshi_tmd"
    bl_label = "Import Toshi TMD"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    filename_ext = ".tmd"
    filter_glob: StringProperty(default="*.tmd", options={"HIDDEN"})

    lods: EnumProperty(
        name="Levels of Detail",
        items=(
            ("FIRST", "First Only", "Import the most detailed level only"),
            ("ALL", "All", "Import every level, each in its own collection (LOD1 and up hidden)"),
        ),
        default="FIRST",
    )
    import_animations: BoolProperty(
        name="Animations", default=True, description="Import the model's animations as actions"
    )
    tkl_mode: EnumProperty(
        name="Keyframe Library",
        items=(
            ("AUTO", "Automatic", "The TKL named in the model's header, from the model's folder"),
            ("FILE", "Chosen File", "A TKL file chosen below"),
        ),
    )
    tkl_file: StringProperty(name="TKL File", subtype="FILE_PATH")
    tml_mode: EnumProperty(
        name="Material Library",
        items=(
            (
                "AUTO",
                "Automatic",
                "The TML with the model's name, else one in the folder defining its materials",
            ),
            ("FILE", "Chosen File", "A TML file chosen below"),
        ),
    )
    tml_file: StringProperty(name="TML File", subtype="FILE_PATH")

    def load(self, context, path: str) -> Scene:
        return load_tmd(
            path,
            lods=self.lods,
            animations=self.import_animations,
            tkl_path=bpy.path.abspath(self.tkl_file) if self.tkl_mode == "FILE" else "",
            tml_path=bpy.path.abspath(self.tml_file) if self.tml_mode == "FILE" else "",
            axis=axis_matrix_from(self),
        )

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        header, body = layout.panel("RETRO_toshi_import_include", default_closed=False)
        header.label(text="Include")
        if body:
            body.prop(self, "lods")
            body.prop(self, "import_animations")
        header, body = layout.panel("RETRO_toshi_import_libraries", default_closed=False)
        header.label(text="Libraries")
        if body:
            body.prop(self, "tkl_mode")
            if self.tkl_mode == "FILE":
                body.prop(self, "tkl_file")
            body.prop(self, "tml_mode")
            if self.tml_mode == "FILE":
                body.prop(self, "tml_file")
        draw_transform(layout, self, "RETRO_toshi_import_transform")


@orientation_helper(axis_forward=AXIS_FORWARD, axis_up=AXIS_UP)
class EXPORT_SCENE_OT_toshi_tmd(bpy.types.Operator, FileExporter):
    """Export the selected armature and the meshes it deforms as a JPOG model (.tmd, .tkl, .tml)"""

    bl_idname = "export_scene.toshi_tmd"
    bl_label = "Export Toshi TMD"
    bl_options = {"REGISTER", "PRESET"}

    filename_ext = ".tmd"
    filter_glob: StringProperty(default="*.tmd", options={"HIDDEN"})

    tkl_mode: EnumProperty(
        name="Keyframe Library",
        items=(
            (
                "APPEND",
                "Append",
                "Append new keys to the model's library; indices other models use stay valid",
            ),
            ("NEW", "New Library", "Write a library of this model's keys only, under a new name"),
        ),
        default="APPEND",
    )
    new_tkl_name: StringProperty(
        name="Library Name",
        description="Name of the new keyframe library (at most 15 characters; 7 or fewer for older tools)",
        maxlen=15,
    )
    write_tml: BoolProperty(
        name="Material Library",
        default=True,
        description="Write the materials and textures as a .tml next to the model",
    )
    lods: EnumProperty(
        name="Levels of Detail",
        items=(
            ("ALL", "All", "Every level of detail (collections LOD0, LOD1, …)"),
            ("FIRST", "First Only", "Only the most detailed level"),
        ),
        default="ALL",
    )

    def save(self, context):
        armature, meshes = export_objects(context)
        return save_tmd(
            context,
            self.filepath,
            armature,
            meshes,
            tkl_mode=self.tkl_mode,
            new_tkl_name=self.new_tkl_name,
            write_tml=self.write_tml,
            lods=self.lods,
            axis=axis_matrix_from(self),
        )

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        header, body = layout.panel("RETRO_toshi_export_libraries", default_closed=False)
        header.label(text="Libraries")
        if body:
            body.prop(self, "tkl_mode")
            if self.tkl_mode == "NEW":
                body.prop(self, "new_tkl_name")
            body.prop(self, "write_tml")
        header, body = layout.panel("RETRO_toshi_export_include", default_closed=False)
        header.label(text="Include")
        if body:
            body.prop(self, "lods")
        draw_transform(layout, self, "RETRO_toshi_export_transform")


class RETRO_MODELS_OT_toshi_load_tkl(bpy.types.Operator, ImportHelper):
    """Replace the active model's animations with its animation table read against another keyframe library"""

    bl_idname = "retro_models.toshi_load_tkl"
    bl_label = "Load Keyframe Library"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".tkl"
    filter_glob: StringProperty(default="*.tkl", options={"HIDDEN"})

    @classmethod
    def poll(cls, context):
        from .blender import props

        obj = context.active_object
        return obj is not None and obj.type == "ARMATURE" and "source_file" in props.get_extras(obj.data)

    def execute(self, context):
        from .common import rollback_on_error

        try:
            with rollback_on_error():
                count, warnings = load_library(context, context.active_object, self.filepath)
        except (FormatError, OSError) as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        for warning in warnings:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, f"{os.path.basename(self.filepath)}: {count} actions")
        return {"FINISHED"}


classes = (IMPORT_SCENE_OT_toshi_tmd, EXPORT_SCENE_OT_toshi_tmd, RETRO_MODELS_OT_toshi_load_tkl)
IMPORT_MENU = ((IMPORT_SCENE_OT_toshi_tmd.bl_idname, "Toshi / JPOG model (.tmd)"),)
EXPORT_MENU = ((EXPORT_SCENE_OT_toshi_tmd.bl_idname, "Toshi / JPOG model (.tmd)"),)
FILE_HANDLERS = (
    (
        "IO_FH_retro_toshi_tmd",
        "Toshi / JPOG model",
        "import_scene.toshi_tmd",
        "export_scene.toshi_tmd",
        ".tmd",
    ),
)
