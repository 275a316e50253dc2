"""Hand-built J3D files: every byte written here with struct.pack, not by the code under test."""

import struct

TEXT = b"This is padding data to align"


def pad(size: int) -> bytes:
    return (TEXT * 2)[:size]


def j3d(magic: bytes, kind: bytes, sections: list[bytes], tag: bytes = b"SVR1" + b"\xff" * 12) -> bytes:
    body = b"".join(sections)
    return magic + kind + struct.pack(">II", 0x20 + len(body), len(sections)) + tag + body


def names_table(entries: list[tuple[bytes, int]]) -> bytes:
    """A name table from (name, hash) pairs; hashes are computed by hand in the tests."""
    head = struct.pack(">HH", len(entries), 0xFFFF)
    strings = b""
    offset = 4 + 4 * len(entries)
    for name, hash_value in entries:
        head += struct.pack(">HH", hash_value, offset + len(strings))
        strings += name + b"\0"
    return head + strings


HASH_M1 = 0x0178  # "m1": 109·3 + 49
HASH_M2 = 0x0179  # "m2"
HASH_MAT = 0x056C  # "mat": (109·3 + 97)·3 + 116
HASH_T = 0x0074  # "t"


def track(count: int, first: int, mode: int) -> bytes:
    return struct.pack(">HHH", count, first, mode)


def bck_bytes() -> bytes:
    """Two joints. Joint 0: scale X keyed (0, 1, 0) → (10, 2, 0.05), rotation Z constant 8192.
    Joint 1: rotation Y keyed with split tangents (0, 0, in 0, out 100) → (20, 16384, in −50, out 30),
    translation X 5.0, Z −3.5. Everything else: bank index 0 (scale 1, rotation 0, translation 0)."""
    one = track(1, 0, 0)
    joint0 = [track(2, 1, 0), one, one, one, one, one, one, track(1, 9, 0), one]
    joint1 = [one, one, track(1, 1, 0), one, track(2, 1, 1), one, one, one, track(1, 2, 0)]
    tracks = b"".join(joint0 + joint1)  # 0x6C bytes at 0x40
    scale = struct.pack(">7f", 1.0, 0.0, 1.0, 0.0, 10.0, 2.0, 0.05)
    rotation = struct.pack(">10h", 0, 0, 0, 0, 100, 20, 16384, -50, 30, 8192)
    translation = struct.pack(">3f", 0.0, 5.0, -3.5)
    header = b"ANK1" + struct.pack(">IBBhHHHHIIII", 0x120, 2, 1, 30, 2, 7, 10, 3, 0x40, 0xC0, 0xE0, 0x100)
    section = header + pad(0x1C) + tracks + pad(0x14) + scale + pad(4) + rotation + pad(0xC) + translation
    section += pad(0x14)
    assert len(section) == 0x120
    return j3d(b"J3D1", b"bck1", [section], b"\xff" * 16)


def btk_bytes() -> bytes:
    """One texture matrix (material "mat", matrix 1, centre (0.5, 0.5, 0)): translation U 0.25,
    rotation W keyed (0, 0, 0) → (10, 4096, 0), frac 2."""
    one = track(1, 0, 0)
    tracks = [one, one, track(1, 1, 0), one, one, one, one, track(2, 1, 0), one]
    header = b"TTK1" + struct.pack(">IBBhHHHH", 0xE0, 2, 2, 10, 3, 1, 7, 2)
    header += (
        struct.pack(">8I", 0x60, 0x98, 0x9C, 0xA8, 0xAC, 0xB8, 0xBC, 0xCC)
        + bytes(0x28)
        + struct.pack(">I", 0)
    )
    section = header + b"".join(tracks) + pad(2) + struct.pack(">H", 0) + pad(2)
    section += names_table([(b"mat", HASH_MAT)]) + b"\x01" + pad(3) + struct.pack(">3f", 0.5, 0.5, 0.0)
    section += struct.pack(">f", 1.0) + struct.pack(">7h", 0, 0, 0, 0, 10, 4096, 0) + pad(2)
    section += struct.pack(">2f", 0.0, 0.25) + pad(12)
    assert len(section) == 0xE0
    return j3d(b"J3D1", b"btk1", [section])


