"""BCK, BTK, BRK, BTP and BPK read field by field from hand-built files, written back, and built from scratch."""

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from j3d_fixtures import (
    bca_bytes,
    bck_bytes,
    bla_bytes,
    blk_bytes,
    bpk_bytes,
    brk_bytes,
    btk_bytes,
    btp_bytes,
    bva_bytes,
    pad,
)
from retro_models.formats.errors import FormatError
from retro_models.formats.j3d import bca, bck, bpk, brk, btk, btp, bva, cluster, convert
from retro_models.formats.j3d.brk import ColorGroup, color_entries
from retro_models.formats.j3d.btp import pattern_entries
from retro_models.formats.j3d.container import TRACK_DTYPE, Framing

FIXTURES = {
    "bck": (bck, bck_bytes),
    "btk": (btk, btk_bytes),
    "brk": (brk, brk_bytes),
    "btp": (btp, btp_bytes),
    "bpk": (bpk, bpk_bytes),
    "bca": (bca, bca_bytes),
    "bva": (bva, bva_bytes),
    "bla": (cluster.bla, bla_bytes),
    "blk": (cluster.blk, blk_bytes),
}


def tracks(rows) -> np.ndarray:
    return np.array([tuple(r) for r in rows], TRACK_DTYPE)


def test_bck_fields():
    model = bck.read(bck_bytes(), "tiny.bck")
    assert (model.loop_mode, model.rotation_frac, model.length, model.joint_count) == (2, 1, 30, 2)
    assert model.tracks.shape == (2, 3, 3)
    assert tuple(model.tracks[0, 0, 0]) == (2, 1, 0)  # joint 0, X, scale
    assert tuple(model.tracks[0, 2, 1]) == (1, 9, 0)  # joint 0, Z, rotation
    assert tuple(model.tracks[1, 1, 1]) == (2, 1, 1)  # joint 1, Y, rotation, split tangents
    assert tuple(model.tracks[1, 0, 2]) == (1, 1, 0)  # joint 1, X, translation
    assert model.scale_bank.tolist() == pytest.approx([1.0, 0.0, 1.0, 0.0, 10.0, 2.0, 0.05])
    assert model.rotation_bank.tolist() == [0, 0, 0, 0, 100, 20, 16384, -50, 30, 8192]
    assert model.translation_bank.tolist() == [0.0, 5.0, -3.5]
    assert model.sounds is None and model.gaps is None
    assert model.framing.tag == b"\xff" * 16


def test_btk_fields():
    model = btk.read(btk_bytes(), "tiny.btk")
    assert (model.loop_mode, model.rotation_frac, model.length, model.matrix_count) == (2, 2, 10, 1)
    assert model.material_names == ["mat"]
    assert model.texture_indices.tolist() == [1]
    assert model.centers.tolist() == [[0.5, 0.5, 0.0]]
    assert model.remap.tolist() == [0]
    assert tuple(model.tracks[0, 0, 2]) == (1, 1, 0)  # U translation
    assert tuple(model.tracks[0, 2, 1]) == (2, 1, 0)  # W rotation
    assert model.rotation_bank.tolist() == [0, 0, 0, 0, 10, 4096, 0]
    assert model.translation_bank.tolist() == [0.0, 0.25]
    assert model.calculation == 0 and model.post_fields == bytes(0x28)
    assert model.framing.tag == b"SVR1" + b"\xff" * 12


def test_brk_fields():
    model = brk.read(brk_bytes(), "tiny.brk")
    assert (model.loop_mode, model.length, model.unused_frac) == (0, 10, 0xFF)
    assert model.register.material_names == ["m1"] and model.konst.material_names == ["m2"]
    assert model.register.entries["slot"].tolist() == [1] and model.konst.entries["slot"].tolist() == [2]
    assert model.register.entries["padding"][0].tobytes() == b"\xff\xff\xff"
    assert [tuple(t) for t in model.register.entries["tracks"][0]] == [
        (2, 0, 1),
        (1, 0, 0),
        (1, 0, 0),
        (1, 0, 0),
    ]
    assert [b.tolist() for b in model.register.banks] == [[0, -100, 0, 0, 10, 2000, 0, 0], [50], [60], [255]]
    assert [b.tolist() for b in model.konst.banks] == [[1], [2], [3], [0, 0, 0, 4, 300, 0]]


