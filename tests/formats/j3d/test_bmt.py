"""MAT3, TEX1 and BMT from hand-built bytes and cut from the real models."""

import struct

import numpy as np
import pytest
import support
from hypothesis import given, settings
from hypothesis import strategies as st
from j3d_fixtures import bmt_bytes, j3d, mat3_bytes, tex1_bytes
from retro_models.formats.errors import FormatError
from retro_models.formats.j3d import bmt
from retro_models.formats.j3d.mat3 import MAT3, MATERIAL_DTYPE, TABLES, read_mat3, write_mat3
from retro_models.formats.j3d.tex1 import BTI_DTYPE, read_tex1, write_tex1


def test_record_sizes():
    assert MATERIAL_DTYPE.itemsize == 0x14C
    assert BTI_DTYPE.itemsize == 0x20
    assert len(TABLES) == 30


def test_mat3_fields():
    data = mat3_bytes()
    mat3 = read_mat3(data, 0, len(data), "m.bin")
    assert mat3.names == ["m1"] and mat3.remap.tolist() == [0] and mat3.marker == 0xFFFF
    record = mat3.material(0)
    assert record["flag"] == 1 and record["textures"].tolist() == [3] + [0xFFFF] * 7
    assert record["nbt_scale"] == 0xFFFF
    assert mat3.order == ["materials", "remap", "names", "cull_modes", "material_colors"]
    assert mat3.tables["cull_modes"] == struct.pack(">2I", 0, 1)
    assert mat3.tables["material_colors"][:4] == bytes([255, 128, 0, 255])
    assert mat3.padding_after == {}
    assert write_mat3(mat3) == data


def test_mat3_from_scratch_uses_table_order():
    record = np.zeros(1, MATERIAL_DTYPE)
    mat3 = MAT3(record, np.array([0], ">u2"), ["a"], {"blend": b"\x01\x02\x03\x04"})
    data = write_mat3(mat3)
    offsets = struct.unpack(">30I", data[12:132])
    assert offsets[0] == 0x84 and offsets[TABLES.index("blend")] > offsets[2]
    again = read_mat3(data, 0, len(data), "fresh")
    assert again.names == ["a"] and again.tables["blend"][:4] == b"\x01\x02\x03\x04"
    assert len(data) % 32 == 0


def test_tex1_fields():
    data = tex1_bytes()
    tex1 = read_tex1(data, 0, len(data), "t.bin")
    header = tex1.headers[0]
    assert (header["format"], header["width"], header["height"]) == (1, 8, 4)
    assert (header["wrap_s"], header["wrap_t"], header["min_filter"], header["mip_count"]) == (0, 1, 1, 1)
    assert tex1.names == ["t"]
    assert tex1.data == bytes(range(0, 256, 8))
    assert tex1.data_positions().tolist() == [0]
    assert write_tex1(tex1) == data


def test_bmt_round_trip_and_sections():
    data = bmt_bytes()
    model = bmt.read(data, "tiny.bmt")
    assert model.mat3.names == ["m1"] and model.tex1.names == ["t"]
    assert model.framing.tag == b"SVR3" + b"\xff" * 12
    assert bmt.write(model) == data


def test_bmt_with_a_wrong_section_count():
    data = bytearray(bmt_bytes())
    data[0x0C:0x10] = struct.pack(">I", 3)
    model = bmt.read(bytes(data))
    assert model.framing.section_count_delta == 1
    assert bmt.write(model) == bytes(data)


def test_bmt_without_textures():
    data = j3d(b"J3D2", b"bmt3", [mat3_bytes()])
    model = bmt.read(data)
    assert model.tex1 is None and bmt.write(model) == data


def test_truncation_raises_or_keeps_every_byte():
    data = bmt_bytes()
    section_ends = (0x20 + len(mat3_bytes()), len(data))
    for size in range(len(data)):
        try:
            model = bmt.read(data[:size], "cut")
        except FormatError:
            continue
        # Only padding at the end of the (then) last section may be missing, or fewer bytes of the
        # next one than a section header (kept as the trailer); nothing is lost.
        assert any(end - 32 <= size < end + 8 for end in section_ends)
        assert bmt.write(model) == data[:size]


