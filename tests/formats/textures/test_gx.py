"""GX texel formats: hand-packed tiles decode to known texels; encoders invert decoders."""

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from retro_models.formats.errors import FormatError
from retro_models.formats.textures import gx

LOSSLESS = [gx.I4, gx.I8, gx.IA4, gx.IA8, gx.RGB565, gx.RGB5A3, gx.RGBA8]


def grey(i, a=None):
    return [i, i, i, i if a is None else a]


def test_i4_high_nibble_first():
    data = bytes([0x1F]) + bytes(31)
    image = gx.decode(gx.I4, data, 8, 8)
    assert image[0, :3].tolist() == [grey(17), grey(255), grey(0)]


def test_i8_tiles_are_row_major():
    data = bytes([10] * 32 + [20] * 32 + [30] * 32 + [40] * 32)
    image = gx.decode(gx.I8, data, 16, 8)
    assert image[0, 0].tolist() == grey(10) and image[3, 15].tolist() == grey(20)
    assert image[4, 0].tolist() == grey(30) and image[7, 8].tolist() == grey(40)


def test_i8_texels_are_row_major_inside_a_tile():
    data = bytes(range(32))
    image = gx.decode(gx.I8, data, 8, 4)
    assert image[1, 0].tolist() == grey(8) and image[3, 7].tolist() == grey(31)


def test_ia4_and_ia8():
    assert gx.decode(gx.IA4, bytes([0x5A]) + bytes(31), 8, 4)[0, 0].tolist() == grey(170, 85)
    assert gx.decode(gx.IA8, bytes([0x40, 0x80]) + bytes(30), 4, 4)[0, 0].tolist() == grey(128, 64)


def test_rgb565_and_rgb5a3_big_endian():
    data = struct.pack(">2H", 0xF800, 0x07E0) + bytes(28)
    assert gx.decode(gx.RGB565, data, 4, 4)[0, :2].tolist() == [[255, 0, 0, 255], [0, 255, 0, 255]]
    data = struct.pack(">2H", 0xFC00, 0x3F08) + bytes(28)
    assert gx.decode(gx.RGB5A3, data, 4, 4)[0, :2].tolist() == [[255, 0, 0, 255], [255, 0, 136, 109]]


def test_rgba8_ar_then_gb_halves():
    data = bytearray(64)
    data[0:2] = bytes([1, 2])  # texel 0: A, R
    data[32:34] = bytes([3, 4])  # texel 0: G, B
    data[30:32] = bytes([5, 6])  # texel 15: A, R
    data[62:64] = bytes([7, 8])  # texel 15: G, B
    image = gx.decode(gx.RGBA8, bytes(data), 4, 4)
    assert image[0, 0].tolist() == [2, 3, 4, 1] and image[3, 3].tolist() == [6, 7, 8, 5]


def test_palette_formats():
    palette = struct.pack(">3H", 0xF800, 0x001F, 0x07E0)
    image = gx.decode(gx.C4, bytes([0x01, 0x20]) + bytes(30), 8, 8, palette, gx.TLUT_RGB565)
    assert image[0, :4].tolist() == [[255, 0, 0, 255], [0, 0, 255, 255], [0, 255, 0, 255], [255, 0, 0, 255]]
    ia8 = struct.pack(">2H", 0x0000, 0x80FF)
    image = gx.decode(gx.C8, bytes([1, 0]) + bytes(30), 8, 4, ia8, gx.TLUT_IA8)
    assert image[0, :2].tolist() == [grey(255, 128), grey(0, 0)]
    rgb5a3 = struct.pack(">2H", 0x8000, 0xFFFF)
    image = gx.decode(gx.C14X2, struct.pack(">H", 0xC001) + bytes(30), 4, 4, rgb5a3, gx.TLUT_RGB5A3)
    assert image[0, :2].tolist() == [[255, 255, 255, 255], [0, 0, 0, 255]]


def test_cmpr_sub_block_order_and_hardware_weights():
    def block(c0, c1, *rows):
        return struct.pack(">HH4B", c0, c1, *rows)

    data = (
        block(0xF800, 0x001F, 0b00011011, 0, 0, 0)  # top-left, four colours, row 0 = indices 0 1 2 3
        + block(0x001F, 0xF800, 0b00100011, 0, 0, 0)  # top-right, three colours: 0 2 0 3
        + block(0x07E0, 0x07E0, 0, 0, 0, 0)  # bottom-left, solid green
        + block(0xFFFF, 0x0000, 0x55, 0x55, 0x55, 0x55)  # bottom-right, all index 1 (black)
    )
    image = gx.decode(gx.CMPR, data, 8, 8)
    assert image[0, :4].tolist() == [[255, 0, 0, 255], [0, 0, 255, 255], [159, 0, 95, 255], [95, 0, 159, 255]]
    assert image[0, 4:].tolist() == [[0, 0, 255, 255], [127, 0, 127, 255], [0, 0, 255, 255], [127, 0, 127, 0]]
    assert image[1, 0].tolist() == [255, 0, 0, 255]
    assert (image[4:, :4] == [0, 255, 0, 255]).all()
    assert (image[4:, 4:] == [0, 0, 0, 255]).all()


@pytest.mark.parametrize("fmt", LOSSLESS)
def test_encode_inverts_decode(fmt):
    rng = np.random.default_rng(fmt)
    raw = rng.integers(0, 256, gx.data_size(fmt, 16, 16), np.uint8).tobytes()
    image = gx.decode(fmt, raw, 16, 16)
    data, palette = gx.encode(fmt, image)
    assert palette is None
    assert (gx.decode(fmt, data, 16, 16) == image).all()
    if fmt != gx.RGB5A3:  # two RGB5A3 words can mean the same opaque colour
        assert data == raw


