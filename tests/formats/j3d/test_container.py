import struct

import numpy as np
import pytest
from j3d_fixtures import HASH_M1, HASH_MAT, j3d, names_table, pad
from retro_models.formats.binary import Reader
from retro_models.formats.errors import FormatError
from retro_models.formats.j3d import container
from retro_models.formats.j3d.container import (
    TRACK_DTYPE,
    BankBuilder,
    Framing,
    SectionBuilder,
    key_entries,
    name_hash,
    read_container,
    read_gaps,
    read_names,
    track_keys,
    write_container,
    write_names,
)


def test_padding_text_restarts_for_every_gap():
    assert container.padding(8) == b"This is "
    assert container.padding(35) == b"This is padding data to alignThis i"
    assert container.aligned_padding(0x24, 32) == b"This is padding data to alig"
    assert container.aligned_padding(0x40, 32) == b""


def test_name_hash_matches_hand_computed_values():
    assert name_hash(b"mat") == HASH_MAT
    assert name_hash(b"m1") == HASH_M1
    assert name_hash(b"") == 0
    # wraps at 16 bits
    assert name_hash(b"\xff" * 20) == sum(255 * 3**k for k in range(20)) & 0xFFFF


def test_name_table_fields():
    table = names_table([(b"m1", HASH_M1), (b"mat", HASH_MAT)])
    names, size = read_names(Reader(table, ">"), 0)
    assert names == ["m1", "mat"]
    assert size == len(table) == 4 + 8 + 3 + 4
    assert write_names(["m1", "mat"]) == table


@pytest.mark.parametrize(
    "table, problem",
    [
        (struct.pack(">HH", 1, 0) + struct.pack(">HH", HASH_M1, 8) + b"m1\0", "0xFFFF"),
        (struct.pack(">HH", 1, 0xFFFF) + struct.pack(">HH", 0x1234, 8) + b"m1\0", "hash"),
        (struct.pack(">HH", 1, 0xFFFF) + struct.pack(">HH", HASH_M1, 9) + b"m1\0", r"expected at \+8"),
        (struct.pack(">HH", 1, 0xFFFF) + struct.pack(">HH", HASH_M1, 8) + b"m1", "NUL"),
        (struct.pack(">HH", 0xFFFF, 0xFFFF), "entries"),
    ],
)
def test_bad_name_tables(table, problem):
    with pytest.raises(FormatError, match=problem):
        read_names(Reader(table, ">", "names.bin"), 0)


def test_track_keys_of_each_layout():
    bank = np.array([7.0, 0.0, 1.0, 0.5, 10.0, 2.0, -0.5, 0.0, 3.0, 4.0, 5.0, 6.0])
    tracks = np.array([(0, 0, 0), (1, 0, 0), (2, 1, 0), (2, 4, 1)], TRACK_DTYPE)
    empty, single, shared, split = (track_keys(t, bank) for t in tracks)
    assert len(empty.times) == 0
    assert single.values.tolist() == [7.0] and single.times.tolist() == [0.0]
    assert shared.times.tolist() == [0.0, 10.0]
    assert shared.values.tolist() == [1.0, 2.0]
    assert shared.in_tangents.tolist() == shared.out_tangents.tolist() == [0.5, -0.5]
    assert split.times.tolist() == [10.0, 3.0]
    assert split.values.tolist() == [2.0, 4.0]
    assert split.in_tangents.tolist() == [-0.5, 5.0]
    assert split.out_tangents.tolist() == [0.0, 6.0]
    assert key_entries(split, 1).tolist() == bank[4:12].tolist()
    assert key_entries(shared, 0).tolist() == bank[1:7].tolist()


def test_check_tracks_rejects_bad_modes_and_ranges():
    r = Reader(b"", ">", "x.bin")
    with pytest.raises(FormatError, match="tangent mode 2"):
        container.check_tracks(r, np.array([(2, 0, 2)], TRACK_DTYPE), 100, "test", 0)
    with pytest.raises(FormatError, match="bank entries up to 9"):
        container.check_tracks(r, np.array([(3, 0, 0)], TRACK_DTYPE), 8, "test", 0)
    container.check_tracks(r, np.array([(3, 0, 0), (2, 0, 1), (1, 7, 1)], TRACK_DTYPE), 9, "test", 0)


