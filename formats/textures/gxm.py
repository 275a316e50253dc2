"""PS Vita GXM textures: format words, component orders, memory layouts and level sizes.

A format word is ``base | order``: the base format in the top byte (mask 0x9F000000) and the component
order in bits 12–14. Texel formats pack their fields from the most significant bit down in a
little-endian word; the order names those fields (four and three components) or says which stored
component feeds each output (one and two components, outputs written A, B, G, R). Palette formats index
u32 entries in a four-component order; UBC1–3 are DXT1/3/5 blocks; PVRT2BPP/PVRT4BPP are PVRTC1.

Storage units are texels, 4×4 blocks (UBC, PVRT4BPP) or 8×4 words (PVRT2BPP). Layouts place units in
Morton order over the enclosing power-of-two grid (swizzled, cube, arbitrary sizes), in rows padded to
8 texels (linear) or of a given byte stride (linear strided), or in 32×32-texel tiles (tiled).
``decode`` reads one level into (H, W, 4) uint8 RGBA, top row first; ``encode`` is its inverse for
every base but PVRTC.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import FormatError
from . import dds, gx, pvrtc
from .raster import as_rgba, expand_bits, quantize_bits

BASE_MASK = 0x9F000000
ORDER_SHIFT, ORDER_MASK = 12, 7

# Texture types: the top three bits of the type word.
SWIZZLED, CUBE, LINEAR, TILED = 0x00000000, 0x40000000, 0x60000000, 0x80000000
SWIZZLED_ARBITRARY, LINEAR_STRIDED, CUBE_ARBITRARY = 0xA0000000, 0xC0000000, 0xE0000000
TYPE_NAMES = {
    SWIZZLED: "swizzled",
    CUBE: "cube",
    LINEAR: "linear",
    TILED: "tiled",
    SWIZZLED_ARBITRARY: "swizzled (arbitrary size)",
    LINEAR_STRIDED: "linear strided",
    CUBE_ARBITRARY: "cube (arbitrary size)",
}
MORTON_TYPES = (SWIZZLED, CUBE, SWIZZLED_ARBITRARY, CUBE_ARBITRARY)
CUBE_TYPES = (CUBE, CUBE_ARBITRARY)
LINEAR_TYPES = (LINEAR, LINEAR_STRIDED)
LINEAR_ROW_ALIGNMENT = 8  # texels
TILE_SIZE = 32  # texels per tile side

ORDERS4 = ("ABGR", "ARGB", "RGBA", "BGRA", "1BGR", "1RGB", "RGB1", "BGR1")
ORDERS3 = ("BGR", "RGB")
ORDERS2 = ("GR", "00GR", "GRRR", "RGGG", "GRGR", "00RG")
ORDERS1 = ("R", "000R", "111R", "RRRR", "0RRR", "1RRR", "R000", "R111")
BLOCK_ORDERS = ("ABGR", "1BGR")  # the only orders block formats use


@dataclass(frozen=True)
class Base:
    name: str
    bits: int  # per texel
    kind: str  # "texel", "palette", "bc", "pvrtc" or "pvrtc2" (not decoded)
    fields: tuple[int, ...] = ()  # texel formats: field widths from the most significant bit, as named
    block: tuple[int, int] = (1, 1)  # texels per storage unit: (width, height)
    orders: tuple[str, ...] = ORDERS4

    @property
    def unit_bits(self) -> int:
        return self.bits * self.block[0] * self.block[1]


U8, U4U4U4U4, U1U5U5U5, U5U6U5, U8U8, U8U8U8U8, U8U8U8 = 0x00, 0x02, 0x04, 0x05, 0x07, 0x0C, 0x98
PVRT2BPP, PVRT4BPP, PVRTII2BPP, PVRTII4BPP = 0x80, 0x81, 0x82, 0x83
UBC1, UBC2, UBC3, P4, P8 = 0x85, 0x86, 0x87, 0x94, 0x95
BASES = {
    U8: Base("U8", 8, "texel", (8,), orders=ORDERS1),
    U4U4U4U4: Base("U4U4U4U4", 16, "texel", (4, 4, 4, 4)),
    U1U5U5U5: Base("U1U5U5U5", 16, "texel", (1, 5, 5, 5)),
    U5U6U5: Base("U5U6U5", 16, "texel", (5, 6, 5), orders=ORDERS3),
    U8U8: Base("U8U8", 16, "texel", (8, 8), orders=ORDERS2),
    U8U8U8U8: Base("U8U8U8U8", 32, "texel", (8, 8, 8, 8)),
    U8U8U8: Base("U8U8U8", 24, "texel", (8, 8, 8), orders=ORDERS3),
    P4: Base("P4", 4, "palette"),
    P8: Base("P8", 8, "palette"),
    UBC1: Base("UBC1", 4, "bc", block=(4, 4)),
    UBC2: Base("UBC2", 8, "bc", block=(4, 4)),
    UBC3: Base("UBC3", 8, "bc", block=(4, 4)),
    PVRT2BPP: Base("PVRT2BPP", 2, "pvrtc", block=(8, 4)),
    PVRT4BPP: Base("PVRT4BPP", 4, "pvrtc", block=(4, 4)),
    PVRTII2BPP: Base("PVRTII2BPP", 2, "pvrtc2", block=(8, 4)),
    PVRTII4BPP: Base("PVRTII4BPP", 4, "pvrtc2", block=(4, 4)),
}
DXT_NAMES = {UBC1: "DXT1", UBC2: "DXT3", UBC3: "DXT5"}
PALETTE_SIZES = {P4: 16, P8: 256}  # entries
PALETTE_ENTRY_BYTES = 4


def base_code(fmt: int) -> int:
    return (fmt & BASE_MASK) >> 24


def order_code(fmt: int) -> int:
    return (fmt >> ORDER_SHIFT) & ORDER_MASK


def make_format(base: int, order: int = 0) -> int:
    return (base << 24) | (order << ORDER_SHIFT)


def format_name(fmt: int) -> str:
    """``U8U8U8U8_ABGR``; unknown bases and orders by number."""
    base = BASES.get(base_code(fmt))
    if base is None:
        return f"base 0x{base_code(fmt):02X} (format 0x{fmt:08X})"
    order = order_code(fmt)
    return f"{base.name}_{base.orders[order] if order < len(base.orders) else f'order {order}'}"


def type_name(texture_type: int) -> str:
    return TYPE_NAMES.get(texture_type, f"type 0x{texture_type:08X}")


def supported_base(fmt: int, texture_type: int, filename: str, offset: int) -> Base:
    """The base of ``fmt`` if this module decodes it in ``texture_type``; FormatError otherwise."""
    base = BASES.get(base_code(fmt))
    if base is None:
        raise FormatError(filename, offset, f"texture format {format_name(fmt)} is not supported")
    if base.kind == "pvrtc2":
        raise FormatError(filename, offset, f"{base.name} (PVRTC2) textures are unsupported")
    order = order_code(fmt)
    allowed = BLOCK_ORDERS if base.kind in ("bc", "pvrtc") else base.orders
    if order >= len(base.orders) or base.orders[order] not in allowed:
        raise FormatError(filename, offset, f"component order {order} is not supported for {base.name}")
    if texture_type not in TYPE_NAMES:
        raise FormatError(filename, offset, f"unknown texture type 0x{texture_type:08X}")
    return base


def next_power_of_two(value: int) -> int:
    return 1 << max(value - 1, 0).bit_length()


def _align(value: int, boundary: int) -> int:
    return -(-value // boundary) * boundary


def units(base: Base, width: int, height: int) -> tuple[int, int]:
    """Storage units across and down a ``width × height`` level."""
    return -(-width // base.block[0]), -(-height // base.block[1])


def level_size(base: Base, texture_type: int, width: int, height: int, level: int, mipmapped: bool) -> int:
    """Bytes of mip ``level`` of a ``width × height`` texture.

    Levels are laid out from the power-of-two-rounded size halved per level (except unmipped linear
    textures), aligned to the unit size, to 8 texels of width for linear and to 32×32 for tiled.
    """
    if texture_type in LINEAR_TYPES and not mipmapped:
        layout_width, layout_height = width, height
    else:
        layout_width = max(next_power_of_two(width) >> level, 1)
        layout_height = max(next_power_of_two(height) >> level, 1)
    align_width, align_height = base.block
    if texture_type in LINEAR_TYPES:
        align_width = max(align_width, LINEAR_ROW_ALIGNMENT)
    elif texture_type == TILED:
        align_width, align_height = max(align_width, TILE_SIZE), max(align_height, TILE_SIZE)
    texels = _align(layout_width, align_width) * _align(layout_height, align_height)
    return (texels * base.bits + 7) // 8


# -- layouts -----------------------------------------------------------------------------------------


def _spread_bits(values: np.ndarray) -> np.ndarray:
    """Put bit i of each 16-bit value at bit 2i."""
    v = values.astype(np.int64) & 0xFFFF
    v = (v | (v << 8)) & 0x00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F
    v = (v | (v << 2)) & 0x33333333
    return (v | (v << 1)) & 0x55555555


def morton_offsets(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Morton order over the power-of-two grid enclosing ``width × height`` units, as two parts.

    The storage index of unit (x, y) is ``down[y] + across[x]``: inside each square of the grid the
    bits interleave with y in bit 0; the bits above count whole squares along the longer axis.
    """
    side = min(next_power_of_two(width), next_power_of_two(height))
    shift = side.bit_length() - 1
    x, y = np.arange(width, dtype=np.int64), np.arange(height, dtype=np.int64)
    across = (_spread_bits(x & (side - 1)) << 1) | ((x >> shift) << (2 * shift))
    down = _spread_bits(y & (side - 1)) | ((y >> shift) << (2 * shift))
    return down, across


