"""Hand-built TMD/TKL/TML bytes with known values (struct.pack, independent of the writers)."""

import struct

import numpy as np

SALT = 0x1234
NAMES = [b"pelvis", b"tail"]
BIND_T = [(0.0, 0.0, 1.0), (0.0, -1.0, 1.0)]
VERTICES = [
    # position, normal, weights, bones, uv
    ((0.0, 0.0, 0.0), (0.0, 0.0, 1.0), (255, 0, 0, 0), (0, 0, 0, 0), (0.0, 0.25)),
    ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (128, 127, 0, 0), (0, 3, 0, 0), (1.0, 0.5)),
    ((0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (255, 0, 0, 0), (3, 0, 0, 0), (0.0, 1.0)),
]
STRIP = [0, 1, 2, 2]
KEYS0 = [(0.0, 0, 0), (0.5, 1, 1)]  # channel 0: time, position index, rotation index
KEYS1 = [(0.25, 7, 1)]


def enc(offset):
    return (offset - 60 + SALT) & 0xFFFFFFFF


def node(name, parent, flags, translation):
    bind = np.eye(4)
    bind[:3, 3] = translation
    column_major = bind.T.ravel()  # translation lands in floats 12..14
    inverse = np.linalg.inv(bind).T.ravel()
    return (
        struct.pack("<4f", 0, 0, 0, 1)
        + struct.pack("<16f", *column_major)
        + struct.pack("<16f", *inverse)
        + struct.pack("<B15s", len(name), name)
        + struct.pack("<hH3f", parent, flags, *translation)
    )


def tmd_bytes(aux=True, gap=b"GAP!"):
    header_end = 128 if aux else 124
    pos = header_end
    aux_at = pos
    if aux:
        pos += 8
    nodes_at = pos
    pos += 2 * 176
    table_at = pos
    pos += 8
    anim_at = [pos + len(gap), pos + len(gap) + 40]
    pos = anim_at[1] + 40
    chan_at = [pos, pos + 4 + 8 * len(KEYS0)]
    lod_at = chan_at[1] + 4 + 8 * len(KEYS1)

    body = bytearray()
    if aux:
        body += struct.pack("<2i", 5, -7)
    body += node(NAMES[0], -1, 0, BIND_T[0]) + node(NAMES[1], 0, 1, BIND_T[1])
    body += struct.pack("<2I", enc(anim_at[0]), enc(anim_at[1]))
    body += gap
    for name, words, channels in ((b"walk_lp", (1, 2, 2), chan_at), (b"idle", (0, 0, 2), [chan_at[1]] * 2)):
        body += struct.pack("<B15s3If", len(name), name, *words, 1.5)
        body += struct.pack("<2I", *(enc(c) for c in channels))
    body += struct.pack("<2H", 1, len(KEYS0)) + b"".join(struct.pack("<f2H", *k) for k in KEYS0)
    body += struct.pack("<2H", 0, len(KEYS1)) + b"".join(struct.pack("<f2H", *k) for k in KEYS1)
    lod = struct.pack("<I4s", 1, b"\x01\x02\x03\x04")
    lod += struct.pack("<I4s4f", 1, b"\xaa\xbb\xcc\xdd", 0.5, 0.5, 0.0, 2.0)
    lod += struct.pack("<3I32s", 1, len(STRIP), len(VERTICES), b"skin_Mat\0junk")
    lod += struct.pack("<4I6f", len(STRIP), len(VERTICES), 2, 2, 0.5, 0.5, 0.0, 0.5, 0.5, 0.0)
    lod += struct.pack("<2I", 0, 1)  # palette: node 0, node 1
    for p, n, w, b, uv in VERTICES:
        lod += struct.pack("<6f4B4B2f", *p, *n, *w, *b, *uv)
    lod += struct.pack(f"<{len(STRIP)}h", *STRIP)
    size = lod_at + len(lod)
    header = b"TMDL" + struct.pack("<I", 0) + struct.pack("<I", size - 12)
    header += b"lib\0\0\0\0\0" + bytes.fromhex("4958230088000000")
    header += struct.pack("<4I", lod_at - 60, SALT, 0x10, 0x80000001) + bytes(16)
    header += struct.pack("<I4H", lod_at - 60, 2, 0x0F, 2, 0xF0) + bytes(44)
    if aux:
        header += struct.pack("<3I", enc(aux_at), enc(nodes_at), enc(table_at))
    else:
        header += struct.pack("<2I", enc(0x7C), enc(table_at))
    data = header + bytes(body) + lod
    assert len(data) == size and len(header) == header_end
    return data


POSITIONS = [(0.0, 0.0, 1.0), (0.0, 0.0, 1.5)]
ROTATIONS = [(0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.70710677, 0.70710677)]


def tkl_bytes():
    data = b"".join(struct.pack("<3f", *p) for p in POSITIONS) + b"".join(
        struct.pack("<4f", *q) for q in ROTATIONS
    )
    return (
        b"TPKL"
        + bytes(4)
        + struct.pack("<I", len(data) + 44)
        + b"lib".ljust(16, b"\0")
        + struct.pack("<7I", len(POSITIONS), len(ROTATIONS), 0, 12, 16, 4, len(data))
        + data
    )


TEXEL_BYTES = bytes([255, 0, 0, 255, 0, 0, 255, 128])  # 2×1 RGBA8888: red, half-transparent blue


def tml_bytes():
    out = b"TML1" + struct.pack("<II", 0, 2)
    out += struct.pack("<iiHhiHHHHi", 1, 8, 2, -3, 77, 0, 2, 1, 0xFFFF, 0x43000000) + TEXEL_BYTES
    out += struct.pack("<iiHhiHHHHi", 0, 4, 0, 0, 0, 9, 1, 1, 0xFFFF, 0x43000000) + b"\x12\x34\x56\x78"
    out += struct.pack("<I", 2) + b"a_mat".ljust(32, b"\0") + b"skin_Mat".ljust(32, b"\0")
    out += struct.pack("<ihh2i", 0, 0x4003, 2, 1, 0)
    out += struct.pack("<ihhi", 1, 0, 1, 1)
    return out
