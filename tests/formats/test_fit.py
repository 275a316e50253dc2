"""The keys the game needs to play a curve as Blender does (``formats.fit``)."""

import numpy as np
from retro_models.formats import fit
from retro_models.formats.curves import slerp, slerp_keys
from retro_models.formats.scene import Channel


def turns(angles) -> np.ndarray:
    """Quaternions (w, x, y, z) about Z."""
    angles = np.asarray(angles, np.float64)
    return np.stack([np.cos(angles / 2), 0 * angles, 0 * angles, np.sin(angles / 2)], axis=1)


def within(channel, times, values, blender=True) -> float:
    frames = np.linspace(channel.times[0], channel.times[-1], 2001)
    rotation = channel.path != "location"
    found = fit.game(times, values, rotation, frames)
    expected = fit.played(channel, frames, blender)
    off = np.abs(found - expected).max(axis=1)
    if rotation:
        off = np.minimum(off, np.abs(found + expected).max(axis=1))
    return float(off.max())


def test_helper_keys_still_on_the_slerp_are_dropped():
    times, quats = np.array([0.0, 30.0]), turns([0.0, 2.5])
    shown_times, shown, added = slerp_keys(times, quats, 0.01)  # what the importer keys in Blender
    assert len(added) == 29
    channel = Channel("bone", "b", "rotation_quaternion", shown_times, shown)
    got_times, (got,), count, error = fit.game_keys([channel], added, blender=True)
    assert got_times.tolist() == [0.0, 30.0] and count == 0
    assert np.allclose(np.abs((got * quats).sum(axis=1)), 1.0)
    assert within(channel, got_times, got) <= fit.CHANNEL_TOLERANCE and error <= fit.CHANNEL_TOLERANCE


def test_an_edited_key_keeps_only_the_helpers_beside_it():
    times, quats = np.array([0.0, 10.0, 30.0]), turns([0.0, 1.0, 2.0])
    shown_times, shown, added = slerp_keys(times, quats, 0.01)
    shown = shown.copy()
    shown[shown_times == 10.0] = turns([1.3])  # the key moved in Blender; its helpers stay
    channel = Channel("bone", "b", "rotation_quaternion", shown_times, shown)
    got_times, (got,), count, error = fit.game_keys([channel], added, blender=True)
    assert {0.0, 10.0, 30.0} <= set(got_times.tolist())
    assert len(got_times) < len(shown_times) // 2
    assert within(channel, got_times, got) <= fit.CHANNEL_TOLERANCE * 1.01


def test_scene_linear_quaternions_are_slerp_and_need_nothing():
    channel = Channel("bone", "b", "rotation_quaternion", np.array([0.0, 10.0, 20.0]), turns([0, 2, 0.5]))
    got_times, (got,), count, _ = fit.game_keys([channel], np.zeros(0), blender=False)
    assert got_times.tolist() == [0.0, 10.0, 20.0] and count == 0
    assert np.allclose(slerp(got_times, got, [5.0]), slerp(channel.times, channel.values, [5.0]))


def test_blender_linear_quaternions_get_the_keys_their_per_component_curve_needs():
    channel = Channel("bone", "b", "rotation_quaternion", np.array([0.0, 10.0]), turns([0, 2.0]))
    got_times, (got,), count, error = fit.game_keys([channel], np.zeros(0), blender=True)
    assert count == len(got_times) - 2 > 0
    assert within(channel, got_times, got) <= fit.CHANNEL_TOLERANCE * 1.01


def test_bezier_locations_and_euler_rotations_are_followed():
    times = np.array([0.0, 12.0, 40.0])
    values = np.array([[0.0, 1.0, 2.0], [1.0, -1.0, 0.5], [0.0, 0.0, 0.0]])
    left = np.stack([np.broadcast_to((times - 4)[:, None], (3, 3)), values - 0.05], -1)
    right = np.stack([np.broadcast_to((times + 4)[:, None], (3, 3)), values + 0.05], -1)
    for path, scale in (("location", 1.0), ("rotation_euler", 0.5)):
        channel = Channel(
            "bone", "b", path, times, values * scale, "BEZIER", left * [1, scale], right * [1, scale]
        )
        got_times, (got,), count, error = fit.game_keys([channel], np.zeros(0), blender=True)
        assert set(times.tolist()) <= set(got_times.tolist()) and count > 0
        # Sharp turns at a key may need keys closer than the grid: the error says how close it got.
        assert error < fit.TOLERANCE
        assert within(channel, got_times, got) <= max(error, fit.CHANNEL_TOLERANCE) * 1.01


def test_a_long_smooth_curve_needs_few_keys():
    frames = np.arange(0.0, 2001.0, 20.0)
    channel = Channel("bone", "b", "rotation_quaternion", frames, turns(np.sin(frames / 300)))
    got_times, (_,), count, error = fit.game_keys([channel], np.zeros(0), blender=True)
    assert error <= fit.CHANNEL_TOLERANCE
    assert len(got_times) < 3 * len(frames)
