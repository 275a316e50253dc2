"""Edited J3D animations: only the edited track is encoded again; runs other tracks read never change."""

import numpy as np
import pytest
from retro_models.formats.j3d import bck, btk, btp, convert, evaluate
from retro_models.formats.j3d.container import track_widths
from retro_models.formats.scene import Animation, Channel, Scene

TIMES = np.array([0.0, 10.0, 20.0])


def shared_btk() -> bytes:
    """Three materials whose U translations are the same curve: the writer shares one run."""
    channels = [
        Channel("material", name, "texture.0.translate", TIMES, np.array([[0.0], [0.5], [1.0]]), index=0)
        for name in ("a", "b", "c")
    ]
    scene = Scene(animations=[Animation("shared", channels, frame_end=20.0, loop=True)])
    return btk.write(convert.from_scene(scene))


def moved(channel: Channel, key: int, delta: float) -> None:
    """Move one key with its handles, as the Graph Editor does; the channel is edited."""
    channel.values = channel.values.copy()
    channel.values[key] += delta
    for handles in (channel.handles_left, channel.handles_right):
        handles[key, :, 1] += delta
    channel.origin = None


def runs(model) -> dict:
    """Each track's (count, mode, entries as bytes)."""
    found = {}
    for n in range(len(model.tracks)):
        for axis in range(3):
            for component in range(3):
                track = model.tracks[n, axis, component]
                first, width = int(track["first"]), int(track_widths(track[None])[0])
                bank = model.banks()[component]
                found[(n, axis, component)] = (
                    int(track["count"]),
                    int(track["mode"]),
                    bank[first : first + width].tobytes(),
                )
    return found


def test_btk_edit_leaves_materials_sharing_the_run_unchanged():
    data = shared_btk()
    model = btk.read(data)
    first = {int(model.tracks[n, 0, 2]["first"]) for n in range(3)}
    assert len(first) == 1  # the three materials read one run
    scene = convert.to_scene(model)
    edited = next(
        c for c in scene.animations[0].channels if c.target == "b" and c.path == "texture.0.translate"
    )
    moved(edited, 1, 0.25)
    written = btk.write(convert.from_scene(scene))
    again = btk.read(written)
    before, after = runs(model), runs(again)
    changed = [k for k in before if before[k] != after[k]]
    assert changed == [(1, 0, 2)]
    # a and c still read the very entries they read before; b's run is appended after them
    assert int(again.tracks[0, 0, 2]["first"]) == int(again.tracks[2, 0, 2]["first"]) == first.pop()
    assert len(again.translation_bank) == len(model.translation_bank) + 9
    assert again.translation_bank[: len(model.translation_bank)].tobytes() == model.translation_bank.tobytes()
    u = evaluate.evaluate_btk(again, [10.0])["translation"][0, :, 0]
    assert u[1] - u[0] == pytest.approx(0.25, abs=1e-6) and u[2] == u[0]


def test_a_rotation_that_needs_another_exponent_reencodes_every_rotation():
    """Raw rotations are steps of 2^frac·π/32768: a wider edit changes what every raw value means."""
    joints = ["root", "arm"]
    channels = [
        Channel("bone", j, "rotation_euler", TIMES, np.array([[0.0], [0.3], [0.1]]) * (i + 1), index=2)
        for i, j in enumerate(joints)
    ]
    model = bck.read(
        bck.write(convert.from_scene(Scene(animations=[Animation("r", channels, frame_end=20.0)]), 0, joints))
    )
    scene = convert.to_scene(model, joints)
    edited = next(
        c
        for c in scene.animations[0].channels
        if c.target == "arm" and c.path == "rotation_euler" and c.index == 2
    )
    moved(edited, 1, 2 * np.pi)
    again = bck.read(bck.write(convert.from_scene(scene, joint_names=joints)))
    assert again.rotation_frac > model.rotation_frac
    frames = np.linspace(0, 20, 81)
    played = evaluate.evaluate_bck(again, frames)["rotation"]
    original = evaluate.evaluate_bck(model, frames)["rotation"]
    step = 2.0**again.rotation_frac * 180 / 32768  # degrees per raw step now
    assert np.allclose(played[:, 0], original[:, 0], atol=step)  # the root still plays


def test_btp_edit_appends_only_the_edited_pattern():
    channels = [
        Channel(
            "material",
            name,
            "texture.0.image_index",
            np.arange(4.0),
            np.array([[1.0], [2.0], [3.0], [4.0]]),
            "CONSTANT",
        )
        for name in ("a", "b")
    ]
    data = btp.write(convert.from_scene(Scene(animations=[Animation("p", channels, frame_end=4.0)])))
    model = btp.read(data)
    assert model.indices.tolist() == [1, 2, 3, 4]  # shared
    scene = convert.to_scene(model)
    scene.animations[0].channels[1].values = np.array([[1.0], [2.0], [9.0], [4.0]])
    again = btp.read(btp.write(convert.from_scene(scene)))
    assert again.indices.tolist() == [1, 2, 3, 4, 1, 2, 9, 4]
    assert again.entries["first"].tolist() == [0, 4]
