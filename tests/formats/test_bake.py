"""Baking many curves at once (``curves.bake_many``) gives each the keys it gets alone (``bake_keys``)."""

import numpy as np
import pytest
from retro_models.formats.curves import bake_keys, bake_many, sample, sample_many


def bezier_curve(seed: int, count: int, even: bool):
    """(times, values, handles left, handles right) of a 3-component Bézier curve: handles a third of the
    way to the neighbouring key (``even``) or at other lengths."""
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.uniform(0.5, 4.0, count))
    values = rng.normal(size=(count, 3))
    reach = np.full(count, 1 / 3) if even else rng.uniform(0.1, 0.9, count)
    gaps = np.concatenate([[1.0], np.diff(times), [1.0]])
    slopes = rng.normal(size=(count, 3))
    left = np.stack(np.broadcast_arrays((times - reach * gaps[:-1])[:, None], values), -1).copy()
    right = np.stack(np.broadcast_arrays((times + reach * gaps[1:])[:, None], values), -1).copy()
    left[..., 1] -= slopes * (reach * gaps[:-1])[:, None]
    right[..., 1] += slopes * (reach * gaps[1:])[:, None]
    return times, values, left, right


CURVES = [bezier_curve(seed, count, seed % 2 == 0) for seed, count in enumerate([5, 2, 9, 1, 4])]


def played(curve, frames):
    times, values, left, right = curve
    return sample(times, values, "BEZIER", left, right, frames)


def test_sample_many_solves_each_curve_as_alone():
    frames = np.linspace(-1.0, 30.0, 97)
    together = sample_many([(t, v, "BEZIER", hl, hr, frames) for t, v, hl, hr in CURVES])
    for curve, found in zip(CURVES, together, strict=True):
        assert np.array_equal(found, played(curve, frames))


def evaluate_all(quaternion: bool):
    def evaluate(curve, frames):
        out = np.zeros((len(frames), 4 if quaternion else 3))
        for c in np.unique(curve):
            rows = curve == c
            out[rows] = pose(CURVES[c], frames[rows], quaternion)
        return out

    return evaluate


def pose(curve, frames, quaternion: bool):
    values = played(curve, frames)
    if not quaternion:
        return values
    turn = np.concatenate([np.cos(values[:, :1]), np.sin(values[:, :1]) * values], axis=1)
    return turn / np.linalg.norm(turn, axis=1, keepdims=True)


@pytest.mark.parametrize("quaternion", [False, True])
def test_bake_many_gives_each_curve_its_own_bake(quaternion):
    together = bake_many([c[0] for c in CURVES], evaluate_all(quaternion), quaternion)
    assert len(together) == len(CURVES)
    for curve, keys in zip(CURVES, together, strict=True):
        alone = bake_keys(curve[0], lambda frames, curve=curve: pose(curve, frames, quaternion), quaternion)
        assert len(keys[0]) >= len(curve[0])  # whole frames and halvings added
        for found, expected in zip(keys, alone, strict=True):
            assert np.array_equal(found, expected)
