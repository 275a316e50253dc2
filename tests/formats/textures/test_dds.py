"""DDS: hand-built files decode to known texels; files round-trip; encoders are bounded."""

import struct

import numpy as np
import pytest
from retro_models.formats.errors import FormatError
from retro_models.formats.textures import dds

RED, BLUE, GREEN = 0xF800, 0x001F, 0x07E0


def header(width, height, fourcc=b"\0\0\0\0", pf_flags=dds.DDPF_FOURCC, bits=0, masks=(0, 0, 0, 0), mips=0):
    flags = dds.DDSD_CAPS | dds.DDSD_HEIGHT | dds.DDSD_WIDTH | dds.DDSD_PIXELFORMAT
    if mips:
        flags |= dds.DDSD_MIPMAPCOUNT
    return (
        b"DDS "
        + struct.pack("<7I", 124, flags, height, width, 0, 0, mips)
        + bytes(44)
        + struct.pack("<2I4s5I", 32, pf_flags, fourcc, bits, *masks)
        + struct.pack("<5I", 0x1000, 0, 0, 0, 0)
    )


def indices(*values):
    """2-bit indices, first texel in the least significant bits."""
    return sum(v << (2 * i) for i, v in enumerate(values))


def test_dxt1_four_colour_block():
    data = header(4, 4, b"DXT1") + struct.pack("<HHI", RED, BLUE, indices(0, 1, 2, 3, 1))
    image = dds.read(data, "t.dds")
    assert (image.width, image.height, image.format, image.mip_count) == (4, 4, "DXT1", 1)
    pixels = image.decode()
    assert pixels.shape == (4, 4, 4)
    assert pixels[0].tolist() == [[255, 0, 0, 255], [0, 0, 255, 255], [170, 0, 85, 255], [85, 0, 170, 255]]
    assert pixels[1, 0].tolist() == [0, 0, 255, 255]
    assert pixels[3, 3].tolist() == [255, 0, 0, 255]


def test_dxt1_three_colour_block_has_transparent_black():
    data = header(4, 4, b"DXT1") + struct.pack("<HHI", BLUE, RED, indices(0, 1, 2, 3))
    pixels = dds.read(data).decode()
    assert pixels[0].tolist() == [[0, 0, 255, 255], [255, 0, 0, 255], [127, 0, 127, 255], [0, 0, 0, 0]]


def test_dxt3_explicit_alpha():
    alpha = 0xF | (0x8 << 4)
    data = header(4, 4, b"DXT3") + struct.pack("<QHHI", alpha, BLUE, RED, indices(1, 1))
    pixels = dds.read(data).decode()
    # DXT3 colour blocks use four colours whatever the endpoint order
    assert pixels[0, :3].tolist() == [[255, 0, 0, 255], [255, 0, 0, 136], [0, 0, 255, 0]]


def test_dxt5_interpolated_alpha_both_modes():
    bits = 0 | (1 << 3) | (2 << 6) | (7 << 9)
    block = struct.pack("<BB", 200, 100) + bits.to_bytes(6, "little") + struct.pack("<HHI", RED, BLUE, 0)
    pixels = dds.read(header(4, 4, b"DXT5") + block).decode()
    assert pixels[0, :, 3].tolist() == [200, 100, 186, 114]
    bits = 0 | (6 << 3) | (7 << 6) | (2 << 9)
    block = struct.pack("<BB", 100, 200) + bits.to_bytes(6, "little") + struct.pack("<HHI", RED, BLUE, 0)
    pixels = dds.read(header(4, 4, b"DXT5") + block).decode()
    assert pixels[0, :, 3].tolist() == [100, 0, 255, 120]


def test_dxt_non_multiple_of_four_is_cropped():
    blocks = struct.pack("<HHI", RED, RED, 0) * 2 * 2
    pixels = dds.read(header(6, 5, b"DXT1") + blocks).decode()
    assert pixels.shape == (5, 6, 4)
    assert (pixels == [255, 0, 0, 255]).all()


def test_uncompressed_masks():
    r5g6b5 = header(2, 1, pf_flags=dds.DDPF_RGB, bits=16, masks=(0xF800, 0x07E0, 0x001F, 0))
    pixels = dds.read(r5g6b5 + struct.pack("<2H", 0xF800, 0x0400)).decode()
    assert pixels.tolist() == [[[255, 0, 0, 255], [0, 130, 0, 255]]]
    argb = header(1, 1, pf_flags=dds.DDPF_RGB | dds.DDPF_ALPHAPIXELS, bits=32,
                  masks=(0xFF0000, 0xFF00, 0xFF, 0xFF000000))  # fmt: skip
    image = dds.read(argb + bytes([3, 2, 1, 4]))
    assert image.format == "RGBA"
    assert image.decode().tolist() == [[[1, 2, 3, 4]]]
    rgb24 = header(1, 1, pf_flags=dds.DDPF_RGB, bits=24, masks=(0xFF0000, 0xFF00, 0xFF, 0xFF000000))
    assert dds.read(rgb24 + bytes([3, 2, 1])).decode().tolist() == [[[1, 2, 3, 255]]]
    luminance = header(2, 1, pf_flags=dds.DDPF_LUMINANCE, bits=8, masks=(0xFF, 0, 0, 0))
    assert dds.read(luminance + bytes([9, 200])).decode().tolist() == [[[9, 9, 9, 255], [200, 200, 200, 255]]]


