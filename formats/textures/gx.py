"""GameCube GX texel formats (big-endian, tiled), used by TPL files and J3D/BTI textures.

Images are stored as tiles in row-major order, texels row-major inside a tile,
the image padded to whole tiles. Decoding turns a texel stream (in file order)
into an (H, W, 4) uint8 RGBA image; encoding does the reverse, padding the
image by repeating its last row and column. Palette formats (C4, C8, C14X2)
index 16-bit palette entries in one of the TLUT formats.
"""

from __future__ import annotations

import heapq

import numpy as np

from ..errors import FormatError
from . import bc1
from .raster import as_rgba, check_texels, expand_bits, pad_to_multiple, quantize_bits

I4, I8, IA4, IA8, RGB565, RGB5A3, RGBA8 = 0, 1, 2, 3, 4, 5, 6
C4, C8, C14X2 = 8, 9, 10
CMPR = 14
NAMES = {
    I4: "I4",
    I8: "I8",
    IA4: "IA4",
    IA8: "IA8",
    RGB565: "RGB565",
    RGB5A3: "RGB5A3",
    RGBA8: "RGBA8",
    C4: "C4",
    C8: "C8",
    C14X2: "C14X2",
    CMPR: "CMPR",
}
# Tile width and height in texels; every tile is 32 bytes except RGBA8's 64.
TILES = {
    I4: (8, 8),
    I8: (8, 4),
    IA4: (8, 4),
    IA8: (4, 4),
    RGB565: (4, 4),
    RGB5A3: (4, 4),
    RGBA8: (4, 4),
    C4: (8, 8),
    C8: (8, 4),
    C14X2: (4, 4),
    CMPR: (8, 8),
}
PALETTE_CAPACITY = {C4: 16, C8: 256, C14X2: 16384}

# Palette (TLUT) entry formats.
TLUT_IA8, TLUT_RGB565, TLUT_RGB5A3 = 0, 1, 2
TLUT_NAMES = {TLUT_IA8: "IA8", TLUT_RGB565: "RGB565", TLUT_RGB5A3: "RGB5A3"}


def tile_bytes(fmt: int) -> int:
    return 64 if fmt == RGBA8 else 32


def check_format(fmt: int, filename: str = "<bytes>", offset: int = 0) -> None:
    if fmt not in TILES:
        raise FormatError(
            filename, offset, f"unknown GX texture format {fmt}; expected one of {sorted(TILES)}"
        )


