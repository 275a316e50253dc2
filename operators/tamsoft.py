"""Tamsoft models (Senran Kagura and others) in Blender: what to export, and the file name offered.

Reading and writing the tmd0 and its CATs is formats/tamsoft/files.py.
"""

from __future__ import annotations

import os

import bpy
from bpy_extras.io_utils import ExportHelper

from ..formats.errors import ExportError
from ..formats.scene import Scene
from ..formats.tamsoft import files
from .blender.objects import deformed_meshes, target_armature


def export_objects(context) -> tuple[bpy.types.Object | None, list[bpy.types.Object]]:
    """The armature (active, selected, or the active mesh's) and the meshes it deforms; else the selected meshes."""
    armature = target_armature(context)
    if armature is not None:
        meshes = deformed_meshes(armature, context.view_layer.objects)
        if not meshes:
            raise ExportError(f"armature {armature.name!r} deforms no mesh")
    else:
        meshes = [
            o
            for o in [context.active_object, *context.selected_objects]
            if o is not None and o.type == "MESH"
        ]
        if not meshes:
            raise ExportError("select the model's armature or its meshes")
    return armature, sorted(set(meshes), key=lambda o: o.name)


def export_scene(context, path: str, options: files.ExportOptions) -> Scene:
    """The armature and its meshes (else the selected meshes) as a Scene for ``files.save``."""
    from .blender.extract import extract_scene
    from .import_export import included

    armature, meshes = export_objects(context)
    return extract_scene(
        context,
        armature,
        included(context, meshes, options),
        apply_modifiers=options.use_mesh_modifiers,
        scale=options.global_scale,
    )


def default_path(context) -> str:
    """The name of the file the model came from (a model from a CAT goes back into a CAT), else ""."""
    from .blender import props

    try:
        armature, meshes = export_objects(context)
    except ExportError:
        return ""
    source = props.source_file([o for o in [armature, *meshes] if o is not None])
    if not source:
        return ""
    return os.path.join(
        os.path.dirname(bpy.data.filepath) or os.path.dirname(source), os.path.basename(source)
    )


def check(operator, context) -> bool:
    """A file name with neither .tmd nor .cat gets .tmd; both are kept."""
    changed = ExportHelper.check(operator, context)  # axis options
    root, extension = os.path.splitext(operator.filepath)
    if os.path.basename(operator.filepath) and extension.lower() not in files.EXTENSIONS:
        operator.filepath = root + files.EXTENSIONS[0]
        changed = True
    return changed
