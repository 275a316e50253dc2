"""TPL texture palettes (GameCube/Wii texture files holding GX images; big-endian).

Layout: header (magic, image count, image table offset), an image table of
(image header offset, palette header offset) pairs, 0x24-byte image headers,
0x0C-byte palette headers, and the texel and palette data they point to.

``read`` records where every structure was and the non-zero bytes found
between them, and ``write`` puts everything back there while the contents
still fit that layout, so ``write(read(b)) == b``. Models built from scratch
(offsets ``None``) or whose contents no longer fit are laid out afresh:
headers first, then palette and texel data each on a 32-byte boundary.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from ..binary import Reader
from ..errors import FormatError
from . import gx

MAGIC = 0x0020AF30
HEADER_SIZE = 12
TABLE_ENTRY_SIZE = 8
IMAGE_HEADER = struct.Struct(">HHIIIIIIfBBBB")  # 0x24 bytes
PALETTE_HEADER = struct.Struct(">HBBII")  # 0x0C bytes
WRAP_MODES = {0: "clamp", 1: "repeat", 2: "mirror"}
DATA_ALIGNMENT = 32


@dataclass
class TPLPalette:
    entry_count: int
    unpacked: int
    pad: int
    format: int  # gx.TLUT_IA8, gx.TLUT_RGB565 or gx.TLUT_RGB5A3
    data: bytes = field(repr=False)  # entry_count big-endian 16-bit entries
    header_offset: int | None = None
    data_offset: int | None = None


@dataclass
class TPLImage:
    width: int
    height: int
    format: int  # a gx format id
    data: bytes = field(repr=False)  # every mip level, each on a 32-byte boundary
    wrap_s: int = 0
    wrap_t: int = 0
    min_filter: int = 1
    mag_filter: int = 1
    lod_bias: float = 0.0
    edge_lod: int = 0
    min_lod: int = 0
    max_lod: int = 0
    unpacked: int = 0
    palette: TPLPalette | None = None
    header_offset: int | None = None
    data_offset: int | None = None
    filename: str = "<bytes>"

    @property
    def level_count(self) -> int:
        return self.max_lod - self.min_lod + 1

    def level_sizes(self) -> list[tuple[int, int]]:
        """(width, height) of each mip level."""
        return [(max(1, self.width >> i), max(1, self.height >> i)) for i in range(self.level_count)]

    def decode(self, level: int = 0) -> np.ndarray:
        """Mip ``level`` → (H, W, 4) uint8 RGBA."""
        sizes = self.level_sizes()
        if not 0 <= level < len(sizes):
            raise FormatError(
                self.filename, self.data_offset or 0, f"no mip level {level} ({len(sizes)} levels)"
            )
        offset = sum(gx.data_size(self.format, w, h) for w, h in sizes[:level])
        palette = self.palette
        return gx.decode(
            self.format,
            self.data,
            *sizes[level],
            palette=None if palette is None else palette.data,
            palette_format=None if palette is None else palette.format,
            filename=self.filename,
            offset=offset,
        )


@dataclass
class TPL:
    images: list[TPLImage] = field(default_factory=list)
    table_offset: int | None = None
    unused: list[tuple[int, bytes]] = field(default_factory=list)  # non-zero bytes outside every structure
    size: int | None = None  # length of the file read


def image_data_size(fmt: int, width: int, height: int, levels: int) -> int:
    return sum(gx.data_size(fmt, max(1, width >> i), max(1, height >> i)) for i in range(levels))


def read(data: bytes, filename: str = "<bytes>") -> TPL:
    reader = Reader(data, ">", filename)
    magic = reader.u32("TPL magic")
    if magic != MAGIC:
        raise reader.error(f"expected TPL magic 0x{MAGIC:08X}, found 0x{magic:08X}", 0)
    count = reader.u32("image count")
    table_offset = reader.u32("image table offset")
    reader.seek(table_offset, "image table")
    reader.check_count(count, TABLE_ENTRY_SIZE, "image table entry")
    table = [reader.unpack("II", "image table entry") for _ in range(count)]
    covered = np.zeros(len(data), bool)
    covered[:HEADER_SIZE] = True
    covered[table_offset : table_offset + count * TABLE_ENTRY_SIZE] = True
    images = []
    for image_offset, palette_offset in table:
        image = _read_image(reader, image_offset, covered)
        if palette_offset:
            image.palette = _read_palette(reader, palette_offset, covered)
        images.append(image)
    return TPL(images, table_offset, _unused_bytes(data, covered), len(data))


def _read_image(reader: Reader, offset: int, covered: np.ndarray) -> TPLImage:
    header = reader.sub(offset, IMAGE_HEADER.size, "image header")
    (height, width, fmt, data_offset, wrap_s, wrap_t, min_filter, mag_filter, lod_bias, edge_lod, min_lod,
     max_lod, unpacked) = header.unpack(IMAGE_HEADER.format[1:], "image header")  # fmt: skip
    gx.check_format(fmt, reader.filename, offset + 4)
    if max_lod < min_lod:
        raise reader.error(f"max LOD {max_lod} is below min LOD {min_lod}", offset + 0x22)
    size = image_data_size(fmt, width, height, max_lod - min_lod + 1)
    texels = reader.sub(data_offset, size, f"{gx.NAMES[fmt]} {width}×{height} image data").bytes(size)
    covered[offset : offset + IMAGE_HEADER.size] = True
    covered[data_offset : data_offset + size] = True
    return TPLImage(
        width=width,
        height=height,
        format=fmt,
        data=texels,
        wrap_s=wrap_s,
        wrap_t=wrap_t,
        min_filter=min_filter,
        mag_filter=mag_filter,
        lod_bias=lod_bias,
        edge_lod=edge_lod,
        min_lod=min_lod,
        max_lod=max_lod,
        unpacked=unpacked,
        header_offset=offset,
        data_offset=data_offset,
        filename=reader.filename,
    )


def _read_palette(reader: Reader, offset: int, covered: np.ndarray) -> TPLPalette:
    header = reader.sub(offset, PALETTE_HEADER.size, "palette header")
    entry_count, unpacked, pad, fmt, data_offset = header.unpack(PALETTE_HEADER.format[1:], "palette header")
    if fmt not in gx.TLUT_NAMES:
        raise reader.error(f"unknown palette format {fmt}; expected 0, 1 or 2", offset + 4)
    entries = reader.sub(data_offset, entry_count * 2, f"{entry_count} palette entries").bytes(
        entry_count * 2
    )
    covered[offset : offset + PALETTE_HEADER.size] = True
    covered[data_offset : data_offset + entry_count * 2] = True
    return TPLPalette(entry_count, unpacked, pad, fmt, entries, offset, data_offset)


def _unused_bytes(data: bytes, covered: np.ndarray) -> list[tuple[int, bytes]]:
    """Runs of bytes outside every structure that are not all zero."""
    edges = np.flatnonzero(np.diff(np.concatenate([[True], covered, [True]]).astype(np.int8)))
    runs = zip(edges[0::2].tolist(), edges[1::2].tolist(), strict=True)
    return [(start, data[start:end]) for start, end in runs if data[start:end].strip(b"\0")]


# -- writing ---------------------------------------------------------------------------------------


def _image_header(image: TPLImage, data_offset: int) -> bytes:
    return IMAGE_HEADER.pack(
        image.height, image.width, image.format, data_offset, image.wrap_s, image.wrap_t, image.min_filter,
        image.mag_filter, image.lod_bias, image.edge_lod, image.min_lod, image.max_lod, image.unpacked,
    )  # fmt: skip


def _palette_header(palette: TPLPalette, data_offset: int) -> bytes:
    return PALETTE_HEADER.pack(
        palette.entry_count, palette.unpacked, palette.pad, palette.format, data_offset
    )


def _check(tpl: TPL) -> None:
    for image in tpl.images:
        expected = image_data_size(image.format, image.width, image.height, image.level_count)
        if len(image.data) != expected:
            raise ValueError(
                f"{gx.NAMES[image.format]} {image.width}×{image.height} image needs {expected} bytes"
            )
        if image.palette is not None and len(image.palette.data) != image.palette.entry_count * 2:
            raise ValueError(
                f"palette of {image.palette.entry_count} entries needs {image.palette.entry_count * 2} bytes"
            )


def write(tpl: TPL) -> bytes:
    _check(tpl)
    return _write_in_place(tpl) or _write_fresh(tpl)


def _write_in_place(tpl: TPL) -> bytes | None:
    """The file with every structure at its recorded offset, or None when that no longer works."""
    palettes = [image.palette for image in tpl.images if image.palette is not None]
    offsets = [tpl.table_offset] + [o for i in tpl.images for o in (i.header_offset, i.data_offset)]
    offsets += [o for p in palettes for o in (p.header_offset, p.data_offset)]
    if any(o is None for o in offsets):
        return None
    pieces = [(0, struct.pack(">3I", MAGIC, len(tpl.images), tpl.table_offset))]
    table = b"".join(
        struct.pack(">II", image.header_offset, 0 if image.palette is None else image.palette.header_offset)
        for image in tpl.images
    )
    pieces.append((tpl.table_offset, table))
    for image in tpl.images:
        pieces += [
            (image.header_offset, _image_header(image, image.data_offset)),
            (image.data_offset, image.data),
        ]
    for palette in palettes:
        pieces += [(palette.header_offset, _palette_header(palette, palette.data_offset))]
        pieces += [(palette.data_offset, palette.data)]
    size = max([tpl.size or 0] + [start + len(piece) for start, piece in pieces])
    out = bytearray(size)
    covered = np.zeros(size, bool)
    for start, piece in pieces:
        end = start + len(piece)
        if covered[start:end].any() and bytes(out[start:end]) != piece:
            return None  # structures that grew or changed now collide
        out[start:end] = piece
        covered[start:end] = True
    for start, piece in tpl.unused:
        if start + len(piece) <= size and not covered[start : start + len(piece)].any():
            out[start : start + len(piece)] = piece
    return bytes(out)


def _write_fresh(tpl: TPL) -> bytes:
    palettes = [image.palette for image in tpl.images if image.palette is not None]
    table_offset = HEADER_SIZE
    header_offset = table_offset + TABLE_ENTRY_SIZE * len(tpl.images)
    palette_header_offset = header_offset + IMAGE_HEADER.size * len(tpl.images)
    cursor = palette_header_offset + PALETTE_HEADER.size * len(palettes)
    blobs = []
    palette_offsets: dict[int, tuple[int, int]] = {}  # id(palette) → (header offset, data offset)
    image_data_offsets = []
    for image in tpl.images:
        if image.palette is not None:
            cursor += -cursor % DATA_ALIGNMENT
            palette_offsets[id(image.palette)] = (palette_header_offset, cursor)
            palette_header_offset += PALETTE_HEADER.size
            blobs.append((cursor, image.palette.data))
            cursor += len(image.palette.data)
        cursor += -cursor % DATA_ALIGNMENT
        image_data_offsets.append(cursor)
        blobs.append((cursor, image.data))
        cursor += len(image.data)
    out = bytearray(struct.pack(">3I", MAGIC, len(tpl.images), table_offset))
    for index, image in enumerate(tpl.images):
        palette_header = palette_offsets[id(image.palette)][0] if image.palette is not None else 0
        out += struct.pack(">II", header_offset + IMAGE_HEADER.size * index, palette_header)
    for image, data_offset in zip(tpl.images, image_data_offsets, strict=True):
        out += _image_header(image, data_offset)
    for palette in palettes:
        out += _palette_header(palette, palette_offsets[id(palette)][1])
    for start, blob in blobs:
        out += bytes(start - len(out)) + blob
    return bytes(out)


def image_from_pixels(pixels: np.ndarray, fmt: int, palette_format: int | None = None, **fields) -> TPLImage:
    """A single-level TPLImage encoding ``pixels`` in GX format ``fmt`` (other header fields as keywords)."""
    data, palette_data = gx.encode(fmt, pixels, palette_format)
    palette = None
    if palette_data is not None:
        palette_format = gx.TLUT_RGB5A3 if palette_format is None else palette_format
        palette = TPLPalette(len(palette_data) // 2, 0, 0, palette_format, palette_data)
    height, width = np.asarray(pixels).shape[:2]
    return TPLImage(width=width, height=height, format=fmt, data=data, palette=palette, **fields)
