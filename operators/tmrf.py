"""Tertius engine media resource files (TMRF): skeletons, models and animations in one container.

What a file holds is read from its contents, whatever its extension. A file
with animations and neither skeleton nor mesh applies them to the selected
armature, matching bones by name; its layout is kept with the armature so that
exporting those animations again gives the file back.
"""

from __future__ import annotations

import hashlib
import json
import os

import bpy
import numpy as np
from bpy.props import EnumProperty, StringProperty
from bpy_extras.io_utils import orientation_helper

from ..formats.errors import ExportError, SelectionError
from ..formats.scene import Scene, axis_matrix
from ..formats.tmrf import convert, media
from .blender.objects import armature_modifier_target, deformed_meshes
from .common import FileExporter, FileImporter, axis_matrix_from, draw_transform, target_armature, write_files

# The spec names no axes: the default conversion keeps the file's.
AXIS_FORWARD, AXIS_UP = "Y", "Z"
# Suggested extensions and what an export with each holds (convert.CONTENTS).
CONTENT_BY_EXTENSION = {
    ".tmdl": "everything",
    ".tani": "animations",
    ".tapk": "animations",
    ".tskl": "skeleton",
    ".tskm": "skinned_model",
    ".tmsh": "static_mesh",
    ".tpak": "everything",
}
EXTENSIONS = tuple(CONTENT_BY_EXTENSION)
# Armature data extras key: layouts of the animation-only files applied to it, by source key.
ANIMATION_LAYOUTS = "tmrf_animation_layouts"
# Animation extras key: the source key of the animation-only file it came from.
ANIMATION_SOURCE = "tmrf_animation_source"
_KEEP = "KEEP"


class TMRFExportError(ExportError):
    """What to export is missing or does not fit the chosen contents."""


def is_animation_only(scene: Scene) -> bool:
    return bool(scene.animations) and not scene.skeletons and not scene.meshes


def load_tmrf(path: str, *, axis=None) -> Scene:
    """Read any TMRF file into a Scene (an animation-only one has animations without a skeleton)."""
    with open(path, "rb") as f:
        model = media.read(f.read(), path)
    if axis is None:
        axis = axis_matrix(AXIS_FORWARD, AXIS_UP)
    scene = convert.to_scene(model, axis)
    scene.name = os.path.splitext(os.path.basename(path))[0]
    return scene


def retarget(scene: Scene, skeleton, axis: np.ndarray) -> None:
    """Bind an animation-only scene to ``skeleton`` (the armature's, Blender's bone names).

    Channels of bones the armature lacks are dropped with a warning. Root bones
    hang from the armature object, so their keys get the axis conversion that
    ``convert.to_scene`` gives the roots of a skeleton in the file.
    """
    layout = scene.extras.get("tmrf", {})
    source = hashlib.sha1(json.dumps(layout, sort_keys=True).encode()).hexdigest()[:16]
    scene.extras = {ANIMATION_LAYOUTS: {source: layout}}
    scene.skeletons = [skeleton]
    roots = {n for n, p in zip(skeleton.bone_names, skeleton.parents, strict=True) if p < 0}
    for animation in scene.animations:
        animation.skeleton = 0
        animation.extras[ANIMATION_SOURCE] = source
        missing = sorted({c.target for c in animation.channels if c.target not in skeleton.bone_names})
        if missing:
            scene.warnings.append(
                f"animation {animation.name}: bones missing from armature {skeleton.name!r} left out: "
                + ", ".join(missing)
            )
        animation.channels = [c for c in animation.channels if c.target in skeleton.bone_names]
        by_bone: dict[str, dict[str, object]] = {}
        for channel in animation.channels:
            if channel.target in roots:
                by_bone.setdefault(channel.target, {})[channel.path] = channel
        for pair in by_bone.values():  # to_scene gives every bone both, at the same times
            location, rotation = pair["location"], pair["rotation_quaternion"]
            # The converter's own root conversion, so that export undoes it bit for bit.
            location.values, rotation.values = convert._root_channels(location.values, rotation.values, axis)


def apply_animations(context, scene: Scene, armature_obj):
    """Build an animation-only scene (bound by ``retarget``) onto ``armature_obj``."""
    from .blender import props
    from .blender.build import add_animations

    extras = props.get_extras(armature_obj.data)
    extras.setdefault(ANIMATION_LAYOUTS, {}).update(scene.extras[ANIMATION_LAYOUTS])
    props.set_extras(armature_obj.data, extras)
    result = add_animations(scene, context, armature_obj)
    result.armatures = []  # the armature was there before: the report counts what the file added
    return result


# -- export -------------------------------------------------------------------


