"""GXT (PS Vita): generated files decode like a plain per-texel reference written here; files
round-trip byte for byte; encoders are exact (uncompressed, palettes) or bounded (BC); PVRTC and BC
agree with texture2ddecoder; hostile files raise FormatError and nothing else."""

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from retro_models.formats.errors import ExportError, FormatError
from retro_models.formats.textures import dds, gxt

VERSION = 0x10000003
SWIZZLED, CUBE, LINEAR, TILED = 0x00000000, 0x40000000, 0x60000000, 0x80000000
ARBITRARY, STRIDED = 0xA0000000, 0xC0000000
MORTON_LAYOUTS = (SWIZZLED, CUBE, ARBITRARY)
U8, U4444, U1555, U565, U88, U8888, U888 = 0x00, 0x02, 0x04, 0x05, 0x07, 0x0C, 0x98
P4, P8, UBC1, UBC2, UBC3, PVRT2, PVRT4, PVRTII4 = 0x94, 0x95, 0x85, 0x86, 0x87, 0x80, 0x81, 0x83
ORDERS4 = ("ABGR", "ARGB", "RGBA", "BGRA", "1BGR", "1RGB", "RGB1", "BGR1")
# Field widths from the most significant bit, as the base's name writes them.
PACKED = {
    U4444: (16, (4, 4, 4, 4)),
    U1555: (16, (1, 5, 5, 5)),
    U8888: (32, (8, 8, 8, 8)),
    U565: (16, (5, 6, 5)),
}
PACKED[U888] = (24, (8, 8, 8))
# One and two components: output (R, G, B, A) from the stored r (low byte) and g (high byte).
ONE = {
    0: lambda r: (r, 0, 0, 255),
    1: lambda r: (r, 0, 0, 0),
    2: lambda r: (r, 255, 255, 255),
    3: lambda r: (r, r, r, r),
    4: lambda r: (r, r, r, 0),
    5: lambda r: (r, r, r, 255),
    6: lambda r: (0, 0, 0, r),
    7: lambda r: (255, 255, 255, r),
}
TWO = {
    0: lambda r, g: (r, g, 0, 255),
    1: lambda r, g: (r, g, 0, 0),
    2: lambda r, g: (r, r, r, g),
    3: lambda r, g: (g, g, g, r),
    4: lambda r, g: (r, g, r, g),
    5: lambda r, g: (g, r, 0, 0),
}
BITS = {U8: 8, U4444: 16, U1555: 16, U565: 16, U88: 16, U8888: 32, U888: 24, P4: 4, P8: 8}
BLOCK_BYTES = {UBC1: 8, UBC2: 16, UBC3: 16}

rng = np.random.default_rng(7)


def fmt(base, order=0):
    return (base << 24) | (order << 12)


def random_bytes(count):
    return rng.integers(0, 256, count, dtype=np.uint8).tobytes()


# -- building files ------------------------------------------------------------------------------


def texture(format_word, layout, width, height, data, palette=-1, mips=1):
    return (
        {"format": format_word, "type": layout, "width": width, "height": height, "data": data},
        palette,
        mips,
    )


def build(textures, p4=(), p8=(), between=b"", trailing=b"", gap=16):
    """A GXT file: header, records, ``between``, texture data (each followed by ``gap`` bytes), palettes."""
    data_offset = 0x20 + 0x20 * len(textures) + len(between)
    block, records = b"", b""
    for info, palette, mips in textures:
        records += struct.pack(
            "<IIiIIIHHB3s",
            data_offset + len(block),
            len(info["data"]),
            palette,
            0,
            info["type"],
            info["format"],
            info["width"],
            info["height"],
            mips,
            b"\0\0\0",
        )
        block += info["data"] + bytes(range(gap))
    block += b"".join(p4) + b"".join(p8)
    header = struct.pack(
        "<4s7I", b"GXT\0", VERSION, len(textures), data_offset, len(block), len(p4), len(p8), 0
    )
    return header + records + between + block + trailing


# -- the plain reference ---------------------------------------------------------------------------


def widen(value, bits):
    """An n-bit value → 8 bits by repeating its bits."""
    return int((format(value, f"0{bits}b") * 8)[:8], 2)


def pow2(value):
    size = 1
    while size < value:
        size *= 2
    return size