def test_btp_fields():
    model = btp.read(btp_bytes(), "tiny.btp")
    assert (model.loop_mode, model.length) == (1, 3)
    assert model.material_names == ["m1"]
    assert model.entries[["count", "first", "slot"]].tolist() == [(3, 0, 0)]
    assert model.indices.tolist() == [2, 5, 7]


def test_bpk_fields():
    model = bpk.read(bpk_bytes(), "tiny.bpk")
    assert (model.loop_mode, model.length, model.unused) == (2, 8, b"\xff\xff\xff")
    assert model.material_names == ["m1"]
    assert [tuple(t) for t in model.tracks[0]] == [(2, 0, 1), (1, 0, 0), (1, 0, 0), (1, 0, 0)]
    assert [b.tolist() for b in model.banks] == [[0, 0, 0, 51, 8, 255, 0, 0], [10], [20], [255]]


@pytest.mark.parametrize("kind", FIXTURES)
def test_fixture_round_trip(kind):
    module, build = FIXTURES[kind]
    data = build()
    assert module.write(module.read(data)) == data


def test_bck_from_scratch_matches_the_hand_built_file():
    table = np.zeros((2, 3, 3), TRACK_DTYPE)
    table["count"] = 1
    table[0, 0, 0] = (2, 1, 0)
    table[0, 2, 1] = (1, 9, 0)
    table[1, 0, 2] = (1, 1, 0)
    table[1, 1, 1] = (2, 1, 1)
    table[1, 2, 2] = (1, 2, 0)
    model = bck.BCK(
        2, 1, 30, table,
        np.array([1.0, 0.0, 1.0, 0.0, 10.0, 2.0, 0.05], np.float32),
        np.array([0, 0, 0, 0, 100, 20, 16384, -50, 30, 8192], np.int16),
        np.array([0.0, 5.0, -3.5], np.float32),
        framing=Framing(tag=b"\xff" * 16),
    )  # fmt: skip
    assert bck.write(model) == bck_bytes()


def test_fresh_files_read_back_equal():
    group = ColorGroup(
        color_entries([0], tracks([(1, 0, 0)] * 4).reshape(1, 4)),
        ["x"],
        [np.array([v], np.int16) for v in (1, 2, 3, 4)],
    )
    model = brk.BRK(
        2,
        5,
        group,
        ColorGroup(color_entries([], np.zeros((0, 4), TRACK_DTYPE)), [], [np.zeros(0, np.int16)] * 4),
    )
    again = brk.read(brk.write(model))
    assert again.register.material_names == ["x"] and len(again.konst) == 0
    assert [b.tolist() for b in again.register.banks] == [[1], [2], [3], [4]]
    assert again.register.remap.tolist() == [0]
    assert again.framing == Framing()

    pattern = btp.BTP(
        0, 4, pattern_entries([2, 2], [0, 2], [0, 1]), ["a", "b"], np.array([1, 2, 3, 4], np.uint16)
    )
    again = btp.read(btp.write(pattern))
    assert again.entries.tolist() == pattern.entries.tolist()
    assert again.indices.tolist() == [1, 2, 3, 4] and again.remap.tolist() == [0, 1]


def test_bck_sound_block():
    sound = struct.pack(">IfffI5B", 7, 1.0, 5.0, 1.5, 3, 100, 1, 0, 64, 9) + bytes(7)
    data = bytearray(bck_bytes())
    data[0x1C:0x20] = struct.pack(">I", len(data) + 4)
    data += b"GAP!" + struct.pack(">H", 1) + bytes(6) + sound + b"tail"
    data[8:12] = struct.pack(">I", len(data))
    model = bck.read(bytes(data), "sound.bck")
    assert model.sounds[["id", "start_frame", "end_frame", "pitch", "flags"]].tolist() == [
        (7, 1.0, 5.0, 1.5, 3)
    ]
    assert model.sounds[["volume", "fine", "loops", "pan", "unknown"]].tolist() == [(100, 1, 0, 64, 9)]
    assert model.sound_gap == b"GAP!" and model.framing.trailer == b"tail"
    assert bck.write(model) == bytes(data)


def test_bck_sound_block_outside_the_file():
    data = bytearray(bck_bytes())
    data[0x1C:0x20] = struct.pack(">I", 0x10)
    with pytest.raises(FormatError, match="after the ANK1 section"):
        bck.read(bytes(data), "sound.bck")
    data[0x1C:0x20] = struct.pack(">I", len(data) + 100)
    with pytest.raises(FormatError, match="sound block"):
        bck.read(bytes(data), "sound.bck")


