"""BTK: texture matrix animation (``J3D1btk1`` with one TTK1 section).

One entry per animated texture matrix: the material it belongs to (name
table), which of that material's texture matrices (index table), the centre
of the transform, and tracks for U, V and W, each with scale, rotation and
translation (the game uses scale U/V, rotation W and translation U/V).
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

KIND = b"btk1"
TTK1_HEADER_SIZE = 0x60
POST_FIELDS_SIZE = 0x28  # +0x34..+0x5B: offsets of "post" matrix data, zero in every known file
COMPONENTS = ("scale", "rotation", "translation")
BLOCK_ALIGNS = [32, 4, 4, 4, 4, 4, 4, 4]


@dataclass
class BTK:
    loop_mode: int
    rotation_frac: int  # rotation unit: 2^frac × 180 / 32768 degrees
    length: int
    tracks: np.ndarray  # (matrices, 3 axes U/V/W, 3 components scale/rotation/translation) TRACK_DTYPE
    material_names: list[str]  # per matrix
    texture_indices: np.ndarray  # (matrices,) uint8: which texture matrix of the material
    centers: np.ndarray  # (matrices, 3) float32
    scale_bank: np.ndarray  # float32
    rotation_bank: np.ndarray  # int16
    translation_bank: np.ndarray  # float32
    remap: np.ndarray | None = None  # (matrices,) uint16; None writes the identity
    post_fields: bytes = b"\0" * POST_FIELDS_SIZE
    calculation: int = 0  # 0 basic, 1 Maya-style texture matrix
    gaps: list[bytes] | None = None
    framing: Framing = field(default_factory=Framing)

    @property
    def matrix_count(self) -> int:
        return len(self.tracks)

    def banks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.scale_bank, self.rotation_bank, self.translation_bank


def read(data: bytes, filename: str = "<bytes>") -> BTK:
    container, section, r = read_animation(data, filename, KIND, b"TTK1")
    base = section.offset
    loop_mode, frac, length, track_count = r.unpack("BBhH", "TTK1 header")
    if track_count % 3:
        raise r.error(f"TTK1 track count {track_count} expected to be a multiple of 3", base + 0x0C)
    matrices = track_count // 3
    counts = r.unpack("HHH", "TTK1 bank counts")
    offsets = r.unpack("8I", "TTK1 block offsets")
    post_fields = r.bytes(POST_FIELDS_SIZE, "TTK1 post offsets")
    calculation = r.u32("TTK1 calculation type")
    names, names_size = read_names(r, base + offsets[2], "TTK1 name table")
    if len(names) != matrices:
        raise r.error(f"TTK1 name table expected {matrices} names, found {len(names)}", base + offsets[2])
    sizes = (
        matrices * 9 * TRACK_DTYPE.itemsize,
        matrices * 2,
        names_size,
        matrices,
        matrices * 12,
        counts[0] * 4,
        counts[1] * 2,
        counts[2] * 4,
    )
    blocks = list(zip(offsets, sizes, strict=True))
    what = ("track table", "remap table", "name table", "texture index table", "centres")
    what += ("scale bank", "rotation bank", "translation bank")
    rs = [block_reader(r, base, o, s, f"TTK1 {w}") for (o, s), w in zip(blocks, what, strict=True)]
    tracks = rs[0].array(TRACK_DTYPE, matrices * 9, "TTK1 tracks").reshape(matrices, 3, 3)
    remap = rs[1].array(">u2", matrices, "TTK1 remap")
    texture_indices = rs[3].array("u1", matrices, "TTK1 texture indices")
    centers = rs[4].array(">f4", matrices * 3, "TTK1 centres").reshape(matrices, 3)
    banks = (
        rs[5].array(">f4", counts[0], "TTK1 scale bank"),
        rs[6].array(">i2", counts[1], "TTK1 rotation bank"),
        rs[7].array(">f4", counts[2], "TTK1 translation bank"),
    )
    for component, bank in enumerate(banks):
        check_tracks(
            r, tracks[:, :, component], len(bank), f"TTK1 {COMPONENTS[component]}", base + offsets[0]
        )
    return BTK(
        loop_mode,
        frac,
        length,
        tracks,
        names,
        texture_indices,
        centers,
        *banks,
        remap=remap,
        post_fields=post_fields,
        calculation=calculation,
        gaps=read_gaps(section.data, TTK1_HEADER_SIZE, blocks, BLOCK_ALIGNS),
        framing=container.framing,
    )


def write(btk: BTK) -> bytes:
    matrices = btk.matrix_count
    remap = identity_remap(matrices) if btk.remap is None else btk.remap
    builder = SectionBuilder(b"TTK1", TTK1_HEADER_SIZE, btk.gaps)
    contents = (
        np.ascontiguousarray(btk.tracks, TRACK_DTYPE).tobytes(),
        np.asarray(remap, ">u2").tobytes(),
        write_names(btk.material_names),
        np.asarray(btk.texture_indices, "u1").tobytes(),
        np.asarray(btk.centers, ">f4").tobytes(),
        np.asarray(btk.scale_bank, ">f4").tobytes(),
        np.asarray(btk.rotation_bank, ">i2").tobytes(),
        np.asarray(btk.translation_bank, ">f4").tobytes(),
    )
    offsets = [builder.block(data, align) for data, align in zip(contents, BLOCK_ALIGNS, strict=True)]
    header = Writer(">")
    header.pack("BBhH", btk.loop_mode, btk.rotation_frac, btk.length, matrices * 3)
    header.pack("HHH", len(btk.scale_bank), len(btk.rotation_bank), len(btk.translation_bank))
    header.pack("8I", *offsets)
    header.bytes(btk.post_fields)
    header.u32(btk.calculation)
    return write_container(ANIMATION_MAGIC, KIND, [builder.finish(header.getvalue())], btk.framing)
