"""Texture CATs as measured on a real pair: one name line per resource, payloads that bundle several
DDS (or GXT) files, textures found by name, written back byte for byte or with rebuilt bundles."""

import struct

import numpy as np
import pytest
import texture_pair
from retro_models.formats import inspect as formats_inspect
from retro_models.formats.errors import ExportError, FormatError
from retro_models.formats.tamsoft import cat, files, texture_cat
from retro_models.formats.tamsoft import inspect as tamsoft_inspect
from retro_models.formats.textures import dds, gxt
from tamsoft_fixtures import cat_bytes


def test_name_list_groups_resources_by_payload():
    container = cat.read(texture_pair.texture_cat())
    groups = texture_cat.entries(container)
    assert [len(g.names) for g in groups] == [5, 1, 1, 1] == [len(p) for p in texture_pair.PAYLOADS]
    assert groups[0].type == "GXT" and groups[0].package == "conv0"
    assert groups[3].names == ["freecos01_name"]  # the last texture keeps its name
    model = cat.read(texture_pair.model_cat())
    assert texture_cat.package_name(model) == "pl00_head"
    assert texture_cat.resource_names(model)[:5] == texture_pair.MODEL_TEXTURES


def test_bundles_split_into_their_dds_files():
    container = cat.read(texture_pair.texture_cat())
    found = texture_cat.resources(container)
    expected = texture_pair.dds_files()
    assert [r.name for r in found] == [n for p in texture_pair.PAYLOADS for n, *_ in p]
    for resource in found:
        data, pixels = expected[resource.name]
        assert resource.format == "DDS" and resource.data[: len(data)] == data
        assert np.array_equal(dds.read(resource.data).decode(), pixels)
    # Every payload is written back as it was, bundles and padding included.
    for payload in container.payloads:
        assert texture_cat.write_bundle(texture_cat.read_bundle(payload)) == payload


def test_rebuilt_bundle_has_offsets_from_the_header_end():
    payload = cat.read(texture_pair.texture_cat()).payloads[0]
    bundle = texture_cat.read_bundle(payload)
    new = b"DDS " + bytes(21)
    rebuilt = texture_cat.write_bundle(texture_cat.rebuild(bundle, {1: new}))
    header_size, count, data_size = struct.unpack_from("<3I", rebuilt)
    offsets = struct.unpack_from("<5I", rebuilt, 12)
    assert (header_size, count) == (0x20, 5)
    assert rebuilt[header_size + offsets[1] : header_size + offsets[2]] == new + bytes(7)  # padded to 16
    assert texture_cat.read_bundle(rebuilt).resources[2] == bundle.resources[2]
    assert data_size == sum(len(r) for r in texture_cat.read_bundle(rebuilt).resources)


def test_model_textures_are_found_by_name_and_named_after_the_package(tmp_path):
    texture_pair.write_pair(tmp_path)
    package = files.open_model(tmp_path / "pl00_head_mdl_hi.cat")
    assert package.name == "pl00_head"
    assert [name for name, _ in package.textures] == texture_pair.MODEL_TEXTURES
    scene = files.load(str(tmp_path / "pl00_head_mdl_hi.cat"), files.ImportOptions())
    assert scene.name == "pl00_head" and not scene.warnings
    expected = texture_pair.dds_files()
    for image in scene.images:
        assert np.array_equal(image.pixels, expected[image.name][1])
    face = scene.images[1]
    assert (face.width, face.height) == (32, 32) and (face.extras["width"], face.extras["height"]) == (16, 16)


def test_uvs_lie_in_the_unit_square_and_go_back_exactly(tmp_path):
    texture_pair.write_pair(tmp_path)
    scene = files.load(str(tmp_path / "pl00_head_mdl_hi.cat"), files.ImportOptions())
    uv = scene.meshes[0].uv_layers[0].data
    assert uv.min() >= 0 and uv.max() <= 1
    np.testing.assert_array_equal(uv, texture_pair.model_scene().meshes[0].uv_layers[0].data)


def save_pair(scene, folder):
    folder.mkdir(exist_ok=True)
    files.save(scene, str(folder / "pl00_head_mdl_hi.cat"), files.ExportOptions())
    return (folder / "pl00_head_mdl_hi.cat").read_bytes(), (folder / "pl00_head_tex_hi.cat").read_bytes()


@pytest.mark.parametrize("vita", [False, True])
def test_unedited_pair_is_written_back_byte_identical(tmp_path, vita):
    model, textures = texture_pair.write_pair(tmp_path, vita=vita)
    scene = files.load(str(tmp_path / "pl00_head_mdl_hi.cat"), files.ImportOptions())
    assert save_pair(scene, tmp_path / "out") == (model, textures)


