"""BVA: shape visibility animation (``J3D1bva1`` with one VAF1 section).

VAF1 header: loop mode, a byte the game ignores (0xFF), length, ``u16`` shape count, ``u16``
value count, then the offsets of the table and of the value bank. One table entry per shape of
the model, in shape order: ``u16 frame count, u16 first index``; the bank holds one byte per
frame (non-zero: shown). The game reads frame ``round(f)`` clamped to ``count − 1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Writer
from .bca import FULL_DTYPE, check_full_tracks
from .container import (
    ANIMATION_MAGIC,
    FILE_HEADER_SIZE,
    Framing,
    SectionBuilder,
    block_reader,
    read_animation,
    read_gaps,
    write_container,
)

KIND = b"bva1"
VAF1_HEADER_SIZE = 0x18
SHAPE_COUNT_OFFSET = FILE_HEADER_SIZE + 0x0C


@dataclass
class BVA:
    loop_mode: int
    length: int
    tracks: np.ndarray  # (shapes,) FULL_DTYPE
    values: np.ndarray  # uint8 bank: one per frame, non-zero shown
    unused: int = 0xFF
    gaps: list[bytes] | None = None
    framing: Framing = field(default_factory=Framing)


def read(data: bytes, filename: str = "<bytes>") -> BVA:
    container, section, r = read_animation(data, filename, KIND, b"VAF1")
    base = section.offset
    loop_mode, unused, length, shapes, count = r.unpack("BBhHH", "VAF1 header")
    offsets = r.unpack("II", "VAF1 block offsets")
    blocks = list(zip(offsets, (shapes * FULL_DTYPE.itemsize, count), strict=True))
    tracks = block_reader(r, base, offsets[0], blocks[0][1], "VAF1 table").array(FULL_DTYPE, shapes)
    values = block_reader(r, base, offsets[1], count, "VAF1 values").array("u1", count)
    check_full_tracks(r, tracks, count, "VAF1 visibility", base + offsets[0])
    return BVA(
        loop_mode,
        length,
        tracks,
        values,
        unused=unused,
        gaps=read_gaps(section.data, VAF1_HEADER_SIZE, blocks, [32, 1]),
        framing=container.framing,
    )


def write(bva: BVA) -> bytes:
    tracks = np.ascontiguousarray(bva.tracks, FULL_DTYPE)
    builder = SectionBuilder(b"VAF1", VAF1_HEADER_SIZE, bva.gaps)
    offsets = (
        builder.block(tracks.tobytes(), 32),
        builder.block(np.asarray(bva.values, "u1").tobytes(), 1),
    )
    header = Writer(">")
    header.pack("BBhHH", bva.loop_mode, bva.unused, bva.length, len(tracks), len(bva.values))
    header.pack("II", *offsets)
    return write_container(ANIMATION_MAGIC, KIND, [builder.finish(header.getvalue())], bva.framing)