@pytest.mark.parametrize(
    "offset, value, problem",
    [
        (0x04, b"bmd3", "file type"),
        (0x28, b"\x00\x05", "remap"),  # material count
        (0x30, b"\x00\x00\x00\x10", "outside the section"),  # remap offset below the header
        (0x30, b"\x00\x00\xff\xf0", "outside the section"),
        (0x20 + 0x1D0, b"\x00\x09", "materials"),  # remap points past the records
        (0x20 + 0x1D4, b"\x00\x02", "name table"),
        (0x220 + 0x10, b"\x00\x00\x00\x00", "name table expected between"),
        (0x220 + 0x0C, b"\x00\x00\x0f\x00", "texture headers"),
        (0x220 + 0x3C, b"\x00\x00\x10\x00", "data_offset points outside"),
    ],
)
def test_corrupt_fields(offset, value, problem):
    data = bytearray(bmt_bytes())
    data[offset : offset + len(value)] = value
    with pytest.raises(FormatError, match=problem):
        bmt.read(bytes(data), "bad.bmt")


def test_materials_need_mat3():
    from j3d_fixtures import tex1_bytes as texture_section

    with pytest.raises(FormatError, match="MAT3"):
        bmt.read(j3d(b"J3D2", b"bmt3", [texture_section()]))


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_random_corruption_raises_only_format_errors(data):
    raw = bytearray(bmt_bytes())
    for _ in range(data.draw(st.integers(1, 6))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        model = bmt.read(bytes(raw), "fuzz")
    except FormatError:
        return
    bmt.write(model)


@pytest.mark.parametrize("name", ["driver.bmd", "kindan_Room0_model3.bdl"])
def test_cut_from_corpus_models(name):
    data = support.corpus_file(f"j3d/{name}").read_bytes()
    cut = bmt.cut_from_model(data, name)
    written = bmt.write(cut)
    sections = {}
    position = 0x20
    while position < len(data):
        magic, size = struct.unpack_from(">4sI", data, position)
        sections[magic] = data[position : position + size]
        position += size
    assert written[:8] == b"J3D2bmt3"
    assert written[0x20:] == sections[b"MAT3"] + sections[b"TEX1"]
    assert struct.unpack_from(">II", written, 8) == (len(written), 2)
    again = bmt.read(written, "cut.bmt")
    assert bmt.write(again) == written
    assert again.mat3.names == cut.mat3.names and again.tex1.names == cut.tex1.names


def test_textures_decode_through_the_gx_codecs():
    from retro_models.formats.j3d.tex1 import decode

    data = tex1_bytes()
    pixels = decode(read_tex1(data, 0, len(data), "t.bin"), 0)
    # I8, one 8×4 tile: texel i has intensity 8·i, RGBA = (I, I, I, I)
    expected = (8 * np.arange(32, dtype=np.uint8)).reshape(4, 8)
    assert pixels.shape == (4, 8, 4)
    assert (pixels == expected[:, :, None]).all()


def test_texels_missing_from_the_data_are_reported_where_they_start_in_the_file():
    from retro_models.formats.j3d.tex1 import decode

    material_set = bmt.read(bmt_bytes(), "set.bmt")
    material_set.tex1.headers["height"][0] = 64  # 8×64 I8 texels: more than the data holds
    with pytest.raises(FormatError, match="TEX1 texture 0: expected I8 texels") as caught:
        decode(material_set.tex1, 0, "set.bmt")
    texels = bytes(range(0, 256, 8))
    assert caught.value.filename == "set.bmt"
    assert bmt_bytes()[caught.value.offset : caught.value.offset + len(texels)] == texels


def test_corpus_textures_decode():
    from retro_models.formats.j3d.tex1 import decode

    cut = bmt.cut_from_model(support.corpus_file("j3d/driver.bmd").read_bytes(), "driver.bmd")
    for index, header in enumerate(cut.tex1.headers):
        pixels = decode(cut.tex1, index)
        assert pixels.shape == (header["height"], header["width"], 4)
