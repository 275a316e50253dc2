"""J3D animations ⇄ Scene: exact Bézier handles, default semantics, exact and fresh rewrites."""

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from j3d_fixtures import bck_bytes, bpk_bytes, brk_bytes, btk_bytes, btp_bytes
from retro_models.formats.errors import FormatError
from retro_models.formats.j3d import bck, bpk, brk, btk, btp, convert, evaluate
from retro_models.formats.j3d.container import TRACK_DTYPE, Keys
from retro_models.formats.scene import Channel, keys_digest

FIXTURES = {
    "bck": (bck, bck_bytes),
    "btk": (btk, btk_bytes),
    "brk": (brk, brk_bytes),
    "btp": (btp, btp_bytes),
    "bpk": (bpk, bpk_bytes),
}
JOINTS = ["root", "arm"]


def bezier_curve(channel: Channel, frames: np.ndarray) -> np.ndarray:
    """Evaluate a BEZIER channel numerically: solve x(s) = frame by bisection, return y(s)."""
    times = channel.times
    values = channel.values[:, 0]
    left, right = channel.handles_left[:, 0], channel.handles_right[:, 0]
    k = np.clip(np.searchsorted(times, frames, side="right") - 1, 0, len(times) - 2)
    p0 = np.stack([times[k], values[k]], -1)
    p1, p2 = right[k], left[k + 1]
    p3 = np.stack([times[k + 1], values[k + 1]], -1)

    def point(s):
        s = s[:, None]
        return (1 - s) ** 3 * p0 + 3 * (1 - s) ** 2 * s * p1 + 3 * (1 - s) * s**2 * p2 + s**3 * p3

    low, high = np.zeros(len(frames)), np.ones(len(frames))
    for _ in range(60):
        middle = (low + high) / 2
        before = point(middle)[:, 0] < frames
        low, high = np.where(before, middle, low), np.where(before, high, middle)
    inside = (frames >= times[0]) & (frames <= times[-1])
    return np.where(inside, point((low + high) / 2)[:, 1], np.where(frames < times[0], values[0], values[-1]))


def channel_of(keys: Keys, mode: int) -> Channel:
    entries = np.stack([keys.times, keys.values, keys.in_tangents, keys.out_tangents], 1)
    bank = (entries if mode else entries[:, :3]).reshape(-1)
    track = np.array([(len(keys.times), 0, mode)], TRACK_DTYPE)[0]
    return convert.track_channels([("bone", "b", "location", 0)], track, bank, 1.0, 0.0)[0]


def test_tracks_together_give_each_track_alone():
    """One table of empty, single-value and keyed tracks (both tangent modes, keys at one time too):
    each channel bit for bit what its track gives alone."""
    rng = np.random.default_rng(5)
    bank = rng.normal(size=200).astype(np.float32)
    bank[[0, 3]] = 2.0  # the first two keys of the third track at one time
    tracks = np.array(
        [(0, 0, 0), (1, 7, 0), (3, 0, 0), (2, 20, 1), (0, 0, 1), (5, 40, 1), (1, 0, 1), (4, 100, 0)],
        TRACK_DTYPE,
    )
    targets = [("bone", f"b{n}", "location", n % 3) for n in range(len(tracks))]
    together = convert.track_channels(targets, tracks, bank, 0.5, 1.0)
    for target, track, channel in zip(targets, tracks, together, strict=True):
        alone = convert.track_channels([target], track, bank, 0.5, 1.0)[0]
        assert keys_digest(channel) == keys_digest(alone) == channel.origin.digest
        assert (channel.extras, channel.origin.track) == (alone.extras, alone.origin.track)


def test_handles_a_third_of_the_segment_away():
    keys = Keys(
        np.array([0.0, 6.0, 9.0]),
        np.array([1.0, 4.0, 0.0]),
        np.array([0.3, 2.0, -1.0]),
        np.array([0.6, 3.0, 5.0]),
    )
    channel = channel_of(keys, 1)
    assert channel.interpolation == "BEZIER" and channel.index == 0
    right = [2.0, 1.0 + 0.6 * 2, 7.0, 4.0 + 3.0 * 1, 10.0, 0.0 + 5.0 * 1]
    left = [-2.0, 1.0 - 0.3 * 2, 4.0, 4.0 - 2.0 * 2, 8.0, 0.0 + 1.0 * 1]
    assert channel.handles_right.ravel().tolist() == pytest.approx(right)
    assert channel.handles_left.ravel().tolist() == pytest.approx(left)


