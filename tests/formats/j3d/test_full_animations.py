"""BCA, BVA, BLA and BLK: read field by field from hand-built files, written back byte for byte,
converted to the Scene and back, edited, and refused when damaged."""

import struct

import numpy as np
import pytest
from j3d_fixtures import bca_bytes, bla_bytes, blk_bytes, bva_bytes
from retro_models.formats.errors import ExportError, FormatError
from retro_models.formats.j3d import bca, bck, bva, cluster, convert, evaluate, files
from retro_models.formats.j3d.bca import FULL_DTYPE
from retro_models.formats.j3d.container import TRACK_DTYPE
from retro_models.formats.scene import Scene

FIXTURES = {
    "bca": (bca, bca_bytes),
    "bva": (bva, bva_bytes),
    "bla": (cluster.bla, bla_bytes),
    "blk": (cluster.blk, blk_bytes),
}
JOINTS = ["root", "tip"]


def scene_of(kind: str) -> Scene:
    module, build = FIXTURES[kind]
    return convert.to_scene(module.read(build(), f"x.{kind}"), JOINTS if kind == "bca" else None, "x")


def write_scene(kind: str, scene: Scene) -> bytes:
    return FIXTURES[kind][0].write(convert.from_scene(scene, joint_names=JOINTS))


def channel(scene: Scene, target: str, path: str, index=None):
    return next(
        c for c in scene.animations[0].channels if (c.target, c.path, c.index) == (target, path, index)
    )


def test_bca_fields():
    model = bca.read(bca_bytes(), "tiny.bca")
    assert (model.loop_mode, model.length, model.joint_count, model.unused) == (2, 3, 2, 0)
    assert tuple(model.tracks[0, 0, 0]) == (3, 1)  # joint 0, X, scale
    assert tuple(model.tracks[0, 2, 1]) == (3, 1)  # joint 0, Z, rotation
    assert tuple(model.tracks[1, 1, 2]) == (2, 1)  # joint 1, Y, translation
    assert model.scale_bank.tolist() == [1.0, 1.0, 1.5, 2.0]
    assert model.rotation_bank.tolist() == [0, 0, 8192, 16384]
    assert model.translation_bank.tolist() == [0.0, 5.0, -3.5]
    assert model.gaps is None


def test_bva_fields():
    model = bva.read(bva_bytes(), "tiny.bva")
    assert (model.loop_mode, model.length, model.unused) == (0, 4, 0xFF)
    assert [tuple(t) for t in model.tracks] == [(4, 0), (1, 2), (4, 1)]
    assert model.values.tolist() == [1, 1, 0, 1, 1]


def test_cluster_fields():
    bla = cluster.bla.read(bla_bytes(), "tiny.bla")
    assert (bla.kind, bla.loop_mode, bla.length, bla.word, bla.keyed) == (b"bla1", 0, 3, 2, False)
    assert [tuple(t) for t in bla.tracks] == [(3, 0), (1, 3)]
    assert bla.weights.tolist() == [0.0, 0.5, 1.0, 0.25]
    blk = cluster.blk.read(blk_bytes(), "tiny.blk")
    assert (blk.kind, blk.loop_mode, blk.length, blk.keyed) == (b"blk1", 2, 10, True)
    assert [tuple(t) for t in blk.tracks] == [(2, 1, 0), (1, 0, 0)]


@pytest.mark.parametrize("kind", FIXTURES)
def test_fixture_round_trip_through_the_model_and_the_scene(kind):
    module, build = FIXTURES[kind]
    data = build()
    assert module.write(module.read(data, "x")) == data
    assert write_scene(kind, scene_of(kind)) == data


@pytest.mark.parametrize("entries", range(0, 20))
def test_the_cluster_count_is_where_the_padding_starts(entries):
    """The header has no cluster count: whatever the table's length, it reads back whole (padding text
    after 0 to 19 entries of each kind, including entries that look like padding)."""
    for kind, dtype in ((b"bla1", FULL_DTYPE), (b"blk1", TRACK_DTYPE)):
        tracks = np.zeros(entries, dtype)
        if entries:
            tracks[-1]["count"] = 1
        model = cluster.Cluster(kind, 0, 5, tracks, np.array([0.5], np.float32))
        data = cluster.write(model)
        found = cluster.read_kind(data, "x", kind)
        assert len(found.tracks) == entries and cluster.write(found) == data