def data_size(fmt: int, width: int, height: int, filename: str = "<bytes>", offset: int = 0) -> int:
    """Bytes of one ``width × height`` image (whole tiles)."""
    check_format(fmt, filename, offset)
    tile_width, tile_height = TILES[fmt]
    return -(-width // tile_width) * -(-height // tile_height) * tile_bytes(fmt)


# -- 16-bit colours (texels and palette entries) ---------------------------------------------------


def _intensity(rgba: np.ndarray) -> np.ndarray:
    """Rec. 601 luma of (..., 4) uint8 colours; exact for grey."""
    r, g, b = (rgba[..., i].astype(np.uint32) for i in range(3))
    return ((r * 299 + g * 587 + b * 114 + 500) // 1000).astype(np.uint8)


def _grey(intensity: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    return np.stack([intensity, intensity, intensity, alpha], axis=-1)


def _decode_ia8(words: np.ndarray) -> np.ndarray:
    return _grey((words & 0xFF).astype(np.uint8), (words >> 8).astype(np.uint8))


def _encode_ia8(rgba: np.ndarray) -> np.ndarray:
    return (rgba[..., 3].astype(np.uint16) << 8) | _intensity(rgba)


def _decode_rgb565(words: np.ndarray) -> np.ndarray:
    rgb = bc1.rgb565_to_rgb(words)
    return np.concatenate([rgb, np.full(rgb.shape[:-1] + (1,), 255, np.uint8)], axis=-1)


def _encode_rgb565(rgba: np.ndarray) -> np.ndarray:
    return bc1.rgb_to_rgb565(rgba[..., :3])


def _decode_rgb5a3(words: np.ndarray) -> np.ndarray:
    opaque = (words & 0x8000) != 0

    def channel(shift5: int, shift4: int) -> np.ndarray:
        return np.where(
            opaque, expand_bits((words >> shift5) & 31, 5), expand_bits((words >> shift4) & 15, 4)
        )

    alpha = np.where(opaque, 255, expand_bits((words >> 12) & 7, 3)).astype(np.uint8)
    return np.stack([channel(10, 8), channel(5, 4), channel(0, 0), alpha], axis=-1)


def _encode_rgb5a3(rgba: np.ndarray) -> np.ndarray:
    alpha = quantize_bits(rgba[..., 3], 3).astype(np.uint16)
    rgb = rgba[..., :3]
    five, four = quantize_bits(rgb, 5).astype(np.uint16), quantize_bits(rgb, 4).astype(np.uint16)
    opaque_word = 0x8000 | (five[..., 0] << 10) | (five[..., 1] << 5) | five[..., 2]
    translucent_word = (alpha << 12) | (four[..., 0] << 8) | (four[..., 1] << 4) | four[..., 2]
    # Alpha 7 of the 4-bit form is opaque too: use it where it matches the colour better.
    error_five = np.abs(expand_bits(five, 5).astype(np.int16) - rgb).sum(axis=-1)
    error_four = np.abs(expand_bits(four, 4).astype(np.int16) - rgb).sum(axis=-1)
    opaque = (alpha == 7) & (error_five <= error_four)
    return np.where(opaque, opaque_word, translucent_word).astype(np.uint16)


# 16-bit colour codecs by TLUT format: (decode words → RGBA, encode RGBA → words).
COLOUR16 = {
    TLUT_IA8: (_decode_ia8, _encode_ia8),
    TLUT_RGB565: (_decode_rgb565, _encode_rgb565),
    TLUT_RGB5A3: (_decode_rgb5a3, _encode_rgb5a3),
}


def decode_palette(
    data: bytes, palette_format: int, filename: str = "<bytes>", offset: int = 0
) -> np.ndarray:
    """Big-endian 16-bit palette entries → (N, 4) uint8 RGBA."""
    if palette_format not in COLOUR16:
        raise FormatError(filename, offset, f"unknown palette format {palette_format}; expected 0, 1 or 2")
    words = np.frombuffer(data, ">u2", len(data) // 2)
    return COLOUR16[palette_format][0](words)


# -- tiling ----------------------------------------------------------------------------------------


def _untile(texels: np.ndarray, fmt: int, width: int, height: int) -> np.ndarray:
    """A texel stream in file order, (tiles · tile texels, C) → the (height, width, C) image."""
    tile_width, tile_height = TILES[fmt]
    columns, rows = -(-width // tile_width), -(-height // tile_height)
    channels = texels.shape[-1]
    image = texels.reshape(rows, columns, tile_height, tile_width, channels).transpose(0, 2, 1, 3, 4)
    return image.reshape(rows * tile_height, columns * tile_width, channels)[:height, :width]


def _tile(rgba: np.ndarray, fmt: int) -> np.ndarray:
    """An image → its texel stream in file order, (tiles · tile texels, 4), padded to whole tiles."""
    tile_width, tile_height = TILES[fmt]
    padded = pad_to_multiple(rgba, tile_width, tile_height)
    rows, columns = padded.shape[0] // tile_height, padded.shape[1] // tile_width
    tiles = padded.reshape(rows, tile_height, columns, tile_width, 4).transpose(0, 2, 1, 3, 4)
    return tiles.reshape(-1, 4)


def _nibbles(raw: np.ndarray) -> np.ndarray:
    """Bytes → 4-bit values, high nibble first."""
    return np.stack([raw >> 4, raw & 15], axis=-1).reshape(-1)


def _pack_nibbles(values: np.ndarray) -> np.ndarray:
    return ((values[0::2] << 4) | values[1::2]).astype(np.uint8)


# CMPR tiles hold four 4×4 sub-blocks: top-left, top-right, bottom-left, bottom-right.
CMPR_BLOCK = np.dtype([("c0", ">u2"), ("c1", ">u2"), ("rows", "u1", 4)])
CMPR_SHIFTS = np.array([6, 4, 2, 0], np.uint8)  # the leftmost texel is in the most significant bits


def _decode_cmpr(raw: bytes, offset: int, count: int) -> np.ndarray:
    blocks = np.frombuffer(raw, CMPR_BLOCK, count, offset)
    # Blend weights follow the hardware (5/8 and 3/8, halves, transparent average), not thirds.
    colours = bc1.palette(blocks["c0"], blocks["c1"], hardware=True)
    indices = ((blocks["rows"][:, :, None] >> CMPR_SHIFTS) & 3).reshape(-1, 16).astype(np.intp)
    texels = np.take_along_axis(colours, indices[:, :, None], axis=1)
    # (tiles, sub-row, sub-column, row, column) → tile-internal row-major order
    tiles = texels.reshape(-1, 2, 2, 4, 4, 4).transpose(0, 1, 3, 2, 4, 5)
    return tiles.reshape(-1, 4)


def _encode_cmpr(stream: np.ndarray) -> bytes:
    sub_blocks = stream.reshape(-1, 2, 4, 2, 4, 4).transpose(0, 1, 3, 2, 4, 5).reshape(-1, 16, 4)
    c0, c1, indices = bc1.compress(sub_blocks, hardware=True)
    blocks = np.zeros(len(sub_blocks), CMPR_BLOCK)
    blocks["c0"], blocks["c1"] = c0, c1
    blocks["rows"] = (indices.reshape(-1, 4, 4) << CMPR_SHIFTS).sum(axis=2, dtype=np.uint8)
    return blocks.tobytes()


# -- decode ----------------------------------------------------------------------------------------


def decode(
    fmt: int,
    data: bytes,
    width: int,
    height: int,
    palette: bytes | None = None,
    palette_format: int | None = None,
    filename: str = "<bytes>",
    offset: int = 0,
) -> np.ndarray:
    """The GX image at ``offset`` → (H, W, 4) uint8 RGBA; ``palette`` holds the raw palette entries."""
    check_format(fmt, filename, offset)
    size = check_texels(data, NAMES[fmt], width, height, lambda w, h: data_size(fmt, w, h), filename, offset)
    raw = np.frombuffer(data, np.uint8, size, offset)
    if fmt == CMPR:
        return np.ascontiguousarray(_untile(_decode_cmpr(data, offset, size // 8), fmt, width, height))
    if fmt in PALETTE_CAPACITY:
        if palette is None or palette_format is None:
            raise FormatError(filename, offset, f"{NAMES[fmt]} texture without a palette")
        if fmt == C14X2:
            indices = np.frombuffer(data, ">u2", size // 2, offset) & 0x3FFF
        else:
            indices = _nibbles(raw) if fmt == C4 else raw
        indices = _untile(indices[:, None], fmt, width, height)[:, :, 0]
        colours = decode_palette(palette, palette_format, filename, offset)
        if indices.size and indices.max() >= len(colours):
            raise FormatError(
                filename, offset, f"palette index {indices.max()} beyond the {len(colours)} palette entries"
            )
        return colours[indices]
    if fmt == I4:
        intensity = expand_bits(_nibbles(raw), 4)
        texels = _grey(intensity, intensity)
    elif fmt == I8:
        texels = _grey(raw, raw)
    elif fmt == IA4:
        texels = _grey(expand_bits(raw & 15, 4), expand_bits(raw >> 4, 4))
    elif fmt == IA8:
        texels = _grey(raw[1::2], raw[0::2])
    elif fmt == RGB565:
        texels = _decode_rgb565(np.frombuffer(data, ">u2", size // 2, offset))
    elif fmt == RGB5A3:
        texels = _decode_rgb5a3(np.frombuffer(data, ">u2", size // 2, offset))
    else:  # RGBA8: per tile 16 (A, R) pairs, then 16 (G, B) pairs
        halves = raw.reshape(-1, 2, 16, 2)
        texels = np.stack(
            [halves[:, 0, :, 1], halves[:, 1, :, 0], halves[:, 1, :, 1], halves[:, 0, :, 0]], -1
        )
        texels = texels.reshape(-1, 4)
    return np.ascontiguousarray(_untile(texels, fmt, width, height))


# -- encode ----------------------------------------------------------------------------------------


def encode(fmt: int, pixels: np.ndarray, palette_format: int | None = None) -> tuple[bytes, bytes | None]:
    """An (H, W, 3|4) uint8 image → (texel bytes, palette bytes or None).

    Palette formats take ``palette_format`` (default RGB5A3); the palette holds the
    image's distinct colours when they fit, otherwise a median-cut reduction.
    """
    if fmt not in TILES:
        raise ValueError(f"unknown GX texture format {fmt}; expected one of {sorted(TILES)}")
    stream = _tile(as_rgba(pixels), fmt)
    if fmt == CMPR:
        return _encode_cmpr(stream), None
    if fmt in PALETTE_CAPACITY:
        palette_format = TLUT_RGB5A3 if palette_format is None else palette_format
        if palette_format not in COLOUR16:
            raise ValueError(f"unknown palette format {palette_format}; expected 0, 1 or 2")
        indices, palette = _build_palette(stream, palette_format, PALETTE_CAPACITY[fmt])
        if fmt == C4:
            texel_bytes = _pack_nibbles(indices.astype(np.uint8)).tobytes()
        elif fmt == C8:
            texel_bytes = indices.astype(np.uint8).tobytes()
        else:
            texel_bytes = indices.astype(">u2").tobytes()
        return texel_bytes, palette.astype(">u2").tobytes()
    if fmt == I4:
        out = _pack_nibbles(quantize_bits(_intensity(stream), 4))
    elif fmt == I8:
        out = _intensity(stream)
    elif fmt == IA4:
        out = (quantize_bits(stream[:, 3], 4) << 4) | quantize_bits(_intensity(stream), 4)
    elif fmt == IA8:
        out = np.stack([stream[:, 3], _intensity(stream)], axis=-1)
    elif fmt == RGB565:
        out = _encode_rgb565(stream).astype(">u2")
    elif fmt == RGB5A3:
        out = _encode_rgb5a3(stream).astype(">u2")
    else:
        tiles = stream.reshape(-1, 16, 4)
        out = np.stack([tiles[:, :, [3, 0]], tiles[:, :, [1, 2]]], axis=1)
    return np.ascontiguousarray(out).tobytes(), None


def _build_palette(stream: np.ndarray, palette_format: int, capacity: int) -> tuple[np.ndarray, np.ndarray]:
    """Texels → (palette index per texel, palette entry words)."""
    decode_words, encode_words = COLOUR16[palette_format]
    codes, inverse, counts = np.unique(encode_words(stream), return_inverse=True, return_counts=True)
    if len(codes) <= capacity:
        return inverse.reshape(-1), codes
    colours = decode_words(codes).astype(np.float64)
    labels = median_cut(colours, counts.astype(np.float64), capacity)
    box_weight = np.bincount(labels, counts, capacity)
    means = (
        np.stack([np.bincount(labels, colours[:, c] * counts, capacity) for c in range(4)], axis=1)
        / np.maximum(box_weight, 1)[:, None]
    )
    palette = encode_words(np.clip(np.rint(means), 0, 255).astype(np.uint8))
    return labels[inverse.reshape(-1)], palette


def median_cut(colours: np.ndarray, weights: np.ndarray, boxes: int) -> np.ndarray:
    """Split the weighted colours into ``boxes`` groups (one split per loop turn) → group per colour."""
    labels = np.zeros(len(colours), np.intp)

    def box(label: int, members: np.ndarray) -> tuple:
        """Heap entry: boxes with the widest weighted spread split first."""
        spread = np.ptp(colours[members], axis=0)
        return (-float(spread.max()) * float(weights[members].sum()), int(spread.argmax()), label, members)

    heap = [box(0, np.arange(len(colours)))]
    for new_label in range(1, boxes):
        score, channel, label, members = heapq.heappop(heap)
        if score == 0:  # every box holds a single colour
            break
        ordered = members[np.argsort(colours[members, channel], kind="stable")]
        cumulative = np.cumsum(weights[ordered])
        split = int(np.clip(np.searchsorted(cumulative, cumulative[-1] / 2), 1, len(ordered) - 1))
        low, high = ordered[:split], ordered[split:]
        labels[high] = new_label
        heapq.heappush(heap, box(label, low))
        heapq.heappush(heap, box(new_label, high))
    return labels
