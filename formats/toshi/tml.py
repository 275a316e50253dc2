"""TML material libraries ("TML1"): textures and the materials that use them.

Layout: "TML1", u32 type (0), u32 texture count; per texture a 28-byte header
(id, data size, flags, unknown fields, format, width, height, more unknown
fields) and its data; then u32 material count, count × char[32] names and one
record per name (id, flags, texture count, texture ids).

The game finds a material by a binary search over case-folded names, so a
library written from scratch must list its names sorted by their lower-cased
bytes (``sort_key``), with the records in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Reader, Writer
from ..errors import FormatError
from ..textures import dds, raster

MAGIC = b"TML1"
# Texture format ids → names; 6 is a whole DDS file.
FORMAT_NAMES = {0: "RGBA8888", 1: "RGB888", 2: "ARGB1555", 6: "DDS", 7: "ARGB4444"}
FORMAT_DDS = 6
# Material flags & SHADER_MASK: the shader kind.
SHADER_MASK = 0xF000
SHADERS = {0x0000: "skin", 0x1000: "terrain", 0x2000: "terrain decal", 0x3000: "system", 0x4000: "sprite"}


@dataclass
class Texture:
    id: int
    flags: int  # u16; bit 1 clear: the game builds mipmaps
    unknown1: int  # i16
    unknown2: int  # i32
    format: int
    width: int
    height: int
    unknown3: int  # u16, usually 0xFFFF
    unknown4: int  # i32, usually 0x43000000
    data: bytes

    @property
    def format_name(self) -> str:
        return FORMAT_NAMES.get(self.format, f"unknown format {self.format}")

    def decode(self, filename: str = "<bytes>") -> np.ndarray:
        """(H, W, 4) uint8 RGBA; FormatError for formats nothing can decode."""
        if self.format == FORMAT_DDS:
            return dds.read(self.data, filename).decode()
        name = FORMAT_NAMES.get(self.format)
        if name is None:
            raise FormatError(
                filename, 0, f"texture {self.id} has format {self.format}, which cannot be decoded"
            )
        return raster.decode(name, self.data, self.width, self.height, filename)


@dataclass
class Material:
    id: int
    flags: int  # i16
    textures: list[int] = field(default_factory=list)  # texture ids


@dataclass
class TML:
    type: int
    textures: list[Texture]
    names: list[bytes]  # 32-byte name fields, record i belongs to name i
    materials: list[Material]
    trailer: bytes = b""

    def material_names(self) -> list[str]:
        return [decode_name(n) for n in self.names]

    def texture_by_id(self) -> dict[int, Texture]:
        return {t.id: t for t in self.textures}


def decode_name(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("ascii", errors="replace")


def name_field(name: str) -> bytes:
    raw = name.encode("ascii", errors="replace")
    if len(raw) > 31:
        raise ValueError(f"material name {name!r} is longer than 31 bytes")
    return raw.ljust(32, b"\0")


def sort_key(name: str | bytes) -> bytes:
    """The game's name order: bytes compared after folding letters to lower case."""
    raw = name.encode("ascii", errors="replace") if isinstance(name, str) else name
    return raw.split(b"\0", 1)[0].lower()


def read(data: bytes, filename: str = "<bytes>") -> TML:
    r = Reader(data, "<", filename)
    r.magic(MAGIC, "TML magic")
    kind = r.u32("library type")
    texture_count = r.check_count(r.u32("texture count"), 28, "texture")
    textures = []
    for _ in range(texture_count):
        tid, size, flags, unknown1, unknown2, fmt, width, height, unknown3, unknown4 = r.unpack(
            "iiHhiHHHHi", "texture header"
        )
        if size < 0:
            raise r.error(f"texture {tid} has a negative data size {size}", r.pos - 24)
        textures.append(
            Texture(
                tid,
                flags,
                unknown1,
                unknown2,
                fmt,
                width,
                height,
                unknown3,
                unknown4,
                r.bytes(size, f"texture {tid} data"),
            )
        )
    material_count = r.check_count(r.u32("material count"), 32 + 8, "material")
    names = [r.bytes(32, "material name") for _ in range(material_count)]
    materials = []
    for i in range(material_count):
        mid, flags, count = r.unpack("ihh", "material record")
        if count < 0:
            raise r.error(
                f"material {decode_name(names[i])!r} has a negative texture count {count}", r.pos - 2
            )
        materials.append(Material(mid, flags, r.array("<i4", count, "material texture ids").tolist()))
    return TML(kind, textures, names, materials, r.bytes(r.remaining, "trailer"))


def material_names(data: bytes, filename: str = "<bytes>") -> list[str]:
    """The material names a library defines."""
    return read(data, filename).material_names()


def write(model: TML) -> bytes:
    if len(model.names) != len(model.materials):
        raise ValueError(f"{len(model.names)} material names for {len(model.materials)} records")
    w = Writer("<")
    w.bytes(MAGIC)
    w.pack("II", model.type, len(model.textures))
    for t in model.textures:
        w.pack(
            "iiHhiHHHHi",
            t.id,
            len(t.data),
            t.flags,
            t.unknown1,
            t.unknown2,
            t.format,
            t.width,
            t.height,
            t.unknown3,
            t.unknown4,
        )
        w.bytes(t.data)
    w.u32(len(model.names))
    for name in model.names:
        w.bytes(name)
    for m in model.materials:
        w.pack("ihh", m.id, m.flags, len(m.textures))
        w.array(np.asarray(m.textures, np.int32), "<i4")
    w.bytes(model.trailer)
    return w.getvalue()
