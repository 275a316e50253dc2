"""PVRTC1 decoding (PowerVR texture compression, 2 and 4 bits per texel), as PS Vita PVRT textures use it.

A texture is a grid of 64-bit words, each covering 4×4 texels (4 bpp) or 8×4 texels (2 bpp): a u32 of
modulation bits, then a u32 colour word holding two endpoint colours, A in the low half and B in the
high half, and the modulation mode in bit 0. Both endpoint images are upscaled bilinearly with
wrap-around (samples at word centres), so every texel mixes the four nearest words; the texel's
modulation value then blends A and B in eighths. Arithmetic follows the integer rules of the widely
used reference decoders so that results are bit-exact with them.

The grid arrives here in row-major order; containers store it in Morton order and unswizzle first.
There is no encoder: good PVRTC compression needs an iterative optimiser.
"""

from __future__ import annotations

import numpy as np

STANDARD_WEIGHTS = np.array([0, 3, 5, 8], np.int16)
PUNCH_THROUGH_WEIGHTS = np.array([0, 4, 4, 8], np.int16)
PUNCH_THROUGH_INDEX = 2  # in punch-through mode this modulation value is fully transparent
# Bilinear weights of the (previous, own, next) word for each texel column (or row) of a word; they sum
# to the word's size because word centres sit between the middle texels.
NEIGHBOUR_WEIGHTS = {
    4: np.array([[2, 2, 0], [1, 3, 0], [0, 4, 0], [0, 3, 1]], np.int16),
    8: np.array(
        [[4, 4, 0], [3, 5, 0], [2, 6, 0], [1, 7, 0], [0, 8, 0], [0, 7, 1], [0, 6, 2], [0, 5, 3]], np.int16
    ),
}
WORD_HEIGHT = 4