def brk_bytes() -> bytes:
    """Register colour 1 of "m1": R keyed (0, −100, 0, 0) → (10, 2000, 0, 0), G 50, B 60, A 255.
    Konst colour 2 of "m2": R 1, G 2, B 3, A keyed (0, 0, 0) → (4, 300, 0)."""
    register = track(2, 0, 1) + track(1, 0, 0) + track(1, 0, 0) + track(1, 0, 0) + b"\x01\xff\xff\xff"
    konst = track(1, 0, 0) + track(1, 0, 0) + track(1, 0, 0) + track(2, 0, 0) + b"\x02\xff\xff\xff"
    header = (
        b"TRK1"
        + struct.pack(">IBBhHH", 0x100, 0, 0xFF, 10, 1, 1)
        + struct.pack(">8H", 8, 1, 1, 1, 1, 1, 1, 6)
    )
    header += struct.pack(">6I", 0x60, 0x7C, 0xCC, 0xD0, 0xD4, 0xE0)
    header += struct.pack(">8I", 0x98, 0xA8, 0xAC, 0xB0, 0xB4, 0xB8, 0xBC, 0xC0)
    section = header + pad(8) + register + konst
    section += struct.pack(">8h", 0, -100, 0, 0, 10, 2000, 0, 0) + struct.pack(">h", 50) + pad(2)
    section += struct.pack(">h", 60) + pad(2) + struct.pack(">h", 255) + pad(2)
    section += struct.pack(">h", 1) + pad(2) + struct.pack(">h", 2) + pad(2) + struct.pack(">h", 3) + pad(2)
    section += struct.pack(">6h", 0, 0, 0, 4, 300, 0)
    section += struct.pack(">H", 0) + pad(2) + struct.pack(">H", 0) + pad(2)
    section += names_table([(b"m1", HASH_M1)]) + pad(1) + names_table([(b"m2", HASH_M2)]) + pad(0x15)
    assert len(section) == 0x100
    return j3d(b"J3D1", b"brk1", [section])


def btp_bytes() -> bytes:
    """Texture slot 0 of "m1" shows indices 2, 5, 7 on frames 0, 1, 2."""
    header = b"TPT1" + struct.pack(">IBBhHHIIII", 0x40, 1, 0xFF, 3, 1, 3, 0x20, 0x28, 0x30, 0x34)
    section = header + struct.pack(">HHB", 3, 0, 0) + b"\xff" * 3 + struct.pack(">3H", 2, 5, 7) + pad(2)
    section += struct.pack(">H", 0) + pad(2) + names_table([(b"m1", HASH_M1)]) + pad(1)
    assert len(section) == 0x40
    return j3d(b"J3D1", b"btp1", [section], b"\xff" * 16)


def bpk_bytes() -> bytes:
    """Material colour of "m1": R keyed (0, 0, in 0, out 51) → (8, 255, in 0, out 0), G 10, B 20, A 255."""
    header = b"PAK1" + struct.pack(">IB", 0xA0, 2) + b"\xff" * 3 + struct.pack(">hH4H", 8, 1, 8, 1, 1, 1)
    header += struct.pack(">3I", 0x40, 0x74, 0x78) + struct.pack(">4I", 0x58, 0x68, 0x6C, 0x70)
    section = header + pad(12) + track(2, 0, 1) + track(1, 0, 0) + track(1, 0, 0) + track(1, 0, 0)
    section += struct.pack(">8h", 0, 0, 0, 51, 8, 255, 0, 0) + struct.pack(">h", 10) + pad(2)
    section += (
        struct.pack(">h", 20) + pad(2) + struct.pack(">h", 255) + pad(2) + struct.pack(">H", 0) + pad(2)
    )
    section += names_table([(b"m1", HASH_M1)]) + pad(0x1D)
    assert len(section) == 0xA0
    return j3d(b"J3D1", b"bpk1", [section])


def material_record() -> bytes:
    """A 0x14C-byte material record: flag 1, cull mode 0, texture 0 = 3, the rest 0xFFFF / 0."""
    head = struct.pack(">8B", 1, 0, 0, 0, 0, 0, 0, 0)
    rest = bytearray(b"\xff" * (0x14C - 8))
    # textures[0] sits after 2+4+2+8+8+8+10+20 = 62 u16 fields
    rest[62 * 2 : 62 * 2 + 2] = struct.pack(">H", 3)
    return head + bytes(rest)


def mat3_bytes() -> bytes:
    """One material "m1" with a cull mode table (0, 1) and one material colour (255, 128, 0, 255)."""
    offsets = [0] * 30
    offsets[0], offsets[1], offsets[2], offsets[4], offsets[5] = 0x84, 0x1D0, 0x1D4, 0x1E0, 0x1E8
    section = b"MAT3" + struct.pack(">IHH30I", 0x200, 1, 0xFFFF, *offsets)
    section += material_record() + struct.pack(">H", 0) + pad(2) + names_table([(b"m1", HASH_M1)]) + pad(1)
    section += struct.pack(">2I", 0, 1) + bytes([255, 128, 0, 255]) + pad(20)
    assert len(section) == 0x200
    return section