@settings(max_examples=60, deadline=None)
@given(
    gaps=st.lists(st.floats(0.25, 30.0), min_size=1, max_size=6),
    numbers=st.lists(st.floats(-100.0, 100.0), min_size=21, max_size=21),
    mode=st.integers(0, 1),
)
def test_bezier_handles_reproduce_the_hermite_curve(gaps, numbers, mode):
    count = len(gaps) + 1
    times = np.concatenate([[0.0], np.cumsum(gaps)])
    values = np.array(numbers[:count])
    in_tangents = np.array(numbers[7 : 7 + count]) / 10
    out_tangents = in_tangents if mode == 0 else np.array(numbers[14 : 14 + count]) / 10
    keys = Keys(times, values, in_tangents, out_tangents)
    frames = np.linspace(-1.0, times[-1] + 1.0, 400)
    channel = channel_of(keys, mode)
    assert np.allclose(bezier_curve(channel, frames), evaluate.hermite(keys, frames), atol=1e-6)


def test_bezier_handles_reproduce_every_corpus_curve():
    import support

    model = bck.read(support.corpus_file("j3d/monl_a_clap1.bck").read_bytes())
    scene = convert.to_scene(model, [f"j{i}" for i in range(model.joint_count)])
    baked = evaluate.evaluate_bck(model, np.linspace(0, model.length, 241))
    frames = np.linspace(0, model.length, 241)
    for channel in scene.animations[0].channels:
        if len(channel.times) < 2:
            continue
        joint = int(channel.target[1:])
        component = convert.SRT_PATHS.index(channel.path)
        expected = baked[("scale", "rotation", "translation")[component]][:, joint, channel.index]
        if component == 1:
            expected = np.radians(expected)
        assert np.allclose(bezier_curve(channel, frames), expected, atol=1e-5)


def test_bck_channels():
    scene = convert.to_scene(bck.read(bck_bytes()), JOINTS, "tiny")
    animation = scene.animations[0]
    assert (animation.name, animation.fps, animation.frame_end, animation.loop) == ("tiny", 30.0, 30.0, True)
    assert animation.extras["loop_mode"] == 2 and animation.extras["rotation_frac"] == 1
    assert len(animation.channels) == 18
    by_key = {(c.target, c.path, c.index): c for c in animation.channels}
    rotation = by_key[("arm", "rotation_euler", 1)]
    assert rotation.target_kind == "bone" and rotation.interpolation == "BEZIER"
    assert rotation.times.tolist() == [0.0, 20.0]
    assert rotation.values[:, 0].tolist() == pytest.approx([0.0, np.pi])
    assert rotation.extras == {"tangent_mode": 1}
    assert rotation.origin.track == [2, 1, 1]  # count, first, mode as stored
    unit = 2 * np.pi / 32768
    assert rotation.handles_right[0, 0].tolist() == pytest.approx([20 / 3, 100 * unit * 20 / 3])
    assert by_key[("root", "rotation_euler", 2)].values[:, 0].tolist() == pytest.approx([np.pi / 2])
    assert by_key[("arm", "location", 0)].values[:, 0].tolist() == [5.0]
    assert by_key[("root", "scale", 0)].values[:, 0].tolist() == pytest.approx([1.0, 2.0])


def test_bck_needs_matching_joints():
    model = bck.read(bck_bytes())
    with pytest.raises(FormatError, match="2 joints but the armature has 3") as caught:
        convert.to_scene(model, ["a", "b", "c"], filename="tiny.bck")
    assert caught.value.filename == "tiny.bck"
    assert struct.unpack_from(">H", bck_bytes(), caught.value.offset) == (model.joint_count,)
    with pytest.raises(ValueError, match="joint names"):
        convert.to_scene(model)
    with pytest.raises(ValueError, match="joint names"):
        convert.from_scene(convert.to_scene(model, JOINTS))


