"""tmd0, CAT, bone names and the converter against hand-built bytes."""

import copy
import dataclasses
import json
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from retro_models.formats import extras
from retro_models.formats.errors import ExportError, FormatError
from retro_models.formats.tamsoft import cat, convert, files, inspect, names, texture_cat, tmd0
from tamsoft_fixtures import (
    BONE_HEADS,
    BONE_IDS,
    BOUNDS,
    COLOURS,
    FACES,
    NORMALS,
    POSITIONS,
    TAIL,
    UNKNOWN_BLOCK,
    UVS,
    WEIGHTS,
    cat_bytes,
    crc_name_hash,
    dds_rgba,
    table_offsets,
    tmd0_bytes,
)

LAYOUTS = [("<", True), ("<", False), (">", True), (">", False)]


@pytest.mark.parametrize(("endian", "interleaved"), LAYOUTS)
def test_read_fields(endian, interleaved):
    model = tmd0.read(tmd0_bytes(endian, interleaved))
    assert model.endian == endian and model.interleaved == interleaved
    assert (model.reserved, model.unknown, model.frame_count, model.terminator) == (0, 0x20, 0, 0)
    np.testing.assert_array_equal(model.bounds, BOUNDS)
    v = model.vertices
    np.testing.assert_array_equal(v["position"], POSITIONS)
    np.testing.assert_array_equal(v["normal"], NORMALS)
    np.testing.assert_array_equal(v["weights"], WEIGHTS)
    np.testing.assert_array_equal(v["bone_ids"], BONE_IDS)
    np.testing.assert_array_equal(v["colour"], COLOURS)
    np.testing.assert_array_equal(v["uv0"], UVS)
    np.testing.assert_array_equal(model.faces, FACES)
    assert model.polygroups.tolist() == [(2, 0x0508, 0), (2, 0, 2)]
    assert model.operations.tolist() == [
        (0, 0x40),
        (0, 0x20),
        (0, 0x30),
        (0, 0x10),
        (1, 0x30),
        (0, 0x10),
        (0, 0x30),
    ]
    assert model.draw_list["first"].tolist() == [0, 4] and model.draw_list["count"].tolist() == [4, 3]
    assert model.rigs["count"].tolist() == [2] and model.rigs["bones"][0, :2].tolist() == [0, 1]
    assert model.unknown_count == 1 and model.unknown_block == UNKNOWN_BLOCK
    record = model.materials[0]
    assert record["slot_count"] == 5 and record["tail"].tobytes() == TAIL
    assert record["slots"]["type"].tolist() == [0, 3, 4, 4, 4]
    assert record["slots"]["texture"].tolist() == [0, -1, -1, -1, -1]
    np.testing.assert_array_equal(record["slots"]["params"][1], [2, 2, 0.5, 0.5])
    assert model.textures.tolist() == [(0, 0, 1, 64, 32, 0xFF)]
    assert model.hierarchy["hash"].tolist() == [crc_name_hash("root"), crc_name_hash("face_root")]
    assert model.hierarchy["parent"].tolist() == [-1, 0]
    assert (model.hierarchy["unknown"][0], model.hierarchy["name_offset"][1]) == (7, 5)
    np.testing.assert_array_equal(model.inverse_binds[1][:3, 3], [0, -2, 0])
    assert model.layout.tables["vertices"][0] == table_offsets(endian, interleaved)["vertices"]


@pytest.mark.parametrize(("endian", "interleaved"), LAYOUTS)
def test_round_trip(endian, interleaved):
    data = tmd0_bytes(endian, interleaved)
    assert tmd0.write(tmd0.read(data)) == data


@pytest.mark.parametrize(("endian", "interleaved"), LAYOUTS)
def test_written_from_scratch_reads_back_equal(endian, interleaved):
    model = dataclasses.replace(tmd0.read(tmd0_bytes(endian, interleaved)), layout=None)
    data = tmd0.write(model)
    back = tmd0.read(data)
    assert dataclasses.replace(back, layout=None) == model
    if interleaved:  # pointers into the last vertex, as the engine leaves them
        last = back.layout.tables["vertices"][0] + 3 * back.vertices.dtype.itemsize
        assert back.layout.pointers[0] == last + back.vertices.dtype.fields["normal"][1]


