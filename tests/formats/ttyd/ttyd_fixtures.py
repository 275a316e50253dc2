"""A small model file built byte by byte with struct.pack (independent of the writer under test).

One shape "body" (a quad drawn as one 4-corner fan, one texture), two groups
(the root last), two textures, one looping animation "walk" with every kind of
delta and one 8-byte record, and an entry "idle" without data. Gaps filled
with 0xCD / 0xAB sit between some tables to check that padding survives.
"""

from __future__ import annotations

import struct

HEADER_SIZE = 0x1B0
GAP = b"\xcd" * 4
ANIM_GAP = b"\xab" * 4

POSITIONS = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (1.0, 2.0, 0.0), (0.0, 2.0, 0.0)]
NORMALS = [(0.0, 0.0, 1.0)]
COLORS = [(255, 128, 64, 255)]
TEXCOORDS = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]
TRANSLATE = (0.25, 0.0)
ROOT_NODE = [0.0] * 3 + [1.0] * 3 + [0.0] * 18
BODY_NODE = [0.0, 1.0, 0.0] + [1.0] * 3 + [0.0] * 18
KEY_TIMES = (0.0, 10.0)
START, END = 0.0, 20.0


def name(text: str, size: int) -> bytes:
    return text.encode("ascii").ljust(size, b"\0")


def shape_record() -> bytes:
    texcoord_ranges = [(0, 4)] + [(0, 0)] * 7
    return (
        name("body", 64)
        + struct.pack(">6I", 0, 4, 0, 1, 0, 1)
        + b"".join(struct.pack(">2I", *r) for r in texcoord_ranges)
        + struct.pack(">4I", 0, 1, 1, 3)
    )


def subshape_record() -> bytes:
    return (
        struct.pack(">4I", 1, 7, 0, 9)
        + struct.pack(">8i", 0, -1, -1, -1, -1, -1, -1, -1)
        + bytes(8)
        + struct.pack(">2I", 0, 1)
        + struct.pack(">3I", 0, 0, 0)
        + struct.pack(">8I", *([0] * 8))
    )


def group_record(
    text: str, next_: int, child: int, shape: int, vis: int, node: int, compensate: int
) -> bytes:
    return name(text, 64) + struct.pack(">5iI", next_, child, shape, vis, node, compensate)


def blocks() -> list[tuple[bytes, int]]:
    """(table bytes, record count) for the 25 header tables in order."""
    f3 = b"".join(struct.pack(">3f", *p) for p in POSITIONS)
    out = [
        (shape_record(), 1),
        (struct.pack(">2I", 0, 4), 1),
        (f3, 4),
        (struct.pack(">4I", 0, 1, 2, 3), 4),
        (struct.pack(">3f", *NORMALS[0]), 1),
        (struct.pack(">4I", 0, 0, 0, 0), 4),
        (bytes(COLORS[0]), 1),
        (struct.pack(">4I", 0, 0, 0, 0), 4),
        (struct.pack(">4I", 0, 1, 2, 3), 4),
    ]
    out += [(b"", 0)] * 7
    out += [
        (b"".join(struct.pack(">2f", *t) for t in TEXCOORDS), 4),
        (struct.pack(">B3x5f", 0, *TRANSLATE, 1.0, 1.0, 0.0), 1),
        (struct.pack(">2I", 0, 3), 1),
        (
            struct.pack(">3I", 0, 0, 0) + name("tex_a", 52) + struct.pack(">3I", 0, 1, 0) + name("tex_b", 52),
            2,
        ),
        (subshape_record(), 1),
        (bytes([1, 1]), 2),
        (struct.pack(">48f", *ROOT_NODE, *BODY_NODE), 48),
        (group_record("body", -1, -1, 0, 1, 24, 0) + group_record("root", -1, 0, -1, 0, 0, 0), 2),
    ]
    return out


def animation_data() -> bytes:
    """'walk': keyframe 0 empty; keyframe 1 moves vertices 1 and 2, scrolls and swaps the texture,
    hides visibility group 1, moves node float 25 by Hermite and node float 33 linearly."""
    tables = [
        struct.pack(">I2f", 1, START, END),
        struct.pack(">f10I", KEY_TIMES[0], *([0] * 10))
        + struct.pack(">f10I", KEY_TIMES[1], 0, 2, 0, 0, 0, 1, 0, 1, 0, 2),
        struct.pack(">B3b", 1, 16, 0, 0) + struct.pack(">B3b", 1, 0, -8, 0),
        b"",
        struct.pack(">Bb2x2f", 0, 1, 0.5, 0.0),
        struct.pack(">Bb", 1, -1),
        struct.pack(">B3b", 25, 32, 45, 0) + struct.pack(">B3b", 8, 80, 0, 90),
        bytes(range(1, 9)),
    ]
    counts = [1, 2, 2, 0, 1, 1, 2, 1]
    body, offsets = b"", []
    position = 0x5C
    for table in tables:
        body += ANIM_GAP
        position += len(ANIM_GAP)
        offsets.append(position)
        body += table
        position += len(table)
    size = 0x5C + len(body)
    return struct.pack(">17I", size, *counts, *offsets) + struct.pack(">6f", -1, 0, -1, 1, 2, 1) + body


def build() -> bytes:
    """The whole file: a gap after the positions and after the groups; animation data last."""
    parts = blocks()
    body = bytearray(bytes(HEADER_SIZE))
    offsets = []
    for i, (table, _) in enumerate(parts):
        offsets.append(len(body))
        body += table
        if i == 2:
            body += GAP
        body += bytes(-len(body) % 4)
    entries_at = len(body)
    body += bytes(2 * 0x40)
    data_area = len(body)
    anim_at = len(body)
    body += animation_data()
    body[entries_at : entries_at + 0x80] = (
        name("walk", 60) + struct.pack(">I", anim_at) + name("idle", 60) + struct.pack(">I", 0)
    )
    counts = [count for _, count in parts] + [2]
    header = (
        struct.pack(">I", data_area)
        + name("c_test", 64)
        + name("c_test_tex", 64)
        + name("2004/07/01 12:00:00", 64)
        + struct.pack(">3I", 5, 30, 40)
        + struct.pack(">6f", -0.5, 0.0, -0.5, 1.5, 3.0, 0.5)
        + struct.pack(">25I", *counts)
        + struct.pack(">25I", *offsets, entries_at)
    )
    body[:HEADER_SIZE] = header
    return bytes(body)


def offsets_of(data: bytes) -> tuple[list[int], list[int]]:
    """(counts, offsets) from a built file's header, for the truncation tests."""
    return list(struct.unpack_from(">25I", data, 0xE8)), list(struct.unpack_from(">25I", data, 0x14C))