def test_bank_builder_shares_identical_runs_only_on_item_boundaries():
    bank = BankBuilder(">f4", 1.0)
    assert bank.add(np.array([1.0])) == 0  # the default value at index 0
    assert bank.add(np.array([0.0, 2.0, 0.0])) == 1
    assert bank.add(np.array([2.0, 0.0])) == 2  # a run inside an earlier one
    assert bank.add(np.array([5.0])) == 4
    assert bank.array().tolist() == [1.0, 0.0, 2.0, 0.0, 5.0]
    shorts = BankBuilder(">i2", 0)
    shorts.add(np.array([0x0100, 0x0001]))
    # the bytes 01 00 01 occur at an odd offset; that is not a match
    assert shorts.add(np.array([0x0001])) == 2


def test_section_builder_aligns_with_padding_text():
    builder = SectionBuilder(b"TEST", 0x0C)
    first = builder.block(b"\x01\x02\x03", 32)
    second = builder.block(b"\x04", 4)
    data = builder.finish(b"\xaa" * 4)
    assert (first, second) == (0x20, 0x24)
    header = b"TEST" + struct.pack(">I", 0x40) + b"\xaa" * 4
    assert data == header + pad(0x14) + b"\x01\x02\x03" + pad(1) + b"\x04" + pad(0x1B)


def test_read_gaps_records_only_unusual_layouts():
    standard = b"HEAD" + pad(4) + b"AB" + pad(2) + b"CD" + pad(18)
    assert read_gaps(standard, 4, [(8, 2), (12, 2)], [8, 4]) is None
    odd = b"HEAD" + pad(4) + b"AB" + b"\0\0" + b"CD" + b"\0\0\xff\xff"
    assert read_gaps(odd, 4, [(8, 2), (12, 2)], [8, 4]) == [pad(4), b"\0\0", b"\0\0\xff\xff"]
    # blocks out of the usual order: rewritten in the usual order
    assert read_gaps(standard, 4, [(12, 2), (8, 2)], [8, 4]) is None


def _section(magic: bytes, size: int, body: bytes = b"") -> bytes:
    return magic + struct.pack(">I", size) + body


def test_container_fields_and_tolerances():
    data = j3d(b"J3D1", b"bck1", [_section(b"ANK1", 0x20, bytes(0x18))], b"\xff" * 16) + b"junk"
    parsed = read_container(data, "a.bck", b"J3D1", (b"bck1",))
    assert parsed.kind == b"bck1"
    assert [s.magic for s in parsed.sections] == [b"ANK1"]
    assert parsed.framing.tag == b"\xff" * 16
    assert parsed.framing.trailer == b"junk"
    assert parsed.framing.file_size_delta == -4
    assert write_container(b"J3D1", b"bck1", [parsed.sections[0].data], parsed.framing) == data


def test_section_running_past_the_end_is_clamped_and_kept():
    data = j3d(b"J3D1", b"btk1", [_section(b"TTK1", 0x24, bytes(0x18))])
    parsed = read_container(data, "a.btk", b"J3D1", (b"btk1",))
    assert parsed.framing.size_overrun == 4
    assert len(parsed.sections[0].data) == 0x20
    assert write_container(b"J3D1", b"btk1", [parsed.sections[0].data], parsed.framing) == data


def test_wrong_section_count_is_tolerated():
    data = bytearray(j3d(b"J3D2", b"bmt3", [_section(b"MAT3", 0x20, bytes(0x18))]))
    data[0x0C:0x10] = struct.pack(">I", 2)
    parsed = read_container(bytes(data), "a.bmt", b"J3D2", (b"bmt3",))
    assert len(parsed.sections) == 1 and parsed.framing.section_count_delta == 1
    assert write_container(b"J3D2", b"bmt3", [parsed.sections[0].data], parsed.framing) == bytes(data)


@pytest.mark.parametrize(
    "data, problem",
    [
        (b"J3D9bck1" + bytes(24), "J3D magic"),
        (b"J3D1zzz1" + bytes(24), "file type"),
        (b"J3D1bck1" + bytes(4), "file size"),
        (j3d(b"J3D1", b"bck1", []), "at least one section"),
        (j3d(b"J3D1", b"bck1", [_section(b"ANK1", 4, bytes(8))]), "below 8"),
        (j3d(b"J3D1", b"bck1", [_section(b"ANK1", 0x1000, bytes(8))]), "past the end"),
    ],
)
def test_bad_containers(data, problem):
    with pytest.raises(FormatError, match=problem):
        read_container(data, "bad.bck", b"J3D1", (b"bck1",))


def test_fresh_framing_defaults():
    framing = Framing()
    assert framing.tag == b"SVR1" + b"\xff" * 12
    assert framing.trailer == b"" and framing.size_overrun == 0


def test_bank_builder_limit():
    bank = BankBuilder(">f4", 0.0)
    bank.add(np.arange(1.0, 60001.0))
    with pytest.raises(ValueError, match="65535"):
        bank.add(np.arange(-6000.0, 0.0))
