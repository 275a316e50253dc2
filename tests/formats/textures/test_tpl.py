"""TPL files: a hand-built file read field by field, lossless writes, fresh layouts, bad input."""

import struct

import numpy as np
import pytest
import support
from retro_models.formats.errors import FormatError
from retro_models.formats.textures import gx, tpl


def image_header(height, width, fmt, data_offset, wrap_s=1, wrap_t=2, min_lod=0, max_lod=0):
    return struct.pack(">HHIIIIIIfBBBB", height, width, fmt, data_offset, wrap_s, wrap_t, 1, 0, -0.5, 1,
                       min_lod, max_lod, 0)  # fmt: skip


def hand_built() -> bytes:
    """Two images: a 4×4 RGB565 with two mip levels, and an 8×4 C8 with a 2-entry IA8 palette."""
    out = struct.pack(">3I", tpl.MAGIC, 2, 0x0C)
    out += struct.pack(">4I", 0x20, 0, 0x44, 0x68)  # table; 0x1C..0x20 is a non-zero gap
    out += b"GAP!"
    out += image_header(4, 4, gx.RGB565, 0x80, max_lod=1)  # 0x20
    out += image_header(4, 8, gx.C8, 0xC0)  # 0x44
    out += struct.pack(">HBBII", 2, 0, 0, gx.TLUT_IA8, 0x74)  # 0x68
    out += struct.pack(">2H", 0xFF10, 0x80F0)  # 0x74 palette entries
    out += bytes(0x80 - len(out))
    out += struct.pack(">H", 0xF800) * 16  # 0x80 level 0: red
    out += struct.pack(">H", 0x001F) + bytes(30)  # 0xA0 level 1 (2×2 in one tile): blue at (0, 0)
    out += bytes([1, 0]) * 16  # 0xC0 C8 indices
    return out


def test_hand_built_fields():
    model = tpl.read(hand_built(), "t.tpl")
    assert model.table_offset == 0x0C and len(model.images) == 2
    first, second = model.images
    assert (first.width, first.height, first.format, first.wrap_s, first.wrap_t) == (4, 4, gx.RGB565, 1, 2)
    assert (first.min_filter, first.mag_filter, first.lod_bias, first.edge_lod) == (1, 0, -0.5, 1)
    assert (first.level_count, first.level_sizes(), len(first.data)) == (2, [(4, 4), (2, 2)], 64)
    assert first.palette is None and first.data_offset == 0x80 and first.header_offset == 0x20
    assert (first.decode() == [255, 0, 0, 255]).all()
    level1 = first.decode(1)
    assert level1.shape == (2, 2, 4) and level1[0, 0].tolist() == [0, 0, 255, 255]
    assert second.palette.entry_count == 2 and second.palette.format == gx.TLUT_IA8
    assert second.decode()[0, :2].tolist() == [[240, 240, 240, 128], [16, 16, 16, 255]]
    assert model.unused == [(0x1C, b"GAP!")]


def test_hand_built_round_trip_and_fresh_layout():
    data = hand_built()
    model = tpl.read(data)
    assert tpl.write(model) == data
    model.images[0].header_offset = None
    fresh = tpl.write(model)
    again = tpl.read(fresh)
    assert [(i.width, i.height, i.format, i.data) for i in again.images] == [
        (i.width, i.height, i.format, i.data) for i in model.images
    ]
    assert again.images[1].palette.data == model.images[1].palette.data
    assert all(i.data_offset % 32 == 0 for i in again.images)


def test_grown_image_falls_back_to_a_fresh_layout():
    model = tpl.read(hand_built())
    model.images[1].width, model.images[1].height = 16, 8
    model.images[1].data = bytes(128)
    again = tpl.read(tpl.write(model))
    assert (again.images[1].width, again.images[1].data) == (16, bytes(128))
    assert again.images[0].data == model.images[0].data


def test_written_from_scratch_reads_back():
    rng = np.random.default_rng(4)
    pixels = rng.integers(0, 256, (6, 10, 4), np.uint8)
    model = tpl.TPL([tpl.image_from_pixels(pixels, gx.RGBA8, wrap_s=1), tpl.image_from_pixels(pixels, gx.C8)])
    again = tpl.read(tpl.write(model))
    assert (again.images[0].decode() == pixels).all() and again.images[0].wrap_s == 1
    assert again.images[1].palette.format == gx.TLUT_RGB5A3
    assert again.images[1].decode().shape == (6, 10, 4)


def test_size_mismatch_is_refused():
    model = tpl.read(hand_built())
    model.images[0].data = bytes(10)
    with pytest.raises(ValueError, match="needs 64 bytes"):
        tpl.write(model)


def test_real_tpl_round_trip_and_values():
    data = support.corpus_file("tpl/mygalaxyicon.tpl").read_bytes()
    model = tpl.read(data, "mygalaxyicon.tpl")
    assert tpl.write(model) == data
    (image,) = model.images
    assert (image.width, image.height, image.format, image.level_count) == (64, 64, gx.I8, 1)
    pixels = image.decode()
    # 8×4 tiles, row-major; intensity replicated into all four channels
    tiles = np.frombuffer(image.data, np.uint8).reshape(16, 8, 4, 8)
    assert (pixels[..., 0] == tiles.transpose(0, 2, 1, 3).reshape(64, 64)).all()
    assert (pixels == pixels[..., :1]).all()
    assert pixels.max() == 255 and pixels.min() == 0
    encoded, _ = gx.encode(gx.I8, pixels)
    assert encoded == image.data


def test_truncation_at_every_boundary():
    data = hand_built()
    for size in range(len(data)):
        with pytest.raises(FormatError):
            tpl.read(data[:size], "t.tpl")


@pytest.mark.parametrize(
    ("offset", "value", "message"),
    [
        (0, b"\x00\x20\xaf\x31", "TPL magic"),
        (4, struct.pack(">I", 0x10000000), "image table entry"),
        (8, struct.pack(">I", 0x1000), "image table"),
        (0x0C, struct.pack(">I", 0xFFFF00), "image header"),
        (0x10, struct.pack(">I", 0xFFFF00), "palette header"),
        (0x24, struct.pack(">I", 7), "unknown GX texture format 7"),
        (0x28, struct.pack(">I", 0x7FFFFFFF), "image data"),
        (0x42, bytes([0]), "max LOD 0 is below min LOD 1"),
        (0x6C, struct.pack(">I", 3), "unknown palette format 3"),
        (0x68, struct.pack(">H", 0xFFFF), "palette entries"),
    ],
)
def test_corrupt_fields(offset, value, message):
    data = bytearray(hand_built())
    if message.startswith("max LOD"):
        data[0x41] = 1  # min LOD 1 of the first image, max LOD 0 at 0x42
    data[offset : offset + len(value)] = value
    with pytest.raises(FormatError, match=message):
        tpl.read(bytes(data), "t.tpl")