def test_unusual_padding_is_kept():
    data = bytearray(btp_bytes())
    section_end = len(data)
    data[section_end - 1] = 0  # the last padding byte
    data[0x20 + 0x2E : 0x20 + 0x30] = b"\0\0"  # padding after the index bank
    model = btp.read(bytes(data))
    assert model.gaps is not None
    assert btp.write(model) == bytes(data)


@pytest.mark.parametrize("kind", FIXTURES)
def test_truncation_raises_or_keeps_every_byte(kind):
    module, build = FIXTURES[kind]
    data = build()
    for size in range(len(data)):
        cut = data[:size]
        try:
            model = module.read(cut, "cut")
        except FormatError:
            continue
        # Only the final padding may go missing (a real BTK does that): nothing is lost.
        assert size >= len(data) - 32
        assert module.write(model) == cut


@pytest.mark.parametrize(
    "kind, offset, value, problem",
    [
        ("bck", 0x0, b"J3D2", "J3D magic"),
        ("bck", 0x20, b"ANKX", "ANK1"),
        ("bck", 0x2C, b"\xff\xff", "track"),  # joint count
        ("bck", 0x34, b"\x7f\xff\xff\xff", "track table"),  # track table offset
        ("bck", 0x2E, b"\xff\xff", "scale bank"),  # scale count
        ("bck", 0x60, struct.pack(">HHH", 2, 0xFFF0, 0), "bank entries"),
        ("bck", 0x64, b"\x00\x07", "tangent mode"),
        ("btk", 0x2C, b"\x00\x04", "multiple of 3"),
        ("btk", 0x3C, b"\x00\x00\xff\xff", "name table"),
        ("btk", 0x40, b"\x00\x00\x0f\xff", "texture index"),
        ("brk", 0x2C, b"\x00\x02", "names"),
        ("brk", 0x58, b"\x00\x00\x70\x00", "bank"),
        ("btp", 0x2E, b"\x7f\xff", "index bank"),
        ("btp", 0x40, b"\x00\x09", "indices up to 9"),
        ("bpk", 0x2E, b"\x00\x05", "names"),
        ("bpk", 0x44, b"\xff\xff\xff\xff", "bank"),
        ("bca", 0x04, b"bck1", "file type"),
        ("bca", 0x20, b"ANK1", "ANF1"),
        ("bca", 0x2C, b"\xff\xff", "track table"),  # joint count
        ("bca", 0x2E, b"\xff\xff", "scale bank"),
        ("bca", 0x60, struct.pack(">HH", 9, 0), "bank entries up to 9"),
        ("bva", 0x2C, b"\xff\xff", "VAF1 table"),  # shape count
        ("bva", 0x2E, b"\x00\x02", "entries up to 4"),  # value count
        ("bva", 0x34, b"\x00\x00\xff\x00", "VAF1 values"),
        ("bla", 0x40, struct.pack(">HH", 3, 2), "entries up to 5"),
        ("bla", 0x2E, b"\x7f\xff", "CLF1 weights"),
        ("blk", 0x40, struct.pack(">HHH", 2, 1, 5), "tangent mode 5"),
        ("blk", 0x2E, b"\x00\x03", "entries up to 7"),
    ],
)
def test_corrupt_fields(kind, offset, value, problem):
    module, build = FIXTURES[kind]
    data = bytearray(build())
    data[offset : offset + len(value)] = value
    with pytest.raises(FormatError, match=problem):
        module.read(bytes(data), f"bad.{kind}")


@pytest.mark.parametrize("kind", FIXTURES)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_random_corruption_raises_only_format_errors(kind, data):
    module, build = FIXTURES[kind]
    raw = bytearray(build())
    for _ in range(data.draw(st.integers(1, 6))):
        position = data.draw(st.integers(0, len(raw) - 1))
        raw[position] = data.draw(st.integers(0, 255))
    try:
        model = module.read(bytes(raw), "fuzz")
    except FormatError:
        return
    module.write(model)
    joints = [f"j{i}" for i in range(len(model.tracks))] if kind in ("bck", "bca") else None
    convert.to_scene(model, joints)


def test_padding_helper_is_the_text():
    assert pad(29) == b"This is padding data to align"
