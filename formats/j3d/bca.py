"""BCA: joint animation with a value at every frame (``J3D1bca1`` with one ANF1 section).

ANF1 has ANK1's header (loop mode, a byte the game ignores, length, joint count, the three bank
counts, the offsets of the table and of the scale (f32), rotation (s16) and translation (f32)
banks), but each track is ``u16 frame count, u16 first index``: one value per frame, no times or
tangents. Per joint 3 axes × (scale, rotation, translation) = 36 bytes. Rotations are raw × 180 /
32768 degrees (no exponent). The game reads frame ``round(f)`` clamped to ``count − 1`` (a second
loader lerps between frames).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Writer
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

KIND = b"bca1"
ANF1_HEADER_SIZE = 0x24
ANF1_ALIGN = 32
JOINT_COUNT_OFFSET = FILE_HEADER_SIZE + 0x0C
# One full-frame track: frame count, index of its first value in the bank.
FULL_DTYPE = np.dtype([("count", ">u2"), ("first", ">u2")])
COMPONENTS = ("scale", "rotation", "translation")


@dataclass
class BCA:
    loop_mode: int
    length: int  # frames
    tracks: np.ndarray  # (joints, 3 axes X/Y/Z, 3 components scale/rotation/translation) FULL_DTYPE
    scale_bank: np.ndarray  # float32
    rotation_bank: np.ndarray  # int16, 0x8000 = 180°
    translation_bank: np.ndarray  # float32
    unused: int = 0  # the byte after the loop mode (the game ignores it)
    gaps: list[bytes] | None = None  # non-standard bytes between ANF1 blocks, see container.read_gaps
    framing: Framing = field(default_factory=Framing)

    @property
    def joint_count(self) -> int:
        return len(self.tracks)

    def banks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.scale_bank, self.rotation_bank, self.translation_bank


def check_full_tracks(r, tracks: np.ndarray, bank_size: int, what: str, offset: int) -> None:
    """Every track's values lie inside its bank."""
    end = tracks["first"].astype(np.int64) + tracks["count"]
    outside = end > bank_size
    if outside.any():
        raise r.error(
            f"{what} track needs bank entries up to {int(end[outside][0])} but the bank holds {bank_size}",
            offset,
        )


def read(data: bytes, filename: str = "<bytes>") -> BCA:
    container, section, r = read_animation(data, filename, KIND, b"ANF1")
    base = section.offset
    loop_mode, unused, length, joints = r.unpack("BBhH", "ANF1 header")
    counts = r.unpack("HHH", "ANF1 bank counts")
    offsets = r.unpack("IIII", "ANF1 block offsets")
    sizes = (joints * 9 * FULL_DTYPE.itemsize, counts[0] * 4, counts[1] * 2, counts[2] * 4)
    blocks = list(zip(offsets, sizes, strict=True))
    what = ("ANF1 track table", "ANF1 scale bank", "ANF1 rotation bank", "ANF1 translation bank")
    readers = [block_reader(r, base, o, s, w) for (o, s), w in zip(blocks, what, strict=True)]
    tracks = readers[0].array(FULL_DTYPE, joints * 9, what[0]).reshape(joints, 3, 3)
    banks = (
        readers[1].array(">f4", counts[0], what[1]),
        readers[2].array(">i2", counts[1], what[2]),
        readers[3].array(">f4", counts[2], what[3]),
    )
    for component, bank in enumerate(banks):
        check_full_tracks(
            r, tracks[:, :, component], len(bank), f"ANF1 {COMPONENTS[component]}", base + offsets[0]
        )
    return BCA(
        loop_mode,
        length,
        tracks,
        *banks,
        unused=unused,
        gaps=read_gaps(section.data, ANF1_HEADER_SIZE, blocks, [ANF1_ALIGN] * 4),
        framing=container.framing,
    )


def write(bca: BCA) -> bytes:
    tracks = np.ascontiguousarray(bca.tracks, FULL_DTYPE)
    builder = SectionBuilder(b"ANF1", ANF1_HEADER_SIZE, bca.gaps)
    offsets = (
        builder.block(tracks.tobytes(), ANF1_ALIGN),
        builder.block(np.asarray(bca.scale_bank, ">f4").tobytes(), ANF1_ALIGN),
        builder.block(np.asarray(bca.rotation_bank, ">i2").tobytes(), ANF1_ALIGN),
        builder.block(np.asarray(bca.translation_bank, ">f4").tobytes(), ANF1_ALIGN),
    )
    header = Writer(">")
    header.pack("BBhH", bca.loop_mode, bca.unused, bca.length, len(tracks))
    header.pack("HHH", len(bca.scale_bank), len(bca.rotation_bank), len(bca.translation_bank))
    header.pack("IIII", *offsets)
    return write_container(ANIMATION_MAGIC, KIND, [builder.finish(header.getvalue())], bca.framing)
