"""DXT1-style colour blocks (4×4 texels, two RGB565 endpoints, 2-bit indices), shared by DDS and GX CMPR.

Only the palette arithmetic and the endpoint/index choice live here; the byte
layout of a block (endianness, index bit order, block order) belongs to the
container. Blocks are handled as arrays: ``(N,)`` endpoint words and ``(N, 16)``
indices in row-major texel order.
"""

from __future__ import annotations

import numpy as np

from .raster import expand_bits, quantize_bits


def rgb565_to_rgb(words: np.ndarray) -> np.ndarray:
    """RGB565 words → (..., 3) uint8 with bit-replicated channels."""
    words = np.asarray(words, np.uint16)
    return np.stack(
        [expand_bits(words >> 11, 5), expand_bits((words >> 5) & 63, 6), expand_bits(words & 31, 5)], axis=-1
    )


def rgb_to_rgb565(rgb: np.ndarray) -> np.ndarray:
    """(..., 3) uint8 → nearest RGB565 words."""
    r, g, b = (quantize_bits(rgb[..., i], bits).astype(np.uint16) for i, bits in enumerate((5, 6, 5)))
    return (r << 11) | (g << 5) | b


def palette(c0: np.ndarray, c1: np.ndarray, hardware: bool, always_four: bool = False) -> np.ndarray:
    """The four RGBA colours of each block, shape (N, 4, 4) uint8.

    ``c0 > c1`` (or ``always_four``, as DXT3/DXT5 colour blocks are) selects the
    four-colour mode, otherwise the three-colour mode whose last entry is
    transparent. ``hardware`` selects the GameCube's blend weights as emulators
    reproduce them: c2 = (5·c0 + 3·c1) >> 3, c3 = (3·c0 + 5·c1) >> 3, and in
    three-colour mode c2 = (c0 + c1) >> 1 with c3 the same colour at alpha 0.
    Otherwise the PC rule: thirds (rounded) and a transparent black c3.
    """
    c0 = np.asarray(c0, np.uint16)
    c1 = np.asarray(c1, np.uint16)
    a = rgb565_to_rgb(c0).astype(np.int32)
    b = rgb565_to_rgb(c1).astype(np.int32)
    four = (c0 > c1) | always_four
    if hardware:
        third_a, third_b = (5 * a + 3 * b) >> 3, (3 * a + 5 * b) >> 3
        half = (a + b) >> 1
        last_three = half
    else:
        third_a, third_b = (2 * a + b + 1) // 3, (a + 2 * b + 1) // 3
        half = (a + b) // 2
        last_three = np.zeros_like(a)
    rgb = np.stack(
        [
            a,
            b,
            np.where(four[:, None], third_a, half),
            np.where(four[:, None], third_b, last_three),
        ],
        axis=1,
    )
    alpha = np.full(rgb.shape[:2] + (1,), 255, np.int32)
    alpha[:, 3, 0] = np.where(four, 255, 0)
    return np.concatenate([rgb, alpha], axis=2).astype(np.uint8)


def compress(texels: np.ndarray, hardware: bool, allow_transparent: bool = True) -> tuple:
    """Choose endpoints and indices for (N, 16, 4) uint8 RGBA blocks → (c0, c1, indices).

    Endpoints span the opaque texels along their principal axis (the main
    eigenvector of their covariance, found by power iteration), which is exact
    for flat and two-colour blocks and good for gradients. Blocks with a texel below alpha 128 use the three-colour mode
    (c0 ≤ c1) and index 3 for those texels, unless ``allow_transparent`` is false
    (DXT3/DXT5 colour blocks, whose alpha is stored separately).
    """
    rgb = texels[..., :3].astype(np.float32)
    opaque = texels[..., 3] >= 128 if allow_transparent else np.ones(texels.shape[:2], bool)
    weight = opaque.astype(np.float32)[..., None]
    mean = (rgb * weight).sum(axis=1) / np.maximum(weight.sum(axis=1), 1.0)
    offsets = rgb - mean[:, None, :]
    centred = offsets * weight
    covariance = centred.transpose(0, 2, 1) @ centred
    # Start from the covariance column of the widest channel: never orthogonal to the main axis.
    widest = covariance.diagonal(axis1=1, axis2=2).argmax(axis=1)
    axis = np.take_along_axis(covariance, widest[:, None, None], axis=2)[:, :, 0] + 1e-3
    for _ in range(6):
        axis /= np.linalg.norm(axis, axis=1, keepdims=True)
        axis = (covariance @ axis[:, :, None])[:, :, 0] + 1e-6 * axis
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    projection = (offsets @ axis[:, :, None])[:, :, 0]
    high = np.where(opaque, projection, -np.inf).max(axis=1)
    low = np.where(opaque, projection, np.inf).min(axis=1)
    empty = ~opaque.any(axis=1)
    high[empty] = low[empty] = 0.0

    def endpoint(extent: np.ndarray) -> np.ndarray:
        point = np.clip(np.rint(mean + axis * extent[:, None]), 0, 255).astype(np.uint8)
        return rgb_to_rgb565(point)

    c0, c1 = endpoint(high), endpoint(low)
    transparent = ~opaque.all(axis=1)
    # Four-colour mode needs c0 > c1, three-colour mode c0 <= c1.
    swap = np.where(transparent, c0 > c1, c0 < c1)
    c0, c1 = np.where(swap, c1, c0), np.where(swap, c0, c1)

    colours = palette(c0, c1, hardware, always_four=not allow_transparent)[:, :, :3].astype(np.float32)
    # Squared distance to each palette colour, less the texel's own |x|² (the same for every choice).
    distance = (colours**2).sum(axis=2)[:, None, :] - 2 * (rgb @ colours.transpose(0, 2, 1))
    three_colour = (c0 <= c1) & allow_transparent
    distance[:, :, 3] = np.where(three_colour[:, None], np.inf, distance[:, :, 3])
    indices = distance.argmin(axis=2).astype(np.uint8)
    indices[~opaque] = 3
    return c0.astype(np.uint16), c1.astype(np.uint16), indices


def to_blocks(rgba: np.ndarray) -> np.ndarray:
    """An (H, W, 4) image whose sides are multiples of 4 → (H/4, W/4, 16, 4) blocks, row-major."""
    height, width = rgba.shape[:2]
    blocks = rgba.reshape(height // 4, 4, width // 4, 4, 4).transpose(0, 2, 1, 3, 4)
    return blocks.reshape(height // 4, width // 4, 16, 4)


def from_blocks(blocks: np.ndarray) -> np.ndarray:
    """(BH, BW, 16, C) blocks → (BH·4, BW·4, C) image."""
    rows, columns = blocks.shape[:2]
    channels = blocks.shape[-1]
    return (
        blocks.reshape(rows, columns, 4, 4, channels)
        .transpose(0, 2, 1, 3, 4)
        .reshape(rows * 4, columns * 4, channels)
    )