def test_dx10_header():
    block = struct.pack("<BB", 255, 255) + bytes(6) + struct.pack("<HHI", GREEN, GREEN, 0)
    data = header(4, 4, b"DX10") + struct.pack("<5I", 77, 3, 0, 1, 0) + block
    image = dds.read(data)
    assert (image.format, len(image.header)) == ("DXT5", 148)
    assert (image.decode() == [0, 255, 0, 255]).all()
    assert dds.write(image) == data


def test_mip_levels_and_lossless_write():
    level0 = struct.pack("<HHI", RED, RED, 0) * 4
    level1 = struct.pack("<HHI", BLUE, BLUE, 0)
    data = header(8, 8, b"DXT1", mips=2) + level0 + level1 + b"trailing"
    image = dds.read(data)
    assert image.mip_count == 2
    assert image.decode(1).shape == (4, 4, 4)
    assert (image.decode(1) == [0, 0, 255, 255]).all()
    assert dds.write(image) == data
    with pytest.raises(FormatError, match="mip level 2"):
        image.decode(2)


def test_encode_uncompressed_is_exact():
    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, (5, 7, 4), np.uint8)
    data = dds.encode_uncompressed(pixels)
    assert data[:4] == b"DDS " and len(data) == 128 + 5 * 7 * 4
    assert (dds.read(data).decode() == pixels).all()


def gradient(width=64, height=64):
    y, x = np.mgrid[0:height, 0:width]
    rgb = np.stack(
        [x * 255 // (width - 1), y * 255 // (height - 1), (x + y) * 255 // (width + height - 2)], -1
    )
    return np.concatenate([rgb, np.full((height, width, 1), 255)], axis=-1).astype(np.uint8)


@pytest.mark.parametrize("fmt", ["DXT1", "DXT3", "DXT5"])
def test_block_encode_error_is_bounded_on_a_gradient(fmt):
    pixels = gradient()
    decoded = dds.read(dds.encode(pixels, fmt)).decode()
    error = np.abs(decoded.astype(int) - pixels)
    assert decoded.shape == pixels.shape
    assert error[..., :3].max() <= 12 and error[..., :3].mean() < 3
    assert (decoded[..., 3] == 255).all()
    assert dds.read(dds.encode(pixels[:6, :10], fmt)).decode().shape == (6, 10, 4)


def test_encode_exact_for_two_colour_blocks_and_alpha():
    pixels = np.zeros((8, 8, 4), np.uint8)
    pixels[..., :3] = [255, 0, 0]
    pixels[::2, :, :3] = [0, 0, 255]
    pixels[..., 3] = 255
    pixels[:4, :4, 3] = 0
    dxt1 = dds.read(dds.encode(pixels, "DXT1")).decode()
    assert (dxt1[4:] == pixels[4:]).all() and (dxt1[:4, 4:] == pixels[:4, 4:]).all()
    assert (dxt1[:4, :4, 3] == 0).all()
    pixels[:4, :4, 3] = 77
    dxt5 = dds.read(dds.encode(pixels, "DXT5")).decode()
    assert (dxt5 == pixels).all()


def test_bad_magic_and_header_size():
    with pytest.raises(FormatError, match="DDS magic"):
        dds.read(b"DDX " + bytes(124), "x.dds")
    with pytest.raises(FormatError, match="124-byte"):
        dds.read(b"DDS " + struct.pack("<I", 100) + bytes(120))


def test_truncation_is_a_format_error():
    data = header(8, 8, b"DX10") + struct.pack("<5I", 71, 3, 0, 1, 0) + bytes(32)
    for size in range(len(data)):
        with pytest.raises(FormatError):
            dds.read(data[:size])


def test_unsupported_formats():
    image = dds.read(header(4, 4, b"ATI2") + bytes(16))
    assert image.format == "ATI2"
    assert dds.write(image) == header(4, 4, b"ATI2") + bytes(16)
    with pytest.raises(FormatError, match="cannot decode"):
        image.decode()
    with pytest.raises(FormatError, match="bits per texel"):
        dds.read(header(1, 1, pf_flags=dds.DDPF_RGB, bits=12) + bytes(2))


def test_masks_that_are_not_one_run_of_bits_are_a_format_error():
    data = header(1, 1, pf_flags=dds.DDPF_RGB, bits=16, masks=(0x001F, 0x0505, 0x7C00, 0)) + bytes(2)
    image = dds.read(data, "odd.dds")
    assert dds.write(image) == data
    with pytest.raises(FormatError, match="G mask 0x00000505 is not one run of bits") as error:
        image.decode()
    assert (error.value.filename, error.value.offset) == ("odd.dds", dds.MASKS_OFFSET + 4)