def test_edited_texture_keeps_its_format_and_only_its_payload_changes(tmp_path):
    _, textures = texture_pair.write_pair(tmp_path, mips=True)
    scene = files.load(str(tmp_path / "pl00_head_mdl_hi.cat"), files.ImportOptions())
    eye, ramp = scene.images[0], scene.images[3]
    new_eye, new_ramp = texture_pair.blocky(16, 16, 50), texture_pair.blocky(16, 4, 51, opaque=False)
    eye.pixels, eye.source_bytes = new_eye, None
    ramp.pixels, ramp.source_bytes = new_ramp, None
    model, written = save_pair(scene, tmp_path / "out")
    before, after = cat.read(textures), cat.read(written)
    assert after.name_block == before.name_block and after.payloads[1:] == before.payloads[1:]
    old, new = texture_cat.read_bundle(before.payloads[0]), texture_cat.read_bundle(after.payloads[0])
    assert new.resources[1] == old.resources[1] and new.resources[4] == old.resources[4]
    eye_dds, ramp_dds = dds.read(new.resources[0]), dds.read(new.resources[3])
    original_eye = dds.read(old.resources[0])
    assert (eye_dds.format, eye_dds.mip_count) == ("DXT1", original_eye.mip_count) == ("DXT1", 5)
    assert eye_dds.header == original_eye.header  # same size: the header is kept as it was
    assert eye_dds.data.startswith(dds.encode_blocks("DXT1", new_eye))  # the project's DXT1 of the edit
    assert np.abs(eye_dds.decode().astype(int) - new_eye).max() <= 4  # 565 endpoints: within half a step
    # The levels were regenerated from the edit: level 1 holds its 2×2 averages.
    assert eye_dds.data[eye_dds.level_size(0) :].startswith(dds.encode_blocks("DXT1", dds.half_size(new_eye)))
    assert eye_dds.decode(4).shape == (1, 1, 4)
    assert ramp_dds.format == "DXT5" and ramp_dds.mip_count == 1
    assert np.array_equal(ramp_dds.decode()[..., 3], new_ramp[..., 3])
    # The model is unchanged, and its texture table keeps its stored sizes.
    assert model == texture_pair.model_cat()


def test_edited_vita_textures_are_encoded_in_their_gxt_format(tmp_path):
    texture_pair.write_pair(tmp_path, vita=True)
    scene = files.load(str(tmp_path / "pl00_head_mdl_hi.cat"), files.ImportOptions())
    assert not scene.warnings
    expected = texture_pair.vita_files()
    for image in scene.images:
        assert np.array_equal(image.pixels, expected[image.name][1]), image.name
    face, ramp = scene.images[1], scene.images[2]
    new_face = texture_pair.blocky(32, 32, 60, opaque=False)
    new_ramp = texture_pair.blocky(16, 4, 61)
    face.pixels, face.source_bytes = new_face, None
    ramp.pixels, ramp.source_bytes = new_ramp, None
    _, written = save_pair(scene, tmp_path / "out")
    bundle = texture_cat.read_bundle(cat.read(written).payloads[0])
    face_gxt, ramp_gxt = gxt.read(bundle.resources[1]), gxt.read(bundle.resources[2])
    assert face_gxt.textures[0].format == texture_pair.VITA_TEXTURES["pl00_face00"][0]
    assert np.array_equal(gxt.decode(face_gxt, 0), new_face)  # 8888: lossless
    assert np.array_equal(gxt.decode(ramp_gxt, 0), new_ramp)  # P8 with few colours: lossless


def test_an_edit_that_cannot_be_encoded_names_the_image(tmp_path):
    texture_pair.write_pair(tmp_path)
    scene = files.load(str(tmp_path / "pl00_head_mdl_hi.cat"), files.ImportOptions())
    face = scene.images[1]
    header = bytearray(face.extras["dds_header"])
    struct.pack_into("<I", header, dds.CAPS2_OFFSET, dds.DDSCAPS2_CUBEMAP)
    face.extras["dds_header"] = bytes(header)
    face.pixels, face.source_bytes = texture_pair.blocky(32, 32, 1), None
    with pytest.raises(ExportError, match="'pl00_face00'"):
        save_pair(scene, tmp_path / "out")
    assert not (tmp_path / "out" / "pl00_head_tex_hi.cat").exists()


def test_inspect_lists_each_payloads_resources(tmp_path):
    _, textures = texture_pair.write_pair(tmp_path)
    text = formats_inspect.summarize(textures, "pl00_head_tex_hi.cat")
    assert "payload 0: bundle of 5" in text
    assert "pl00_face00: DDS 32×32 DXT1" in text and "freecos01_name: DDS 16×8 DXT1" in text
    vita = formats_inspect.summarize(texture_pair.vita_texture_cat(), "pl00_head_tex_hi.cat")
    assert "pl00_eye00: GXT 16×16 UBC1" in vita and "payload 2: GXT of 2" in vita
    model = formats_inspect.summarize(texture_pair.model_cat(), "pl00_head_mdl_hi.cat")
    assert "payload 0: tmd0 model" in model and "names: pl00_eye00, pl00_face00," in model
    assert "starting b'tmd0'" not in model and "textures: 5" in model


