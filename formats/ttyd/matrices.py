"""Matrix helpers of the converter: (…, 4, 4) float64 matrices, column vectors."""

from __future__ import annotations

import numpy as np

from ..scene import matrix_to_quat


def apply(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    return np.asarray(points, np.float64) @ matrix[:3, :3].T + matrix[:3, 3]


def invertible(matrices: np.ndarray) -> np.ndarray:
    """(…) whether each (…, 4, 4) matrix is finite and not singular (a zero scale collapses it)."""
    matrices = np.asarray(matrices, np.float64)
    flat = matrices.reshape(-1, 4, 4)
    out = np.isfinite(flat).all(axis=(-2, -1))
    out[out] = np.abs(np.linalg.det(flat[out])) > 1e-300
    return out.reshape(matrices.shape[:-2])


def inverse(matrix: np.ndarray) -> np.ndarray:
    """(…, 4, 4) inverses: NaN where a matrix is not finite, the pseudo-inverse where it is singular."""
    shape = np.shape(matrix)
    matrix = np.asarray(matrix, np.float64).reshape(-1, 4, 4)
    finite = np.isfinite(matrix).all(axis=(-2, -1))
    out = np.full(matrix.shape, np.nan)
    regular = invertible(matrix)
    out[regular] = np.linalg.inv(matrix[regular])
    singular = finite & ~regular
    out[singular] = np.linalg.pinv(matrix[singular])
    return out.reshape(shape)


def normalize(v: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(length > 0, length, 1.0)


def decompose(matrices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(…, 4, 4) → location (…, 3), quaternion (…, 4) and scale (…, 3); shear is dropped."""
    linear = matrices[..., :3, :3]
    scale = np.linalg.norm(linear, axis=-2)
    mirrored = np.linalg.det(linear) < 0
    scale[mirrored, 0] *= -1
    rotation = linear / np.where(scale == 0, 1.0, scale)[..., None, :]
    return matrices[..., :3, 3].copy(), matrix_to_quat(rotation), scale


def euler_xyz_degrees(rotation: np.ndarray) -> np.ndarray:
    """(…, 3, 3) rotation Rz·Ry·Rx → (…, 3) angles in degrees."""
    y = np.arcsin(np.clip(-rotation[..., 2, 0], -1.0, 1.0))
    x = np.arctan2(rotation[..., 2, 1], rotation[..., 2, 2])
    z = np.arctan2(rotation[..., 1, 0], rotation[..., 0, 0])
    return np.degrees(np.stack([x, y, z], axis=-1))