def test_tracks_without_keys_hold_the_defaults():
    model = bck.read(bck_bytes())
    model.tracks["count"][1, 0, 0] = 0  # arm scale X
    model.tracks["count"][1, 1, 1] = 0  # arm rotation Y
    model.tracks["count"][1, 0, 2] = 0  # arm translation X
    scene = convert.to_scene(model, JOINTS)
    by_key = {(c.target, c.path, c.index): c for c in scene.animations[0].channels}
    for path, value in (("scale", 1.0), ("rotation_euler", 0.0), ("location", 0.0)):
        channel = by_key[("arm", path, 0 if path != "rotation_euler" else 1)]
        assert channel.values[:, 0].tolist() == [value] and channel.extras["empty"] is True
    written = convert.from_scene(scene, joint_names=JOINTS)
    assert written.tracks["count"][1, 0, 0] == 0 and written.tracks["count"][1, 1, 1] == 0
    assert bck.write(written) == bck.write(model)
    assert evaluate.evaluate_bck(model, [3.0])["scale"][0, 1, 0] == 1.0


@pytest.mark.parametrize("kind", FIXTURES)
def test_from_scene_writes_the_original_bytes(kind):
    module, build = FIXTURES[kind]
    data = build()
    names = JOINTS if kind == "bck" else None
    scene = convert.to_scene(module.read(data), names)
    assert module.write(convert.from_scene(scene, joint_names=names)) == data
    for channel in scene.animations[0].channels:  # every channel re-encoded from its keys alone
        channel.origin = None
    assert module.write(convert.from_scene(scene, joint_names=names)) == data


@pytest.mark.parametrize("kind", FIXTURES)
def test_fresh_files_play_the_same(kind):
    module, build = FIXTURES[kind]
    model = module.read(build())
    names = JOINTS if kind == "bck" else None
    scene = convert.to_scene(model, names)
    animation = scene.animations[0]
    animation.extras = {"loop_mode": animation.extras["loop_mode"]}
    for channel in animation.channels:
        channel.extras = {k: v for k, v in channel.extras.items() if k in ("empty", "center")}
    fresh = module.read(module.write(convert.from_scene(scene, joint_names=names)))
    frames = np.linspace(-2, model.length + 2, 101)
    expected, found = evaluate.evaluate(model, frames), evaluate.evaluate(fresh, frames)
    for key in expected if isinstance(expected, dict) else [None]:
        a = expected[key] if key else expected
        b = found[key] if key else found
        assert np.allclose(a, b, atol=1e-4)
    assert fresh.framing.tag == b"SVR1" + b"\xff" * 12


def test_fresh_banks_share_runs_and_use_the_smallest_exponent():
    scene = convert.to_scene(bck.read(bck_bytes()), JOINTS)
    animation = scene.animations[0]
    animation.extras = {}
    for channel in animation.channels:
        channel.extras = {}
    fresh = convert.from_scene(scene, joint_names=JOINTS)
    # 16384 raw at frac 1 is 180°: frac 0 would need 32768, one step too many
    assert fresh.rotation_frac == 1
    assert fresh.scale_bank.tolist() == pytest.approx([1.0, 0.0, 1.0, 0.0, 10.0, 2.0, 0.05])
    assert fresh.translation_bank.tolist() == [0.0, 5.0, -3.5]
    # tracks in table order (joint, axis); 0 is the default at index 0 and is shared
    assert fresh.rotation_bank.tolist() == [0, 8192, 0, 0, 0, 100, 20, 16384, -50, 30]
    assert tuple(fresh.tracks[0, 2, 1]) == (1, 1, 0)
    assert tuple(fresh.tracks[1, 1, 1]) == (2, 2, 1)
    assert tuple(fresh.tracks[1, 0, 1]) == (1, 0, 0)
    assert tuple(fresh.tracks[0, 0, 0]) == (2, 1, 0)
    small = convert.to_scene(bck.read(bck_bytes()), JOINTS)
    for channel in small.animations[0].channels:
        channel.extras = {}
        if channel.path == "rotation_euler":
            channel.values = channel.values / 4
            channel.handles_left[..., 1] /= 4
            channel.handles_right[..., 1] /= 4
    small.animations[0].extras = {}
    assert convert.from_scene(small, joint_names=JOINTS).rotation_frac == 0