def test_name_hash():
    assert names.name_hash("face_root") == 4027537564
    assert names.name_hash("root") == crc_name_hash("root")
    assert names.hash_for("bone_0000abcd") == 0xABCD
    assert names.parse_names("# bones\nroot\n\n face_root \n") == ["root", "face_root"]


@pytest.mark.parametrize("version", [0x0201, 0x0209, 0x0300])
def test_unsupported_versions(version):
    data = bytearray(tmd0_bytes())
    struct.pack_into("<H", data, 10, version)
    with pytest.raises(FormatError, match=f"0x{version:04X}"):
        tmd0.read(bytes(data))


def test_bad_magic_and_header_size():
    data = tmd0_bytes()
    with pytest.raises(FormatError, match="magic"):
        tmd0.read(b"tmd1" + data[4:])
    with pytest.raises(FormatError, match="header size"):
        tmd0.read(data[:12] + b"\x29\x00" + data[14:])


def test_truncation_at_every_boundary():
    data = tmd0_bytes()
    boundaries = {4, 12, 14, 16, 40, 100, 0x9F, *table_offsets().values(), len(data) - 1}
    for size in sorted(boundaries):
        with pytest.raises(FormatError):
            tmd0.read(data[:size])


@pytest.mark.parametrize(
    ("offset", "value", "what"),
    [
        (44, 0x7FFFFFFF, "draw_list"),  # huge draw list count
        (96, 0x7FFFFFFF, "vertices"),  # huge vertex count
        (40, 0xFFFFFF00, "offset"),  # draw list outside the file
        (132, 0x10, "overlap"),  # bones inside the header
    ],
)
def test_hostile_header_fields(offset, value, what):
    data = bytearray(tmd0_bytes())
    struct.pack_into("<I", data, offset, value)
    with pytest.raises(FormatError):
        tmd0.read(bytes(data))


def test_huge_vertex_count_of_separate_streams_is_refused_before_allocating():
    data = bytearray(tmd0_bytes(interleaved=False))
    struct.pack_into("<I", data, 96, 0x80FFFF00)
    with pytest.raises(FormatError, match="vertex positions"):
        tmd0.read(bytes(data))


def test_bad_references():
    offsets = table_offsets()
    data = bytearray(tmd0_bytes())
    struct.pack_into("<H", data, offsets["faces"], 9)  # vertex 9 of 4
    with pytest.raises(FormatError, match="vertex 9"):
        tmd0.read(bytes(data))
    data = bytearray(tmd0_bytes())
    struct.pack_into("<i", data, offsets["hierarchy"] + 16, 1)  # root's parent is itself's successor
    with pytest.raises(FormatError, match="parent"):
        tmd0.read(bytes(data))
    data = bytearray(tmd0_bytes())
    struct.pack_into("<i", data, offsets["rigs"], 40)  # palette of 40 bones
    with pytest.raises(FormatError, match="rig"):
        tmd0.read(bytes(data))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 945), st.integers(0, 255))
def test_fuzz_single_byte(position, value):
    data = bytearray(tmd0_bytes())
    data[position] = value
    try:
        model = tmd0.read(bytes(data))
    except FormatError:
        return
    assert tmd0.write(model) == bytes(data)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=400))
def test_fuzz_garbage(blob):
    for data in (blob, tmd0_bytes()[:0xA0] + blob):
        try:
            tmd0.read(data)
        except FormatError:
            pass
        try:
            cat.read(data)
        except FormatError:
            pass


# -- CAT ------------------------------------------------------------------------


def test_cat_round_trip_and_names():
    model = tmd0_bytes()
    data = cat_bytes([model], ["TMD_TOON,pkg,asuka_mdl"])
    container = cat.read(data)
    assert container.header_size == 0x40 and container.names() == ["asuka_mdl"]
    assert container.lines() == [["TMD_TOON", "pkg", "asuka_mdl"]]
    assert container.payloads == [model] and cat.model_index(container) == 0
    assert cat.write(container) == data
    assert cat.write(cat.replace_payload(container, 0, model)) == data
    assert inspect.detect(data, "x_mdl_0.cat") and "asuka_mdl" in inspect.summarize(data, "x_mdl_0.cat")