# 2 bpp interpolated mode: texels with an even x + y store 2-bit values; the others are filled from
# their neighbours, vertically, horizontally or from all four, as flag bits of the word choose.
_POSITIONS = np.arange(32)
STORED_2BPP = (_POSITIONS % 8 + _POSITIONS // 8) % 2 == 0
STORED_POSITIONS_2BPP = np.flatnonzero(STORED_2BPP)
FILL_NONE, FILL_VERTICAL, FILL_HORIZONTAL, FILL_BOTH = 0, 1, 2, 3
FLAGGED_POSITION_2BPP = 20  # the stored texel (4, 2) gives up its low bit when bit 0 flags the fill direction


def word_size(two_bpp: bool) -> tuple[int, int]:
    """Texels covered by one word: (width, height)."""
    return (8 if two_bpp else 4), WORD_HEIGHT


def decode(modulation: np.ndarray, colour: np.ndarray, two_bpp: bool) -> np.ndarray:
    """A (GH, GW) grid of u32 modulation and colour words → (4·GH, 4·GW or 8·GW, 4) uint8 RGBA."""
    modulation = np.asarray(modulation, np.uint32)
    colour = np.asarray(colour, np.uint32)
    word_width = word_size(two_bpp)[0]
    # Channel planes first (A's red, green, blue, alpha, then B's): every operation runs on whole planes.
    endpoints = np.concatenate([_endpoints(colour & 0xFFFF, False), _endpoints(colour >> 16, True)])
    sums = _upscale(endpoints, word_width)
    if two_bpp:
        weights, transparent = _modulation_2bpp(modulation, colour), None
    else:
        weights, transparent = _modulation_4bpp(modulation, colour)
    # The weight tables sum to 16 (4 bpp) or 32 (2 bpp): scale 5-bit colour and 4-bit alpha sums to 8 bits.
    extra = 0 if word_width == 4 else 1
    rgba = np.empty(weights.shape + (4,), np.uint8)
    for channel in range(4):
        if channel == 3:
            a, b = ((sums[i] >> extra) + (sums[i] >> (4 + extra)) for i in (3, 7))
        else:
            a, b = ((sums[i] >> (1 + extra)) + (sums[i] >> (6 + extra)) for i in (channel, channel + 4))
        rgba[..., channel] = (a * (8 - weights) + b * weights) >> 3
    if transparent is not None:
        rgba[..., 3][transparent] = 0
    return rgba


def _endpoints(halves: np.ndarray, is_b: bool) -> np.ndarray:
    """16-bit endpoint fields → (4, ...) int16 planes: red, green and blue as 5 bits, alpha as 4 bits.

    Opaque endpoints (top bit set) are RGB 5-5-4 (A) or 5-5-5 (B); translucent ones carry 3 bits of
    alpha and RGB 4-4-3 (A) or 4-4-4 (B). Short fields widen by repeating their top bits.
    """
    h = halves.astype(np.int32)
    opaque = (h & 0x8000) != 0
    red = np.where(opaque, (h >> 10) & 0x1F, ((h >> 7) & 0x1E) | ((h >> 11) & 1))
    green = np.where(opaque, (h >> 5) & 0x1F, ((h >> 3) & 0x1E) | ((h >> 7) & 1))
    if is_b:
        blue = np.where(opaque, h & 0x1F, ((h << 1) & 0x1E) | ((h >> 3) & 1))
    else:
        blue = np.where(opaque, (h & 0x1E) | ((h >> 4) & 1), ((h << 1) & 0x1C) | ((h >> 2) & 3))
    alpha = np.where(opaque, 0xF, (h >> 11) & 0xE)
    return np.stack([red, green, blue, alpha]).astype(np.int16)


def _upscale(planes: np.ndarray, word_width: int) -> np.ndarray:
    """(C, GH, GW) per-word values → (C, 4·GH, word_width·GW) weighted sums of the 3×3 nearest words."""
    across, down = NEIGHBOUR_WEIGHTS[word_width], NEIGHBOUR_WEIGHTS[WORD_HEIGHT]
    previous, following = np.roll(planes, 1, axis=2), np.roll(planes, -1, axis=2)
    channels, grid_height, grid_width = planes.shape
    out = np.empty((channels, grid_height, WORD_HEIGHT, grid_width, word_width), np.int16)
    # One whole-grid operation per texel position of a word keeps every array contiguous.
    for column, (left, middle, right) in enumerate(across):
        rows = previous * left + planes * middle + following * right
        above, below = np.roll(rows, 1, axis=1), np.roll(rows, -1, axis=1)
        for row, (up, centre, low) in enumerate(down):
            out[:, :, row, :, column] = above * up + rows * centre + below * low
    return out.reshape(channels, grid_height * WORD_HEIGHT, grid_width * word_width)


def _words_to_image(per_texel: np.ndarray, word_width: int) -> np.ndarray:
    """(GH, GW, texels of a word, row-major) → (4·GH, word_width·GW)."""
    grid_height, grid_width = per_texel.shape[:2]
    return (
        per_texel.reshape(grid_height, grid_width, WORD_HEIGHT, word_width)
        .transpose(0, 2, 1, 3)
        .reshape(grid_height * WORD_HEIGHT, grid_width * word_width)
    )


def _modulation_4bpp(modulation: np.ndarray, colour: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-texel blend weights (eighths) and punch-through transparency, as images."""
    index = (modulation[..., None] >> (2 * np.arange(16, dtype=np.uint32))) & 3
    punch_through = (colour & 1).astype(bool)[..., None]
    weights = np.where(punch_through, PUNCH_THROUGH_WEIGHTS[index], STANDARD_WEIGHTS[index])
    transparent = punch_through & (index == PUNCH_THROUGH_INDEX)
    return _words_to_image(weights, 4), _words_to_image(transparent, 4)


def _modulation_2bpp(modulation: np.ndarray, colour: np.ndarray) -> np.ndarray:
    """Per-texel blend weights (eighths) as an image; 2 bpp has no punch-through."""
    one_bit = ((modulation[..., None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.int16) * 8
    pairs = STANDARD_WEIGHTS[(modulation[..., None] >> (2 * np.arange(16, dtype=np.uint32))) & 3]
    stored = np.zeros_like(one_bit)
    stored[..., STORED_POSITIONS_2BPP] = pairs
    # Texel 0 always, and texel 20 when bit 0 is set, lend their low bit to the fill flags.
    flagged = (modulation & 1).astype(bool)
    stored[..., 0] = (stored[..., 0] + 3) & 8
    last = stored[..., FLAGGED_POSITION_2BPP]
    stored[..., FLAGGED_POSITION_2BPP] = np.where(flagged, (last + 3) & 8, last)
    interpolated = (colour & 1).astype(bool)
    weights = _words_to_image(np.where(interpolated[..., None], stored, one_bit), 8)

    direction = np.where(flagged, np.where(modulation & (1 << 20), FILL_VERTICAL, FILL_HORIZONTAL), FILL_BOTH)
    fill = np.where(interpolated[..., None] & ~STORED_2BPP, direction[..., None], FILL_NONE)
    fill = _words_to_image(fill, 8)
    # Neighbours of a filled texel always hold stored values (x + y parity), across words with wrap-around.
    up, down = np.roll(weights, 1, axis=0), np.roll(weights, -1, axis=0)
    left, right = np.roll(weights, 1, axis=1), np.roll(weights, -1, axis=1)
    return np.select(
        [fill == FILL_VERTICAL, fill == FILL_HORIZONTAL, fill == FILL_BOTH],
        [(up + down + 1) // 2, (left + right + 1) // 2, (up + down + left + right + 2) // 4],
        weights,
    )
