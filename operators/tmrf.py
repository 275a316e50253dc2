"""Tertius media (TMRF) in Blender: what to export, and animation-only files applied to the
selected armature (bones matched by name; the file's layout kept with the armature so that
exporting those animations again gives the file back).

Reading and writing the files is formats/tmrf/files.py.
"""

from __future__ import annotations

import os

import bpy

from ..formats.errors import ExportError, SelectionError
from ..formats.scene import Scene
from ..formats.tmrf import files
from .blender.objects import armature_modifier_target, deformed_meshes, target_armature


def apply_to_selection(context, scene: Scene, path: str, options: files.ImportOptions):
    """Put an animation-only scene onto the selected armature, bones matched by name; the file's
    layout stays with the armature for export. Returns the BuildResult (what the file added) and notes."""
    from .blender import props
    from .blender.build import add_animations
    from .blender.extract import extract_scene

    armature = target_armature(context)
    if armature is None:
        raise SelectionError(
            f"{os.path.basename(path)}: the file holds only animations: select the armature to apply them to"
        )
    # An armature that already plays animations keeps the scene's rate: the file's play at their
    # own speed at it. Otherwise the scene takes the file's rate, as an import of a model does.
    playing = armature.animation_data is not None and armature.animation_data.action is not None
    animated = playing or bool(armature.data.get(props.ANIMATIONS))
    render = context.scene.render
    rate = render.fps / render.fps_base if animated else None
    skeleton = extract_scene(context, armature, [], actions=[]).skeletons[0]
    files.retarget(scene, skeleton, options.axis(), rate)
    extras = props.get_extras(armature.data)
    extras.setdefault(files.ANIMATION_LAYOUTS, {}).update(scene.extras[files.ANIMATION_LAYOUTS])
    props.set_extras(armature.data, extras)
    result = add_animations(scene, context, armature, set_frame_rate=not animated)
    result.armatures = []  # the armature was there before: the report counts what the file added
    return result, []


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


def export_scene(context, path: str, options: files.ExportOptions) -> Scene:
    """The armature, meshes and actions the file's contents ask for, as a Scene for ``files.save``."""
    from .blender import props
    from .blender.extract import extract_scene

    path, content = files.export_target(path, options)
    extension = os.path.splitext(path)[1].lower()
    from .import_export import included

    armature, meshes = export_objects(context)
    meshes = included(context, meshes, options)
    needs_armature = content in ("skeleton", "animations")
    if armature is None and (needs_armature or not meshes):
        raise ExportError(
            f"select an armature to export {extension} files" if needs_armature else "select meshes to export"
        )
    if content in ("static_mesh", "skinned_model") and not meshes:
        raise ExportError(f"{extension} files hold meshes: select the meshes to export")
    scene = extract_scene(
        context, armature, meshes, apply_modifiers=options.use_mesh_modifiers, scale=options.global_scale
    )
    if content == "animations" and not scene.animations:
        raise ExportError(f"armature {armature.name!r} has no animations to export")
    if armature is not None:
        layouts = props.get_extras(armature.data).get(files.ANIMATION_LAYOUTS, {})
        scene.extras = {**scene.extras, files.ANIMATION_LAYOUTS: layouts}
    files.sources(scene, path, content)  # the file's name decides which animations it holds
    return scene


def check(operator, context) -> bool:
    """The chosen contents decide the file's extension."""
    stem, extension = os.path.splitext(operator.filepath)
    if not os.path.basename(operator.filepath) or extension.lower() == operator.file_contents:
        return False
    known = extension.lower() in files.CONTENT_BY_EXTENSION
    operator.filepath = (stem if known else operator.filepath) + operator.file_contents
    return True
