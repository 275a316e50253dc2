"""Keys a game plays the way Blender plays a channel (JPOG TMD, TMRF track animations).

Such a game interpolates positions linearly and rotations by slerp between keys. A channel read
from a file (it still has its ``origin``) means exactly that and is written as it is. Any other
channel is a curve: Bézier, linear or constant per component (a quaternion's components then
normalised, Euler angles turned into a rotation), which the game's interpolation only matches at
the keys. LINEAR quaternion keys mean slerp in a Scene, but Blender plays them component by
component: an animation taken from Blender says so in its extras (``PLAYED_IN_BLENDER``).

``game_keys`` keeps the channel's own keys, drops the optional ones (the per-frame keys the
importer added to show a slerp) where the game's interpolation of the others already plays them,
and adds keys on a 1/16-frame grid until the curve is within ``CHANNEL_TOLERANCE`` at every check point
(1/32 frame apart), as few as a greedy walk finds: each key as far on as the curve allows, found
by galloping and halving.
"""

from __future__ import annotations

import numpy as np

from .curves import euler_to_matrix, sample, slerp
from .scene import Channel, keys_digest, matrix_to_quat

PLAYED_IN_BLENDER = "played_in_blender"  # animation extras: its curves are what Blender plays
# How far the written keys may play from what Blender plays: 1e-4 in the posed bone matrices, so
# a quarter of it on each channel's components (a rotation matrix entry moves up to four times as
# far as a quaternion component, and a child's position adds its parents' errors).
TOLERANCE = 1e-4
CHANNEL_TOLERANCE = TOLERANCE / 4
STEPS = 16  # keys may be added every 1/STEPS frame
SUBFRAMES = 2  # checked this many times per step


def unedited(channel: Channel) -> bool:
    """Whether a channel still shows the keys it was read with (the file's own interpolation)."""
    return channel.origin is not None and channel.origin.digest == keys_digest(channel)


def played(channel: Channel, frames: np.ndarray, blender: bool) -> np.ndarray:
    """The curve at ``frames``: (N, 3) locations or (N, 4) unit quaternions (w, x, y, z); ``blender``:
    LINEAR quaternion keys as Blender plays them, else as slerp."""
    values = np.asarray(channel.values, np.float64).reshape(len(channel.times), -1)
    if channel.path == "rotation_quaternion" and channel.interpolation == "LINEAR" and not blender:
        return slerp(channel.times, values, frames)
    curve = sample(
        channel.times, values, channel.interpolation, channel.handles_left, channel.handles_right, frames
    )
    if channel.path == "rotation_euler":
        return matrix_to_quat(euler_to_matrix(curve))
    if channel.path == "rotation_quaternion":
        return curve / np.linalg.norm(curve, axis=1, keepdims=True)
    return curve


def game(times: np.ndarray, values: np.ndarray, rotation: bool, frames: np.ndarray) -> np.ndarray:
    """What the game plays between keys: slerp for rotations, per-component lerp for positions."""
    if rotation:
        return slerp(times, values, frames)
    if len(times) == 1:
        return np.repeat(values[:1], len(frames), axis=0)
    return np.stack([np.interp(frames, times, values[:, k]) for k in range(values.shape[1])], axis=1)


def _error(found: np.ndarray, expected: np.ndarray, rotation: bool) -> np.ndarray:
    off = np.abs(found - expected).max(axis=1)
    if rotation:  # q and −q are one rotation
        off = np.minimum(off, np.abs(found + expected).max(axis=1))
    return off


def game_keys(
    channels: list[Channel], optional: np.ndarray, blender: bool
) -> tuple[np.ndarray, list[np.ndarray], int, float]:
    """(times, values of each channel, keys added, largest error) for the game to play ``channels``'
    curves with one set of key times (the channels of one key: a bone's position and rotation).

    ``optional``: key times that may go (keys only there to show the game's slerp in Blender);
    ``blender``: see ``played``.
    """
    rotations = [channel.path != "location" for channel in channels]
    times = np.unique(np.concatenate([np.asarray(c.times, np.float64) for c in channels]))
    if len(times) < 2:
        return times, [played(c, times, blender) for c in channels], 0, 0.0
    grid = np.arange(np.ceil(times[0] * STEPS), np.floor(times[-1] * STEPS) + 1) / STEPS
    candidates = np.union1d(times, grid)
    required = np.isin(candidates, times) & ~np.isin(candidates, optional)
    required[[0, -1]] = True
    # Check points: the candidates and SUBFRAMES - 1 points inside each gap between them.
    steps = np.arange(1, SUBFRAMES) / SUBFRAMES
    inner = (candidates[:-1, None] + np.diff(candidates)[:, None] * steps).reshape(-1)
    checks = np.union1d(candidates, inner)
    expected = [played(c, checks, blender) for c in channels]
    values = [played(c, candidates, blender) for c in channels]
    at = np.searchsorted(checks, candidates)

    def fits(a: int, b: int) -> bool:
        span = slice(at[a], at[b] + 1)
        return all(
            _error(game(candidates[[a, b]], v[[a, b]], rotation, checks[span]), e[span], rotation).max()
            <= CHANNEL_TOLERANCE
            for v, e, rotation in zip(values, expected, rotations, strict=True)
        )

    # The next key never passes a required one.
    next_required = np.flatnonzero(required)[np.cumsum(required) - required]
    chosen = [0]
    while chosen[-1] < len(candidates) - 1:
        a = chosen[-1]
        limit = int(next_required[a + 1])
        good, step = a + 1, 1
        while good < limit and fits(a, min(a + 2 * step, limit)):  # gallop, then halve
            good, step = min(a + 2 * step, limit), 2 * step
        bad = min(a + 2 * step, limit) if good < limit else good
        while bad - good > 1:
            middle = (good + bad) // 2
            good, bad = (middle, bad) if fits(a, middle) else (good, middle)
        chosen.append(good)
    chosen_times = candidates[chosen]
    error = max(
        float(_error(game(chosen_times, v[chosen], rotation, checks), e, rotation).max())
        for v, e, rotation in zip(values, expected, rotations, strict=True)
    )
    added = int((~np.isin(chosen_times, times)).sum())
    return chosen_times, [v[chosen] for v in values], added, error