def storage_offsets(
    base: Base, texture_type: int, width: int, height: int, stride: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Where each unit of a level is stored, as (per unit row, per unit column) parts that add up.

    Every layout separates this way, so the extent of a level is known (``down[-1] + across[-1]``)
    before a full index table is built. ``stride`` is the row length in bytes of linear strided
    textures (GXT does not store it).
    """
    across_count, down_count = units(base, width, height)
    rows, columns = np.arange(down_count, dtype=np.int64), np.arange(across_count, dtype=np.int64)
    if texture_type in MORTON_TYPES:
        return morton_offsets(across_count, down_count)
    if texture_type == LINEAR:
        row_units = _align(width, max(base.block[0], LINEAR_ROW_ALIGNMENT)) // base.block[0]
        return rows * row_units, columns
    if texture_type == LINEAR_STRIDED:
        return rows * (stride * 8 // base.unit_bits), columns
    # Tiled: 32×32-texel tiles in rows, units row-major inside a tile (block formats: 8×8 blocks per
    # tile, by analogy; no tiled sample has been checked).
    tile_across, tile_down = TILE_SIZE // base.block[0], TILE_SIZE // base.block[1]
    tile_units = tile_across * tile_down
    tiles_per_row = -(-across_count // tile_across)
    down = (rows // tile_down) * tiles_per_row * tile_units + (rows % tile_down) * tile_across
    return down, (columns // tile_across) * tile_units + columns % tile_across


def storage_indices(down: np.ndarray, across: np.ndarray) -> np.ndarray:
    """The (unit rows, unit columns) table of storage indices from ``storage_offsets``."""
    return down[:, None] + across[None, :]


def unit_count(down: np.ndarray, across: np.ndarray) -> int:
    """Units a level spans in storage (the last stored unit + 1)."""
    return int(down[-1] + across[-1]) + 1


def stride_units_ok(base: Base, width: int, stride: int) -> bool:
    """Whether a strided row of ``stride`` bytes holds a row of ``width`` texels."""
    return stride * 8 // base.unit_bits >= units(base, width, 1)[0]


def _unit_bytes(base: Base) -> int:
    return base.unit_bits // 8


# -- texel formats -----------------------------------------------------------------------------------


def _fields(base: Base, order: str) -> list[tuple[str, int]]:
    """(stored component, bit width) from the most significant bit down."""
    if len(base.fields) == 1:
        return [("R", 8)]
    if len(base.fields) == 2:
        return [("G", 8), ("R", 8)]  # the high byte is "G"
    alpha_first = order[0] in "A1" if len(order) == 4 else True
    widths = base.fields if alpha_first else base.fields[::-1]
    return list(zip(order, widths, strict=True))


def _outputs(base: Base, order: str) -> tuple:
    """The source of each output R, G, B, A: a stored component letter, or a constant 0 / 255."""
    if len(base.fields) >= 3:
        return ("R", "G", "B", "A" if "A" in order else 255)
    # One- and two-component orders name outputs A, B, G, R; missing ones are blue 0 and alpha 1.
    spec = order if len(order) == 4 else "1" + "0" * (3 - len(order)) + order
    constants = {"0": 0, "1": 255}
    return tuple(constants.get(letter, letter) for letter in reversed(spec))


def _texel_rgba(words: np.ndarray, base: Base, order: str) -> np.ndarray:
    """Little-endian texel words → (..., 4) uint8 RGBA."""
    stored = {}
    shift = base.bits
    for letter, width in _fields(base, order):
        shift -= width
        stored[letter] = expand_bits((words >> shift) & ((1 << width) - 1), width)
    rgba = np.empty(words.shape + (4,), np.uint8)
    for channel, source in enumerate(_outputs(base, order)):
        rgba[..., channel] = stored[source] if isinstance(source, str) else source
    return rgba


def _texel_words(rgba: np.ndarray, base: Base, order: str) -> np.ndarray:
    """(..., 4) uint8 RGBA → texel words; a stored component takes the mean of the outputs it feeds."""
    outputs = _outputs(base, order)
    words = np.zeros(rgba.shape[:-1], np.uint32)
    for letter, width in _fields(base, order):
        channels = [c for c, source in enumerate(outputs) if source == letter]
        if channels:
            total = rgba[..., channels].astype(np.uint16).sum(axis=-1)
            value = quantize_bits(((total + len(channels) // 2) // len(channels)).astype(np.uint8), width)
        else:  # a "1" field the hardware ignores
            value = np.full(rgba.shape[:-1], (1 << width) - 1, np.uint8)
        words = (words << width) | value.astype(np.uint32)
    return words


def _bytes_to_words(raw: np.ndarray) -> np.ndarray:
    """(..., n) little-endian bytes → uint32 words."""
    words = np.zeros(raw.shape[:-1], np.uint32)
    for i in range(raw.shape[-1]):
        words |= raw[..., i].astype(np.uint32) << (8 * i)
    return words


def _words_to_bytes(words: np.ndarray, count: int) -> np.ndarray:
    return np.stack([(words >> (8 * i)) & 0xFF for i in range(count)], axis=-1).astype(np.uint8)


def decode_palette(raw: bytes, fmt: int) -> np.ndarray:
    """u32 palette entries in the order of ``fmt`` → (N, 4) uint8 RGBA."""
    words = np.frombuffer(raw, "<u4", len(raw) // PALETTE_ENTRY_BYTES)
    entry = BASES[U8U8U8U8]
    return _texel_rgba(words, entry, entry.orders[order_code(fmt)])


def encode_palette(colours: np.ndarray, fmt: int) -> bytes:
    entry = BASES[U8U8U8U8]
    return _texel_words(colours, entry, entry.orders[order_code(fmt)]).astype("<u4").tobytes()


def _order(fmt: int, base: Base) -> str:
    return base.orders[order_code(fmt)]


def _need(data: bytes, size: int, what: str, filename: str, offset: int) -> None:
    if len(data) < size:
        raise FormatError(
            filename, offset, f"expected {what} ({size} bytes) but only {len(data)} bytes remain"
        )


# -- decode ------------------------------------------------------------------------------------------


def decode(
    data: bytes,
    fmt: int,
    texture_type: int,
    width: int,
    height: int,
    *,
    palette: bytes | None = None,
    stride: int | None = None,
    filename: str = "<bytes>",
    offset: int = 0,
) -> np.ndarray:
    """The level stored at the start of ``data`` → (height, width, 4) uint8 RGBA, top row first.

    ``palette`` holds the raw u32 entries of P4/P8 textures, ``stride`` the row bytes of linear strided
    ones; ``offset`` is where ``data`` starts in its file, for error messages. Cube maps give face 0.
    """
    base = supported_base(fmt, texture_type, filename, offset)
    if width < 1 or height < 1:
        raise FormatError(filename, offset, f"cannot decode an empty {width}×{height} texture")
    what = f"{width}×{height} {format_name(fmt)} texels"
    if base.kind == "pvrtc":
        rgba = _decode_pvrtc(data, base, width, height, what, filename, offset)
    else:
        if texture_type == LINEAR_STRIDED and (stride is None or not stride_units_ok(base, width, stride)):
            raise FormatError(filename, offset, f"a row stride of {stride} bytes cannot hold {what}")
        offsets = storage_offsets(base, texture_type, width, height, stride)
        count = unit_count(*offsets)
        _need(data, (count * base.unit_bits + 7) // 8, what, filename, offset)
        indices = storage_indices(*offsets)
        if base.kind == "palette":
            rgba = _decode_indexed(data, fmt, count, indices, palette, filename, offset)
        else:
            unit_bytes = _unit_bytes(base)
            raw = np.frombuffer(data, np.uint8, count * unit_bytes).reshape(count, unit_bytes)[indices]
            if base.kind == "bc":
                rgba = dds.decode_blocks(DXT_NAMES[base_code(fmt)], raw.tobytes(), width, height, filename)
            else:
                rgba = _texel_rgba(_bytes_to_words(raw), base, _order(fmt, base))
    if base.kind in ("bc", "pvrtc") and _order(fmt, base) == "1BGR":
        rgba[..., 3] = 255
    return rgba


def _decode_pvrtc(
    data: bytes, base: Base, width: int, height: int, what: str, filename: str, offset: int
) -> np.ndarray:
    # The decoder needs the whole power-of-two word grid: edge texels blend with the opposite edge.
    across, down = units(base, width, height)
    grid_width, grid_height = next_power_of_two(across), next_power_of_two(down)
    count = grid_width * grid_height
    _need(data, count * 8, what, filename, offset)
    indices = storage_indices(*morton_offsets(grid_width, grid_height))
    words = np.frombuffer(data, "<u4", count * 2).reshape(count, 2)[indices]
    rgba = pvrtc.decode(words[..., 0], words[..., 1], two_bpp=base.block[0] == 8)
    return np.ascontiguousarray(rgba[:height, :width])


def _decode_indexed(
    data: bytes, fmt: int, count: int, indices: np.ndarray, palette: bytes | None, filename: str, offset: int
) -> np.ndarray:
    entries = PALETTE_SIZES[base_code(fmt)]
    if palette is None or len(palette) != entries * PALETTE_ENTRY_BYTES:
        raise FormatError(filename, offset, f"{format_name(fmt)} texture without its {entries}-entry palette")
    if base_code(fmt) == P4:
        raw = np.frombuffer(data, np.uint8, (count + 1) // 2)
        values = np.stack([raw & 15, raw >> 4], axis=-1).reshape(-1)  # low nibble first
    else:
        values = np.frombuffer(data, np.uint8, count)
    return decode_palette(palette, fmt)[values[indices]]


# -- encode ------------------------------------------------------------------------------------------

NEAREST_CHUNK = 4096  # colours compared with the palette at once (bounds the distance matrix)


def encode(
    pixels: np.ndarray,
    fmt: int,
    texture_type: int,
    size: int,
    *,
    palette: np.ndarray | None = None,
    stride: int | None = None,
) -> bytes:
    """An (H, W, 3|4) uint8 image → ``size`` bytes holding it as one level of ``fmt`` in ``texture_type``.

    P4/P8 take ``palette``, the (N, 4) RGBA entries to index (see ``quantize``); each texel gets the
    nearest entry. Units outside the image (power-of-two padding, row padding) are zero.
    """
    base = BASES.get(base_code(fmt))
    if base is None or base.kind not in ("texel", "palette", "bc"):
        raise ValueError(f"cannot encode texture format {format_name(fmt)}")
    rgba = as_rgba(pixels)
    if base.kind != "texel" and "A" not in _order(fmt, base):  # 1BGR and the like ignore alpha
        rgba = _opaque(rgba)
    height, width = rgba.shape[:2]
    offsets = storage_offsets(base, texture_type, width, height, stride)
    if unit_count(*offsets) * base.unit_bits > size * 8:
        raise ValueError(f"{size} bytes cannot hold a {width}×{height} {format_name(fmt)} level")
    indices = storage_indices(*offsets)
    if base.kind == "palette":
        values = nearest_entries(rgba, palette).astype(np.uint8)
        if base_code(fmt) == P4:
            nibbles = np.zeros(size * 2, np.uint8)
            nibbles[indices] = values
            return (nibbles[0::2] | (nibbles[1::2] << 4)).tobytes()
        out = np.zeros(size, np.uint8)
        out[indices] = values
        return out.tobytes()
    unit_bytes = _unit_bytes(base)
    if base.kind == "bc":
        stored = np.frombuffer(dds.encode_blocks(DXT_NAMES[base_code(fmt)], rgba), np.uint8)
        stored = stored.reshape(indices.shape + (unit_bytes,))
    else:
        stored = _words_to_bytes(_texel_words(rgba, base, _order(fmt, base)), unit_bytes)
    out = np.zeros((size // unit_bytes, unit_bytes), np.uint8)
    out[indices] = stored
    return out.tobytes()


def _opaque(rgba: np.ndarray) -> np.ndarray:
    out = rgba.copy()
    out[..., 3] = 255
    return out


def quantize(pixels: np.ndarray, fmt: int) -> np.ndarray:
    """The palette of a P4/P8 ``fmt`` for ``pixels``: (16 | 256, 4) uint8 RGBA entries.

    The image's distinct colours when they fit (so the texture is lossless), otherwise a weighted
    median-cut reduction. Orders with a "1" field keep alpha opaque.
    """
    capacity = PALETTE_SIZES[base_code(fmt)]
    rgba = as_rgba(pixels)
    if "A" not in ORDERS4[order_code(fmt)]:
        rgba = _opaque(rgba)
    keys = np.ascontiguousarray(rgba).view(np.uint32).reshape(-1)
    unique, counts = np.unique(keys, return_counts=True)
    colours = unique.view(np.uint8).reshape(-1, 4)
    palette = np.zeros((capacity, 4), np.uint8)
    if len(unique) <= capacity:
        palette[: len(unique)] = colours
        return palette
    values, weights = colours.astype(np.float64), counts.astype(np.float64)
    labels = gx.median_cut(values, weights, capacity)
    box_weight = np.maximum(np.bincount(labels, weights, capacity), 1)
    for channel in range(4):
        palette[:, channel] = np.rint(
            np.bincount(labels, values[:, channel] * weights, capacity) / box_weight
        )
    return palette


def nearest_entries(pixels: np.ndarray, palette: np.ndarray) -> np.ndarray:
    """Index of the nearest palette entry (RGBA distance) for every texel, shape (H, W)."""
    rgba = np.ascontiguousarray(pixels)
    keys = rgba.view(np.uint32)[..., 0]
    unique, inverse = np.unique(keys, return_inverse=True)
    colours = unique.view(np.uint8).reshape(-1, 4).astype(np.int32)
    entries = np.asarray(palette, np.int32)
    choice = np.empty(len(unique), np.intp)
    for start in range(0, len(unique), NEAREST_CHUNK):
        part = colours[start : start + NEAREST_CHUNK]
        distance = ((part[:, None, :] - entries[None, :, :]) ** 2).sum(axis=2)
        choice[start : start + NEAREST_CHUNK] = distance.argmin(axis=1)
    return choice[inverse.reshape(-1)].reshape(keys.shape)
