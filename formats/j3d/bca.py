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

from .container import (
    ANIMATION_MAGIC,
    FILE_HEADER_SIZE,
    Framing,
    JointSection,
    read_animation,
    read_joint_section,
    write_container,
    write_joint_section,
)

KIND = b"bca1"
JOINT_COUNT_OFFSET = FILE_HEADER_SIZE + 0x0C
# One full-frame track: frame count, index of its first value in the bank.
FULL_DTYPE = np.dtype([("count", ">u2"), ("first", ">u2")])


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
    joint = read_joint_section(r, section, "ANF1", FULL_DTYPE, check_full_tracks)
    return BCA(
        joint.loop_mode,
        joint.length,
        joint.tracks,
        *joint.banks,
        unused=joint.byte,
        gaps=joint.gaps,
        framing=container.framing,
    )


def write(bca: BCA) -> bytes:
    joint = JointSection(bca.loop_mode, bca.unused, bca.length, bca.tracks, bca.banks(), bca.gaps)
    section = write_joint_section(b"ANF1", joint, FULL_DTYPE)
    return write_container(ANIMATION_MAGIC, KIND, [section], bca.framing)
