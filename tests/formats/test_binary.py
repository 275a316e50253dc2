import struct

import numpy as np
import pytest
from retro_models.formats.binary import Reader, Writer, with_endian
from retro_models.formats.errors import FormatError


def test_scalars_both_orders():
    data = struct.pack("<HIf", 0x1234, 7, 1.5) + struct.pack(">HIf", 0x1234, 7, 1.5)
    r = Reader(data, "<", "x.bin")
    assert (r.u16(), r.u32(), r.f32()) == (0x1234, 7, 1.5)
    r.endian = ">"
    assert (r.u16(), r.u32(), r.f32()) == (0x1234, 7, 1.5)
    assert r.remaining == 0


def test_truncated_read_names_file_offset_and_expectation():
    r = Reader(b"\x01\x02\x03", "<", "model.tmd")
    r.u16()
    with pytest.raises(FormatError) as e:
        r.u32("vertex count")
    assert e.value.filename == "model.tmd"
    assert e.value.offset == 2
    assert "vertex count" in str(e.value) and "model.tmd" in str(e.value)


def test_count_checked_before_allocation():
    r = Reader(b"\0" * 16, ">", "f")
    with pytest.raises(FormatError, match="268435455 × normals.*only 16 bytes remain"):
        r.array(np.float32, 0xFFFFFFF, "normals")
    with pytest.raises(FormatError, match="limit"):
        r.check_count(5, 1, "bones", limit=4)


def test_structured_array_endianness():
    dt = np.dtype([("a", "u2"), ("b", "f4")])
    raw = struct.pack(">Hf", 3, 2.0) + struct.pack(">Hf", 4, -1.0)
    arr = Reader(raw, ">").array(dt, 2)
    assert arr["a"].tolist() == [3, 4] and arr["b"].tolist() == [2.0, -1.0]
    w = Writer(">")
    w.array(arr, dt)
    assert w.getvalue() == raw
    assert with_endian(dt, "<").fields["b"][0].byteorder in "<="


def test_magic_and_strings():
    r = Reader(b"TMDL\0\0\0\0abc\0\0\0xyz\0", "<", "f")
    r.magic(b"TMDL")
    r.u32()
    assert r.cstring(6) == "abc"
    assert r.zstring() == "xyz"
    with pytest.raises(FormatError, match="expected magic"):
        Reader(b"ABCD").magic(b"TMDL")
    with pytest.raises(FormatError, match="terminating NUL"):
        Reader(b"abc").zstring()


def test_sub_reader_is_bounded():
    r = Reader(bytes(range(10)), "<", "f")
    s = r.sub(2, 4)
    assert s.bytes(4) == bytes([2, 3, 4, 5])
    with pytest.raises(FormatError):
        s.u8()
    with pytest.raises(FormatError, match="past the end"):
        r.sub(8, 4)
    with pytest.raises(FormatError, match="outside"):
        r.seek(11)


def test_writer_patch_align_and_fixed_strings():
    w = Writer("<")
    w.u32(0)
    w.cstring("ab", 4)
    w.align(16, b"xy")
    w.pack_at(0, "I", len(w))
    out = w.getvalue()
    assert out == struct.pack("<I", 16) + b"ab\0\0" + b"xyxyxyxy"
    with pytest.raises(ValueError, match="longer"):
        w.cstring("abcdef", 4)
