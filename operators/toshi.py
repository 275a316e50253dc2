"""Toshi (Jurassic Park: Operation Genesis) in Blender: the armature and meshes to export, and the
sidebar's "Load Keyframe Library" (another TKL read against an imported model's animation table).

Reading and writing the TMD, TKL and TML is formats/toshi/files.py.
"""

from __future__ import annotations

import os

import bpy
import numpy as np
from bpy.props import StringProperty
from bpy_extras.io_utils import ImportHelper

from ..formats import fit
from ..formats.errors import ExportError, RetroError
from ..formats.scene import Scene
from ..formats.toshi import convert, files
from .blender.objects import deformed_meshes, target_armature


def load_library(context, armature_obj, tkl_path: str) -> tuple[int, list[str]]:
    """Re-read the armature's model animations against another keyframe library.

    The animation table lives in the TMD, so the model's file must still exist;
    the axis conversion is the one the model was imported with.
    Returns the number of actions made and the warnings.
    """
    from .blender import props
    from .blender.build import replace_animations

    imported = props.get_extras(armature_obj.data)
    source = props.source_file([armature_obj])
    axis = np.reshape(imported["axis"], (4, 4)) if "axis" in imported else convert.DEFAULT_AXIS
    if not os.path.isfile(source):
        raise OSError(f"{armature_obj.name}: its model file {source!r} is needed for the animation table")
    scene, data = files.library_scene(source, tkl_path, axis)
    result = replace_animations(scene, armature_obj)
    extras = props.get_extras(armature_obj.data)
    extras["tkl_file"] = tkl_path
    props.set_extras(armature_obj.data, extras)
    record = props.import_record([armature_obj])
    if record is not None:
        extras = props.get_extras(record)
        extras.update(tkl=scene.extras["tkl"], **{files.TKL_LIBRARY: data})
        props.set_extras(record, extras)
    animation_warnings = [w for w in scene.warnings if w.startswith("animation ")]
    return len(result.actions), animation_warnings + result.warnings


# -- export -------------------------------------------------------------------


def export_objects(context) -> tuple[bpy.types.Object, list[bpy.types.Object]]:
    """The armature to export (active or selected, or the active mesh's) and every mesh it deforms."""
    armature = target_armature(context)
    active = context.active_object
    if armature is None and active is not None and active.type == "MESH":
        raise ExportError(
            f"mesh {active.name!r} has no armature (add an Armature modifier: TMD meshes are skinned)"
        )
    if armature is None:
        raise ExportError("select the armature of the model to export")
    meshes = deformed_meshes(armature, context.view_layer.objects)
    if not meshes:
        raise ExportError(f"armature {armature.name!r} deforms no mesh")
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


def export_scene(context, path: str, options: files.ExportOptions) -> Scene:
    """The armature to export and every mesh it deforms, as a Scene for ``files.save``."""
    from .blender.extract import extract_scene
    from .import_export import included

    armature, meshes = export_objects(context)
    meshes = included(context, meshes, options)
    scene = extract_scene(
        context, armature, meshes, apply_modifiers=options.use_mesh_modifiers, scale=options.global_scale
    )
    for animation in scene.animations:  # LINEAR quaternion keys: per component, as Blender plays them
        animation.extras[fit.PLAYED_IN_BLENDER] = True
    _weight_unweighted(scene, meshes)
    for obj in meshes:
        skipped = [m.name for m in obj.modifiers if m.type != "ARMATURE" and m.show_viewport]
        if skipped:
            scene.warnings.append(
                f"mesh {obj.name!r}: modifiers {skipped} are not applied (apply them first)"
            )
    return scene


class RETRO_MODELS_OT_toshi_load_tkl(bpy.types.Operator, ImportHelper):
    """Replace the active model's animations with its animation table read against another keyframe library"""

    bl_idname = "retro_models.toshi_load_tkl"
    bl_label = "Load Keyframe Library"
    bl_options = {"REGISTER", "UNDO"}

    filename_ext = ".tkl"
    filter_glob: StringProperty(
        default="*.tkl", description="The files the browser shows", options={"HIDDEN"}
    )

    @classmethod
    def poll(cls, context):
        from .blender import props

        obj = context.active_object
        return obj is not None and obj.type == "ARMATURE" and "tkl_file" in props.get_extras(obj.data)

    def execute(self, context):
        from .import_export import rollback_on_error

        try:
            with rollback_on_error():
                count, warnings = load_library(context, context.active_object, self.filepath)
        except (RetroError, OSError) as e:
            self.report({"ERROR"}, str(e))
            return {"CANCELLED"}
        for warning in warnings:
            self.report({"WARNING"}, warning)
        self.report({"INFO"}, f"{os.path.basename(self.filepath)}: {count} actions")
        return {"FINISHED"}


classes = (RETRO_MODELS_OT_toshi_load_tkl,)
