"""TML raster formats: hand-packed texels decode to known colours; encode is the exact inverse."""

import struct

import numpy as np
import pytest
from retro_models.formats.errors import FormatError
from retro_models.formats.textures import raster


def test_rgba8888_bytes_are_r_g_b_a():
    data = bytes([10, 20, 30, 40, 50, 60, 70, 80])
    assert raster.decode("RGBA8888", data, 2, 1).tolist() == [[[10, 20, 30, 40], [50, 60, 70, 80]]]


def test_rgb888_is_opaque():
    data = bytes([1, 2, 3, 4, 5, 6])
    assert raster.decode("RGB888", data, 1, 2).tolist() == [[[1, 2, 3, 255]], [[4, 5, 6, 255]]]


def test_argb1555_red_in_low_bits_with_bit_replication():
    opaque = 31 | (0 << 5) | (16 << 10) | (1 << 15)
    data = struct.pack("<2H", opaque, 0)
    assert raster.decode("ARGB1555", data, 2, 1).tolist() == [[[255, 0, 132, 255], [0, 0, 0, 0]]]


def test_argb4444_red_in_low_nibble():
    data = struct.pack("<H", 0xF321)
    assert raster.decode("ARGB4444", data, 1, 1).tolist() == [[[17, 34, 51, 255]]]


def test_rows_run_top_to_bottom_and_offset_is_honoured():
    data = b"\xff" * 3 + bytes(range(12))
    image = raster.decode("RGB888", data, 2, 2, offset=3)
    assert image[0, 1, :3].tolist() == [3, 4, 5]
    assert image[1, 0, :3].tolist() == [6, 7, 8]


def test_bit_replication_tables():
    assert raster.expand_bits(np.array([0, 1, 16, 31]), 5).tolist() == [0, 8, 132, 255]
    assert raster.expand_bits(np.arange(8), 3).tolist() == [0, 36, 73, 109, 146, 182, 219, 255]
    for bits in range(1, 9):
        values = np.arange(1 << bits)
        assert (raster.quantize_bits(raster.expand_bits(values, bits), bits) == values).all()


@pytest.mark.parametrize("fmt", raster.FORMATS)
def test_encode_inverts_decode(fmt):
    rng = np.random.default_rng(7)
    data = rng.integers(0, 256, raster.data_size(fmt, 5, 3), np.uint8).tobytes()
    image = raster.decode(fmt, data, 5, 3)
    assert raster.encode(fmt, image) == data


def test_encode_rounds_to_nearest():
    pixels = np.array([[[250, 7, 128, 200]]], np.uint8)
    decoded = raster.decode("ARGB1555", raster.encode("ARGB1555", pixels), 1, 1)
    assert decoded.tolist() == [[[247, 8, 132, 255]]]  # 250 is nearer 30·8.2 than 31


def test_rgb_input_gets_opaque_alpha():
    assert raster.encode("RGBA8888", np.array([[[1, 2, 3]]], np.uint8)) == bytes([1, 2, 3, 255])


@pytest.mark.parametrize("fmt", raster.FORMATS)
def test_short_data_is_a_format_error(fmt):
    data = bytes(raster.data_size(fmt, 4, 4) - 1)
    with pytest.raises(FormatError, match="4×4"):
        raster.decode(fmt, data, 4, 4, "t.tml")
    with pytest.raises(FormatError):
        raster.decode(fmt, bytes(64), 4, 4, offset=60)


def test_unknown_format_is_a_format_error():
    with pytest.raises(FormatError, match="unknown raster format"):
        raster.decode("ARGB2222", bytes(16), 2, 2)