def test_cat_bad_input():
    data = cat_bytes([tmd0_bytes()], ["TMD_TOON,pkg,m"])
    for size in (0, 4, 7, 10):
        with pytest.raises(FormatError):
            cat.read(data[:size])
    bad = bytearray(data)
    struct.pack_into("<I", bad, 4, len(data) + 1)
    with pytest.raises(FormatError, match="payload 0"):
        cat.read(bytes(bad))
    with pytest.raises(FormatError, match="no tmd0"):
        cat.model_index(cat.read(cat_bytes([b"GXT\0"], ["GXT,pkg,t"])))


def test_open_model_with_texture_cat(tmp_path):
    model_path = tmp_path / "asuka_mdl_00.cat"
    model_path.write_bytes(cat_bytes([tmd0_bytes()], ["TMD_TOON,asuka,asuka_body"]))
    (tmp_path / "asuka_tex_00.cat").write_bytes(cat_bytes([b"GXT\0" + bytes(12)], ["GXT,pkg,asuka_body"]))
    package = files.open_model(model_path)
    assert package.name == "asuka" and [name for name, _ in package.textures] == ["asuka_body"]
    scene = convert.to_scene(package.model, package.textures)
    # A GXT that does not read: a named placeholder of the table's size, and a warning that says why.
    assert scene.images[0].name == "asuka_body" and scene.images[0].pixels is None
    assert (scene.images[0].width, scene.images[0].height) == (64, 32)
    assert any("asuka_body (unknown GXT version" in w for w in scene.warnings)
    edited = convert.from_scene(scene)
    container = cat.replace_payload(package.cat, package.index, tmd0.write(edited))
    assert cat.write(container) == model_path.read_bytes()


def test_errors_in_a_cat_payload_count_from_the_start_of_the_cat(tmp_path):
    model = bytearray(tmd0_bytes())
    struct.pack_into("<H", model, table_offsets()["faces"], 9)  # vertex 9 of 4
    data = cat_bytes([bytes(model)], ["TMD_TOON,pkg,m"])
    path = tmp_path / "m_mdl_0.cat"
    path.write_bytes(data)
    start = cat.read(data).payload_offset(0)
    assert data[start : start + 4] == b"tmd0"
    with pytest.raises(FormatError, match="vertex 9") as caught:
        files.open_model(path)
    assert caught.value.filename == str(path) and caught.value.offset == start + table_offsets()["faces"]


def test_dds_texture_is_decoded():
    resource = texture_cat.Resource("tex", 0, 0, "dds", dds_rgba())
    scene = convert.to_scene(tmd0.read(tmd0_bytes()), [("tex", resource)])
    pixels = scene.images[0].pixels
    assert pixels.shape == (2, 2, 4) and pixels[0, 0].tolist() == [2, 1, 0, 3] and not scene.warnings


# -- converter ------------------------------------------------------------------


@pytest.mark.parametrize(("endian", "interleaved"), LAYOUTS)
def test_to_scene(endian, interleaved):
    scene = convert.to_scene(tmd0.read(tmd0_bytes(endian, interleaved)), names=["face_root"])
    skeleton = scene.skeletons[0]
    assert skeleton.bone_names == [names.fallback_name(crc_name_hash("root")), "face_root"]
    assert skeleton.bone_extras[1]["hash"] == crc_name_hash("face_root")
    # Y-up heads at y = 1, 2 become Z-up.
    np.testing.assert_allclose(skeleton.rest[:, :3, 3], [[0, 0, 1], [0, 0, 2]])
    # Parent-relative transforms keep the file's axes (the axis only turns the world).
    np.testing.assert_allclose(skeleton.local_rest()[1][:3, 3], [0, BONE_HEADS[1][1] - BONE_HEADS[0][1], 0])
    mesh = scene.meshes[0]
    np.testing.assert_array_equal(mesh.positions[0], [1, -1, 1])  # (x, -z, y)
    assert mesh.uv_layers[0].data[0].tolist() == [0.5, 0.25]  # raw (512, -256): v = -raw / 1024
    np.testing.assert_array_equal(
        mesh.color_layers[0].data[0], np.float32([255, 128, 0, 255]) / np.float32(255)
    )
    # Vertex 1: ids (0, 1) through rig 0 → bones (0, 1); vertex 3 drawn by polygroup 1 with rig 0 too.
    assert mesh.skin_joints[1, :2].tolist() == [0, 1] and mesh.skin_joints[3, 0] == 1
    np.testing.assert_allclose(mesh.skin_weights[3, :2], [200 / 255, 55 / 255])
    assert mesh.material_indices.tolist() == [0, 0, 0, 0]
    material = scene.materials[0]
    assert [(s.image, s.role, s.scale) for s in material.textures] == [(0, "base_color", (1.0, 1.0))]