def export_objects(context) -> tuple[bpy.types.Object | None, list[bpy.types.Object]]:
    """The armature (active or selected, else the one a selected mesh is deformed by), the selected
    meshes and every mesh that armature deforms."""
    selected = [o for o in [context.active_object, *context.selected_objects] if o is not None]
    meshes = {o.name: o for o in selected if o.type == "MESH"}
    armature = target_armature(context)
    if armature is None:
        armature = next(filter(None, map(armature_modifier_target, meshes.values())), None)
    if armature is not None:
        for obj in deformed_meshes(armature, context.view_layer.objects):
            meshes.setdefault(obj.name, obj)
    return armature, [meshes[n] for n in sorted(meshes)]


def _choose_layout(scene: Scene, armature_obj, content: str) -> None:
    """Animations applied from an animation-only file write that file's layout back when they are
    all that is exported; otherwise they are new resources of the exported file."""
    from .blender import props

    files = props.get_extras(armature_obj.data).get(ANIMATION_LAYOUTS, {}) if armature_obj else {}
    sources = {a.extras.get(ANIMATION_SOURCE) for a in scene.animations}
    if content == "animations" and len(sources) == 1 and next(iter(sources)) in files:
        scene.extras["tmrf"] = files[next(iter(sources))]
        return
    for animation in scene.animations:
        if animation.extras.pop(ANIMATION_SOURCE, None) is not None:
            animation.extras.pop("tmrf_resource", None)
            animation.extras.pop("tmrf_name", None)


def save_tmrf(
    context,
    path: str,
    armature_obj,
    mesh_objs,
    *,
    normals: str | None = None,
    tangents: str | None = None,
    animation: str | None = None,
    s16: bool | None = None,
    axis=None,
) -> list[str]:
    """Write the armature, meshes and their actions at ``path``; the extension chooses the contents.

    The options are those of ``convert.from_scene`` (None keeps each imported
    resource's encoding). Returns the warnings.
    """
    from .blender.extract import extract_scene

    extension = os.path.splitext(path)[1].lower()
    if extension not in CONTENT_BY_EXTENSION:
        raise TMRFExportError(
            f"{os.path.basename(path)}: the extension must be one of {', '.join(EXTENSIONS)}"
        )
    content = CONTENT_BY_EXTENSION[extension]
    needs_armature = content in ("skeleton", "animations")
    if armature_obj is None and (needs_armature or not mesh_objs):
        raise TMRFExportError(
            f"select an armature to export {extension} files" if needs_armature else "select meshes to export"
        )
    if content in ("static_mesh", "skinned_model") and not mesh_objs:
        raise TMRFExportError(f"{extension} files hold meshes: select the meshes to export")
    scene = extract_scene(context, armature_obj, mesh_objs)
    if content == "animations" and not scene.animations:
        raise TMRFExportError(f"armature {armature_obj.name!r} has no animations to export")
    _choose_layout(scene, armature_obj, content)
    if axis is None:
        axis = axis_matrix(AXIS_FORWARD, AXIS_UP)
    try:
        model = convert.from_scene(
            scene,
            normals=normals,
            tangents=tangents,
            animation=animation,
            s16=s16,
            content=content,
            axis=axis,
        )
    except ValueError as e:  # options that do not go together
        raise TMRFExportError(str(e)) from e
    write_files({path: media.write(model)})
    return scene.warnings


IMPORTERS = {extension: load_tmrf for extension in EXTENSIONS}
_GLOB = ";".join(f"*{e}" for e in EXTENSIONS)


@orientation_helper(axis_forward=AXIS_FORWARD, axis_up=AXIS_UP)
class IMPORT_SCENE_OT_tertius_tmrf(bpy.types.Operator, FileImporter):
    """Import Tertius media resource files: skeletons, skinned and static meshes, animations"""

    bl_idname = "import_scene.tertius_tmrf"
    bl_label = "Import Tertius Media"
    bl_options = {"REGISTER", "UNDO", "PRESET"}

    filename_ext = ".tpak"
    filter_glob: StringProperty(default=_GLOB, options={"HIDDEN"})

    def load(self, context, path: str) -> Scene:
        from .blender.extract import extract_scene

        axis = axis_matrix_from(self)
        scene = load_tmrf(path, axis=axis)
        if is_animation_only(scene):
            armature = target_armature(context)
            if armature is None:
                raise SelectionError(
                    f"{os.path.basename(path)}: the file holds only animations: select the armature to apply them to"
                )
            retarget(scene, extract_scene(context, armature, [], actions=[]).skeletons[0], axis)
        return scene

    def build(self, context, scene: Scene, path: str, progress):
        if ANIMATION_LAYOUTS in scene.extras:  # retargeted by load
            return apply_animations(context, scene, target_armature(context))
        return super().build(context, scene, path, progress)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        draw_transform(layout, self, "RETRO_tmrf_import_transform")


def _option(value: str):
    """An export enum's value as ``convert.from_scene`` takes it (KEEP: as imported)."""
    return None if value == _KEEP else value.lower()


