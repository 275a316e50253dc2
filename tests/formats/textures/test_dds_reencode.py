"""``dds.reencode``: new pixels written in the layout of an existing DDS file (header kept, mips regenerated)."""

import struct

import numpy as np
import pytest
from retro_models.formats.textures import dds
from retro_models.formats.textures.raster import expand_bits, quantize_bits


def header(width, height, pf_flags, bits=0, masks=(0, 0, 0, 0), fourcc=b"\0\0\0\0", mips=0, caps2=0) -> bytes:
    """A DDS header written field by field (independent of the encoder under test)."""
    flags = 0x1007 | (0x20000 if mips else 0) | (0x80000 if pf_flags & dds.DDPF_FOURCC else 0x8)
    block_bytes = 8 if fourcc == b"DXT1" else 16
    pitch = (
        ((width + 3) // 4) * ((height + 3) // 4) * block_bytes
        if pf_flags & dds.DDPF_FOURCC
        else width * bits // 8
    )
    head = struct.pack("<4s7I44x", b"DDS ", 124, flags, height, width, pitch, 0, mips)
    head += struct.pack("<2I4s5I", 32, pf_flags, fourcc, bits, *masks)
    return head + struct.pack("<5I", 0x1000 | (0x400008 if mips else 0), caps2, 0, 0, 0)


UNCOMPRESSED = {  # name → (pixel format flags, bits, R, G, B, A masks)
    "A8R8G8B8": (dds.DDPF_RGB | dds.DDPF_ALPHAPIXELS, 32, (0xFF0000, 0xFF00, 0xFF, 0xFF000000)),
    "A8B8G8R8": (dds.DDPF_RGB | dds.DDPF_ALPHAPIXELS, 32, (0xFF, 0xFF00, 0xFF0000, 0xFF000000)),
    "R8G8B8": (dds.DDPF_RGB, 24, (0xFF0000, 0xFF00, 0xFF, 0)),
    "R5G6B5": (dds.DDPF_RGB, 16, (0xF800, 0x07E0, 0x001F, 0)),
    "A1R5G5B5": (dds.DDPF_RGB | dds.DDPF_ALPHAPIXELS, 16, (0x7C00, 0x03E0, 0x001F, 0x8000)),
    "A4R4G4B4": (dds.DDPF_RGB | dds.DDPF_ALPHAPIXELS, 16, (0x0F00, 0x00F0, 0x000F, 0xF000)),
    "L8": (dds.DDPF_LUMINANCE, 8, (0xFF, 0, 0, 0)),
    "A8L8": (dds.DDPF_LUMINANCE | dds.DDPF_ALPHAPIXELS, 16, (0xFF, 0, 0, 0xFF00)),
    "A8": (dds.DDPF_ALPHA, 8, (0, 0, 0, 0xFF)),
}


@pytest.mark.parametrize("name", UNCOMPRESSED)
def test_uncompressed_layouts_keep_their_header_and_hold_the_pixels(name):
    pf_flags, bits, masks = UNCOMPRESSED[name]
    original = header(8, 4, pf_flags, bits, masks)
    pixels = np.random.default_rng(1).integers(0, 256, (4, 8, 4), np.uint8)
    if name in ("L8", "A8L8"):
        pixels[..., 1] = pixels[..., 2] = pixels[..., 0]  # grey: the luminance is exact
    data = dds.reencode(original, pixels)
    image = dds.read(data)
    assert image.header == original and len(image.data) == 8 * 4 * bits // 8
    # Each field holds the nearest value it can (decode widens it back); a format without alpha is opaque.
    expected = np.zeros_like(pixels)
    expected[..., 3] = 255
    for channel, mask in enumerate(masks):
        if mask:
            field = bin(mask).count("1")
            expected[..., channel] = expand_bits(quantize_bits(pixels[..., channel], field), field)
    if name in ("L8", "A8L8"):
        expected[..., 1] = expected[..., 2] = expected[..., 0]
    assert np.array_equal(image.decode(), expected)


@pytest.mark.parametrize("fmt", ["DXT1", "DXT3", "DXT5"])
def test_block_layouts_regenerate_their_mip_levels(fmt):
    original = header(16, 8, dds.DDPF_FOURCC, fourcc=fmt.encode(), mips=5)
    pixels = np.random.default_rng(2).integers(0, 256, (8, 16, 4), np.uint8)
    image = dds.read(dds.reencode(original, pixels))
    assert image.header == original and image.mip_count == 5
    level, offset = pixels, 0
    for i in range(5):
        assert image.data[offset : offset + image.level_size(i)] == dds.encode_blocks(fmt, level), i
        offset += image.level_size(i)
        level = dds.half_size(level)
    assert offset == len(image.data) and level.shape[:2] == (1, 1)


def test_another_size_updates_width_height_pitch_and_mip_count():
    original = header(16, 16, dds.DDPF_FOURCC, fourcc=b"DXT1", mips=5)
    image = dds.read(dds.reencode(original, np.zeros((4, 8, 4), np.uint8)))
    assert (image.width, image.height, image.mip_count) == (8, 4, 4)
    assert struct.unpack_from("<I", image.header, dds.PITCH_OFFSET)[0] == image.level_size(0) == 16
    assert image.decode(3).shape == (1, 1, 4)


def test_half_size_averages_and_rounds():
    pixels = np.array([[[0, 0, 0, 0], [1, 2, 3, 255]], [[2, 2, 2, 255], [3, 3, 3, 255]]], np.uint8)
    np.testing.assert_array_equal(dds.half_size(pixels), [[[2, 2, 2, 191]]])
    assert dds.half_size(np.zeros((1, 5, 4), np.uint8)).shape == (1, 2, 4)


def test_cube_maps_and_unknown_formats_are_refused():
    with pytest.raises(ValueError, match="cube map"):
        dds.reencode(
            header(4, 4, dds.DDPF_FOURCC, fourcc=b"DXT1", caps2=dds.DDSCAPS2_CUBEMAP),
            np.zeros((4, 4, 4), np.uint8),
        )
    with pytest.raises(ValueError, match="cannot encode DDS pixel format ATI2"):
        dds.reencode(header(4, 4, dds.DDPF_FOURCC, fourcc=b"ATI2"), np.zeros((4, 4, 4), np.uint8))