def test_normals_point_outward():
    mesh = convert.to_scene(tmd0.read(tmd0_bytes())).meshes[0]
    p = mesh.positions[mesh.triangles]
    face_normals = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    vertex_normals = mesh.normals.data[mesh.triangles].mean(axis=1)
    assert np.mean(np.sum(face_normals * vertex_normals, axis=1)) > 0
    assert np.all(np.linalg.norm(mesh.normals.data, axis=1) > 0.98)


def _perturbed(scene):
    for skeleton in scene.skeletons:
        skeleton.rest = skeleton.rest + 1e-6
    for material in scene.materials:
        for slot in material.textures:
            slot.scale = tuple(v + 1e-6 for v in slot.scale)
    return scene


@pytest.mark.parametrize(("endian", "interleaved"), LAYOUTS)
def test_scene_round_trip_is_byte_exact(endian, interleaved):
    data = tmd0_bytes(endian, interleaved)
    scene = _perturbed(convert.to_scene(tmd0.read(data)))
    assert tmd0.write(convert.from_scene(scene)) == data


def _through_blender(scene):
    """The scene with every extras dict as Blender gives it back (JSON through the extras codec)."""

    def trip(value):
        return extras.decode(json.loads(json.dumps(extras.encode(value))))

    scene = copy.deepcopy(scene)
    for item in [scene, *scene.skeletons, *scene.meshes, *scene.materials, *scene.images]:
        item.extras = trip(item.extras)
    for skeleton in scene.skeletons:
        skeleton.bone_extras = [trip(e) for e in skeleton.bone_extras]
    return scene


@pytest.mark.parametrize(("endian", "interleaved"), LAYOUTS)
def test_extras_hold_plain_values_that_survive_blender(endian, interleaved):
    data = tmd0_bytes(endian, interleaved)
    scene = convert.to_scene(tmd0.read(data))
    header = scene.extras[convert.KEY]
    assert header["magic"] == b"tmd0" and isinstance(header["terminator"], int)
    assert all(isinstance(p, int) for p in header["layout"]["pointers"])
    assert isinstance(scene.meshes[0].extras[convert.KEY]["operations"], bytes)
    assert isinstance(scene.materials[0].extras["record"], bytes)
    assert isinstance(scene.images[0].extras["index"], int)
    assert tmd0.write(convert.from_scene(_through_blender(scene))) == data


def test_hierarchy_and_bone_counts_that_differ_name_the_file_and_the_table(tmp_path):
    data = bytearray(tmd0_bytes())
    struct.pack_into("<I", data, 144, 1)  # hierarchy count 1 for 2 bone matrices
    path = tmp_path / "m_mdl_0.cat"
    path.write_bytes(cat_bytes([bytes(data)], ["TMD_TOON,pkg,m"]))
    package = files.open_model(path)
    with pytest.raises(FormatError, match="1 bone hierarchy entries for 2 bone matrices") as caught:
        convert.to_scene(package.model, filename=str(path))
    assert caught.value.filename == str(path)
    assert caught.value.offset == package.cat.payload_offset(0) + table_offsets()["hierarchy"]


def test_a_singular_inverse_bind_matrix_names_its_bone():
    data = bytearray(tmd0_bytes())
    at = table_offsets()["bones"] + 64
    data[at : at + 64] = bytes(64)
    with pytest.raises(FormatError, match="bone 1: its inverse bind matrix is singular") as caught:
        convert.to_scene(tmd0.read(bytes(data)), filename="m.tmd0")
    assert (caught.value.filename, caught.value.offset) == ("m.tmd0", at)