@orientation_helper(axis_forward=AXIS_FORWARD, axis_up=AXIS_UP)
class EXPORT_SCENE_OT_tertius_tmrf(bpy.types.Operator, FileExporter):
    """Export the selected armature, meshes and actions as a Tertius media resource file"""

    bl_idname = "export_scene.tertius_tmrf"
    bl_label = "Export Tertius Media"
    bl_options = {"REGISTER", "PRESET"}

    filename_ext = ".tmdl"
    filter_glob: StringProperty(default=_GLOB, options={"HIDDEN"})

    file_contents: EnumProperty(
        name="Contents",
        description="What the file holds; it sets the file's extension",
        items=(
            (".tmdl", "Model (.tmdl)", "Skeleton, skinned meshes and animations"),
            (".tskm", "Skinned Model (.tskm)", "Meshes with their skin, without the skeleton"),
            (".tmsh", "Static Mesh (.tmsh)", "Meshes without skin"),
            (".tskl", "Skeleton (.tskl)", "The armature's skeleton only"),
            (".tani", "Animation (.tani)", "The armature's animations only"),
            (".tapk", "Animation Pack (.tapk)", "The armature's animations only"),
            (".tpak", "Everything (.tpak)", "Everything, shader resources kept from the import included"),
        ),
        default=".tmdl",
    )
    normals: EnumProperty(
        name="Normals",
        items=(
            (_KEEP, "As Imported", "Each imported mesh keeps its encoding; new meshes are compressed"),
            ("NONE", "Full", "Three floats per normal (Normals)"),
            ("COMPRESSED", "Compressed", "Two 16-bit angles per normal (CompressedNormals)"),
        ),
    )
    tangents: EnumProperty(
        name="Tangents",
        items=(
            (_KEEP, "As Imported", "Each imported mesh keeps its encoding; new meshes get full tangents"),
            ("NONE", "Full", "Both tangent vectors as floats (TangentVectors)"),
            ("COMPRESSED", "Compressed", "Horizontal vector and a sign (CompressedTangentVectors)"),
            ("HIGH", "High Compression", "One 16-bit angle per vertex; needs compressed normals"),
        ),
    )
    animation_kind: EnumProperty(
        name="Animations",
        items=(
            (_KEEP, "As Imported", "Each imported animation keeps its kind; new ones are frame animations"),
            ("FRAME", "Frames", "One pose per frame at the animation's frame rate (AX3FrameAnimation)"),
            ("TRACK", "Tracks", "Keys at their times, per bone (AX3TrackAnimation)"),
        ),
    )
    orientations: EnumProperty(
        name="Orientations",
        description="Storage of frame animation orientations",
        items=(
            (_KEEP, "As Imported", "Each imported bone keeps its storage; new ones are 32-bit floats"),
            ("F32", "32-bit Floats", "Exact"),
            ("S16", "16-bit Integers", "Half the size, to about 1/32767"),
        ),
    )

    def check(self, context):
        # The chosen contents decide the extension.
        stem, extension = os.path.splitext(self.filepath)
        if not os.path.basename(self.filepath) or extension.lower() == self.file_contents:
            return False
        self.filepath = (
            stem if extension.lower() in CONTENT_BY_EXTENSION else self.filepath
        ) + self.file_contents
        return True

    def save(self, context):
        path = self.filepath
        if os.path.splitext(path)[1].lower() not in CONTENT_BY_EXTENSION:
            path += self.file_contents
        armature, meshes = export_objects(context)
        return [path], save_tmrf(
            context,
            path,
            armature,
            meshes,
            normals=_option(self.normals),
            tangents=_option(self.tangents),
            animation=_option(self.animation_kind),
            s16=None if self.orientations == _KEEP else self.orientations == "S16",
            axis=axis_matrix_from(self),
        )

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        layout.prop(self, "file_contents")
        header, body = layout.panel("RETRO_tmrf_export_compression", default_closed=False)
        header.label(text="Compression")
        if body:
            body.prop(self, "normals")
            body.prop(self, "tangents")
        header, body = layout.panel("RETRO_tmrf_export_animation", default_closed=False)
        header.label(text="Animation")
        if body:
            body.prop(self, "animation_kind")
            body.prop(self, "orientations")
        draw_transform(layout, self, "RETRO_tmrf_export_transform")


classes = (IMPORT_SCENE_OT_tertius_tmrf, EXPORT_SCENE_OT_tertius_tmrf)
_MENU_TEXT = f"Tertius media ({' '.join(EXTENSIONS)})"
IMPORT_MENU = ((IMPORT_SCENE_OT_tertius_tmrf.bl_idname, _MENU_TEXT),)
EXPORT_MENU = ((EXPORT_SCENE_OT_tertius_tmrf.bl_idname, "Tertius media"),)
FILE_HANDLERS = (
    (
        "IO_FH_retro_tertius_tmrf",
        "Tertius media",
        IMPORT_SCENE_OT_tertius_tmrf.bl_idname,
        EXPORT_SCENE_OT_tertius_tmrf.bl_idname,
        ";".join(EXTENSIONS),
    ),
)