def test_bca_channels_hold_every_frame():
    scene = scene_of("bca")
    assert scene.animations[0].extras["j3d_type"] == "bca"
    rotation = channel(scene, "root", "rotation_euler", 2)
    assert rotation.times.tolist() == [0, 1, 2] and rotation.interpolation == "LINEAR"
    assert np.degrees(rotation.values[:, 0]).tolist() == pytest.approx([0, 45, 90])
    assert channel(scene, "tip", "location", 1).values[:, 0].tolist() == [5.0, -3.5]
    with pytest.raises(FormatError, match="2 joints but the armature has 3"):
        convert.to_scene(bca.read(bca_bytes()), ["a", "b", "c"], filename="x.bca")


def test_bca_plays_as_the_bck_with_the_same_values():
    """The BCA's scene written as a BCK plays the BCA's values at every frame; a BCK written as a BCA
    holds the BCK's value at every frame."""
    model = bca.read(bca_bytes())
    frames = np.arange(model.length)
    scene = scene_of("bca")
    animation = scene.animations[0]
    animation.extras = {"j3d_type": "bck", "loop_mode": model.loop_mode}
    as_bck = bck.read(bck.write(convert.from_scene(scene, joint_names=JOINTS)))
    played = evaluate.evaluate_bck(as_bck, frames)
    for joint in range(2):
        for axis in range(3):
            for component, name in enumerate(("scale", "rotation", "translation")):
                count, first = model.tracks[joint, axis, component]
                bank = model.banks()[component][first : first + count].astype(np.float64)
                if component == 1:
                    bank = bank * 180 / 32768
                expected = bank[np.minimum(frames, count - 1)]
                assert played[name][:, joint, axis] == pytest.approx(expected, abs=1e-3)
    animation.extras = {"j3d_type": "bca", "loop_mode": as_bck.loop_mode}
    back = convert.from_scene(convert.to_scene(as_bck, JOINTS), joint_names=JOINTS)
    assert isinstance(back, bck.BCK)
    bck_scene = convert.to_scene(as_bck, JOINTS)
    bck_scene.animations[0].extras = {"j3d_type": "bca"}
    for c in bck_scene.animations[0].channels:
        c.origin = None
    as_bca = bca.read(bca.write(convert.from_scene(bck_scene, joint_names=JOINTS)))
    count, first = as_bca.tracks[0, 2, 1]
    assert as_bca.rotation_bank[first : first + count].tolist() == [0, 8192, 16384]


def test_bva_hides_the_shapes_the_file_hides():
    scene = scene_of("bva")
    assert scene.animations[0].extras["j3d_type"] == "bva"
    hide = {c.target: c for c in scene.animations[0].channels}
    assert sorted(hide) == ["shape0", "shape1", "shape2"]
    assert hide["shape0"].values[:, 0].tolist() == [0, 0, 1, 0]
    assert hide["shape1"].values[:, 0].tolist() == [1]
    assert hide["shape2"].values[:, 0].tolist() == [0, 1, 0, 0]
    assert {c.interpolation for c in hide.values()} == {"CONSTANT"} and hide["shape0"].target_kind == "object"


def test_cluster_weights_are_shape_key_channels():
    weights = {c.path: c for c in scene_of("bla").animations[0].channels}
    assert weights["cluster0"].values[:, 0].tolist() == [0.0, 0.5, 1.0]
    assert weights["cluster1"].values[:, 0].tolist() == [0.25]
    keyed = {c.path: c for c in scene_of("blk").animations[0].channels}
    assert keyed["cluster0"].interpolation == "BEZIER" and keyed["cluster0"].times.tolist() == [0, 10]
    assert {c.target_kind for c in keyed.values()} == {"shape_key"}


def edit(chan, values) -> None:
    chan.values = np.asarray(values, np.float64)[:, None]
    chan.times = np.arange(len(values), dtype=np.float64)
    chan.origin = None