def tex1_bytes() -> bytes:
    """One I8 texture "t", 8×4, texel i = 8·i; clamp/repeat wrap."""
    bti = struct.pack(
        ">BBHHBBBBHI4BBBbbBBhI", 1, 0, 8, 4, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0x20
    )
    section = b"TEX1" + struct.pack(">IHHII", 0x80, 1, 0xFFFF, 0x20, 0x60) + pad(12) + bti
    section += bytes(range(0, 256, 8)) + names_table([(b"t", HASH_T)]) + pad(22)
    assert len(section) == 0x80
    return section


def bmt_bytes() -> bytes:
    return j3d(b"J3D2", b"bmt3", [mat3_bytes(), tex1_bytes()], b"SVR3" + b"\xff" * 12)


def full(count: int, first: int) -> bytes:
    return struct.pack(">HH", count, first)


def bca_bytes() -> bytes:
    """Two joints, a value per frame. Joint 0: scale X 1.0, 1.5, 2.0 and rotation Z 0°, 45°, 90°
    (raw 0, 8192, 16384); joint 1: translation Y 5.0, −3.5. Everything else one frame at bank
    index 0 (scale 1, rotation 0, translation 0)."""
    one = full(1, 0)
    joint0 = [
        full(3, 1),
        one,
        one,
        one,
        one,
        one,
        one,
        full(3, 1),
        one,
    ]  # X, Y, Z × scale, rotation, translation
    joint1 = [one, one, one, one, one, full(2, 1), one, one, one]
    tracks = b"".join(joint0 + joint1)  # 0x48 bytes at 0x40
    scale = struct.pack(">4f", 1.0, 1.0, 1.5, 2.0)
    rotation = struct.pack(">4h", 0, 0, 8192, 16384)
    translation = struct.pack(">3f", 0.0, 5.0, -3.5)
    header = b"ANF1" + struct.pack(">IBBhHHHHIIII", 0x100, 2, 0, 3, 2, 4, 4, 3, 0x40, 0xA0, 0xC0, 0xE0)
    section = header + pad(0x1C) + tracks + pad(0x18) + scale + pad(0x10) + rotation + pad(0x18)
    section += translation + pad(0x14)
    assert len(section) == 0x100
    return j3d(b"J3D1", b"bca1", [section])


def bva_bytes() -> bytes:
    """Three shapes over 4 frames: shape 0 shown, shown, hidden, shown; shape 1 always hidden;
    shape 2 shown, hidden, shown, shown (it shares shape 0's values from index 1)."""
    header = b"VAF1" + struct.pack(">IBBhHHII", 0x40, 0, 0xFF, 4, 3, 5, 0x20, 0x2C)
    values = bytes([1, 1, 0, 1, 1])
    section = header + pad(8) + full(4, 0) + full(1, 2) + full(4, 1) + values + pad(0x0F)
    assert len(section) == 0x40
    return j3d(b"J3D1", b"bva1", [section])


def bla_bytes() -> bytes:
    """Two clusters: cluster 0 weighs 0, 0.5, 1 over 3 frames, cluster 1 0.25 throughout."""
    header = b"CLF1" + struct.pack(">IBBhHHII", 0x60, 0, 0xFF, 3, 2, 4, 0x20, 0x40)
    weights = struct.pack(">4f", 0.0, 0.5, 1.0, 0.25)
    section = header + pad(8) + full(3, 0) + full(1, 3) + pad(0x18) + weights + pad(0x10)
    assert len(section) == 0x60
    return j3d(b"J3D1", b"bla1", [section])


def blk_bytes() -> bytes:
    """Two clusters: cluster 0 keyed (0, 0, 0) → (10, 1, 0), cluster 1 constant 1.0 (bank index 0)."""
    header = b"CLK1" + struct.pack(">IBBhHHII", 0x60, 2, 0xFF, 10, 2, 7, 0x20, 0x40)
    weights = struct.pack(">7f", 1.0, 0.0, 0.0, 0.0, 10.0, 1.0, 0.0)
    section = header + pad(8) + track(2, 1, 0) + track(1, 0, 0) + pad(0x14) + weights + pad(4)
    assert len(section) == 0x60
    return j3d(b"J3D1", b"blk1", [section])
