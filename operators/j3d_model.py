"""J3D models (BMD/BDL) in Blender: what the import needs beyond the shared builder.

The model's armature keeps the file's Y-up joint space (the space of a BCK's joint values, so
the J3D animation import applies to it unchanged); the axis conversion is the armature object's
matrix, which the meshes parented to it follow. Joints with Maya segment scale compensation
inherit no scale from their parent (Blender's "None" inherit-scale mode), as the game poses them.

The animations loaded with the model (``ModelScene.paired``) go onto the new armature and
materials through the same steps as applying each file with the J3D animation import
(operators/j3d.py), so each action is the one that import makes; a BTP switches between the
model's own images.

Export (``export_scene``): the armature and every mesh it deforms, extracted as a Scene for
``files.save_model``. So that an unedited mesh is recognised exactly, the import leaves on each
mesh the digest of its geometry as the extractor gives it back (``model_export.GEOMETRY``) and on
each material its MAT3 slot (``model_export.SLOT``), which a copy of the material keeps.
"""

from __future__ import annotations

import copy
import os

import bpy
import numpy as np
from bpy_extras.io_utils import ExportHelper
from mathutils import Matrix

from ..formats.errors import ExportError
from ..formats.j3d import apply, convert, files, model_export
from ..formats.j3d.model_geometry import MAYA
from ..formats.scene import Scene
from . import j3d
from .blender import compat, props
from .blender.objects import deformed_meshes, target_armature


def after_build(scene, result) -> list[str]:
    """Turn each armature object from the file's axes to Blender's; scale compensation on its bones;
    then the model's animations. Notes on what was applied."""
    matrix = scene.extras.get("object_matrix")
    if matrix is None:
        return []
    maya = scene.extras.get("scaling_rule") == MAYA
    for armature, skeleton in zip(result.armatures, scene.skeletons, strict=True):
        armature.matrix_world = Matrix(np.asarray(matrix, np.float64).reshape(4, 4).tolist())
        if not maya:
            continue
        for name, extras in zip(armature.data[props.JOINT_ORDER], skeleton.bone_extras, strict=True):
            if extras.get("scale_compensate") == 1 and armature.data.bones[name].parent is not None:
                armature.data.bones[name].inherit_scale = "NONE"
    _record_for_export(scene, result)
    return _apply_paired(scene, result)


def _record_for_export(scene, result) -> None:
    """Each material's MAT3 slot, and each mesh's geometry digest as the extractor reads it back: its
    skin from the weights the vertex groups were given (``mesh.grouped_skin``, which reads the same as
    the groups without evaluating the scene), the rest read from the mesh as built
    (``mesh.extract_built_geometry``: the extractor's reads without Blender's triangulation)."""
    from .blender.mesh import extract_built_geometry, grouped_skin

    for slot, material in enumerate(result.materials):
        props.set_extras(material, {**props.get_extras(material), model_export.SLOT: slot})
    bone_count = len(scene.skeletons[0].bone_names)
    for obj, source in zip(result.objects, scene.meshes, strict=True):
        mesh = extract_built_geometry(obj)
        if source.skin_weights is not None:
            mesh.skin_joints, mesh.skin_weights, _ = grouped_skin(
                source.skin_joints, source.skin_weights, bone_count, source.skin_weights.shape[1]
            )
        props.set_extras(obj.data, {**mesh.extras, model_export.GEOMETRY: model_export.mesh_digest(mesh)})


