"""Uncompressed little-endian raster formats (the texel formats of Toshi TML textures).

Rows run top to bottom, texels left to right, no row padding. Decoded images are
``(height, width, 4)`` uint8 RGBA arrays. The byte order of RGBA8888/RGB888 and
the bit layout of the 16-bit formats are not settled by any public source; each
is one constant below so that it is easy to change.
"""

from __future__ import annotations

import numpy as np

from ..errors import FormatError

# Byte formats: the channel stored in each byte, in memory order.
RGBA8888_CHANNELS = "RGBA"
RGB888_CHANNELS = "RGB"
# 16-bit little-endian formats: (channel, bit count) from the least significant bit upward.
ARGB1555_FIELDS = (("R", 5), ("G", 5), ("B", 5), ("A", 1))
ARGB4444_FIELDS = (("R", 4), ("G", 4), ("B", 4), ("A", 4))

BYTE_FORMATS = {"RGBA8888": RGBA8888_CHANNELS, "RGB888": RGB888_CHANNELS}
PACKED_FORMATS = {"ARGB1555": ARGB1555_FIELDS, "ARGB4444": ARGB4444_FIELDS}
FORMATS = (*BYTE_FORMATS, *PACKED_FORMATS)
CHANNEL_INDEX = {"R": 0, "G": 1, "B": 2, "A": 3}


def _replicated(value: int, bits: int) -> int:
    """An n-bit value widened to 8 bits by repeating its bits (31 → 255, not 248)."""
    out, filled = 0, 0
    while filled < 8:
        out |= (value << (8 - bits - filled)) if filled + bits <= 8 else value >> (filled + bits - 8)
        filled += bits
    return out


# Lookup tables per bit count: n-bit value → 8 bits, and 8 bits → nearest n-bit value.
EXPAND = {bits: np.array([_replicated(v, bits) for v in range(1 << bits)], np.uint8) for bits in range(1, 9)}
QUANTIZE = {
    bits: np.abs(table.astype(np.int16)[None, :] - np.arange(256, dtype=np.int16)[:, None])
    .argmin(axis=1)
    .astype(np.uint8)
    for bits, table in EXPAND.items()
}


def expand_bits(values: np.ndarray, bits: int) -> np.ndarray:
    """n-bit channel values → uint8 by bit replication."""
    return EXPAND[bits][values]


def quantize_bits(values: np.ndarray, bits: int) -> np.ndarray:
    """uint8 channel values → the nearest n-bit values (inverse of ``expand_bits`` on its range)."""
    return QUANTIZE[bits][values]


def as_rgba(pixels: np.ndarray) -> np.ndarray:
    """``pixels`` as a contiguous ``(H, W, 4)`` uint8 array; RGB input gets opaque alpha."""
    array = np.asarray(pixels)
    if array.ndim != 3 or array.shape[2] not in (3, 4):
        raise ValueError(f"expected an (H, W, 3|4) image, got shape {array.shape}")
    if array.dtype != np.uint8:
        raise ValueError(f"expected uint8 pixels, got {array.dtype}")
    if array.shape[2] == 3:
        array = np.concatenate([array, np.full(array.shape[:2] + (1,), 255, np.uint8)], axis=2)
    return np.ascontiguousarray(array)


def pad_to_multiple(rgba: np.ndarray, tile_width: int, tile_height: int) -> np.ndarray:
    """``rgba`` grown to whole tiles by repeating its last row and column."""
    height, width = rgba.shape[:2]
    pad = ((0, -height % tile_height), (0, -width % tile_width), (0, 0))
    return np.pad(rgba, pad, mode="edge" if rgba.size else "constant")


def bytes_per_texel(fmt: str) -> int:
    if fmt in BYTE_FORMATS:
        return len(BYTE_FORMATS[fmt])
    if fmt in PACKED_FORMATS:
        return 2
    raise ValueError(f"unknown raster format {fmt!r}; expected one of {FORMATS}")


def data_size(fmt: str, width: int, height: int) -> int:
    return width * height * bytes_per_texel(fmt)


def check_texels(data: bytes, name: str, width: int, height: int, size_of, filename: str, offset: int) -> int:
    """The byte size ``size_of(width, height)`` of an image in format ``name``, checked to lie in ``data``."""
    if width < 0 or height < 0:
        raise FormatError(filename, offset, f"invalid image size {width}×{height}")
    size = size_of(width, height)
    if offset < 0 or len(data) - offset < size:
        raise FormatError(
            filename,
            offset,
            f"expected {name} texels for {width}×{height} ({size} bytes) "
            f"but only {max(len(data) - offset, 0)} bytes remain",
        )
    return size


def decode(
    fmt: str, data: bytes, width: int, height: int, filename: str = "<bytes>", offset: int = 0
) -> np.ndarray:
    """The ``width × height`` image stored at ``offset`` in ``data`` → (H, W, 4) uint8 RGBA."""
    if fmt not in FORMATS:
        raise FormatError(filename, offset, f"unknown raster format {fmt!r}; expected one of {FORMATS}")
    size = check_texels(data, fmt, width, height, lambda w, h: data_size(fmt, w, h), filename, offset)
    rgba = np.full((height * width, 4), 255, np.uint8)
    if fmt in BYTE_FORMATS:
        channels = BYTE_FORMATS[fmt]
        texels = np.frombuffer(data, np.uint8, size, offset).reshape(-1, len(channels))
        rgba[:, [CHANNEL_INDEX[c] for c in channels]] = texels
    else:
        words = np.frombuffer(data, "<u2", width * height, offset)
        shift = 0
        for channel, bits in PACKED_FORMATS[fmt]:
            rgba[:, CHANNEL_INDEX[channel]] = expand_bits((words >> shift) & ((1 << bits) - 1), bits)
            shift += bits
    return rgba.reshape(height, width, 4)


def encode(fmt: str, pixels: np.ndarray) -> bytes:
    """An (H, W, 3|4) uint8 image → texel bytes; channels are rounded to the nearest n-bit value."""
    rgba = as_rgba(pixels).reshape(-1, 4)
    if fmt in BYTE_FORMATS:
        return rgba[:, [CHANNEL_INDEX[c] for c in BYTE_FORMATS[fmt]]].tobytes()
    if fmt not in PACKED_FORMATS:
        raise ValueError(f"unknown raster format {fmt!r}; expected one of {FORMATS}")
    words = np.zeros(len(rgba), np.uint16)
    shift = 0
    for channel, bits in PACKED_FORMATS[fmt]:
        words |= quantize_bits(rgba[:, CHANNEL_INDEX[channel]], bits).astype(np.uint16) << shift
        shift += bits
    return words.astype("<u2").tobytes()