def test_material_channels():
    texture = convert.to_scene(btk.read(btk_bytes())).animations[0]
    paths = {(c.target, c.path, c.index) for c in texture.channels}
    assert ("mat", "texture.1.rotate", None) in paths and ("mat", "texture.1.translate", 0) in paths
    assert ("mat", "texture.1.scale", 1) in paths and ("mat", "texture.1.scale_w", None) in paths
    rotate = next(c for c in texture.channels if c.path == "texture.1.rotate")
    assert rotate.values[:, 0].tolist() == pytest.approx([0.0, np.pi / 2])  # 4096 raw at frac 2
    assert rotate.extras["center"] == [0.5, 0.5, 0.0]

    colours = convert.to_scene(brk.read(brk_bytes())).animations[0]
    red = next(c for c in colours.channels if c.path == "color.register1" and c.index == 0)
    assert red.target == "m1" and red.values[:, 0].tolist() == pytest.approx([-100 / 255, 2000 / 255])
    alpha = next(c for c in colours.channels if c.path == "color.konst2" and c.index == 3)
    assert alpha.target == "m2" and alpha.times.tolist() == [0.0, 4.0]

    material = convert.to_scene(bpk.read(bpk_bytes())).animations[0]
    assert {(c.path, c.index) for c in material.channels} == {("color.material", i) for i in range(4)}

    pattern = convert.to_scene(btp.read(btp_bytes())).animations[0].channels[0]
    assert (pattern.target, pattern.path, pattern.interpolation) == (
        "m1",
        "texture.0.image_index",
        "CONSTANT",
    )
    assert pattern.times.tolist() == [0.0, 1.0, 2.0] and pattern.values[:, 0].tolist() == [2.0, 5.0, 7.0]


def test_new_channels_from_other_sources():
    """LINEAR channels become Hermite keys that stay linear; sparse BTP keys are held per frame."""
    linear = Channel(
        "bone",
        "root",
        "location",
        np.array([0.0, 10.0, 20.0]),
        np.array([[0.0], [5.0], [0.0]]),
        "LINEAR",
        index=1,
    )
    steps = Channel(
        "material", "m", "texture.0.image_index", np.array([0.0, 3.0]), np.array([[1.0], [4.0]]), "CONSTANT"
    )
    from retro_models.formats.scene import Animation, Scene

    scene = Scene(animations=[Animation("a", [linear], frame_end=20.0)])
    model = convert.from_scene(scene, joint_names=["root"])
    assert model.loop_mode == convert.LOOP_ONCE and model.length == 20
    values = evaluate.evaluate_bck(model, [5.0, 15.0])["translation"][:, 0, 1]
    assert values.tolist() == pytest.approx([2.5, 2.5])
    pattern = convert.from_scene(Scene(animations=[Animation("p", [steps], frame_end=4.0, loop=True)]))
    assert isinstance(pattern, btp.BTP) and pattern.loop_mode == convert.LOOP_REPEAT
    assert pattern.indices.tolist() == [1, 1, 1, 4]


def test_sound_block_travels_in_the_extras():
    import struct

    sound = struct.pack(">IfffI5B", 7, 1.0, 5.0, 1.5, 3, 100, 1, 0, 64, 9) + bytes(7)
    data = bytearray(bck_bytes())
    data[0x1C:0x20] = struct.pack(">I", len(data))
    data += struct.pack(">H", 1) + bytes(6) + sound
    data[8:12] = struct.pack(">I", len(data))
    scene = convert.to_scene(bck.read(bytes(data)), JOINTS)
    assert isinstance(scene.animations[0].extras["sounds"], bytes)
    assert bck.write(convert.from_scene(scene, joint_names=JOINTS)) == bytes(data)
