"""Hand-built tmd0 and CAT files (struct.pack only, independent of the writer under test).

The model is a closed tetrahedron around the origin: 4 vertices whose normals
point away from the centre, 4 counter-clockwise faces in two polygroups, two
bones ("root" at y=1 and "face_root" at y=2), one rig, one material with one
texture. Tables sit in a non-canonical order with a few filler bytes between
them so that the writer has to keep the layout to reproduce the file.
"""

import struct

import numpy as np

POSITIONS = [(1.0, 1.0, 1.0), (1.0, -1.0, -1.0), (-1.0, 1.0, -1.0), (-1.0, -1.0, 1.0)]
FACES = [(0, 1, 2), (0, 3, 1), (0, 2, 3), (1, 3, 2)]
NORMALS = [
    tuple(round(c / 3**0.5 * 128 + 127) for c in p) + (255 if i % 2 else 0,) for i, p in enumerate(POSITIONS)
]
WEIGHTS = [(255, 0, 0, 0), (128, 127, 0, 0), (255, 0, 0, 0), (200, 55, 0, 0)]
BONE_IDS = [(0, 0, 0, 0), (0, 1, 0, 0), (1, 0, 0, 0), (1, 0, 0, 0)]
COLOURS = [(255, 128, 0, 255), (0, 0, 0, 0), (10, 20, 30, 40), (1, 2, 3, 4)]
UVS = [(512, -256), (0, 0), (1024, -1024), (-100, 300)]
BONE_NAMES = ["root", "face_root"]
BONE_HEADS = [(0.0, 1.0, 0.0), (0.0, 2.0, 0.0)]
BOUNDS = (-1.0, -1.0, -1.0, 1.0, 1.0, 1.0)
BOX0 = (-1.5, -1.5, -1.5, 1.5, 1.5, 1.5)
UNKNOWN_BLOCK = bytes(range(1, 9))
TAIL = b"TNN0" + bytes(range(72))
FLAGS_INTERLEAVED = (
    0x0DE7  # position, normal, uv0, colour, interleaved, bit 7, skin and two unknown high bits
)
FLAGS_SEPARATE = FLAGS_INTERLEAVED & ~0x40
TEXTURE = (0, 0, 1, 64, 32, 0x00FF)
# (value, type): rig 0, material 0, draw 0, end | draw 1, end, draw 0 (past the end: never run)
OPERATIONS = [(0, 0x40), (0, 0x20), (0, 0x30), (0, 0x10), (1, 0x30), (0, 0x10), (0, 0x30)]
DRAW_LIST = [(BOX0, 0, 4, 1), (BOX0, 4, 3, 1)]
POLYGROUPS = [(2, 0x0508, 0), (2, 0, 2)]
FILLER = b"\xee" * 6


def crc_name_hash(name: str) -> int:
    # Bit-by-bit reflected CRC-32 from the name's length, no final XOR (independent of the module).
    crc = len(name)
    for byte in name.encode():
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xEDB88320 if crc & 1 else crc >> 1
    return crc


def vertex_bytes(e: str, i: int) -> bytes:
    return (
        struct.pack(e + "3f", *POSITIONS[i])
        + bytes(WEIGHTS[i])
        + bytes(BONE_IDS[i])
        + bytes(NORMALS[i])
        + bytes(COLOURS[i])
        + struct.pack(e + "2h", *UVS[i])
    )