@pytest.mark.parametrize("fmt", sorted(gx.TILES))
def test_non_multiple_of_tile_sizes_are_padded(fmt):
    rng = np.random.default_rng(1)
    image = gx.decode(gx.RGB5A3, rng.integers(0, 256, 2 * 12 * 8, np.uint8).tobytes(), 12, 8)[:6, :10]
    if fmt in (gx.I4, gx.I8, gx.IA4, gx.IA8):
        image = gx.decode(fmt, rng.integers(0, 256, 256, np.uint8).tobytes(), 16, 8)[:6, :10]
    data, palette = gx.encode(fmt, image, gx.TLUT_RGB5A3)
    assert len(data) == gx.data_size(fmt, 10, 6)
    decoded = gx.decode(fmt, data, 10, 6, palette, gx.TLUT_RGB5A3)
    assert decoded.shape == (6, 10, 4)
    if fmt in (*LOSSLESS, gx.C8, gx.C14X2) and fmt not in (gx.RGB565,):
        assert (decoded == image).all()


def test_data_sizes():
    assert gx.data_size(gx.I4, 10, 6) == 2 * 32
    assert gx.data_size(gx.RGBA8, 10, 6) == 3 * 2 * 64
    assert gx.data_size(gx.CMPR, 1, 1) == 32


def test_palette_from_unique_colours_is_exact():
    words = struct.pack(">16H", *(0x8000 | (i * 2 << 10) | (31 - i) for i in range(16)))
    colours = gx.decode_palette(words, gx.TLUT_RGB5A3)
    rng = np.random.default_rng(2)
    image = colours[rng.integers(0, 16, (12, 20))]
    data, palette = gx.encode(gx.C4, image)
    assert len(palette) == 16 * 2
    assert (gx.decode(gx.C4, data, 20, 12, palette, gx.TLUT_RGB5A3) == image).all()


def test_palette_is_quantised_when_colours_do_not_fit():
    y, x = np.mgrid[0:64, 0:64]
    image = np.stack([x * 4, y * 4, (x + y) * 2, np.full_like(x, 255)], -1).astype(np.uint8)
    for fmt, entries, bound in ((gx.C4, 16, 24), (gx.C8, 256, 8)):
        data, palette = gx.encode(fmt, image, gx.TLUT_RGB565)
        assert len(palette) // 2 <= entries
        decoded = gx.decode(fmt, data, 64, 64, palette, gx.TLUT_RGB565)
        assert np.abs(decoded.astype(int) - image).mean() < bound


def test_cmpr_encode_error_is_bounded_on_a_gradient():
    y, x = np.mgrid[0:64, 0:64]
    image = np.stack([x * 4, y * 4, (x + y) * 2, np.full_like(x, 255)], -1).astype(np.uint8)
    data, palette = gx.encode(gx.CMPR, image)
    assert palette is None and len(data) == gx.data_size(gx.CMPR, 64, 64)
    error = np.abs(gx.decode(gx.CMPR, data, 64, 64).astype(int) - image)
    assert error.max() <= 12 and error.mean() < 3


def test_cmpr_encode_keeps_transparency_and_block_order():
    image = np.zeros((8, 8, 4), np.uint8)
    image[:4, :4] = [255, 0, 0, 255]
    image[:4, 4:] = [0, 0, 255, 255]
    image[4:, :4] = [0, 255, 0, 255]
    image[4:, 4:, 3] = 0
    image[4, 4] = [255, 255, 255, 255]
    decoded = gx.decode(gx.CMPR, gx.encode(gx.CMPR, image)[0], 8, 8)
    assert (decoded[:4, :4] == [255, 0, 0, 255]).all() and (decoded[:4, 4:] == [0, 0, 255, 255]).all()
    assert (decoded[4:, :4] == [0, 255, 0, 255]).all()
    assert decoded[4, 4].tolist() == [255, 255, 255, 255]
    assert (decoded[4:, 4:, 3] == 0).sum() == 15


def test_bad_input():
    with pytest.raises(FormatError, match="unknown GX texture format 7"):
        gx.decode(7, bytes(64), 4, 4, filename="t.tpl")
    with pytest.raises(FormatError, match="32 bytes"):
        gx.decode(gx.I8, bytes(31), 8, 4)
    with pytest.raises(FormatError):
        gx.decode(gx.I8, bytes(40), 8, 4, offset=10)
    with pytest.raises(FormatError, match="without a palette"):
        gx.decode(gx.C8, bytes(32), 8, 4)
    with pytest.raises(FormatError, match="palette index 5"):
        gx.decode(gx.C8, bytes([5]) + bytes(31), 8, 4, bytes(4), gx.TLUT_IA8)
    with pytest.raises(FormatError, match="palette format"):
        gx.decode(gx.C8, bytes(32), 8, 4, bytes(4), 3)


@settings(max_examples=150, deadline=None)
@given(
    fmt=st.sampled_from(sorted(gx.TILES) + [7, 15]),
    width=st.integers(0, 20),
    height=st.integers(0, 20),
    data=st.binary(max_size=600),
)
def test_fuzz_decode_only_raises_format_error(fmt, width, height, data):
    try:
        image = gx.decode(fmt, data, width, height, data[:64], gx.TLUT_RGB5A3)
    except FormatError:
        return
    assert image.shape == (height, width, 4) and image.dtype == np.uint8