@pytest.mark.parametrize(
    "kind, target, path, index, values",
    [
        ("bca", "tip", "location", 1, [5.0, 6.0, 7.0]),
        ("bva", "shape1", "hide", None, [0.0, 1.0]),
        ("bla", "x", "cluster0", None, [0.0, 0.75, 1.0]),
    ],
)
def test_an_edit_reencodes_only_the_edited_track(kind, target, path, index, values):
    """The edited track's values go at the end of its bank (or reuse a run already there); every other
    track and bank entry stays as it was."""
    module, build = FIXTURES[kind]
    original = module.read(build())
    scene = scene_of(kind)
    if kind == "bla":
        target = convert.CLUSTER_TARGET
    edit(channel(scene, target, path, index), values)
    edited = module.read(write_scene(kind, scene))
    old_tracks, new_tracks = original.tracks.reshape(-1), edited.tracks.reshape(-1)
    changed = np.flatnonzero(old_tracks != new_tracks)
    assert len(changed) == 1
    if kind == "bca":
        old_bank, new_bank = original.translation_bank, edited.translation_bank
    elif kind == "bva":
        old_bank, new_bank = original.values, edited.values
    else:
        old_bank, new_bank = original.weights, edited.weights
    assert new_bank[: len(old_bank)].tolist() == old_bank.tolist()
    count, first = new_tracks[changed[0]]["count"], new_tracks[changed[0]]["first"]
    stored = new_bank[first : first + count].astype(np.float64)
    expected = 1.0 - np.asarray(values) if kind == "bva" else np.asarray(values)
    assert stored.tolist() == pytest.approx(expected.tolist())


def test_blk_edit_reencodes_only_that_cluster():
    original = cluster.blk.read(blk_bytes())
    scene = scene_of("blk")
    weight = channel(scene, convert.CLUSTER_TARGET, "cluster1")
    edit(weight, [0.5])
    edited = cluster.blk.read(write_scene("blk", scene))
    assert tuple(edited.tracks[0]) == tuple(original.tracks[0])
    assert edited.weights[: len(original.weights)].tolist() == original.weights.tolist()
    count, first, _ = edited.tracks[1]
    assert (count, edited.weights[first]) == (1, 0.5)


def test_bva_made_in_blender_hides_a_shape_at_a_frame():
    """A hide channel keyed only where it changes becomes a value per frame, shown = 1."""
    from retro_models.formats.scene import Animation, Channel

    hide = Channel("object", "shape1", "hide", np.array([0.0, 3.0]), np.array([[0.0], [1.0]]), "CONSTANT")
    show = Channel("object", "shape0", "hide", np.array([0.0]), np.array([[0.0]]), "CONSTANT")
    scene = Scene(animations=[Animation("blink", [show, hide], frame_end=5.0)])
    model = bva.read(bva.write(convert.from_scene(scene)))
    count, first = model.tracks[1]
    assert model.values[first : first + count].tolist() == [1, 1, 1, 0]
    count, first = model.tracks[0]
    assert model.values[first : first + count].tolist() == [1]


def test_files_read_and_name_the_new_kinds(tmp_path):
    scene = files.load_animation(bca_bytes(), str(tmp_path / "walk.bca"))
    assert scene.skeletons[0].bone_names == ["joint 0", "joint 1"]
    for kind in ("bca", "bva", "bla", "blk"):
        assert files.kind_of(f"a.{kind}") == kind
        assert files.load_animation(FIXTURES[kind][1](), f"a.{kind}").animations[0].extras["j3d_type"] == kind
    with pytest.raises(ExportError, match=r"\.bva"):
        files.kind_of("a.bxa")
    path = tmp_path / "out.blk"
    assert files.save(scene_of("blk"), str(path), files.ExportOptions()) == [str(path)]
    assert path.read_bytes() == blk_bytes()


