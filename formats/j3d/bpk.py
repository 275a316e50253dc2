"""BPK: material colour animation (``J3D1bpk1`` with one PAK1 section).

One entry per animated material colour: R, G, B, A tracks keyed in four s16
banks (values 0..255), and the material's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Writer
from .container import (
    ANIMATION_MAGIC,
    TRACK_DTYPE,
    Framing,
    SectionBuilder,
    block_reader,
    check_tracks,
    identity_remap,
    read_animation,
    read_gaps,
    read_names,
    write_container,
    write_names,
)

KIND = b"bpk1"
PAK1_HEADER_SIZE = 0x34
CHANNELS = "rgba"
COLOR_RANGE = (0, 255)


@dataclass
class BPK:
    loop_mode: int
    length: int
    tracks: np.ndarray  # (materials, 4 channels R/G/B/A) TRACK_DTYPE
    material_names: list[str]
    banks: list[np.ndarray]  # four int16 banks: R, G, B, A
    remap: np.ndarray | None = None  # None writes the identity
    unused: bytes = b"\xff" * 3  # +0x09..+0x0B
    gaps: list[bytes] | None = None
    framing: Framing = field(default_factory=Framing)


def read(data: bytes, filename: str = "<bytes>") -> BPK:
    container, section, r = read_animation(data, filename, KIND, b"PAK1")
    base = section.offset
    loop_mode = r.u8("PAK1 loop mode")
    unused = r.bytes(3, "PAK1 header")
    length, count = r.unpack("hH", "PAK1 length and count")
    counts = r.unpack("4H", "PAK1 bank counts")
    offsets = r.unpack("3I", "PAK1 block offsets")
    bank_offsets = r.unpack("4I", "PAK1 bank offsets")
    names, names_size = read_names(r, base + offsets[2], "PAK1 name table")
    if len(names) != count:
        raise r.error(f"PAK1 name table expected {count} names, found {len(names)}", base + offsets[2])
    table = block_reader(r, base, offsets[0], count * 4 * TRACK_DTYPE.itemsize, "PAK1 table")
    tracks = table.array(TRACK_DTYPE, count * 4, "PAK1 tracks").reshape(count, 4)
    remap = block_reader(r, base, offsets[1], count * 2, "PAK1 remap").array(">u2", count)
    banks = []
    for channel in range(4):
        what = f"PAK1 {CHANNELS[channel].upper()} bank"
        bank_reader = block_reader(r, base, bank_offsets[channel], counts[channel] * 2, what)
        banks.append(bank_reader.array(">i2", counts[channel], what))
        check_tracks(r, tracks[:, channel], counts[channel], what, base + offsets[0])
    blocks = [(offsets[0], count * 0x18)] + [(o, c * 2) for o, c in zip(bank_offsets, counts, strict=True)]
    blocks += [(offsets[1], count * 2), (offsets[2], names_size)]
    return BPK(
        loop_mode,
        length,
        tracks,
        names,
        banks,
        remap=remap,
        unused=unused,
        gaps=read_gaps(section.data, PAK1_HEADER_SIZE, blocks, [32] + [4] * 6),
        framing=container.framing,
    )


def write(bpk: BPK) -> bytes:
    remap = identity_remap(len(bpk.tracks)) if bpk.remap is None else bpk.remap
    builder = SectionBuilder(b"PAK1", PAK1_HEADER_SIZE, bpk.gaps)
    table = builder.block(np.ascontiguousarray(bpk.tracks, TRACK_DTYPE).tobytes(), 32)
    bank_offsets = [builder.block(np.asarray(bank, ">i2").tobytes()) for bank in bpk.banks]
    remap_offset = builder.block(np.asarray(remap, ">u2").tobytes())
    names = builder.block(write_names(bpk.material_names))
    header = Writer(">")
    header.u8(bpk.loop_mode)
    header.bytes(bpk.unused)
    header.pack("hH", bpk.length, len(bpk.tracks))
    header.pack("4H", *(len(bank) for bank in bpk.banks))
    header.pack("3I", table, remap_offset, names)
    header.pack("4I", *bank_offsets)
    return write_container(ANIMATION_MAGIC, KIND, [builder.finish(header.getvalue())], bpk.framing)