def tmd0_bytes(endian: str = "<", interleaved: bool = True) -> bytes:
    """The fixture model. Returns the file; table offsets are fixed by the order below."""
    e = endian
    blocks: list[tuple[str, bytes]] = []
    blocks.append(("textures", struct.pack(e + "IIHHHH", *TEXTURE)))
    inverse = b""
    for head in BONE_HEADS:
        # Row-vector layout: identity rotation, translation (the negated head) in floats 12..14.
        inverse += struct.pack(e + "16f", 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, -head[0], -head[1], -head[2], 1)
    blocks.append(("bones", inverse))
    hierarchy = struct.pack(e + "I3fiHH", crc_name_hash("root"), 0.0, 1.0, 0.0, -1, 7, 0)
    hierarchy += struct.pack(e + "I3fiHH", crc_name_hash("face_root"), 0.0, 1.0, 0.0, 0, 0, 5)
    blocks.append(("hierarchy", hierarchy))
    material = struct.pack(e + "I", 5)
    material += struct.pack(e + "Ii4f", 0, 0, 1.0, 1.0, 0.0, 0.0)
    material += struct.pack(e + "Ii4f", 3, -1, 2.0, 2.0, 0.5, 0.5)
    material += struct.pack(e + "Ii4f", 4, -1, 1.0, 1.0, 0.0, 0.0) * 3
    blocks.append(("materials", material + TAIL))
    blocks.append(("unknown", UNKNOWN_BLOCK))
    blocks.append(("rigs", struct.pack(e + "i32i", 2, 0, 1, *([0] * 30))))
    blocks.append(
        ("draw_list", b"".join(struct.pack(e + "6fIHH", *box, f, n, t) for box, f, n, t in DRAW_LIST))
    )
    blocks.append(("operations", b"".join(bytes(op) for op in OPERATIONS) + FILLER))
    blocks.append(("polygroups", b"".join(struct.pack(e + "HHI", *g) for g in POLYGROUPS)))
    blocks.append(("faces", b"".join(struct.pack(e + "3H", *f) for f in FACES) + b"\0\0"))
    if interleaved:
        blocks.append(("vertices", b"".join(vertex_bytes(e, i) for i in range(4))))
    else:
        blocks.append(("vertices", b"".join(struct.pack(e + "3f", *p) for p in POSITIONS)))
        blocks.append(("normal", b"".join(bytes(n) for n in NORMALS)))
        blocks.append(("uv0", b"".join(struct.pack(e + "2h", *uv) for uv in UVS)))
        blocks.append(("colour", b"".join(bytes(c) for c in COLOURS)))
        blocks.append(("weights", b"".join(bytes(w) for w in WEIGHTS)))
        blocks.append(("bone_ids", b"".join(bytes(b) for b in BONE_IDS)))
    offsets, body, position = {}, b"", 0xA0
    for name, block in blocks:
        offsets[name] = position
        body += block
        position += len(block)
    sizes = {"operations": len(OPERATIONS), "faces": len(FACES)}

    def rng(name: str, count: int) -> bytes:
        return struct.pack(e + "II", offsets[name], count)

    if interleaved:
        last = offsets["vertices"] + 3 * 32
        # normal, uv0, uv1, uv2, colour, weights, bone ids → offsets in the last vertex (0 when absent)
        pointers = [last + 20, last + 28, 0, 0, last + 24, last + 12, last + 16]
    else:
        pointers = [
            offsets["normal"],
            offsets["uv0"],
            0,
            0,
            offsets["colour"],
            offsets["weights"],
            offsets["bone_ids"],
        ]
    flags = FLAGS_INTERLEAVED if interleaved else FLAGS_SEPARATE
    header = (
        b"tmd0" + struct.pack(e + "5Hh", 0, flags, 0x20, 0x0100, 0x28, 0) + struct.pack(e + "6f", *BOUNDS)
    )
    header += rng("draw_list", 2) + rng("operations", sizes["operations"]) + rng("unknown", 1)
    header += rng("rigs", 1) + rng("materials", 1) + rng("polygroups", 2) + rng("faces", sizes["faces"])
    header += struct.pack(e + "II", 4, offsets["vertices"]) + struct.pack(e + "7I", *pointers)
    header += rng("bones", 2) + rng("hierarchy", 2) + rng("textures", 1) + struct.pack(e + "I", 0)
    assert len(header) == 0xA0
    return header + body


def table_offsets(endian: str = "<", interleaved: bool = True) -> dict[str, int]:
    """Offsets of the header ranges of the fixture (read back from its header with struct)."""
    data = tmd0_bytes(endian, interleaved)
    words = struct.unpack_from(endian + "14I", data, 40)
    names = ["draw_list", "operations", "unknown", "rigs", "materials", "polygroups", "faces"]
    out = {name: words[2 * i] for i, name in enumerate(names)}
    out["vertices"] = struct.unpack_from(endian + "I", data, 100)[0]
    out["bones"], out["hierarchy"], out["textures"] = struct.unpack_from(endian + "I4xI4xI", data, 132)
    return out


def cat_bytes(payloads: list[bytes], lines: list[str], endian: str = "<") -> bytes:
    """A CAT: header size 0x40, offsets, 0xFFFFFFFF, the name list padded to 16, the payloads."""
    names = ("\n".join(lines) + "\n").encode()
    table = 4 + 4 * (len(payloads) + 1)
    names += bytes(-(table + len(names)) % 16)
    offset = table + len(names)
    offsets = []
    for payload in payloads:
        offsets.append(offset)
        offset += len(payload)
    head = struct.pack(endian + "I", 0x40) + b"".join(struct.pack(endian + "I", o) for o in offsets)
    return head + struct.pack(endian + "I", 0xFFFFFFFF) + names + b"".join(payloads)


def dds_rgba(width: int = 2, height: int = 2) -> bytes:
    """A tiny uncompressed A8R8G8B8 DDS with known texels (B, G, R, A bytes per texel)."""
    header = struct.pack(
        "<4s7I44x8I5I",
        b"DDS ",
        124,
        0x1007,
        height,
        width,
        width * 4,
        0,
        1,
        32,
        0x41,
        0,
        32,
        0x00FF0000,
        0x0000FF00,
        0x000000FF,
        0xFF000000,
        0x1000,
        0,
        0,
        0,
        0,
    )
    texels = np.arange(width * height * 4, dtype=np.uint8).tobytes()
    return header + texels