def test_renamed_bone_gets_new_hash_and_edited_mesh_rebuilds():
    scene = convert.to_scene(tmd0.read(tmd0_bytes()))
    scene.skeletons[0].bone_names[1] = "face_root"
    mesh = scene.meshes[0]
    mesh.positions = mesh.positions * 2
    model = convert.from_scene(scene)
    assert model.hierarchy["hash"].tolist() == [crc_name_hash("root"), 4027537564]
    np.testing.assert_array_equal(model.bounds, [-2, -2, -2, 2, 2, 2])
    assert model.draw_list["bounds"][0].tolist() == [-2, -2, -2, 2, 2, 2]


def test_a_move_the_stored_boxes_still_hold_keeps_them():
    original = tmd0.read(tmd0_bytes())
    scene = convert.to_scene(original)
    scene.meshes[0].positions[0] *= np.float32(1.2)  # past the model's bounds, inside the boxes (±1.5)
    model = convert.from_scene(scene)
    np.testing.assert_allclose(model.bounds, [-1, -1, -1, 1.2, 1.2, 1.2], rtol=1e-6)
    assert model.draw_list["bounds"].tobytes() == original.draw_list["bounds"].tobytes()


def test_a_bone_named_twice_by_a_vertex_gets_the_sum_and_its_bytes_go_back():
    data = bytearray(tmd0_bytes())
    vertex = table_offsets()["vertices"] + 3 * 32
    data[vertex + 12 : vertex + 20] = bytes([200, 53, 0, 0, 1, 1, 0, 0])  # bone id 1 twice, sum 253
    model = tmd0.read(bytes(data))
    mesh = convert.to_scene(model).meshes[0]
    assert mesh.skin_joints[3, :2].tolist() == [1, 1]
    np.testing.assert_allclose(mesh.skin_weights[3, :2], [253 / 255, 0])
    assert tmd0.write(convert.from_scene(convert.to_scene(model))) == bytes(data)
    # As Blender gives it back (one vertex group per bone): one influence, normalised.
    scene = convert.to_scene(model)
    scene.meshes[0].skin_joints[3], scene.meshes[0].skin_weights[3] = [1, 0, 0, 0], [1, 0, 0, 0]
    assert tmd0.write(convert.from_scene(scene)) == bytes(data)


def test_from_scratch_palettes_split_at_32_bones():
    # 40 bones in a chain, one triangle per bone pair: batches need two palettes.
    from retro_models.formats.scene import Mesh, Scene, Skeleton

    count = 40
    rest = np.tile(np.eye(4), (count, 1, 1))
    rest[:, 2, 3] = np.arange(count)
    skeleton = Skeleton(
        "arm", [f"b{i}" for i in range(count)], np.arange(-1, count - 1, dtype=np.int32), rest
    )
    positions = np.array([[i, 0, z] for z in range(count) for i in range(3)], np.float32)
    triangles = np.arange(3 * count).reshape(count, 3)
    joints = np.repeat(np.arange(count), 3)[:, None]
    mesh = Mesh(
        "m", positions, triangles, skeleton=0, skin_joints=joints, skin_weights=np.ones((3 * count, 1))
    )
    model = convert.from_scene(Scene(skeletons=[skeleton], meshes=[mesh]), axis=np.eye(4))
    assert model.rigs["count"].tolist() == [32, 8]
    back = tmd0.read(tmd0.write(model))
    scene = convert.to_scene(back, axis=np.eye(4))
    np.testing.assert_array_equal(scene.meshes[0].skin_joints[:, 0], joints[:, 0])
    assert scene.skeletons[0].bone_names[5] == names.fallback_name(names.name_hash("b5"))
    np.testing.assert_allclose(scene.skeletons[0].rest, rest, atol=1e-6)


def test_inspect_model():
    text = inspect.summarize(tmd0_bytes(">", False), "m.tmd")
    assert "big-endian" in text and "separate streams" in text and f"0x{crc_name_hash('root'):08X}" in text


def rgb24_dds(width: int, height: int) -> bytes:
    """A 24-bit R8G8B8 DDS: a layout the project reads but does not write."""
    header = struct.pack("<4s7I44x", b"DDS ", 124, 0x100F, height, width, width * 3, 0, 1)
    pixel_format = struct.pack("<2I4s5I", 32, 0x40, b"\0" * 4, 24, 0xFF0000, 0xFF00, 0xFF, 0)
    return header + pixel_format + struct.pack("<5I", 0x1000, 0, 0, 0, 0) + bytes(range(width * height * 3))


