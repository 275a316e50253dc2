"""BRK: TEV colour animation (``J3D1brk1`` with one TRK1 section).

Two groups of entries: register colours (slot i drives the material's TEV
colour register i, values −1024..1023) and konst colours (slot i drives konst
colour i, values 0..255). Each entry has R, G, B, A tracks keyed in s16 banks
(one bank per group and channel) and belongs to the material its name names.
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

KIND = b"brk1"
TRK1_HEADER_SIZE = 0x58
CHANNELS = "rgba"
COLOR_ENTRY_DTYPE = np.dtype([("tracks", TRACK_DTYPE, (4,)), ("slot", "u1"), ("padding", "V3")])
ENTRY_PADDING = b"\xff" * 3
REGISTER_RANGE = (-1024, 1023)
KONST_RANGE = (0, 255)


@dataclass
class ColorGroup:
    """Register or konst colour entries with their names and R, G, B, A banks."""

    entries: np.ndarray  # COLOR_ENTRY_DTYPE: tracks (R, G, B, A), colour slot, padding
    material_names: list[str]
    banks: list[np.ndarray]  # four int16 banks: R, G, B, A
    remap: np.ndarray | None = None  # None writes the identity

    def __len__(self) -> int:
        return len(self.entries)


@dataclass
class BRK:
    loop_mode: int
    length: int
    register: ColorGroup
    konst: ColorGroup
    unused_frac: int = 0xFF  # the byte other sections use for the rotation exponent
    gaps: list[bytes] | None = None
    framing: Framing = field(default_factory=Framing)


def color_entries(slots, tracks: np.ndarray) -> np.ndarray:
    """Build COLOR_ENTRY_DTYPE records from slots (N,) and tracks (N, 4)."""
    entries = np.zeros(len(tracks), COLOR_ENTRY_DTYPE)
    entries["tracks"] = tracks
    entries["slot"] = slots
    entries["padding"] = np.void(ENTRY_PADDING)
    return entries


def read(data: bytes, filename: str = "<bytes>") -> BRK:
    container, section, r = read_animation(data, filename, KIND, b"TRK1")
    base = section.offset
    loop_mode, unused_frac, length, register_count, konst_count = r.unpack("BBhHH", "TRK1 header")
    counts = r.unpack("8H", "TRK1 bank counts")
    tables = r.unpack("2I", "TRK1 table offsets")
    remaps = r.unpack("2I", "TRK1 remap offsets")
    name_tables = r.unpack("2I", "TRK1 name table offsets")
    bank_offsets = r.unpack("8I", "TRK1 bank offsets")
    groups = []
    names_sizes = []
    for group, (label, count) in enumerate((("register", register_count), ("konst", konst_count))):
        names, names_size = read_names(r, base + name_tables[group], f"TRK1 {label} name table")
        if len(names) != count:
            raise r.error(
                f"TRK1 {label} name table expected {count} names, found {len(names)}",
                base + name_tables[group],
            )
        names_sizes.append(names_size)
        table = block_reader(
            r, base, tables[group], count * COLOR_ENTRY_DTYPE.itemsize, f"TRK1 {label} table"
        )
        entries = table.array(COLOR_ENTRY_DTYPE, count, f"TRK1 {label} entries")
        remap = block_reader(r, base, remaps[group], count * 2, f"TRK1 {label} remap").array(">u2", count)
        banks = []
        for channel in range(4):
            index = group * 4 + channel
            what = f"TRK1 {label} {CHANNELS[channel].upper()} bank"
            bank_reader = block_reader(r, base, bank_offsets[index], counts[index] * 2, what)
            banks.append(bank_reader.array(">i2", counts[index], what))
            check_tracks(r, entries["tracks"][:, channel], counts[index], what, base + tables[group])
        groups.append(ColorGroup(entries, names, banks, remap))
    blocks = [(tables[0], register_count * 0x1C), (tables[1], konst_count * 0x1C)]
    blocks += [(o, c * 2) for o, c in zip(bank_offsets, counts, strict=True)]
    blocks += [(remaps[0], register_count * 2), (remaps[1], konst_count * 2)]
    blocks += [(name_tables[0], names_sizes[0]), (name_tables[1], names_sizes[1])]
    return BRK(
        loop_mode,
        length,
        *groups,
        unused_frac=unused_frac,
        gaps=read_gaps(section.data, TRK1_HEADER_SIZE, blocks, [32] + [4] * 13),
        framing=container.framing,
    )


def write(brk: BRK) -> bytes:
    groups = (brk.register, brk.konst)
    builder = SectionBuilder(b"TRK1", TRK1_HEADER_SIZE, brk.gaps)
    tables = [
        builder.block(np.ascontiguousarray(group.entries, COLOR_ENTRY_DTYPE).tobytes(), 32 if i == 0 else 4)
        for i, group in enumerate(groups)
    ]
    banks = [bank for group in groups for bank in group.banks]
    bank_offsets = [builder.block(np.asarray(bank, ">i2").tobytes()) for bank in banks]
    remaps = [
        builder.block(np.asarray(identity_remap(len(g)) if g.remap is None else g.remap, ">u2").tobytes())
        for g in groups
    ]
    name_tables = [builder.block(write_names(group.material_names)) for group in groups]
    header = Writer(">")
    header.pack("BBhHH", brk.loop_mode, brk.unused_frac, brk.length, len(brk.register), len(brk.konst))
    header.pack("8H", *(len(bank) for bank in banks))
    header.pack("6I", *tables, *remaps, *name_tables)
    header.pack("8I", *bank_offsets)
    return write_container(ANIMATION_MAGIC, KIND, [builder.finish(header.getvalue())], brk.framing)
