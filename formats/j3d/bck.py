"""BCK: joint animation (``J3D1bck1`` with one ANK1 section, optionally a sound-effect block).

ANK1 holds one entry per joint of the model (matched by index, there are no
names): tracks for X, Y and Z, each with scale, rotation and translation.
Scale and translation keys live in f32 banks, rotation keys in an s16 bank
whose unit is ``2^frac × 180 / 32768`` degrees.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..binary import Reader, Writer
from .container import (
    ANIMATION_MAGIC,
    FILE_HEADER_SIZE,
    JOINT_COMPONENTS,
    NO_OFFSET,
    TRACK_DTYPE,
    Framing,
    JointSection,
    check_tracks,
    read_animation,
    read_joint_section,
    write_container,
    write_joint_section,
)

KIND = b"bck1"
SOUND_OFFSET_IN_TAG = 12  # the tag word at file offset 0x1C
JOINT_COUNT_OFFSET = FILE_HEADER_SIZE + 0x0C  # the u16 joint count of ANK1, the file's only section
SOUND_DTYPE = np.dtype(
    [
        ("id", ">u4"),
        ("start_frame", ">f4"),
        ("end_frame", ">f4"),
        ("pitch", ">f4"),
        ("flags", ">u4"),
        ("volume", "u1"),
        ("fine", "u1"),
        ("loops", "u1"),
        ("pan", "u1"),
        ("unknown", "u1"),
        ("padding", "V7"),
    ]
)
COMPONENTS = JOINT_COMPONENTS  # order of the tracks inside one axis


@dataclass
class BCK:
    loop_mode: int
    rotation_frac: int  # rotation unit: 2^frac × 180 / 32768 degrees
    length: int  # frames
    tracks: np.ndarray  # (joints, 3 axes X/Y/Z, 3 components scale/rotation/translation) TRACK_DTYPE
    scale_bank: np.ndarray  # float32
    rotation_bank: np.ndarray  # int16
    translation_bank: np.ndarray  # float32
    sounds: np.ndarray | None = None  # SOUND_DTYPE records, or None when the file has no sound block
    sound_padding: bytes = b"\0" * 6  # after the sound count
    sound_gap: bytes = b""  # bytes between the section and the sound block
    gaps: list[bytes] | None = None  # non-standard bytes between ANK1 blocks, see container.read_gaps
    framing: Framing = field(default_factory=Framing)

    @property
    def joint_count(self) -> int:
        return len(self.tracks)

    def banks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Banks in component order (scale, rotation, translation)."""
        return self.scale_bank, self.rotation_bank, self.translation_bank


def read(data: bytes, filename: str = "<bytes>") -> BCK:
    container, section, r = read_animation(data, filename, KIND, b"ANK1")
    joint = read_joint_section(r, section, "ANK1", TRACK_DTYPE, check_tracks)
    bck = BCK(
        joint.loop_mode,
        joint.byte,
        joint.length,
        joint.tracks,
        *joint.banks,
        gaps=joint.gaps,
        framing=container.framing,
    )
    _read_sounds(bck, data, filename, section.offset + len(section.data))
    return bck


def _read_sounds(bck: BCK, data: bytes, filename: str, sections_end: int) -> None:
    """Parse the sound block the tag points to; it lies after the section, inside the trailer."""
    tag = bck.framing.tag
    offset = int.from_bytes(tag[SOUND_OFFSET_IN_TAG : SOUND_OFFSET_IN_TAG + 4], "big")
    if offset == NO_OFFSET:
        return
    r = Reader(data, ">", filename)
    if offset < sections_end:
        raise r.error(f"sound block expected after the ANK1 section (ending at {sections_end})", offset)
    r.seek(offset, "sound block")
    count = r.u16("sound count")
    bck.sound_padding = r.bytes(6, "sound block padding")
    bck.sounds = r.array(SOUND_DTYPE, count, "sound entries")
    bck.sound_gap = data[sections_end:offset]
    bck.framing = replace(bck.framing, trailer=data[r.pos :])


def write(bck: BCK) -> bytes:
    section = write_joint_section(
        b"ANK1",
        JointSection(bck.loop_mode, bck.rotation_frac, bck.length, bck.tracks, bck.banks(), bck.gaps),
        TRACK_DTYPE,
    )

    sound_block = b""
    sound_offset = NO_OFFSET
    if bck.sounds is not None:
        sound_offset = FILE_HEADER_SIZE + len(section) + len(bck.sound_gap)
        w = Writer(">")
        w.u16(len(bck.sounds))
        w.bytes(bck.sound_padding)
        w.bytes(np.ascontiguousarray(bck.sounds, SOUND_DTYPE).tobytes())
        sound_block = bck.sound_gap + w.getvalue()
    tag = bytearray(bck.framing.tag)
    tag[SOUND_OFFSET_IN_TAG : SOUND_OFFSET_IN_TAG + 4] = sound_offset.to_bytes(4, "big")
    framing = replace(bck.framing, tag=bytes(tag))
    return write_container(ANIMATION_MAGIC, KIND, [section], framing, sound_block)
