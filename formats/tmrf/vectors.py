"""Compressed normals and tangent vectors of TMRF meshes: the spec's formulas and their inverses.

A compressed normal is two angles, a = A·π/32768 (around Z) and b = B·π/65535
(from +Z). A high-compressed tangent adds a third, c = C·π/16384, turning the
horizontal vector around the normal; C ≥ 32768 negates the horizontal vector,
which flips the handedness of the pair. Encoders try the neighbouring integer
coefficients of the exact angles and keep the one that decodes closest to the
input.
"""

from __future__ import annotations

import numpy as np

A_SCALE = np.pi / 32768
B_SCALE = np.pi / 65535
C_SCALE = np.pi / 16384
C_NEGATE = 32768  # C above 32767 negates the horizontal vector


def _angles(coefficients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    coefficients = np.asarray(coefficients, dtype=np.float64)
    return coefficients[..., 0] * A_SCALE, coefficients[..., 1] * B_SCALE


def decode_normals(coefficients: np.ndarray) -> np.ndarray:
    """(N, 2) coefficients A, B → (N, 3) unit normals (float64)."""
    a, b = _angles(coefficients)
    return np.stack([np.sin(a) * np.sin(b), np.cos(a) * np.sin(b), np.cos(b)], axis=-1)


def _unit(vectors: np.ndarray, fallback: tuple[float, float, float]) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float64)
    length = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.where(length > 0, vectors / np.where(length > 0, length, 1), np.array(fallback))


def encode_normals(normals: np.ndarray) -> np.ndarray:
    """(N, 3) normals → (N, 2) uint16 coefficients whose decoded normal is closest to each."""
    n = _unit(normals, (0.0, 0.0, 1.0))
    a = np.mod(np.arctan2(n[:, 0], n[:, 1]), 2 * np.pi) / A_SCALE
    b = np.arccos(np.clip(n[:, 2], -1.0, 1.0)) / B_SCALE
    a_options = np.mod(np.stack([np.floor(a), np.floor(a) + 1]), 65536)
    b_options = np.clip(np.stack([np.floor(b), np.floor(b) + 1]), 0, 65535)
    candidates = np.stack(
        [np.stack([a_options[i], b_options[j]], axis=-1) for i in (0, 1) for j in (0, 1)]
    )  # (4, N, 2)
    error = np.sum((decode_normals(candidates) - n) ** 2, axis=-1)
    best = np.argmin(error, axis=0)
    return candidates[best, np.arange(len(n))].astype(np.uint16)


def _plane_axes(normal_coefficients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The horizontal vectors at c = 0 and c = π/2: with the normal they form a right-handed basis."""
    a, b = _angles(normal_coefficients)
    e1 = np.stack([np.cos(b) * np.sin(a), np.cos(b) * np.cos(a), -np.sin(b)], axis=-1)
    e2 = np.stack([-np.cos(a), np.sin(a), np.zeros_like(a)], axis=-1)
    return e1, e2


def decode_high_tangents(normal_coefficients: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Horizontal and vertical vectors (N, 3) from the normals' A, B and the tangents' C."""
    a, b = _angles(normal_coefficients)
    c_int = np.asarray(c)
    c = c_int.astype(np.float64) * C_SCALE
    sa, ca, sb, cb, sc, cc = np.sin(a), np.cos(a), np.sin(b), np.cos(b), np.sin(c), np.cos(c)
    horizontal = np.stack([-ca * sc + cb * sa * cc, sa * sc + cb * ca * cc, -sb * cc], axis=-1)
    vertical = np.stack([-ca * cc - cb * sa * sc, sa * cc - cb * ca * sc, sb * sc], axis=-1)
    # Decision 12: the negated "T vector" of the spec is the horizontal one.
    horizontal *= np.where(c_int >= C_NEGATE, -1.0, 1.0)[:, None]
    return horizontal, vertical


def encode_high_tangents(
    normal_coefficients: np.ndarray, horizontal: np.ndarray, vertical: np.ndarray
) -> np.ndarray:
    """(N,) uint16 coefficients C whose decoded pair is closest to the given vectors."""
    h = np.asarray(horizontal, dtype=np.float64)
    v = np.asarray(vertical, dtype=np.float64)
    e1, e2 = _plane_axes(normal_coefficients)
    candidates = []
    for side, offset in ((1.0, 0), (-1.0, C_NEGATE)):
        # With C ≥ 32768 the stored angle describes the negated horizontal vector.
        angle = np.mod(np.arctan2(side * np.sum(h * e2, -1), side * np.sum(h * e1, -1)), 2 * np.pi) / C_SCALE
        for step in (0, 1):
            candidates.append(np.mod(np.floor(angle) + step, 32768) + offset)
    candidates = np.stack(candidates)  # (4, N)
    error = []
    for c in candidates:
        dh, dv = decode_high_tangents(normal_coefficients, c.astype(np.uint16))
        error.append(np.sum((dh - h) ** 2, -1) + np.sum((dv - v) ** 2, -1))
    best = np.argmin(np.stack(error), axis=0)
    return candidates[best, np.arange(len(h))].astype(np.uint16)


def compressed_tangent_vertical(
    normals: np.ndarray, horizontal: np.ndarray, multipliers: np.ndarray
) -> np.ndarray:
    """Decision 12: vertical = (normal × horizontal) · multiplier."""
    return (
        np.cross(np.asarray(normals, np.float64), np.asarray(horizontal, np.float64))
        * np.asarray(multipliers, np.float64)[:, None]
    )