def morton(x, y, width, height):
    """Storage index of unit (x, y) in a width × height grid: y in bit 0, x in bit 1 inside squares."""
    side = min(pow2(width), pow2(height))
    index, bit = 0, 0
    while (1 << bit) < side:
        index |= ((y >> bit) & 1) << (2 * bit)
        index |= ((x >> bit) & 1) << (2 * bit + 1)
        bit += 1
    return index + (((x >> bit) + (y >> bit)) << (2 * bit))


def unit_index(layout, x, y, units_across, units_down, row_units):
    if layout in MORTON_LAYOUTS:
        return morton(x, y, units_across, units_down)
    if layout in (LINEAR, STRIDED):
        return y * row_units + x
    tile_across, tile_down = row_units  # tiled: units per tile side
    tiles_per_row = -(-units_across // tile_across)
    tile = (y // tile_down) * tiles_per_row + x // tile_across
    return tile * tile_across * tile_down + (y % tile_down) * tile_across + x % tile_across


def storage_units(layout, units_across, units_down, row_units):
    """How many units the generated data holds for a layout."""
    if layout in MORTON_LAYOUTS:
        return pow2(units_across) * pow2(units_down)
    if layout in (LINEAR, STRIDED):
        return row_units * units_down
    tile_across, tile_down = row_units
    return -(-units_across // tile_across) * -(-units_down // tile_down) * tile_across * tile_down


def packed_rgba(base, order, word):
    bits, widths = PACKED[base]
    if len(widths) == 4:
        names = ORDERS4[order]
        if order in (2, 3, 6, 7):  # alpha last: the widths reverse
            widths = widths[::-1]
    else:
        names = ("BGR", "RGB")[order]
    fields, position = {}, bits
    for name, width in zip(names, widths, strict=True):
        position -= width
        fields[name] = widen((word >> position) & ((1 << width) - 1), width)
    return (fields["R"], fields["G"], fields["B"], fields.get("A", 255))


def texel_rgba(base, order, raw):
    word = int.from_bytes(raw, "little")
    if base == U8:
        return ONE[order](word)
    if base == U88:
        return TWO[order](word & 255, word >> 8)
    return packed_rgba(base, order, word)


def palette_rgba(entries, order):
    return [packed_rgba(U8888, order, word) for word in struct.unpack(f"<{len(entries) // 4}I", entries)]


def reference_decode(base, order, layout, width, height, data, row_units=None, palette=b""):
    """Texel by texel: find the unit, read it, decode it."""
    image = np.zeros((height, width, 4), np.uint8)
    colours = palette_rgba(palette, order) if palette else None
    for y in range(height):
        for x in range(width):
            index = unit_index(layout, x, y, width, height, row_units)
            if base == P4:
                image[y, x] = colours[(data[index // 2] >> (4 * (index % 2))) & 15]
            elif base == P8:
                image[y, x] = colours[data[index]]
            else:
                size = BITS[base] // 8
                image[y, x] = texel_rgba(base, order, data[index * size : index * size + size])
    return image


def reference_block(base, block):
    """One BC block → 16 RGBA texels, thirds rounded as the project's DDS decoder does."""
    colour = block[-8:]
    c0, c1, bits = struct.unpack("<HHI", colour)

    def rgb(c):
        return (widen(c >> 11, 5), widen((c >> 5) & 63, 6), widen(c & 31, 5))

    a, b = rgb(c0), rgb(c1)
    if c0 > c1 or base != UBC1:
        third = tuple((2 * p + q + 1) // 3 for p, q in zip(a, b, strict=True))
        two_thirds = tuple((p + 2 * q + 1) // 3 for p, q in zip(a, b, strict=True))
        palette = [(*a, 255), (*b, 255), (*third, 255), (*two_thirds, 255)]
    else:
        palette = [
            (*a, 255),
            (*b, 255),
            (*((p + q) // 2 for p, q in zip(a, b, strict=True)), 255),
            (0, 0, 0, 0),
        ]
    texels = [list(palette[(bits >> (2 * i)) & 3]) for i in range(16)]
    if base == UBC2:
        alpha = int.from_bytes(block[:8], "little")
        for i in range(16):
            texels[i][3] = widen((alpha >> (4 * i)) & 15, 4)
    elif base == UBC3:
        a0, a1 = block[0], block[1]
        if a0 > a1:
            levels = [a0, a1] + [((7 - i) * a0 + i * a1 + 3) // 7 for i in range(1, 7)]
        else:
            levels = [a0, a1] + [((5 - i) * a0 + i * a1 + 2) // 5 for i in range(1, 5)] + [0, 255]
        indices = int.from_bytes(block[2:8], "little")
        for i in range(16):
            texels[i][3] = levels[(indices >> (3 * i)) & 7]
    return texels


def reference_bc(base, layout, width, height, data, row_units=None):
    size = BLOCK_BYTES[base]
    across, down = -(-width // 4), -(-height // 4)
    image = np.zeros((height, width, 4), np.uint8)
    for y in range(height):
        for x in range(width):
            index = unit_index(layout, x // 4, y // 4, across, down, row_units)
            block = reference_block(base, data[index * size : index * size + size])
            image[y, x] = block[(y % 4) * 4 + x % 4]
    return image


# -- every base × order × layout ---------------------------------------------------------------------

NAMES = {U8: "U8", U88: "U8U8", U4444: "U4444", U1555: "U1555", U8888: "U8888", U565: "U565", U888: "U888"}
NAMES.update({P4: "P4", P8: "P8", UBC1: "UBC1", UBC2: "UBC2", UBC3: "UBC3", PVRT2: "PVRT2", PVRT4: "PVRT4"})
TEXEL_FORMATS = [
    pytest.param(base, order, id=f"{NAMES[base]}-order{order}")
    for base, orders in [(U8, 8), (U88, 6), (U4444, 8), (U1555, 8), (U8888, 8), (U565, 2), (U888, 2)]
    for order in range(orders)
] + [
    pytest.param(base, order, id=f"{NAMES[base]}-order{order}")
    for base in (P4, P8)
    for order in (0, 1, 2, 3, 4, 7)
]
LAYOUT_NAMES = {SWIZZLED: "swizzled", CUBE: "cube", LINEAR: "linear", TILED: "tiled"}
LAYOUT_NAMES.update({ARBITRARY: "arbitrary", STRIDED: "strided"})


def layouts(*cases):
    return [pytest.param(*case, id=f"{LAYOUT_NAMES[case[0]]}-{case[1]}x{case[2]}") for case in cases]


# layout, width, height (texels); arbitrary sizes are cropped from the power-of-two grid.
LAYOUTS = layouts(
    (SWIZZLED, 16, 8),
    (SWIZZLED, 4, 16),
    (ARBITRARY, 12, 6),
    (CUBE, 8, 8),
    (LINEAR, 10, 5),
    (STRIDED, 10, 5),
    (TILED, 40, 36),
)


def layout_rows(layout, width, bits, unit_width=1, unit_height=1):
    """Row length (units) of linear layouts, tile size (units) of tiled ones, for the generator."""
    if layout == LINEAR:
        return -(-width // max(unit_width, 8) * max(unit_width, 8)) // unit_width
    if layout == STRIDED:
        row_bytes = -(-width // unit_width) * bits * unit_width * unit_height // 8
        return (row_bytes + 12) * 8 // (bits * unit_width * unit_height)  # a stride wider than a row
    if layout == TILED:
        return (32 // unit_width, 32 // unit_height)
    return None


def one_texture_file(format_word, layout, width, height, data, palette=-1, p4=(), p8=()):
    faces = 6 if layout == CUBE else 1
    return build([texture(format_word, layout, width, height, data * faces, palette)], p4=p4, p8=p8)


def texel_file(base, order, layout, width, height):
    """A random texture of a texel or palette format, with its reference decode."""
    rows = layout_rows(layout, width, BITS[base])
    data = random_bytes((storage_units(layout, width, height, rows) * BITS[base] + 7) // 8)
    palette = random_bytes(64 if base == P4 else 1024) if base in (P4, P8) else b""
    file = one_texture_file(
        fmt(base, order),
        layout,
        width,
        height,
        data,
        {P4: 1, P8: 0}.get(base, -1),  # the P4 texture uses the second of two palettes
        p4=[random_bytes(64), palette] if base == P4 else (),
        p8=[palette] if base == P8 else (),
    )
    return file, reference_decode(base, order, layout, width, height, data, rows, palette)


@pytest.mark.parametrize("layout,width,height", LAYOUTS)
@pytest.mark.parametrize("base,order", TEXEL_FORMATS)
def test_texel_formats_decode_like_the_reference_and_round_trip(base, order, layout, width, height):
    file, expected = texel_file(base, order, layout, width, height)
    model = gxt.read(file, "t.gxt")
    assert gxt.write(model) == file
    assert np.array_equal(gxt.decode(model, 0), expected)


@pytest.mark.parametrize(
    "layout,width,height",
    layouts(
        (SWIZZLED, 16, 8),
        (SWIZZLED, 8, 32),
        (ARBITRARY, 20, 12),
        (CUBE, 8, 8),
        (LINEAR, 20, 8),
        (TILED, 40, 36),
    ),
)
@pytest.mark.parametrize("base", [UBC1, UBC2, UBC3], ids=["UBC1", "UBC2", "UBC3"])
def test_bc_blocks_decode_like_the_reference_in_every_layout(base, layout, width, height):
    rows = layout_rows(layout, width, 4 if base == UBC1 else 8, 4, 4)
    across, down = -(-width // 4), -(-height // 4)
    data = random_bytes(storage_units(layout, across, down, rows) * BLOCK_BYTES[base])
    file = one_texture_file(fmt(base), layout, width, height, data)
    model = gxt.read(file)
    assert gxt.write(model) == file
    assert np.array_equal(gxt.decode(model, 0), reference_bc(base, layout, width, height, data, rows))


@pytest.mark.parametrize(
    "base,order,stored,rgba",
    [
        (U8888, 0, [1, 2, 3, 4], (1, 2, 3, 4)),  # ABGR: bytes R, G, B, A
        (U8888, 1, [1, 2, 3, 4], (3, 2, 1, 4)),  # ARGB: bytes B, G, R, A
        (U565, 1, [0x00, 0xF8], (255, 0, 0, 255)),  # RGB: red in the top 5 bits
        (U565, 0, [0x00, 0xF8], (0, 0, 255, 255)),  # BGR: blue there
        (U1555, 1, [0x00, 0xFC], (255, 0, 0, 255)),  # A1 R5 G5 B5
        (U1555, 1, [0x00, 0x7C], (255, 0, 0, 0)),
        (U1555, 2, [0x01, 0xF8], (255, 0, 0, 255)),  # U5U5U5U1 RGBA: alpha in bit 0
        (U4444, 0, [0x21, 0x43], (0x11, 0x22, 0x33, 0x44)),
        (U888, 0, [1, 2, 3], (1, 2, 3, 255)),  # BGR: bytes R, G, B
        (U88, 2, [0x40, 0x80], (0x40, 0x40, 0x40, 0x80)),  # GRRR = A8L8
        (U88, 3, [0x40, 0x80], (0x80, 0x80, 0x80, 0x40)),  # RGGG = L8A8
        (U8, 5, [0x7F], (0x7F, 0x7F, 0x7F, 255)),  # 1RRR = L8
        (U8, 6, [0x7F], (0, 0, 0, 0x7F)),  # R000 = A8
    ],
)
def test_known_texels(base, order, stored, rgba):
    model = gxt.read(one_texture_file(fmt(base, order), SWIZZLED, 1, 1, bytes(stored)))
    assert tuple(gxt.decode(model, 0)[0, 0]) == rgba


def test_p4_reads_the_low_nibble_first():
    palette = b"".join(struct.pack("<I", 0xFF000000 | value) for value in range(16))  # ABGR: red = index
    model = gxt.read(one_texture_file(fmt(P4), LINEAR, 2, 1, b"\x21\0\0\0", 0, p4=[palette]))
    assert gxt.decode(model, 0)[0, :, 0].tolist() == [1, 2]


def test_mip_levels_follow_each_other_from_the_largest():
    levels = [random_bytes(4 * side * side) for side in (8, 4, 2, 1)]
    model = gxt.read(build([texture(fmt(U8888), SWIZZLED, 8, 8, b"".join(levels), mips=4)]))
    for level, (side, data) in enumerate(zip((8, 4, 2, 1), levels, strict=True)):
        expected = reference_decode(U8888, 0, SWIZZLED, side, side, data)
        assert np.array_equal(gxt.decode(model, 0, level), expected)
    with pytest.raises(FormatError, match="mip level 4"):
        gxt.decode(model, 0, 4)


def test_a_file_with_several_textures_a_buv_chunk_and_trailing_bytes_round_trips():
    buv = b"BUV\0" + struct.pack("<I", 2) + bytes(24)
    p4 = [random_bytes(64) for _ in range(2)]
    p8 = [random_bytes(1024)]
    textures = [
        texture(fmt(P4, 1), SWIZZLED, 8, 8, random_bytes(32), palette=1),
        texture(fmt(P8), LINEAR, 8, 4, random_bytes(32), palette=0),
        texture(fmt(UBC3), SWIZZLED, 8, 8, random_bytes(64)),
    ]
    file = build(textures, p4=p4, p8=p8, between=buv, trailing=b"tail")
    model = gxt.read(file, "several.gxt")
    assert gxt.write(model) == file
    assert model.between == buv and model.trailing == b"tail"
    assert [gxt.decode(model, i).shape for i in range(3)] == [(8, 8, 4), (4, 8, 4), (8, 8, 4)]
    summary = gxt.summarize(file, "several.gxt")
    assert "3 texture(s), 2 P4 and 1 P8 palette(s)" in summary
    assert "BUV chunk: 2 rectangle(s)" in summary
    assert "texture 0: 8×8 P4_ARGB, swizzled, 1 mip level(s), palette P4 #1" in summary
    assert "texture 1: 8×4 P8_ABGR, linear" in summary
    assert "4 bytes after the data block" in summary


# -- BC and PVRTC against texture2ddecoder -----------------------------------------------------------


def morton_order(units_across, units_down):
    """Row-major unit i → its position in Morton storage."""
    return [morton(x, y, units_across, units_down) for y in range(units_down) for x in range(units_across)]


def swizzle_blocks(row_major, across, down, size):
    stored = bytearray(len(row_major))
    for i, index in enumerate(morton_order(across, down)):
        stored[index * size : index * size + size] = row_major[i * size : i * size + size]
    return bytes(stored)


@pytest.mark.parametrize("base", [UBC1, UBC3])
def test_bc_agrees_with_texture2ddecoder_within_rounding(base):
    texture2ddecoder = pytest.importorskip("texture2ddecoder")
    size = BLOCK_BYTES[base]
    blocks = bytearray(random_bytes(8 * 4 * size))
    if base == UBC3:  # texture2ddecoder applies the three-colour rule inside BC3: keep four-colour blocks
        for i in range(0, len(blocks), size):
            c0, c1 = struct.unpack_from("<HH", blocks, i + 8)
            struct.pack_into("<HH", blocks, i + 8, max(c0, c1) | 1, min(c0, c1) & ~1)
    model = gxt.read(one_texture_file(fmt(base), SWIZZLED, 32, 16, swizzle_blocks(bytes(blocks), 8, 4, size)))
    ours = gxt.decode(model, 0).astype(int)
    decoder = texture2ddecoder.decode_bc1 if base == UBC1 else texture2ddecoder.decode_bc3
    theirs = np.frombuffer(decoder(bytes(blocks), 32, 16), np.uint8).reshape(16, 32, 4)[..., [2, 1, 0, 3]]
    # texture2ddecoder truncates thirds and ignores BC1 transparency: compare colour within 1.
    channels = 3 if base == UBC1 else 4
    assert np.abs(ours[..., :channels] - theirs[..., :channels]).max() <= 1


@pytest.mark.parametrize(
    "base,width,height",
    [
        (PVRT4, 16, 16),
        (PVRT4, 32, 8),
        (PVRT4, 8, 32),
        (PVRT4, 4, 4),
        (PVRT4, 12, 12),
        (PVRT2, 32, 16),
        (PVRT2, 16, 32),
        (PVRT2, 8, 4),
        (PVRT2, 24, 12),
    ],
)
def test_pvrtc_is_bit_exact_with_texture2ddecoder(base, width, height):
    texture2ddecoder = pytest.importorskip("texture2ddecoder")
    word_width = 8 if base == PVRT2 else 4
    grid_width, grid_height = pow2(-(-width // word_width)), pow2(-(-height // 4))
    data = random_bytes(grid_width * grid_height * 8)
    layout = SWIZZLED if (width, height) == (pow2(width), pow2(height)) else ARBITRARY
    model = gxt.read(one_texture_file(fmt(base), layout, width, height, data))
    full_width, full_height = grid_width * word_width, grid_height * 4
    theirs = texture2ddecoder.decode_pvrtc(data, full_width, full_height, base == PVRT2)
    theirs = np.frombuffer(theirs, np.uint8).reshape(full_height, full_width, 4)[
        :height, :width, [2, 1, 0, 3]
    ]
    assert np.array_equal(gxt.decode(model, 0), theirs)


def test_pvrtc_words_of_one_colour_decode_to_that_colour():
    # Opaque A = B = pure red (5-bit 31): every texel is red whatever its modulation.
    red_a, red_b = 0x8000 | (31 << 10), 0x8000 | (31 << 10)
    word = struct.pack("<II", 0x12345678, red_a | (red_b << 16))
    model = gxt.read(one_texture_file(fmt(PVRT4), SWIZZLED, 8, 8, word * 4))
    assert (gxt.decode(model, 0) == [255, 0, 0, 255]).all()


def test_pvrtc_1bgr_is_opaque_and_pvrtc2_is_refused():
    translucent = struct.pack("<II", 0, 0x00000000) * 4  # both endpoints fully transparent
    model = gxt.read(one_texture_file(fmt(PVRT4, 4), SWIZZLED, 8, 8, translucent))
    assert (gxt.decode(model, 0)[..., 3] == 255).all()
    model = gxt.read(one_texture_file(fmt(PVRTII4), SWIZZLED, 8, 8, translucent))
    with pytest.raises(FormatError, match="PVRTII4BPP.*unsupported"):
        gxt.decode(model, 0)


# -- encode ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout,width,height", LAYOUTS)
@pytest.mark.parametrize("base,order", TEXEL_FORMATS)
def test_encoding_decoded_pixels_is_exact(base, order, layout, width, height):
    file, expected = texel_file(base, order, layout, width, height)
    model = gxt.read(file, "t.gxt")
    encoded = gxt.encode(model, 0, expected)
    again = gxt.read(gxt.write(encoded), "t.gxt")
    assert np.array_equal(gxt.decode(again, 0), expected)
    assert again.textures[0].data_size == model.textures[0].data_size


def test_encoding_an_unchanged_swizzled_texture_gives_the_same_file():
    file, pixels = texel_file(U8888, 1, SWIZZLED, 16, 8)
    assert gxt.write(gxt.encode(gxt.read(file), 0, pixels)) == file


def test_mip_levels_are_rebuilt_from_the_new_pixels():
    model = gxt.read(build([texture(fmt(U8888), SWIZZLED, 4, 4, random_bytes(64 + 16 + 4), mips=3)]))
    pixels = rng.integers(0, 256, (4, 4, 4), dtype=np.uint8)
    encoded = gxt.encode(model, 0, pixels)
    half = (pixels.astype(int).reshape(2, 2, 2, 2, 4).sum(axis=(1, 3)) + 2) // 4
    assert np.array_equal(gxt.decode(encoded, 0, 1), half)
    assert np.array_equal(gxt.decode(encoded, 0, 2)[0, 0], (half.sum(axis=(0, 1)) + 2) // 4)


def test_a_resized_texture_moves_the_following_data_and_keeps_the_palettes():
    p8 = [random_bytes(1024)]
    textures = [
        texture(fmt(U8888), SWIZZLED, 8, 8, random_bytes(256)),
        texture(fmt(P8), SWIZZLED, 8, 8, random_bytes(64), palette=0),
        texture(fmt(UBC1), LINEAR, 8, 8, random_bytes(32)),
    ]
    model = gxt.read(build(textures, p8=p8, trailing=b"end"), "moved.gxt")
    before = [gxt.decode(model, i) for i in (1, 2)]
    pixels = rng.integers(0, 256, (20, 12, 4), dtype=np.uint8)  # not a power of two
    encoded = gxt.read(gxt.write(gxt.encode(model, 0, pixels)), "moved.gxt")
    first = encoded.textures[0]
    assert (first.width, first.height, first.texture_type) == (12, 20, ARBITRARY)
    assert first.data_size == 16 * 32 * 4
    assert np.array_equal(gxt.decode(encoded, 0), pixels)
    shift = encoded.textures[1].data_offset - model.textures[1].data_offset
    assert shift >= first.data_size - 256 and shift % 64 == 0
    assert all(np.array_equal(gxt.decode(encoded, i), old) for i, old in zip((1, 2), before, strict=True))
    assert encoded.data[-1024:] == p8[0] and encoded.trailing == b"end"


def test_palette_textures_get_exact_palettes_and_shared_ones_are_split():
    p4 = [random_bytes(64)]
    textures = [
        texture(fmt(P4), SWIZZLED, 8, 8, random_bytes(32), palette=0),
        texture(fmt(P4), SWIZZLED, 8, 8, random_bytes(32), palette=0),
    ]
    model = gxt.read(build(textures, p4=p4))
    other = gxt.decode(model, 1)
    colours = rng.integers(0, 256, (16, 4), dtype=np.uint8)
    pixels = colours[rng.integers(0, 16, (8, 8))]
    encoded = gxt.read(gxt.write(gxt.encode(model, 0, pixels)))
    assert encoded.p4_palette_count == 2 and encoded.textures[0].palette_index == 1
    assert np.array_equal(gxt.decode(encoded, 0), pixels)
    assert np.array_equal(gxt.decode(encoded, 1), other)
    # Not shared any more: the next edit rewrites palette 1 in place.
    again = gxt.encode(encoded, 0, pixels[::-1])
    assert again.p4_palette_count == 2 and np.array_equal(gxt.decode(again, 0), pixels[::-1])


def test_p8_with_too_many_colours_is_reduced_by_median_cut():
    model = gxt.read(
        one_texture_file(fmt(P8), SWIZZLED, 32, 32, random_bytes(1024), 0, p8=[random_bytes(1024)])
    )
    gradient = np.zeros((32, 32, 4), np.uint8)
    gradient[..., 0] = np.arange(32)[None, :] * 8
    gradient[..., 1] = np.arange(32)[:, None] * 8
    gradient[..., 2], gradient[..., 3] = 128, 255
    decoded = gxt.decode(gxt.encode(model, 0, gradient), 0).astype(int)
    assert np.abs(decoded - gradient).max() <= 16


@pytest.mark.parametrize("base,name", [(UBC1, "DXT1"), (UBC2, "DXT3"), (UBC3, "DXT5")])
def test_bc_encoding_reuses_the_dxt_encoder_with_blocks_in_morton_order(base, name):
    model = gxt.read(one_texture_file(fmt(base), SWIZZLED, 16, 8, random_bytes(8 * BLOCK_BYTES[base])))
    pixels = rng.integers(0, 256, (8, 16, 4), dtype=np.uint8)
    encoded = gxt.encode(model, 0, pixels)
    expected = swizzle_blocks(dds.encode_blocks(name, pixels), 4, 2, BLOCK_BYTES[base])
    assert encoded.texture_data(0) == expected


@pytest.mark.parametrize("base", [UBC1, UBC2, UBC3])
def test_bc_encoding_error_is_bounded(base):
    model = gxt.read(one_texture_file(fmt(base), SWIZZLED, 64, 64, random_bytes(256 * BLOCK_BYTES[base])))
    y, x = np.mgrid[0:64, 0:64]
    smooth = np.stack([x * 4, y * 4, (x + y) * 2, np.full_like(x, 255)], axis=-1).astype(np.uint8)
    decoded = gxt.decode(gxt.encode(model, 0, smooth), 0).astype(int)
    error = np.abs(decoded - smooth)
    assert error.mean() < 2.5 and error.max() <= 12
    # Flat blocks in colours RGB565 holds exactly come back exactly.
    flat = np.zeros((64, 64, 4), np.uint8)
    flat[...] = [255, 0, 132, 255]  # 132 = 5-bit 16 widened
    assert np.array_equal(gxt.decode(gxt.encode(model, 0, flat), 0), flat)


def test_tiled_and_strided_textures_of_a_new_size_encode_exactly():
    for layout in (TILED, STRIDED, LINEAR):
        file, _ = texel_file(U8888, 0, layout, 10, 5)
        pixels = rng.integers(0, 256, (40, 37, 4), dtype=np.uint8)
        encoded = gxt.read(gxt.write(gxt.encode(gxt.read(file), 0, pixels)))
        assert np.array_equal(gxt.decode(encoded, 0), pixels), hex(layout)


def test_pvrtc_and_resized_cube_maps_are_refused_naming_the_texture():
    model = gxt.read(one_texture_file(fmt(PVRT4), SWIZZLED, 8, 8, random_bytes(32)), "vita.gxt")
    with pytest.raises(ExportError, match=r"vita.gxt: texture 0 \(PVRT4BPP_ABGR\): re-encoding PVRTC is not"):
        gxt.encode(model, 0, np.zeros((8, 8, 4), np.uint8))
    file, pixels = texel_file(U8888, 0, CUBE, 8, 8)
    cube = gxt.read(file)
    assert np.array_equal(gxt.decode(gxt.encode(cube, 0, pixels[::-1]), 0), pixels[::-1])
    with pytest.raises(ExportError, match="cube map keeps its 8×8 size"):
        gxt.encode(cube, 0, np.zeros((16, 16, 4), np.uint8))


# -- hostile input -----------------------------------------------------------------------------------


def read_everything(data):
    """Read a file and decode every level of every texture; FormatError is the only failure allowed."""
    model = gxt.read(data, "hostile.gxt")
    for index, texture_record in enumerate(model.textures):
        for level in range(min(texture_record.level_count, 3)):
            try:
                gxt.decode(model, index, level)
            except FormatError:
                pass
    return model


def sample_file():
    return build(
        [
            texture(fmt(U8888), SWIZZLED, 4, 4, random_bytes(64 + 16 + 4), mips=3),
            texture(fmt(P4), LINEAR, 8, 4, random_bytes(16), palette=0),
            texture(fmt(PVRT2), SWIZZLED, 16, 8, random_bytes(16)),
        ],
        p4=[random_bytes(64)],
        between=b"BUV\0" + struct.pack("<I", 1) + bytes(12),
    )


def test_every_truncation_raises_format_error():
    data = sample_file()
    read_everything(data)
    for end in range(0, len(data), 4):
        with pytest.raises(FormatError):
            gxt.read(data[:end], "cut.gxt")


def patched(data, offset, fmt_code, value):
    out = bytearray(data)
    struct.pack_into("<" + fmt_code, out, offset, value)
    return bytes(out)


RECORD_0 = 0x20


@pytest.mark.parametrize(
    "offset,code,value,problem",
    [
        (0, "4s", b"GXT1", "magic"),
        (4, "I", 0x10000001, "version 0x10000001 is not supported"),
        (4, "I", 0x10000002, "version 0x10000002 is not supported"),
        (4, "I", 7, "unknown GXT version"),
        (8, "I", 0xFFFFFFFF, "texture record"),
        (12, "I", 0xFFFFFFFF, "data block"),
        (12, "I", 0x20, "overlaps the 3 texture records"),
        (16, "I", 0xFFFFFFFF, "data block"),
        (20, "I", 0xFFFFFFFF, "palettes"),
        (24, "I", 0xFFFFFFFF, "palettes"),
        (RECORD_0, "I", 0xFFFFFFFF, "outside the data block"),
        (RECORD_0 + 4, "I", 0xFFFFFFFF, "outside the data block"),
        (RECORD_0 + 0x28, "i", 5, "uses palette 5"),
        (RECORD_0 + 0x28, "i", -1, "uses palette -1"),
    ],
)
def test_hostile_headers_and_records_raise_format_error(offset, code, value, problem):
    with pytest.raises(FormatError, match=problem):
        gxt.read(patched(sample_file(), offset, code, value), "hostile.gxt")


@pytest.mark.parametrize(
    "offset,code,value,data_size,level,problem",
    [
        (RECORD_0 + 0x18, "H", 0xFFFF, None, 0, "bytes remain"),  # width
        (RECORD_0 + 0x1A, "H", 0xFFFF, None, 0, "bytes remain"),  # height
        (RECORD_0 + 0x18, "H", 0, None, 0, "empty"),
        (RECORD_0 + 0x14, "I", 0xFFFFFFFF, None, 0, "not supported"),  # format
        (RECORD_0 + 0x14, "I", fmt(U565, 5), None, 0, "component order 5"),
        (RECORD_0 + 0x10, "I", 0x20000000, None, 0, "unknown texture type"),
        (RECORD_0 + 0x10, "I", STRIDED, 8, 0, "row stride of 2 bytes"),
        (RECORD_0 + 0x1C, "B", 255, 64, 1, "bytes remain"),  # mip count: level 1 beyond the data
    ],
)
def test_hostile_texture_fields_raise_format_error_on_decode(offset, code, value, data_size, level, problem):
    model = gxt.read(patched(sample_file(), offset, code, value), "hostile.gxt")
    if data_size is not None:
        model.textures[0].data_size = data_size
    with pytest.raises(FormatError, match=problem):
        gxt.decode(model, 0, level)


def test_huge_sizes_fail_before_allocating():
    data = build([texture(fmt(U8888), ARBITRARY, 0xFFFF, 0xFFFF, random_bytes(64))])
    with pytest.raises(FormatError, match="bytes remain"):
        gxt.decode(gxt.read(data), 0)
    data = build([texture(fmt(PVRT2), SWIZZLED, 0xFFFF, 0xFFFF, random_bytes(64))])
    with pytest.raises(FormatError, match="bytes remain"):
        gxt.decode(gxt.read(data), 0)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=8))
def test_random_corruption_raises_only_format_error(changes):
    data = bytearray(sample_file())
    for position, value in changes:
        data[position % len(data)] = value
    try:
        read_everything(bytes(data))
    except FormatError:
        pass
