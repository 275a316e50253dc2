"""J3D models (BMD/BDL) in Blender: what the import needs beyond the shared builder.

The model's armature keeps the file's Y-up joint space (the space of a BCK's joint values, so
the J3D animation import applies to it unchanged); the axis conversion is the armature object's
matrix, which the meshes parented to it follow. Joints with Maya segment scale compensation
inherit no scale from their parent (Blender's "None" inherit-scale mode), as the game poses them.
"""

from __future__ import annotations

import numpy as np
from mathutils import Matrix

from ..formats.j3d.model_geometry import MAYA
from .blender import props


def after_build(scene, result) -> None:
    """Turn each armature object from the file's axes to Blender's; scale compensation on its bones."""
    matrix = scene.extras.get("object_matrix")
    if matrix is None:
        return
    maya = scene.extras.get("scaling_rule") == MAYA
    for armature, skeleton in zip(result.armatures, scene.skeletons, strict=True):
        armature.matrix_world = Matrix(np.asarray(matrix, np.float64).reshape(4, 4).tolist())
        if not maya:
            continue
        for name, extras in zip(armature.data[props.JOINT_ORDER], skeleton.bone_extras, strict=True):
            if extras.get("scale_compensate") == 1 and armature.data.bones[name].parent is not None:
                armature.data.bones[name].inherit_scale = "NONE"
