"""BTP: texture pattern animation (``J3D1btp1`` with one TPT1 section).

Not keyframed: each entry lists one texture index per frame for one texture
slot of one material; at frame f the index is ``bank[first + min(int(f), count − 1)]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Writer
from .container import (
    ANIMATION_MAGIC,
    Framing,
    SectionBuilder,
    block_reader,
    identity_remap,
    read_animation,
    read_gaps,
    read_names,
    write_container,
    write_names,
)

KIND = b"btp1"
TPT1_HEADER_SIZE = 0x20
PATTERN_DTYPE = np.dtype([("count", ">u2"), ("first", ">u2"), ("slot", "u1"), ("padding", "V3")])
ENTRY_PADDING = b"\xff" * 3


@dataclass
class BTP:
    loop_mode: int
    length: int
    entries: np.ndarray  # PATTERN_DTYPE: frame count, first bank index, texture slot, padding
    material_names: list[str]
    indices: np.ndarray  # uint16 bank of texture indices
    remap: np.ndarray | None = None  # None writes the identity
    unused_frac: int = 0xFF
    gaps: list[bytes] | None = None
    framing: Framing = field(default_factory=Framing)


def pattern_entries(counts, firsts, slots) -> np.ndarray:
    entries = np.zeros(len(counts), PATTERN_DTYPE)
    entries["count"], entries["first"], entries["slot"] = counts, firsts, slots
    entries["padding"] = np.void(ENTRY_PADDING)
    return entries


def read(data: bytes, filename: str = "<bytes>") -> BTP:
    container, section, r = read_animation(data, filename, KIND, b"TPT1")
    base = section.offset
    loop_mode, unused_frac, length, count, index_count = r.unpack("BBhHH", "TPT1 header")
    offsets = r.unpack("4I", "TPT1 block offsets")
    names, names_size = read_names(r, base + offsets[3], "TPT1 name table")
    if len(names) != count:
        raise r.error(f"TPT1 name table expected {count} names, found {len(names)}", base + offsets[3])
    entries = block_reader(r, base, offsets[0], count * 8, "TPT1 table").array(
        PATTERN_DTYPE, count, "TPT1 entries"
    )
    indices = block_reader(r, base, offsets[1], index_count * 2, "TPT1 index bank").array(">u2", index_count)
    remap = block_reader(r, base, offsets[2], count * 2, "TPT1 remap").array(">u2", count)
    end = entries["first"].astype(np.int64) + entries["count"]
    outside = end > index_count
    if outside.any():
        raise r.error(
            f"TPT1 entry needs indices up to {int(end[outside][0])}, the bank holds {index_count}",
            base + offsets[0],
        )
    blocks = list(zip(offsets, (count * 8, index_count * 2, count * 2, names_size), strict=True))
    return BTP(
        loop_mode,
        length,
        entries,
        names,
        indices,
        remap=remap,
        unused_frac=unused_frac,
        gaps=read_gaps(section.data, TPT1_HEADER_SIZE, blocks, [32, 4, 4, 4]),
        framing=container.framing,
    )


def write(btp: BTP) -> bytes:
    remap = identity_remap(len(btp.entries)) if btp.remap is None else btp.remap
    builder = SectionBuilder(b"TPT1", TPT1_HEADER_SIZE, btp.gaps)
    offsets = (
        builder.block(np.ascontiguousarray(btp.entries, PATTERN_DTYPE).tobytes(), 32),
        builder.block(np.asarray(btp.indices, ">u2").tobytes()),
        builder.block(np.asarray(remap, ">u2").tobytes()),
        builder.block(write_names(btp.material_names)),
    )
    header = Writer(">")
    header.pack("BBhHH", btp.loop_mode, btp.unused_frac, btp.length, len(btp.entries), len(btp.indices))
    header.pack("4I", *offsets)
    return write_container(ANIMATION_MAGIC, KIND, [builder.finish(header.getvalue())], btp.framing)
