"""TKL keyframe libraries ("TPKL"): the position and rotation tables animations index.

One library is shared by every animal of a dig site; the game loads
``<name in the TMD header>.tkl`` from the model's folder.

Layout: "TPKL", u32 0, u32 remaining (= data length + 44), char[16] name,
u32 position / rotation / scale counts, u32 element sizes (12, 16, 4), u32 data
length, then positions (vec3), rotations (quat x y z w) and, when the scale
count is not zero, the scale entries (kept as raw bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..binary import Reader, Writer

MAGIC = b"TPKL"
HEADER_SIZE = 56
POSITION_SIZE = 12
ROTATION_SIZE = 16


@dataclass
class TKL:
    name_field: bytes  # 16 bytes, NUL-terminated name
    positions: np.ndarray  # (P, 3) float32
    rotations: np.ndarray  # (R, 4) float32, x y z w
    scale_count: int = 0
    scale_size: int = 4
    scales: bytes = b""  # scale_count × scale_size raw bytes
    reserved: bytes = bytes(4)

    @property
    def name(self) -> str:
        return self.name_field.split(b"\0", 1)[0].decode("ascii", errors="replace")


def name_field(name: str) -> bytes:
    raw = name.encode("ascii", errors="replace")
    if len(raw) > 15:
        raise ValueError(f"keyframe library name {name!r} is longer than 15 bytes")
    return raw.ljust(16, b"\0")


def read(data: bytes, filename: str = "<bytes>") -> TKL:
    r = Reader(data, "<", filename)
    r.magic(MAGIC, "TKL magic")
    reserved = r.bytes(4, "reserved word")
    remaining = r.u32("bytes remaining")
    name = r.bytes(16, "library name")
    position_count, rotation_count, scale_count = r.unpack("3I", "table counts")
    position_size, rotation_size, scale_size = r.unpack("3I", "element sizes")
    if (position_size, rotation_size) != (POSITION_SIZE, ROTATION_SIZE):
        raise r.error(f"element sizes {position_size}, {rotation_size} (expected 12 and 16)", 40)
    data_length = r.u32("data length")
    expected = position_count * POSITION_SIZE + rotation_count * ROTATION_SIZE + scale_count * scale_size
    if data_length != expected:
        raise r.error(f"data length {data_length} does not match the counts ({expected} bytes)", 52)
    if remaining != data_length + 44 or len(data) != HEADER_SIZE + data_length:
        raise r.error(
            f"file has {len(data)} bytes; header expects {HEADER_SIZE + data_length} "
            f"(remaining {remaining}, data {data_length})",
            8,
        )
    positions = r.array("<f4", position_count * 3, "positions").reshape(-1, 3)
    rotations = r.array("<f4", rotation_count * 4, "rotations").reshape(-1, 4)
    scales = r.bytes(scale_count * scale_size, "scales")
    return TKL(name, positions, rotations, scale_count, scale_size, scales, reserved)


def write(model: TKL) -> bytes:
    if len(model.scales) != model.scale_count * model.scale_size:
        raise ValueError(f"{len(model.scales)} scale bytes for {model.scale_count} × {model.scale_size}")
    data_length = (
        len(model.positions) * POSITION_SIZE + len(model.rotations) * ROTATION_SIZE + len(model.scales)
    )
    w = Writer("<")
    w.bytes(MAGIC + model.reserved)
    w.u32(data_length + 44)
    w.bytes(model.name_field)
    w.pack("3I", len(model.positions), len(model.rotations), model.scale_count)
    w.pack("3I", POSITION_SIZE, ROTATION_SIZE, model.scale_size)
    w.u32(data_length)
    w.array(model.positions, "<f4")
    w.array(model.rotations, "<f4")
    w.bytes(model.scales)
    return w.getvalue()