def test_detection_reads_only_the_header(tmp_path):
    model, textures = texture_pair.write_pair(tmp_path)
    for data in (model, textures):
        assert tamsoft_inspect.detect(data[: cat.DETECT_BYTES], "x.cat")
        assert tamsoft_inspect.detect(data, "x.cat")
    # Past the first 4096 bytes nothing is read: a broken payload there does not change the answer.
    assert tamsoft_inspect.detect(textures[: cat.DETECT_BYTES] + b"\xff" * 100, "x.cat")
    assert not tamsoft_inspect.detect(b"\x40\0\0\0" + bytes(60), "x.cat")
    named = cat_bytes([b"DDS " + bytes(200)], ["GXT,conv0,顔_face"])  # UTF-8 names are text too
    assert tamsoft_inspect.detect(named, "x.cat")
    assert not tamsoft_inspect.detect(cat_bytes([b"DDS " + bytes(200)], ["\x01\x02,\x03"]), "x.cat")


def test_damaged_texture_cats_give_a_format_error_or_warnings(tmp_path):
    """Every byte of the bundle headers and name list, and random bytes elsewhere, set to hostile values."""
    _, textures = texture_pair.write_pair(tmp_path)
    container = cat.read(textures)
    starts = [container.payload_offset(i) for i in range(len(container.payloads))]
    positions = sorted({*range(starts[0]), *(s + k for s in starts for k in range(32))})
    positions += np.random.default_rng(1).integers(0, len(textures), 60).tolist()
    for position in positions:
        for value in (0x00, 0xFF):
            data = bytearray(textures)
            data[position] = value
            (tmp_path / "pl00_head_tex_hi.cat").write_bytes(data)
            try:
                scene = files.load(str(tmp_path / "pl00_head_mdl_hi.cat"), files.ImportOptions())
            except FormatError as e:
                assert e.filename.endswith("pl00_head_tex_hi.cat")
                continue
            assert len(scene.images) == 5


def test_an_edited_pvrtc_texture_is_refused_by_name(tmp_path):
    from retro_models.formats.textures import gxm

    size = gxm.level_size(gxm.BASES[gxm.PVRT4BPP], gxm.SWIZZLED, 16, 16, 0, False)
    offset = gxt.HEADER.size + gxt.RECORD.size
    record = gxt.GXTTexture(offset, size, -1, 0, gxm.SWIZZLED, gxm.make_format(gxm.PVRT4BPP), 16, 16, 1)
    data = np.random.default_rng(3).integers(0, 256, size, np.uint8).tobytes()
    pvrtc = gxt.write(gxt.GXT([record], data))
    texture_pair.write_pair(tmp_path)
    textures = cat.read((tmp_path / "pl00_head_tex_hi.cat").read_bytes())
    lines = [*texture_pair.TEXTURE_LINES[:2], "GXT,conv0,toon_sdw_non"]  # the third model texture: a bare GXT
    payloads = [*textures.payloads[:1], pvrtc]
    (tmp_path / "pl00_head_tex_hi.cat").write_bytes(cat_bytes(payloads, lines))
    scene = files.load(str(tmp_path / "pl00_head_mdl_hi.cat"), files.ImportOptions())
    ramp = scene.images[2]
    assert ramp.source_format == "GXT PVRT4BPP_ABGR" and ramp.pixels.shape == (16, 16, 4)
    ramp.pixels, ramp.source_bytes = np.zeros((16, 16, 4), np.uint8), None
    with pytest.raises(ExportError, match="'toon_sdw_non'.*PVRTC"):
        save_pair(scene, tmp_path / "out")


def test_a_texture_that_does_not_decode_goes_back_unchanged_and_refuses_edits(tmp_path):
    texture_pair.write_pair(tmp_path)
    data = bytearray((tmp_path / "pl00_head_tex_hi.cat").read_bytes())
    at = bytes(data).index(b"DXT5")  # toon_sdw_non: a block format the decoder does not know
    data[at : at + 4] = b"ATI2"
    (tmp_path / "pl00_head_tex_hi.cat").write_bytes(data)
    scene = files.load(str(tmp_path / "pl00_head_mdl_hi.cat"), files.ImportOptions())
    assert any("toon_sdw_non (cannot decode DDS pixel format ATI2)" in w for w in scene.warnings)
    ramp = scene.images[2]
    assert ramp.pixels is None and (ramp.width, ramp.height) == (16, 4)
    model, textures = save_pair(scene, tmp_path / "out")
    assert textures == bytes(data) and model == texture_pair.model_cat()
    ramp.pixels, ramp.source_bytes = texture_pair.blocky(16, 4, 1), None
    with pytest.raises(ExportError, match="'toon_sdw_non'.*ATI2"):
        save_pair(scene, tmp_path / "again")
