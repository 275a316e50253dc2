"""Extract a neutral ``Scene`` from Blender data: the one extractor every exporter uses.

The inverse of ``build.build_scene``, one datablock module at a time: the skeleton
(``armature``), meshes (``mesh``), the materials and images they use (``material``,
``image``), then the animations (``animation``). What the builder kept aside (source normals,
layer domains, extras, image source bytes, channel records) comes back unchanged when the user
did not edit it, and Blender's current data is used where they did.
"""

from __future__ import annotations

from contextlib import nullcontext

import bpy
import numpy as np

from ...formats.scene import Scene, scale_lengths
from . import props
from .animation import extract_animations
from .armature import extract_skeleton, rest_position
from .image import extract_image
from .material import extract_material
from .mesh import extract_mesh, modifiers_applied, vertex_group_weights
from .objects import deformed_by


def extract_scene(
    context, armature_obj, mesh_objs, *, actions=None, apply_modifiers=False, scale: float | None = None
) -> Scene:
    """A Scene of the armature (or None), the mesh objects and the animations.

    ``actions`` are the bone actions to export (each brings the material,
    shape-key and visibility actions imported with it); None means every
    imported action animating this armature's bones, plus the armature's
    active action. ``apply_modifiers``: each mesh as its modifiers leave it (Armature aside).
    ``scale``: the export's Scale, which divides the world size: with an armature, the armature's
    scale (its uniform part) over ``scale`` sizes everything, which is read in armature space
    (``scale_lengths``; nothing changes when they are equal); without one, it divides the meshes'
    world matrices. None: armature space as it is (for reading a rig, not exporting it).
    """
    scene = Scene()
    record = props.import_record([o for o in [armature_obj, *mesh_objs] if o is not None])
    if record is not None:
        info = props.to_python(record[props.SCENE])
        scene.name = info["name"]
        scene.source = record.get(props.SOURCE_FILE, "")
        scene.extras = props.get_extras(record)
    images = _Registry(record, "images")
    materials = _Registry(record, "materials")
    skeleton = None
    if armature_obj is not None:
        skeleton = extract_skeleton(armature_obj)
        scene.skeletons.append(skeleton)
    with (
        rest_position(context, armature_obj),  # object matrices as at rest (bone parents)
        modifiers_applied(context, mesh_objs, scene.warnings) if apply_modifiers else nullcontext(),
    ):
        skins = {}  # the weights of every mesh the armature deforms, read at once
        if skeleton is not None:
            skinned = [o for o in mesh_objs if deformed_by(o, armature_obj)]
            skins = dict(
                zip(skinned, vertex_group_weights(context, skinned, skeleton.bone_names), strict=True)
            )
        for obj in mesh_objs:
            scene.meshes.append(
                extract_mesh(context, obj, armature_obj, skeleton, materials, scene.warnings, skins.get(obj))
            )
    if armature_obj is None and scale is not None and scale != 1.0:
        for mesh in scene.meshes:
            mesh.matrix = _divided(mesh.matrix, scale)
    scene.materials = [extract_material(m, images) for m in materials.items]
    scene.images = [extract_image(i) for i in images.items]
    # Channel targets are the names things had on import; follow the user's renames.
    owners = [o for o in [armature_obj, *mesh_objs] if o is not None]
    renamed = {
        (kind, owner.get(props.SCENE_NAME, owner.name)): props.scene_name(owner)
        for kinds, group in ((("object", "shape_key"), owners), (("material",), materials.items))
        for owner in group
        for kind in kinds
    }
    recorded = props.to_python(record[props.SCENE]).get("animations", []) if record is not None else []
    scene.animations = extract_animations(
        context, armature_obj, skeleton, mesh_objs, materials.items, actions, renamed, recorded
    )
    if armature_obj is not None and scale is not None:
        context.view_layer.update()  # the armature's world matrix as last set
        linear = np.array(armature_obj.matrix_world, np.float64)[:3, :3]
        sizes = np.linalg.norm(linear, axis=0)
        if np.ptp(sizes) > _SAME_SIZE * sizes.max():
            scene.warnings.append(
                f"armature {armature_obj.name!r} is scaled unevenly {tuple(sizes.round(6))}: "
                "the model is written at the mean size"
            )
        factor = abs(np.linalg.det(linear)) ** (1 / 3) / scale
        if abs(factor - 1) > _SAME_SIZE:
            scale_lengths(scene, factor)
    return scene


# Object matrices are single floats: an armature imported with Scale s exports with Scale s unchanged.
_SAME_SIZE = 1e-6


def _divided(matrix, scale: float):
    """A world matrix with the world divided by ``scale`` (None: identity, as ``extract_mesh`` gives it)."""
    divided = np.diag([1 / scale] * 3 + [1.0]) @ (np.eye(4) if matrix is None else matrix)
    return None if np.allclose(divided, np.eye(4), atol=1e-7) else divided


class _Registry:
    """Datablocks in scene order: those the import recorded first (when they still exist), then new ones."""

    def __init__(self, record, kind: str):
        self.items: list = []
        self.index: dict[int, int] = {}
        if record is not None:
            source = getattr(bpy.data, kind)
            for name in props.to_python(record[props.SCENE])[kind]:
                if name in source:
                    self.add(source[name])

    def add(self, item) -> int:
        key = item.as_pointer()
        if key not in self.index:
            self.index[key] = len(self.items)
            self.items.append(item)
        return self.index[key]
