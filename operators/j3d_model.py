"""J3D models (BMD/BDL) in Blender: what the import needs beyond the shared builder.

The model's armature keeps the file's Y-up joint space (the space of a BCK's joint values, so
the J3D animation import applies to it unchanged); the axis conversion is the armature object's
matrix, which the meshes parented to it follow.
"""

from __future__ import annotations

import numpy as np
from mathutils import Matrix


def after_build(scene, result) -> None:
    """Turn each armature object from the file's axes to Blender's."""
    matrix = scene.extras.get("object_matrix")
    if matrix is None:
        return
    for armature in result.armatures:
        armature.matrix_world = Matrix(np.asarray(matrix, np.float64).reshape(4, 4).tolist())
