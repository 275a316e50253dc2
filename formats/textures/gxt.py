"""Sony PS Vita GXT texture containers (little-endian, version 0x10000003).

Layout: a 0x20-byte header (magic, version, texture count, data block offset and size, P4 and P8
palette counts, padding), one 0x20-byte record per texture, optional bytes before the data block (a
``BUV`` chunk in some games), and the data block: every texture's levels, then all P4 palettes
(16 u32 entries each), then all P8 palettes (256 entries), at the very end of the block.

``read`` keeps every byte (records field by field, the bytes between the records and the data, the
data block and anything after it), so ``write(read(b)) == b``. ``decode`` gives one texture's level
as RGBA (the pixel formats live in ``gxm``); ``encode`` returns a model whose texture holds new
pixels, with its mip levels rebuilt from them and every offset, size and palette kept consistent.
Versions 0x10000001/2 pack their records differently and are refused until a sample exists.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace

import numpy as np

from ..binary import Reader
from ..errors import ExportError, FormatError
from . import dds, gxm
from .raster import as_rgba

MAGIC = b"GXT\0"
VERSION = 0x10000003
OLDER_VERSIONS = (0x10000001, 0x10000002)
HEADER = struct.Struct("<4s7I")
RECORD = struct.Struct("<IIiIIIHHB3s")
PALETTE_BYTES = {gxm.P4: 16 * gxm.PALETTE_ENTRY_BYTES, gxm.P8: 256 * gxm.PALETTE_ENTRY_BYTES}
BUV_MAGIC = b"BUV\0"
# A texture whose data grows or shrinks moves the following ones by a multiple of this, which keeps
# their alignment (GXM wants 16 bytes for textures, 64 for palettes).
SHIFT_ALIGNMENT = 64
MAX_SIZE = 0xFFFF  # width and height are u16


@dataclass
class GXTTexture:
    data_offset: int  # from the start of the file
    data_size: int  # every level (and every face of a cube)
    palette_index: int  # within the P4 or the P8 palettes, as the format says; -1 for none
    flags: int
    texture_type: int  # gxm.SWIZZLED, gxm.LINEAR, ...
    format: int  # gxm format word: base | component order
    width: int
    height: int
    mip_count: int
    padding: bytes = b"\0\0\0"

    @property
    def base(self) -> int:
        return gxm.base_code(self.format)

    @property
    def level_count(self) -> int:
        return max(1, self.mip_count)


@dataclass
class GXT:
    textures: list[GXTTexture]
    data: bytes = field(repr=False)  # the data block: texture data, P4 palettes, P8 palettes
    p4_palette_count: int = 0
    p8_palette_count: int = 0
    version: int = VERSION
    header_padding: int = 0
    between: bytes = field(default=b"", repr=False)  # between the records and the data block (BUV chunk)
    trailing: bytes = field(default=b"", repr=False)  # after the data block
    filename: str = "<bytes>"

    @property
    def data_offset(self) -> int:
        return HEADER.size + RECORD.size * len(self.textures) + len(self.between)

    @property
    def palettes_start(self) -> int:
        """Offset of the first palette within ``data``."""
        return (
            len(self.data)
            - self.p4_palette_count * PALETTE_BYTES[gxm.P4]
            - (self.p8_palette_count * PALETTE_BYTES[gxm.P8])
        )

    def palette_span(self, base: int, index: int) -> tuple[int, int]:
        """(start, end) of a P4 or P8 palette within ``data``."""
        start = self.palettes_start + (0 if base == gxm.P4 else self.p4_palette_count * PALETTE_BYTES[gxm.P4])
        start += index * PALETTE_BYTES[base]
        return start, start + PALETTE_BYTES[base]

    def texture_data(self, index: int) -> bytes:
        texture = self.textures[index]
        start = texture.data_offset - self.data_offset
        return self.data[start : start + texture.data_size]


# -- read / write ------------------------------------------------------------------------------------


def read(data: bytes, filename: str = "<bytes>") -> GXT:
    reader = Reader(data, "<", filename)
    reader.magic(MAGIC, "GXT magic")
    version = reader.u32("GXT version")
    if version in OLDER_VERSIONS:
        raise reader.error(
            f"GXT version 0x{version:08X} is not supported (its records use an older layout "
            f"that no sample shows yet; only 0x{VERSION:08X} is read)",
            4,
        )
    if version != VERSION:
        raise reader.error(f"unknown GXT version 0x{version:08X}; expected 0x{VERSION:08X}", 4)
    count, data_offset, data_size, p4_count, p8_count, padding = reader.unpack("6I", "GXT header")
    reader.check_count(count, RECORD.size, "texture record")
    records_end = HEADER.size + count * RECORD.size
    if data_offset < records_end:
        raise reader.error(
            f"data block at 0x{data_offset:X} overlaps the {count} texture records (they end at 0x{records_end:X})",
            12,
        )
    block = reader.sub(data_offset, data_size, "GXT data block")
    palette_bytes = p4_count * PALETTE_BYTES[gxm.P4] + p8_count * PALETTE_BYTES[gxm.P8]
    if palette_bytes > data_size:
        raise reader.error(
            f"{p4_count} P4 and {p8_count} P8 palettes ({palette_bytes} bytes) exceed the "
            f"{data_size}-byte data block",
            20,
        )
    textures = [_read_record(reader, block, p4_count, p8_count) for _ in range(count)]
    return GXT(
        textures=textures,
        data=data[data_offset : data_offset + data_size],
        p4_palette_count=p4_count,
        p8_palette_count=p8_count,
        version=version,
        header_padding=padding,
        between=data[records_end:data_offset],
        trailing=data[data_offset + data_size :],
        filename=filename,
    )


def _read_record(reader: Reader, block: Reader, p4_count: int, p8_count: int) -> GXTTexture:
    start = reader.pos
    texture = GXTTexture(*reader.unpack(RECORD.format[1:], "GXT texture record"))
    if texture.data_offset < block.pos or texture.data_offset + texture.data_size > block.end:
        raise reader.error(
            f"texture data at 0x{texture.data_offset:X} ({texture.data_size} bytes) lies outside the data "
            f"block 0x{block.pos:X}–0x{block.end:X}",
            start,
        )
    palettes = {gxm.P4: p4_count, gxm.P8: p8_count}.get(texture.base)
    if palettes is not None and not 0 <= texture.palette_index < palettes:
        raise reader.error(
            f"{gxm.format_name(texture.format)} texture uses palette {texture.palette_index} "
            f"but the file has {palettes}",
            start + 8,
        )
    return texture


def write(gxt: GXT) -> bytes:
    """The file again: header, records, the bytes before the data block, the data block, the rest."""
    header = HEADER.pack(
        MAGIC,
        gxt.version,
        len(gxt.textures),
        gxt.data_offset,
        len(gxt.data),
        gxt.p4_palette_count,
        gxt.p8_palette_count,
        gxt.header_padding,
    )
    records = b"".join(
        RECORD.pack(
            t.data_offset,
            t.data_size,
            t.palette_index,
            t.flags,
            t.texture_type,
            t.format,
            t.width,
            t.height,
            t.mip_count,
            t.padding,
        )
        for t in gxt.textures
    )
    return header + records + gxt.between + gxt.data + gxt.trailing


# -- levels ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Level:
    width: int
    height: int
    offset: int  # within the texture's data
    size: int


def levels(texture: GXTTexture, base: gxm.Base) -> list[Level]:
    """The mip levels of ``texture`` (face 0 of a cube), largest first."""
    if texture.texture_type == gxm.LINEAR_STRIDED:  # no mips; rows of an unrecorded stride
        return [Level(texture.width, texture.height, 0, texture.data_size)]
    mipmapped = texture.level_count > 1
    out, offset = [], 0
    for level in range(texture.level_count):
        size = gxm.level_size(base, texture.texture_type, texture.width, texture.height, level, mipmapped)
        out.append(Level(max(texture.width >> level, 1), max(texture.height >> level, 1), offset, size))
        offset += size
    return out


def _stride(texture: GXTTexture, base: gxm.Base) -> int | None:
    """Row bytes of a linear strided texture: its data size over its unit rows."""
    if texture.texture_type != gxm.LINEAR_STRIDED:
        return None
    return texture.data_size // max(gxm.units(base, texture.width, texture.height)[1], 1)


def _palette(gxt: GXT, texture: GXTTexture) -> bytes | None:
    if texture.base not in PALETTE_BYTES:
        return None
    start, end = gxt.palette_span(texture.base, texture.palette_index)
    return gxt.data[start:end]


def _texture(gxt: GXT, index: int) -> GXTTexture:
    if not 0 <= index < len(gxt.textures):
        raise FormatError(gxt.filename, 8, f"no texture {index}; the file has {len(gxt.textures)}")
    return gxt.textures[index]


def decode(gxt: GXT, index: int, level: int = 0) -> np.ndarray:
    """Mip ``level`` of texture ``index`` (face 0 of a cube map) → (H, W, 4) uint8 RGBA, top row first."""
    texture = _texture(gxt, index)
    base = gxm.supported_base(texture.format, texture.texture_type, gxt.filename, texture.data_offset)
    if texture.width == 0 or texture.height == 0:
        raise FormatError(
            gxt.filename,
            texture.data_offset,
            f"cannot decode an empty {texture.width}×{texture.height} texture",
        )
    chain = levels(texture, base)
    if not 0 <= level < len(chain):
        raise FormatError(
            gxt.filename, texture.data_offset, f"mip level {level} is not among the {len(chain)} levels"
        )
    start = texture.data_offset - gxt.data_offset
    chosen = chain[level]
    return gxm.decode(
        gxt.data[start + chosen.offset : start + texture.data_size],
        texture.format,
        texture.texture_type,
        chosen.width,
        chosen.height,
        palette=_palette(gxt, texture),
        stride=_stride(texture, base),
        filename=gxt.filename,
        offset=texture.data_offset + chosen.offset,
    )


# -- encode ------------------------------------------------------------------------------------------


def encode(gxt: GXT, index: int, pixels: np.ndarray) -> GXT:
    """A copy of ``gxt`` whose texture ``index`` holds ``pixels`` ((H, W, 3|4) uint8, top row first).

    The texture keeps its format, layout and mip count; its levels are rebuilt from ``pixels``, each
    the previous one averaged 2×2 (face 0 only for cube maps). UBC blocks come from the DXT encoder;
    P4/P8 textures get a palette of their own (rewritten in place unless another texture shares it).
    A texture of another size moves the data of the textures after it. PVRTC textures, and cube maps
    of another size, are refused with an ExportError naming the texture.
    """
    texture = _texture(gxt, index)
    label = f"{gxt.filename}: texture {index} ({gxm.format_name(texture.format)})"
    known = gxm.BASES.get(texture.base)
    if known is not None and known.kind in ("pvrtc", "pvrtc2"):
        raise ExportError(f"{label}: re-encoding PVRTC is not supported")
    try:
        base = gxm.supported_base(texture.format, texture.texture_type, gxt.filename, texture.data_offset)
    except FormatError as error:
        raise ExportError(f"{label}: {error.problem}") from error
    rgba = as_rgba(pixels)
    height, width = rgba.shape[:2]
    if not (1 <= width <= MAX_SIZE and 1 <= height <= MAX_SIZE):
        raise ExportError(f"{label}: a {width}×{height} image does not fit a GXT texture")
    if texture.texture_type in gxm.CUBE_TYPES and (width, height) != (texture.width, texture.height):
        raise ExportError(f"{label}: a cube map keeps its {texture.width}×{texture.height} size")
    texture_type = texture.texture_type
    if texture_type == gxm.SWIZZLED and not (_power_of_two(width) and _power_of_two(height)):
        texture_type = gxm.SWIZZLED_ARBITRARY
    updated = replace(texture, width=width, height=height, texture_type=texture_type)
    stride = _new_stride(texture, updated, base)
    if stride is not None:
        updated.data_size = stride * gxm.units(base, width, height)[1]
    palette = gxm.quantize(rgba, texture.format) if base.kind == "palette" else None
    blob = _encode_levels(rgba, updated, base, palette, stride)
    if texture_type in gxm.CUBE_TYPES:  # faces 1–5 (and face padding) stay as they were
        blob += gxt.texture_data(index)[len(blob) :]
    result = _replace_data(gxt, index, replace(updated, data_size=len(blob)), blob, label)
    if palette is not None:
        result = _store_palette(result, index, gxm.encode_palette(palette, texture.format))
    return result


def _power_of_two(value: int) -> bool:
    return value & (value - 1) == 0


def _new_stride(old: GXTTexture, new: GXTTexture, base: gxm.Base) -> int | None:
    """The row bytes of a linear strided texture after an edit: kept while the rows still fit."""
    if new.texture_type != gxm.LINEAR_STRIDED:
        return None
    kept = _stride(old, base)
    if kept and gxm.stride_units_ok(base, new.width, kept):
        return kept
    row_bytes = (gxm.units(base, new.width, 1)[0] * base.unit_bits + 7) // 8
    return -(-row_bytes // 4) * 4


def _encode_levels(
    rgba: np.ndarray, texture: GXTTexture, base: gxm.Base, palette: np.ndarray | None, stride: int | None
) -> bytes:
    parts, image = [], rgba
    for level in levels(texture, base):
        if image.shape[:2] != (level.height, level.width):
            image = dds.half_size(image)
        parts.append(
            gxm.encode(
                image, texture.format, texture.texture_type, level.size, palette=palette, stride=stride
            )
        )
    return b"".join(parts)


def _replace_data(gxt: GXT, index: int, texture: GXTTexture, blob: bytes, label: str) -> GXT:
    """``gxt`` with texture ``index``'s data replaced by ``blob``; later textures move if its size changed."""
    old = gxt.textures[index]
    start = old.data_offset - gxt.data_offset
    end = start + old.data_size
    if end > gxt.palettes_start:
        raise ExportError(f"{label}: its data overlaps the palettes at the end of the data block")
    for other_index, other in enumerate(gxt.textures):
        other_start = other.data_offset - gxt.data_offset
        if other_index != index and other_start < end and other_start + other.data_size > start:
            raise ExportError(f"{label}: its data overlaps texture {other_index}'s, so it cannot be replaced")
    # The move is the growth rounded up to whole alignment steps (towards zero when shrinking).
    shift = -((old.data_size - len(blob)) // SHIFT_ALIGNMENT) * SHIFT_ALIGNMENT
    padding = bytes(old.data_size + shift - len(blob))
    textures = [
        texture
        if other_index == index
        else replace(other, data_offset=other.data_offset + shift)
        if other.data_offset - gxt.data_offset >= end
        else other
        for other_index, other in enumerate(gxt.textures)
    ]
    data = gxt.data[:start] + blob + padding + gxt.data[end:]
    return replace(gxt, textures=textures, data=data)


def _store_palette(gxt: GXT, index: int, entries: bytes) -> GXT:
    """Give texture ``index`` the palette ``entries``: in place, or appended to its list when shared."""
    texture = gxt.textures[index]
    shared = any(
        other_index != index and other.base == texture.base and other.palette_index == texture.palette_index
        for other_index, other in enumerate(gxt.textures)
    )
    if not shared:
        start, end = gxt.palette_span(texture.base, texture.palette_index)
        return replace(gxt, data=gxt.data[:start] + entries + gxt.data[end:])
    is_p4 = texture.base == gxm.P4
    count = gxt.p4_palette_count if is_p4 else gxt.p8_palette_count
    position = gxt.palette_span(texture.base, count)[0]  # just after the last palette of the list
    textures = list(gxt.textures)
    textures[index] = replace(texture, palette_index=count)
    counts = {"p4_palette_count": count + 1} if is_p4 else {"p8_palette_count": count + 1}
    return replace(gxt, textures=textures, data=gxt.data[:position] + entries + gxt.data[position:], **counts)


# -- inspect -----------------------------------------------------------------------------------------


def detect(data: bytes, name: str) -> bool:
    return data[:4] == MAGIC


def summarize(data: bytes, name: str) -> str:
    """A readable summary for ``python -m formats.inspect``."""
    gxt = read(data, name)
    lines = [
        f"{name}: GXT version 0x{gxt.version:08X} ({len(data)} bytes), {len(gxt.textures)} texture(s), "
        f"{gxt.p4_palette_count} P4 and {gxt.p8_palette_count} P8 palette(s)"
    ]
    if gxt.between:
        lines.append(f"  {_describe_between(gxt.between)}")
    for index, texture in enumerate(gxt.textures):
        base = gxm.BASES.get(texture.base)
        palette = f", palette {base.name} #{texture.palette_index}" if base and base.kind == "palette" else ""
        lines.append(
            f"  texture {index}: {texture.width}×{texture.height} {gxm.format_name(texture.format)}, "
            f"{gxm.type_name(texture.texture_type)}, {texture.level_count} mip level(s){palette}, "
            f"data at 0x{texture.data_offset:X} ({texture.data_size} bytes)"
        )
    if gxt.trailing:
        lines.append(f"  {len(gxt.trailing)} bytes after the data block")
    return "\n".join(lines)


def _describe_between(between: bytes) -> str:
    if between[:4] == BUV_MAGIC and len(between) >= 8:
        count = struct.unpack_from("<I", between, 4)[0]
        return f"BUV chunk: {count} rectangle(s) ({len(between)} bytes)"
    return f"{len(between)} bytes between the records and the data block"
