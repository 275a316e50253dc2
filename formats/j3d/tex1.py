"""TEX1: the textures of J3D models and BMT files.

BTI headers (0x20 bytes each; data and palette offsets are relative to each
header), the texel and palette data they point to (textures may share data),
and a name table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Reader, Writer
from ..errors import FormatError
from ..textures import gx
from .container import SectionBuilder, read_gaps, read_names, write_names

TEX1_HEADER_SIZE = 0x14
BTI_SIZE = 0x20
BTI_DTYPE = np.dtype(
    [
        ("format", "u1"),
        ("alpha", "u1"),
        ("width", ">u2"),
        ("height", ">u2"),
        ("wrap_s", "u1"),
        ("wrap_t", "u1"),
        ("palette_enabled", "u1"),
        ("palette_format", "u1"),
        ("palette_count", ">u2"),
        ("palette_offset", ">u4"),
        ("mipmaps_enabled", "u1"),
        ("edge_lod", "u1"),
        ("bias_clamp", "u1"),
        ("max_anisotropy", "u1"),
        ("min_filter", "u1"),
        ("mag_filter", "u1"),
        ("min_lod", "i1"),
        ("max_lod", "i1"),
        ("mip_count", "u1"),
        ("unknown", "u1"),
        ("lod_bias", ">i2"),
        ("data_offset", ">u4"),
    ]
)
WRAP_MODES = ("CLAMP", "REPEAT", "MIRROR")


@dataclass
class TEX1:
    headers: np.ndarray  # BTI_DTYPE; offsets relative to each header, as in the file
    names: list[str]
    data: bytes  # texel data and palettes: everything between the headers and the name table
    marker: int = 0xFFFF
    gaps: list[bytes] | None = None  # non-standard bytes around the blocks, see container.read_gaps
    headers_absent: bool = False  # a TEX1 without textures whose header table offset is 0
    data_offset: int = field(default=0, compare=False)  # where ``data`` starts in the file read

    def data_positions(self, field: str = "data_offset") -> np.ndarray:
        """Where each texture's texels (or palette) start inside ``data`` (int64)."""
        from_header = BTI_SIZE * np.arange(len(self.headers)) + self.headers[field].astype(np.int64)
        return from_header - BTI_SIZE * len(self.headers)


def read_tex1(data: bytes, offset: int, size: int, filename: str) -> TEX1:
    """The TEX1 section of ``size`` bytes at file ``offset``."""
    r = Reader(data, ">", filename, offset, offset + size)
    r.seek(offset + 8)
    count, marker, headers_at, names_at = r.unpack("HHII", "TEX1 header")
    headers = r.sub(offset + headers_at, count * BTI_SIZE, "TEX1 texture headers").array(BTI_DTYPE, count)
    absent = count == 0 and headers_at == 0
    data_start = names_at if absent else headers_at + count * BTI_SIZE
    if not data_start <= names_at <= size:
        raise r.error(f"TEX1 name table expected between {data_start} and {size}", offset + 0x10)
    names, names_size = read_names(r, offset + names_at, "TEX1 name table")
    if len(names) != count:
        raise r.error(f"TEX1 name table expected {count} names, found {len(names)}", offset + names_at)
    tex1 = TEX1(headers, names, data[offset + data_start : offset + names_at], marker)
    tex1.data_offset = offset + data_start
    tex1.headers_absent = absent
    blocks = [(data_start, names_at - data_start), (names_at, names_size)]
    aligns = [1, 1] if absent else [32, 1, 1]
    if not absent:
        blocks.insert(0, (headers_at, count * BTI_SIZE))
    tex1.gaps = read_gaps(data[offset : offset + size], TEX1_HEADER_SIZE, blocks, aligns)
    for offset_field, used in (
        ("data_offset", np.ones(count, bool)),
        ("palette_offset", headers["palette_count"] > 0),
    ):
        positions = tex1.data_positions(offset_field)
        outside = used & ((positions < 0) | (positions >= max(len(tex1.data), 1)))
        if outside.any():
            index = int(np.flatnonzero(outside)[0])
            raise r.error(
                f"TEX1 texture {index} {offset_field} points outside the texture data",
                offset + headers_at + BTI_SIZE * index,
            )
    return tex1


def write_tex1(tex1: TEX1) -> bytes:
    builder = SectionBuilder(b"TEX1", TEX1_HEADER_SIZE, tex1.gaps)
    absent = tex1.headers_absent and not len(tex1.headers)
    headers_at = 0 if absent else builder.block(np.ascontiguousarray(tex1.headers, BTI_DTYPE).tobytes(), 32)
    builder.block(tex1.data, 1)
    names_at = builder.block(write_names(tex1.names), 1)
    header = Writer(">")
    header.pack("HHII", len(tex1.headers), tex1.marker, headers_at, names_at)
    return builder.finish(header.getvalue())


def decode(tex1: TEX1, index: int, filename: str = "<bytes>") -> np.ndarray:
    """Texture ``index``'s top mip level as (H, W, 4) uint8 pixels."""
    header = tex1.headers[index]
    palette = palette_format = None
    if header["palette_count"]:
        at = int(tex1.data_positions("palette_offset")[index])
        palette = tex1.data[at : at + 2 * int(header["palette_count"])]
        palette_format = int(header["palette_format"])
    start = int(tex1.data_positions()[index])
    try:
        return gx.decode(
            int(header["format"]), tex1.data, int(header["width"]), int(header["height"]),
            palette=palette, palette_format=palette_format, filename=filename, offset=start,
        )  # fmt: skip
    except FormatError as e:  # its offset counts from the start of ``data``
        raise FormatError(filename, tex1.data_offset + e.offset, f"TEX1 texture {index}: {e.problem}") from e
