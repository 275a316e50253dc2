"""The file's values kept through the Scene: written back while the scene still shows them.

Export starts from the tables kept in the extras and writes a scene value only where it
differs from what the kept value showed as by more than ``TOLERANCE`` (relative to the
value, absolute below 1), so that float noise from Blender leaves the file byte-exact.
"""

from __future__ import annotations

import numpy as np

from . import model as fmt

TOLERANCE = 1e-4


def restore(original, expected, value, to_file) -> np.ndarray:
    """Rows of ``original`` (file values) where the scene ``value`` still equals what they showed as
    (``expected``) within tolerance; ``to_file(value)`` as float32 elsewhere."""
    original = np.asarray(original, np.float32)
    rows = len(original)
    if rows == 0:
        return original
    expected = np.asarray(expected, np.float64).reshape(rows, -1)
    value = np.asarray(value, np.float64).reshape(rows, -1)
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.abs(value - expected) <= TOLERANCE * np.maximum(1.0, np.abs(expected))
        converted = np.asarray(to_file(value), np.float64).astype(np.float32).reshape(original.shape)
    near |= (value == expected) | (np.isnan(value) & np.isnan(expected))
    keep = near.all(axis=1).reshape((rows,) + (1,) * (original.ndim - 1))
    return np.where(keep, original, converted)


def same_matrices(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per matrix of (…, 4, 4): equal within tolerance (NaN matching NaN)."""
    size = np.maximum(1.0, np.nan_to_num(np.abs(b), nan=1.0, posinf=1.0).max(axis=(-2, -1)))
    with np.errstate(invalid="ignore"):
        near = np.abs(a - b) <= TOLERANCE * size[..., None, None]
    return (near | (a == b) | (np.isnan(a) & np.isnan(b))).all(axis=(-2, -1))


def all_close(a, b) -> bool:
    """Same shape and equal within tolerance (NaN matching NaN; None only matching None)."""
    if a is None or b is None:
        return a is None and b is None
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.abs(a - b) <= TOLERANCE * np.maximum(1.0, np.abs(b))
    return bool(np.all(near | (a == b) | (np.isnan(a) & np.isnan(b))))


def unique_names(names: list[str]) -> list[str]:
    """The names with ".001", ".002"… added to repeats, as Blender names duplicates."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        candidate, n = name, seen.get(name, 0)
        while candidate in seen:
            n += 1
            candidate = f"{name}.{n:03d}"
        seen[name] = n
        seen[candidate] = 0
        out.append(candidate)
    return out


def raw_name(current: str, extras: dict) -> bytes:
    """The original name bytes unless the object was renamed."""
    if "name" in extras and extras.get("label") == current:
        return extras["name"]
    return fmt.encode_name(current)