def textured_pair(folder, payloads: list[bytes]) -> tuple[bytes, bytes]:
    """t_mdl_00.cat (the fixture model with one texture per payload, named t0, t1, ...) and
    t_tex_00.cat (one bare file per payload)."""
    model = tmd0.read(tmd0_bytes())
    model.textures = np.concatenate([model.textures] * len(payloads))
    names = [f"t{i}" for i in range(len(payloads))]
    model_cat = cat_bytes([tmd0.write(model)], [f"TMD_TOON,t,{names[0]}"] + [f",,{n}" for n in names[1:]])
    texture_cat_data = cat_bytes(payloads, [f"DDS,pkg,{n}" for n in names])
    (folder / "t_mdl_00.cat").write_bytes(model_cat)
    (folder / "t_tex_00.cat").write_bytes(texture_cat_data)
    return model_cat, texture_cat_data


def test_edited_bare_dds_payloads_keep_their_layout(tmp_path):
    from retro_models.formats.textures import dds

    payloads = [rgb24_dds(4, 4), dds.encode(np.full((4, 4, 4), 9, np.uint8), "DXT1"), b"GXT\0" + bytes(12)]
    model_cat, texture_cat_data = textured_pair(tmp_path, payloads)
    scene = files.load(str(tmp_path / "t_mdl_00.cat"), files.ImportOptions())
    out = tmp_path / "out"
    out.mkdir()
    files.save(scene, str(out / "t_mdl_00.cat"), files.ExportOptions())
    assert (out / "t_tex_00.cat").read_bytes() == texture_cat_data
    edited = np.arange(64, dtype=np.uint8).reshape(4, 4, 4)
    for image in scene.images[:2]:
        image.pixels, image.source_bytes = edited, None
    files.save(scene, str(out / "t_mdl_00.cat"), files.ExportOptions())
    written = cat.read((out / "t_tex_00.cat").read_bytes()).payloads
    rgb = dds.read(written[0])
    assert (rgb.format, rgb.bit_count, rgb.header) == ("RGB", 24, dds.read(payloads[0]).header)  # layout kept
    assert np.array_equal(rgb.decode()[..., :3], edited[..., :3])
    assert dds.read(written[1]).format == "DXT1" and len(written[1]) % 16 == 0
    assert written[2] == payloads[2]
    assert (out / "t_mdl_00.cat").read_bytes() == model_cat


def test_texture_payloads_refuse_what_the_cat_cannot_hold(tmp_path):
    textured_pair(tmp_path, [b"GXT\0" + bytes(12), b"GXT\0" + bytes(12)])
    scene = files.load(str(tmp_path / "t_mdl_00.cat"), files.ImportOptions())
    stored = scene.extras[files.TEXTURE_CONTAINER]["payloads"]
    images = scene.images
    with pytest.raises(ExportError, match="shows 2 textures but the model has 1 images.*missing"):
        convert.texture_payloads(images[:1], stored)
    images[1].pixels, images[1].source_bytes = np.zeros((2, 2, 4), np.uint8), None
    with pytest.raises(ExportError, match="'t1' cannot be written as its GXT texture"):
        convert.texture_payloads(images, stored)
    with pytest.raises(ExportError, match="'t1' has no place in the texture CAT"):
        convert.texture_payloads(images, stored[:1])


def test_texture_cat_name_follows_the_model_name(tmp_path):
    assert cat.texture_cat_name(tmp_path / "asuka_MDL_00.cat") == tmp_path / "asuka_TEX_00.cat"
    assert cat.texture_cat_name(tmp_path / "out.cat") is None
    assert cat.texture_cat_path(tmp_path / "asuka_mdl_00.cat") is None  # not there


def test_a_cat_without_payloads_reads_as_empty():
    import struct

    empty = cat.read(struct.pack("<II", 0x40, 0xFFFFFFFF), "empty.cat")
    assert empty.payloads == [] and cat.write(empty) == struct.pack("<II", 0x40, 0xFFFFFFFF)
