"""What the game computes for every track of a J3D animation at any frame.

Keyframed tracks: the first value before the first key, the last value at or
after the last key, and between keys k0, k1 (L = t1 − t0, u = (f − t0) / L) the
cubic Hermite curve
``v0(2u³−3u²+1) + v1(−2u³+3u²) + d0·L(u³−2u²+u) + d1·L(u³−u²)``
with d0 = k0's out tangent and d1 = k1's in tangent (value per frame).
Tracks with no keys hold the default (scale 1, rotation 0, translation 0,
colour 0). Rotations are in degrees: raw × 2^frac × 180 / 32768. Colours are
clamped to their range and truncated to integers as the game stores them.
Everything is vectorised over frames.
"""

from __future__ import annotations

import numpy as np

from .bck import BCK
from .bpk import BPK
from .bpk import COLOR_RANGE as MATERIAL_COLOR_RANGE
from .brk import BRK, KONST_RANGE, REGISTER_RANGE
from .btk import BTK
from .btp import BTP
from .container import Keys, track_keys

COMPONENT_DEFAULTS = (1.0, 0.0, 0.0)  # scale, rotation, translation


def rotation_unit(frac: int) -> float:
    """Degrees per raw rotation step."""
    return 2.0**frac * 180.0 / 32768.0


def hermite(keys: Keys, frames: np.ndarray, default: float = 0.0) -> np.ndarray:
    """The curve through ``keys`` at ``frames`` (float64)."""
    frames = np.asarray(frames, dtype=np.float64)
    count = len(keys.times)
    if count == 0:
        return np.full(frames.shape, float(default))
    if count == 1:
        return np.full(frames.shape, keys.values[0])
    times, values = keys.times, keys.values
    k0 = np.clip(np.searchsorted(times, frames, side="right") - 1, 0, count - 2)
    k1 = k0 + 1
    length = times[k1] - times[k0]
    inside = (frames >= times[0]) & (frames < times[-1]) & (length > 0)
    safe_length = np.where(length > 0, length, 1.0)
    u = (frames - times[k0]) / safe_length
    u2, u3 = u * u, u * u * u
    curve = (
        values[k0] * (2 * u3 - 3 * u2 + 1)
        + values[k1] * (-2 * u3 + 3 * u2)
        + keys.out_tangents[k0] * safe_length * (u3 - 2 * u2 + u)
        + keys.in_tangents[k1] * safe_length * (u3 - u2)
    )
    held = np.where(frames < times[0], values[0], values[-1])
    return np.where(inside, curve, held)


def evaluate_tracks(tracks: np.ndarray, bank: np.ndarray, frames: np.ndarray, default: float) -> np.ndarray:
    """(F, *tracks.shape) values of every track (a loop over tracks, vectorised over frames)."""
    frames = np.asarray(frames, dtype=np.float64).reshape(-1)
    flat = tracks.reshape(-1)
    out = np.empty((len(frames), len(flat)))
    for i, track in enumerate(flat):
        out[:, i] = hermite(track_keys(track, bank), frames, default)
    return out.reshape((len(frames),) + tracks.shape)


def _srt(tracks: np.ndarray, banks, frac: int, frames) -> dict[str, np.ndarray]:
    """Scale, rotation (degrees) and translation, each (F, N, 3)."""
    result = {}
    for component, name in enumerate(("scale", "rotation", "translation")):
        values = evaluate_tracks(
            tracks[:, :, component], banks[component], frames, COMPONENT_DEFAULTS[component]
        )
        result[name] = values * rotation_unit(frac) if component == 1 else values
    return result


def evaluate_bck(bck: BCK, frames) -> dict[str, np.ndarray]:
    """{"scale", "rotation" (degrees, Euler XYZ), "translation"}: each (F, joints, 3)."""
    return _srt(bck.tracks, bck.banks(), bck.rotation_frac, frames)


def evaluate_btk(btk: BTK, frames) -> dict[str, np.ndarray]:
    """{"scale", "rotation" (degrees), "translation"}: each (F, matrices, 3) over U, V, W."""
    return _srt(btk.tracks, btk.banks(), btk.rotation_frac, frames)


def _colors(tracks: np.ndarray, banks, frames, value_range: tuple[int, int]) -> np.ndarray:
    """(F, N, 4) integer colours: clamped to ``value_range``, then truncated."""
    channels = [evaluate_tracks(tracks[:, c], banks[c], frames, 0.0) for c in range(4)]
    values = np.clip(np.stack(channels, axis=-1), *value_range)
    return np.trunc(values).astype(np.int32)


def evaluate_brk(brk: BRK, frames) -> dict[str, np.ndarray]:
    """{"register": (F, registers, 4), "konst": (F, konsts, 4)} RGBA integers."""
    return {
        "register": _colors(brk.register.entries["tracks"], brk.register.banks, frames, REGISTER_RANGE),
        "konst": _colors(brk.konst.entries["tracks"], brk.konst.banks, frames, KONST_RANGE),
    }


def evaluate_bpk(bpk: BPK, frames) -> np.ndarray:
    """(F, materials, 4) RGBA integers 0..255."""
    return _colors(bpk.tracks, bpk.banks, frames, MATERIAL_COLOR_RANGE)


def evaluate_btp(btp: BTP, frames) -> np.ndarray:
    """(F, entries) texture indices: bank[first + min(int(f), count − 1)], frame 0's before the start."""
    frames = np.asarray(frames, dtype=np.float64).reshape(-1)
    counts = btp.entries["count"].astype(np.int64)
    firsts = btp.entries["first"].astype(np.int64)
    step = np.clip(frames.astype(np.int64)[:, None], 0, np.maximum(counts - 1, 0)[None, :])
    indices = np.asarray(btp.indices).astype(np.int64)
    if not len(indices):
        return np.zeros((len(frames), len(counts)), dtype=np.int64)
    return np.where(counts[None, :] > 0, indices[np.minimum(firsts + step, len(indices) - 1)], 0)


def evaluate(model, frames):
    """Dispatch on the model type (see the evaluate_* functions for the result shapes)."""
    for kind, function in (
        (BCK, evaluate_bck),
        (BTK, evaluate_btk),
        (BRK, evaluate_brk),
        (BPK, evaluate_bpk),
        (BTP, evaluate_btp),
    ):
        if isinstance(model, kind):
            return function(model, frames)
    raise TypeError(f"not a J3D animation: {type(model).__name__}")