def test_an_unedited_file_keeps_an_unusual_header_word_and_padding():
    data = bytearray(bla_bytes())
    data[0x2C:0x2E] = b"\x00\x01"  # the word the game does not read
    model = cluster.bla.read(bytes(data))
    assert model.word == 1 and len(model.tracks) == 2  # the count is where the padding text starts
    assert write_scene("bla", convert.to_scene(model)) == bytes(data)
    data[0x2C:0x2E] = b"\x00\x02"
    data[0x48:0x60] = bytes(0x18)  # zeros instead of padding text: the word gives the count
    model = cluster.bla.read(bytes(data))
    assert len(model.tracks) == 2 and cluster.write(model) == bytes(data)
    assert write_scene("bla", convert.to_scene(model)) == bytes(data)


def test_a_new_cluster_file_gets_the_cluster_count_in_the_header_word():
    scene = scene_of("bla")
    scene.animations[0].extras = {"j3d_type": "bla"}  # made anew: no stored word, banks or framing
    fresh = convert.from_scene(scene)
    assert fresh.word is None and fresh.kind == b"bla1"
    assert cluster.read_kind(cluster.write(fresh), "x", b"bla1").word == 2


def test_inspect_summarises_the_new_kinds():
    from retro_models.formats.j3d import inspect

    assert "joints: 2, a value per frame" in inspect.summarize(bca_bytes(), "x.bca")
    assert "hidden at some frame: shape0, shape1, shape2" in inspect.summarize(bva_bytes(), "x.bva")
    assert "clusters: 2 (a weight per frame)" in inspect.summarize(bla_bytes(), "x.bla")
    assert "clusters: 2 (keyed), 7 weights" in inspect.summarize(blk_bytes(), "x.blk")


def test_a_bva_shape_left_out_of_the_animation_keeps_its_track():
    """Applied to some of the shapes only, the animation has no channel for the others: the file keeps
    every shape's track (the game indexes the table by shape)."""
    scene = scene_of("bva")
    animation = scene.animations[0]
    animation.channels = [c for c in animation.channels if c.target != "shape2"]
    assert write_scene("bva", scene) == bva_bytes()
    animation.channels = [c for c in animation.channels if c.target != "shape0"]
    edit(channel(scene, "shape1", "hide", None), [0.0])
    edited = bva.read(write_scene("bva", scene))
    original = bva.read(bva_bytes())
    assert [tuple(t) for t in edited.tracks[[0, 2]]] == [tuple(t) for t in original.tracks[[0, 2]]]


def test_bca_rotations_turn_the_shorter_way_and_wrap_on_export():
    """Raw angles wrap at ±180°: in Blender the keys are unwrapped (the lerp between frames turns the
    short way, as the game's does) and written back modulo a turn."""
    data = bytearray(bca_bytes())
    rotation = 0x20 + 0xC0  # the rotation bank: 0, 0, 8192, 16384
    data[rotation : rotation + 8] = struct.pack(">4h", 0, 30000, -30000, -25000)
    model = bca.read(bytes(data))
    scene = convert.to_scene(model, JOINTS)
    z = channel(scene, "root", "rotation_euler", 2)
    assert np.degrees(z.values[:, 0]) == pytest.approx([164.79, 195.21, 222.67], abs=0.01)
    assert write_scene("bca", scene) == bytes(data)
    edit(z, z.values[:, 0] + np.radians(10.0))
    edited = bca.read(write_scene("bca", scene))
    count, first = edited.tracks[0, 2, 1]
    assert edited.rotation_bank[first : first + count].tolist() == [31820, -28180, -23180]


def test_a_new_bca_gives_every_track_a_frame():
    """The game reads a full-frame track's last frame: a joint component without a channel holds its
    default for one frame rather than storing none."""
    from retro_models.formats.scene import Animation, Channel

    turn = Channel(
        "bone", "tip", "rotation_euler", np.arange(3.0), np.radians([[0.0], [90.0], [180.0]]), index=0
    )
    scene = Scene(animations=[Animation("turn", [turn], frame_end=2.0, extras={"j3d_type": "bca"})])
    model = bca.read(bca.write(convert.from_scene(scene, joint_names=JOINTS)))
    assert (model.tracks["count"] >= 1).all()
    count, first = model.tracks[1, 0, 1]
    assert model.rotation_bank[first : first + count].tolist() == [0, 16384, -32768]
    count, first = model.tracks[0, 0, 0]
    assert model.scale_bank[first : first + count].tolist() == [1.0]