def _apply_paired(scene, result) -> list[str]:
    """Each paired animation as an action on the armature (BCK, BCA), the shapes (BVA) or the materials
    it animates."""
    paired = getattr(scene, "paired", [])
    if not paired:
        return []
    context = bpy.context
    armature = result.armatures[0]
    # Read once: the rest pose the J3D import reads before each file (the animations leave it as it is).
    skeleton = j3d.armature_skeleton(context, armature)
    by_name = {props.scene_name(m): m for m in result.materials}
    images = {
        image.extras["tex1_index"]: built
        for image, built in zip(scene.images, result.images, strict=True)
        if "tex1_index" in image.extras
    }
    first = None
    shapes = {props.scene_name(o): o for o in result.objects}
    for place, animation_scene in zip(scene.paired_places, paired, strict=True):
        animation = animation_scene.animations[0]
        kind = convert.animation_kind(animation)
        materials, objects = [], []
        if kind in files.JOINT_KINDS:
            apply.bind_joints(animation_scene, copy.deepcopy(skeleton), animation_scene.name)
        elif kind == "bva":
            objects = [shapes[t] for t in sorted({c.target for c in animation.channels}) if t in shapes]
            animation.channels = [c for c in animation.channels if c.target in shapes]
        else:
            materials = [by_name[t] for t in sorted({c.target for c in animation.channels}) if t in by_name]
            animation.channels = [c for c in animation.channels if c.target in by_name]
        on_armature = not materials and not objects
        added, _ = j3d._add_animation(
            context, animation_scene, armature if on_armature else None, materials, False, objects, place
        )
        if convert.animation_kind(animation) == "btp":  # the images it shows, as the J3D import picks them
            used = {i: images[i] for i in files.pattern_indices(animation_scene) if i in images}
            j3d._switch_textures(animation_scene, by_name, used)
        result.actions += added.actions
        scene.warnings += animation_scene.warnings + added.warnings
        first = first or (added.actions[0] if on_armature else None)
    if first is not None:  # each application assigned its own: the armature plays the first instead
        compat.assign_action(armature, first, compat.action_slot(first))
    return [f"{scene.name}: {len(paired)} animations loaded with the model"]


# -- export ---------------------------------------------------------------------------------


def export_objects(context):
    """The armature (active, selected, or the active mesh's) and every mesh it deforms."""
    armature = target_armature(context)
    if armature is None:
        raise ExportError("select the armature of the J3D model to export (or one of its meshes)")
    meshes = deformed_meshes(armature, context.view_layer.objects, parented=True)
    if not meshes:
        raise ExportError(f"armature {armature.name!r} deforms no mesh")
    return armature, meshes


def export_scene(context, path: str, options: files.ModelExportOptions) -> Scene:
    """The armature and its meshes as a Scene for ``files.save_model``; a copy of a material named by
    its Blender name (its Scene name is the original's)."""
    from .blender.extract import extract_scene
    from .import_export import included

    armature, meshes = export_objects(context)
    meshes = included(context, meshes, options)
    scene = extract_scene(
        context,
        armature,
        meshes,
        actions=[],
        apply_modifiers=options.use_mesh_modifiers,
        scale=options.global_scale,
    )
    blender = _export_materials(armature, meshes)
    names = [m.name for m in scene.materials]
    for material, datablock in zip(scene.materials, blender, strict=True):
        if names.count(material.name) > 1:
            material.name = datablock.name
    return scene


def _export_materials(armature, meshes) -> list:
    """The Blender materials in the order the extractor lists them: the import's, then the meshes'."""
    record = props.import_record([armature, *meshes])
    found = []
    if record is not None:
        recorded = props.to_python(record[props.SCENE])["materials"]
        found = [bpy.data.materials[n] for n in recorded if n in bpy.data.materials]
    for obj in meshes:
        found += [m for m in obj.data.materials if m is not None and m not in found]
    return found


def default_path(context) -> str:
    """The name of the model the selection came from (an archive's member by its own name), else ""."""
    try:
        armature, meshes = export_objects(context)
    except ExportError:
        return ""
    record = props.import_record([armature, *meshes])
    source = props.source_file([armature, *meshes])
    if record is None or not source:
        return ""
    name = os.path.basename(source)
    if os.path.splitext(name)[1].lower() not in files.MODEL_EXTENSIONS:  # a model of an archive: its name
        kind = props.get_extras(record, "kind").get("kind")
        name = f"{props.to_python(record[props.SCENE])['name']}{'.bdl' if kind == 'bdl4' else '.bmd'}"
    folder = os.path.dirname(bpy.data.filepath) or os.path.dirname(source)
    return os.path.join(folder, name)


def check(operator, context) -> bool:
    """A file name with neither .bmd nor .bdl gets .bmd."""
    root, extension = os.path.splitext(operator.filepath)
    if os.path.basename(operator.filepath) and extension.lower() not in files.MODEL_EXTENSIONS:
        operator.filepath = root + files.MODEL_EXTENSIONS[0]
        return True
    return ExportHelper.check(operator, context)
