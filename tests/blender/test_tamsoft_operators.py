"""The Tamsoft operators as a user runs them: import → export byte for byte, edits, normals, bad files,
names files, and .tmd files told from JPOG's by their content."""

from pathlib import Path

import bpy
import numpy as np
import pytest
from support import data_counts
from tamsoft_fixtures import cat_bytes, crc_name_hash, dds_rgba, tmd0_bytes

LAYOUTS = [("<", True), ("<", False), (">", True), (">", False)]


def root_name() -> str:
    return f"bone_{crc_name_hash('root'):08x}"


def face_name() -> str:
    return f"bone_{crc_name_hash('face_root'):08x}"


def chain_model(endian: str, interleaved: bool) -> bytes:
    """A model written from scratch by the project: 40 bones in a chain (two palettes), normals, a UV map."""
    from retro_models.formats.scene import Layer, Mesh, Scene, Skeleton
    from retro_models.formats.tamsoft import convert, tmd0

    count = 40
    rest = np.tile(np.eye(4), (count, 1, 1))
    rest[:, 2, 3] = np.arange(count)
    skeleton = Skeleton(
        "chain", [f"b{i}" for i in range(count)], np.arange(-1, count - 1, dtype=np.int32), rest
    )
    positions = np.array([[i, 0, z] for z in range(count) for i in range(3)], np.float32)
    mesh = Mesh(
        "chain",
        positions,
        np.arange(3 * count).reshape(count, 3),
        skeleton=0,
        skin_joints=np.repeat(np.arange(count), 3)[:, None],
        skin_weights=np.ones((3 * count, 1)),
        normals=Layer("normal", np.tile(np.float32([0, -1, 0]), (3 * count, 1))),
        uv_layers=[Layer("UV0", positions[:, :2] / 64)],
    )
    flags = tmd0.POSITION | (tmd0.INTERLEAVED if interleaved else 0)
    scene = Scene(skeletons=[skeleton], meshes=[mesh], extras={convert.KEY: {"flags": flags}})
    return tmd0.write(convert.from_scene(scene, endian=endian))


def import_model(path: Path, **options) -> bpy.types.Object:
    """Import with the operator; returns the armature, made active and selected for export."""
    assert bpy.ops.import_scene.tamsoft_tmd0(filepath=str(path), **options) == {"FINISHED"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = armature
    armature.select_set(True)
    return armature


def export_model(path: Path) -> bytes:
    assert bpy.ops.export_scene.tamsoft_tmd0(filepath=str(path)) == {"FINISHED"}
    return path.read_bytes()


def the_mesh() -> bpy.types.Object:
    return next(o for o in bpy.data.objects if o.type == "MESH")


@pytest.mark.parametrize(("endian", "interleaved"), LAYOUTS)
def test_hand_built_model_exports_byte_identical(empty_scene, tmp_path, endian, interleaved):
    data = tmd0_bytes(endian, interleaved)
    (tmp_path / "model.tmd").write_bytes(data)
    import_model(tmp_path / "model.tmd")
    assert export_model(tmp_path / "out.tmd") == data


@pytest.mark.parametrize(("endian", "interleaved"), [("<", True), (">", False)])
def test_model_written_by_the_project_exports_byte_identical(empty_scene, tmp_path, endian, interleaved):
    data = chain_model(endian, interleaved)
    (tmp_path / "chain.tmd").write_bytes(data)
    armature = import_model(tmp_path / "chain.tmd")
    assert len(armature.data.bones) == 40
    assert len(the_mesh().vertex_groups) == 40  # resolved through both palettes
    assert export_model(tmp_path / "out.tmd") == data


def test_cat_with_texture_cat_round_trips(empty_scene, tmp_path):
    model_cat = cat_bytes([tmd0_bytes()], ["TMD_TOON,asuka,asuka_body"])
    (tmp_path / "asuka_mdl_00.cat").write_bytes(model_cat)
    (tmp_path / "asuka_tex_00.cat").write_bytes(cat_bytes([b"GXT\0" + bytes(12)], ["GXT,pkg,asuka_body"]))
    from retro_models.operators.blender import props

    import_model(tmp_path / "asuka_mdl_00.cat")
    # The GXT payload cannot be decoded: a named, empty image of the entry's size in the material.
    image = bpy.data.images["asuka_body"]
    assert props.UNDECODED in image and tuple(image.size) == (64, 32)
    material = the_mesh().data.materials[0]
    assert any(n.type == "TEX_IMAGE" and n.image == image for n in material.node_tree.nodes)
    assert export_model(tmp_path / "out.cat") == model_cat
    assert export_model(tmp_path / "bare.tmd") == tmd0_bytes()


def test_dds_texture_is_loaded(empty_scene, tmp_path):
    (tmp_path / "m_mdl_00.cat").write_bytes(cat_bytes([tmd0_bytes()], ["TMD_TOON,m,skin"]))
    (tmp_path / "m_tex_00.cat").write_bytes(cat_bytes([dds_rgba()], ["DDS,pkg,skin"]))
    import_model(tmp_path / "m_mdl_00.cat")
    image = bpy.data.images["skin"]
    pixels = np.empty(16, np.float32)
    image.pixels.foreach_get(pixels)
    # Top-left texel (B, G, R, A bytes 0..3) is Blender's last row.
    assert np.allclose(pixels.reshape(2, 2, 4)[1, 0] * 255, [2, 1, 0, 3])


def test_import_builds_rig_mesh_and_layers(empty_scene, tmp_path):
    (tmp_path / "model.tmd").write_bytes(tmd0_bytes())
    (tmp_path / "names.txt").write_text("# bones of the model\nface_root\nnot_a_bone\n")
    armature = import_model(tmp_path / "model.tmd", names_file=str(tmp_path / "names.txt"))
    bones = armature.data.bones
    assert [b.name for b in bones] == [root_name(), "face_root"]
    from retro_models.operators.blender import props

    assert props.get_extras(bones["face_root"])["hash"] == crc_name_hash("face_root")
    # Y-up heads (0, 1, 0) and (0, 2, 0) stand on Blender's Z axis.
    assert np.allclose(bones["face_root"].head_local, [0, 0, 2], atol=1e-6)
    assert bones["face_root"].parent == bones[root_name()]
    mesh_obj = the_mesh()
    mesh = mesh_obj.data
    assert mesh_obj.parent == armature and mesh_obj.modifiers["Armature"].object == armature
    assert len(mesh.vertices) == 4 and len(mesh.polygons) == 4 and len(mesh.materials) == 1
    assert [uv.name for uv in mesh.uv_layers] == ["UV0"] and "Colour" in mesh.color_attributes
    assert mesh.has_custom_normals
    # Vertex 1: bone ids (0, 1) through rig 0, weights 128 and 127 of 255.
    groups = {mesh_obj.vertex_groups[g.group].name: g.weight for g in mesh.vertices[1].groups}
    assert groups.keys() == {root_name(), "face_root"}
    assert np.isclose(groups["face_root"], 127 / 255, atol=1e-6)


def test_imported_normals_point_outward(empty_scene, tmp_path):
    (tmp_path / "tetrahedron.tmd").write_bytes(tmd0_bytes())  # a closed tetrahedron around the origin
    import_model(tmp_path / "tetrahedron.tmd")
    mesh = the_mesh().data
    corner = np.empty(3 * len(mesh.loops), np.float32)
    mesh.corner_normals.foreach_get("vector", corner)
    face = np.empty(3 * len(mesh.polygons), np.float32)
    mesh.polygons.foreach_get("normal", face)
    loop_face = np.repeat(np.arange(len(mesh.polygons)), 3)  # triangles: three corners per face
    dots = np.sum(corner.reshape(-1, 3) * face.reshape(-1, 3)[loop_face], axis=1)
    # A corner of a regular tetrahedron, normal pointing away from the centre, makes 1/3 with each face.
    assert dots.mean() > 0 and np.allclose(dots, 1 / 3, atol=0.02)


def test_edits_survive_export(empty_scene, tmp_path):
    from retro_models.formats.tamsoft import convert, tmd0

    (tmp_path / "model.tmd").write_bytes(tmd0_bytes())
    armature = import_model(tmp_path / "model.tmd")
    armature.data.bones[root_name()].name = "hips"
    armature.data.bones[face_name()].name = "face_root"
    mesh = the_mesh().data
    positions = np.empty(3 * len(mesh.vertices), np.float32)
    mesh.attributes["position"].data.foreach_get("vector", positions)
    mesh.attributes["position"].data.foreach_set("vector", positions * 2)
    mesh.materials.append(bpy.data.materials.new("second"))
    mesh.polygons[0].material_index = 1
    model = tmd0.read(export_model(tmp_path / "out.tmd"))
    assert model.hierarchy["hash"].tolist() == [crc_name_hash("hips"), crc_name_hash("face_root")]
    np.testing.assert_allclose(model.bounds, [-2, -2, -2, 2, 2, 2])
    assert len(model.materials) == 2
    scene = convert.to_scene(model)
    assert sorted(scene.meshes[0].material_indices.tolist()) == [0, 0, 0, 1]
    # Vertex 1 keeps its two bones and weights through the rebuilt palettes.
    original = convert.to_scene(tmd0.read(tmd0_bytes())).meshes[0]
    moved = np.flatnonzero(np.all(np.isclose(scene.meshes[0].positions, original.positions[1] * 2), axis=1))
    assert len(moved) >= 1
    for v in moved:
        assert scene.meshes[0].skin_joints[v, :2].tolist() == [0, 1]
        np.testing.assert_allclose(scene.meshes[0].skin_weights[v, :2], [128 / 255, 127 / 255])


def test_edited_model_goes_back_into_its_cat(empty_scene, tmp_path):
    from retro_models.formats.tamsoft import cat, tmd0

    extra = b"OTHER PAYLOAD"
    (tmp_path / "m_mdl_00.cat").write_bytes(cat_bytes([tmd0_bytes(), extra], ["TMD_TOON,pkg,m", "X,pkg,x"]))
    import_model(tmp_path / "m_mdl_00.cat")
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    armature.data.bones[root_name()].name = "hips"
    container = cat.read(export_model(tmp_path / "out.cat"))
    assert container.names() == ["m", "x"] and container.payloads[1] == extra
    assert len(container.payloads[0]) % 16 == 0  # a changed payload is padded
    model = tmd0.read(container.payloads[0])
    assert model.hierarchy["hash"][0] == crc_name_hash("hips")


def test_bad_files_report_and_leave_the_scene_unchanged(empty_scene, tmp_path):
    (tmp_path / "good.tmd").write_bytes(tmd0_bytes())
    import_model(tmp_path / "good.tmd")
    before = data_counts()
    data = tmd0_bytes()
    cases = {
        "truncated.tmd": data[: len(data) // 2],
        "wrong_magic.tmd": b"NOPE" + data[4:],
        "empty.tmd": b"",
        "jpog.tmd": b"TMDL" + bytes(60),
        "no_model.cat": cat_bytes([b"GXT\0" + bytes(12)], ["GXT,pkg,t"]),
        "truncated_mdl_00.cat": cat_bytes([data], ["TMD_TOON,pkg,m"])[:200],
        # The model is fine; its texture CAT is broken.
        "broken_mdl_00.cat": cat_bytes([data], ["TMD_TOON,pkg,m"]),
    }
    (tmp_path / "broken_tex_00.cat").write_bytes(b"\x40\0\0\0\x99\x99\x99\x99")
    for name, payload in cases.items():
        (tmp_path / name).write_bytes(payload)
        with pytest.raises(RuntimeError) as error:
            bpy.ops.import_scene.tamsoft_tmd0(filepath=str(tmp_path / name))
        message = str(error.value)
        assert "offset" in message and ("broken_tex" in message or name in message), message
        assert data_counts() == before, name


def test_multi_file_import_keeps_going_after_a_bad_file(empty_scene, tmp_path):
    (tmp_path / "a.tmd").write_bytes(tmd0_bytes())
    (tmp_path / "bad.tmd").write_bytes(b"tmd0")
    (tmp_path / "b_mdl_00.cat").write_bytes(cat_bytes([tmd0_bytes(">", False)], ["TMD_TOON,pkg,b"]))
    files = [{"name": "a.tmd"}, {"name": "bad.tmd"}, {"name": "b_mdl_00.cat"}]
    with pytest.raises(RuntimeError, match="bad.tmd"):
        bpy.ops.import_scene.tamsoft_tmd0(directory=str(tmp_path), files=files)
    assert len([o for o in bpy.data.objects if o.type == "ARMATURE"]) == 2
    assert {c.name for c in bpy.context.scene.collection.children} == {"a", "b_mdl_00"}


def test_export_errors_write_nothing(empty_scene, tmp_path):
    with pytest.raises(RuntimeError, match="select the model"):
        bpy.ops.export_scene.tamsoft_tmd0(filepath=str(tmp_path / "none.tmd"))
    (tmp_path / "model.tmd").write_bytes(tmd0_bytes())
    import_model(tmp_path / "model.tmd")
    with pytest.raises(RuntimeError, match="not imported from a CAT"):
        bpy.ops.export_scene.tamsoft_tmd0(filepath=str(tmp_path / "model_mdl_00.cat"))
    assert not (tmp_path / "model_mdl_00.cat").exists()
    # A name without a known extension gets .tmd.
    assert bpy.ops.export_scene.tamsoft_tmd0(filepath=str(tmp_path / "renamed")) == {"FINISHED"}
    assert (tmp_path / "renamed.tmd").read_bytes() == tmd0_bytes()


def test_tmd_files_go_to_the_family_their_content_names(empty_scene, tmp_path):
    """Routing itself is tested in tests/formats/test_registry.py; here, the imports it leads to."""
    import demo_creature
    import retro_models
    from retro_models.formats.errors import FormatError

    (tmp_path / "tamsoft.tmd").write_bytes(tmd0_bytes(">", True))
    for name, data in demo_creature.demo_files().items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "junk.tmd").write_bytes(b"junk")
    assert "tamsoft.tmd: 1 armature, 1 mesh" in str(
        retro_models.import_file(bpy.context, str(tmp_path / "tamsoft.tmd"))
    )
    assert "demo.tmd: 1 armature," in str(retro_models.import_file(bpy.context, str(tmp_path / "demo.tmd")))
    with pytest.raises(FormatError, match="junk.tmd"):  # JPOG's reader says what is wrong
        retro_models.import_file(bpy.context, str(tmp_path / "junk.tmd"))
    bone_names = {b.name for o in bpy.data.objects if o.type == "ARMATURE" for b in o.data.bones}
    assert root_name() in bone_names


def test_file_handlers_both_claim_tmd(addon):
    tamsoft = bpy.types.FileHandler.bl_rna_get_subclass_py("IO_FH_retro_tamsoft_tmd0")
    toshi = bpy.types.FileHandler.bl_rna_get_subclass_py("IO_FH_retro_toshi_tmd")
    assert tamsoft.bl_import_operator == "import_scene.tamsoft_tmd0"
    assert tamsoft.bl_export_operator == "export_scene.tamsoft_tmd0"
    # Blender shows a menu to pick the importer when several handlers accept a dropped file.
    assert set(tamsoft.bl_file_extensions.split(";")) == {".tmd", ".cat"}
    assert ".tmd" in toshi.bl_file_extensions.split(";")


# -- the texture CAT --------------------------------------------------------------

TEXTURE_LINES = ["DDS,pkg,skin", "DDS,pkg,normal", "DDS,pkg,spec", "GXT,pkg,ramp"]


def blocky(width: int, height: int, seed: int) -> np.ndarray:
    """RGBA pixels of one random colour per 4×4 block (DXT keeps those within its colour precision)."""
    colours = np.random.default_rng(seed).integers(0, 256, (height // 4, width // 4, 4), dtype=np.uint8)
    return np.repeat(np.repeat(colours, 4, axis=0), 4, axis=1)


def textured_package(folder: Path) -> tuple[bytes, bytes]:
    """m_mdl_00.cat (the fixture model with four textures used by its material) and m_tex_00.cat:
    A8R8G8B8, DXT1 and DXT5 DDS (encoded by the project) and a GXT. Returns both files' bytes."""
    from retro_models.formats.tamsoft import tmd0
    from retro_models.formats.textures import dds

    payloads = [
        dds_rgba(4, 4),
        dds.encode(blocky(8, 8, 1), "DXT1") + b"\0" * 3,  # odd-sized: the next payload is unaligned
        dds.encode(blocky(8, 4, 2), "DXT5"),
        b"GXT\0" + bytes(12),
    ]
    model = tmd0.read(tmd0_bytes())
    model.textures = np.concatenate([model.textures] * 4)
    model.textures["index"] = np.arange(4)
    model.textures["width"][:3], model.textures["height"][:3] = [4, 8, 8], [4, 8, 4]
    model.materials["slots"]["texture"][0, 1:4] = [1, 2, 3]
    model_cat = cat_bytes([tmd0.write(model)], ["TMD_TOON,m,skin", ",,normal", ",,spec", ",,ramp"])
    texture_cat = cat_bytes(payloads, TEXTURE_LINES)
    (folder / "m_mdl_00.cat").write_bytes(model_cat)
    (folder / "m_tex_00.cat").write_bytes(texture_cat)
    return model_cat, texture_cat


def paint(image: bpy.types.Image, pixels: np.ndarray) -> None:
    """Set (H, W, 4) uint8 pixels, top row first, as a user's edit would."""
    flat = np.ascontiguousarray(pixels[::-1], np.float32).reshape(-1) / np.float32(255)
    image.pixels.foreach_set(flat)


def test_texture_cat_is_written_back_unchanged(empty_scene, tmp_path):
    model_cat, texture_cat = textured_package(tmp_path)
    import_model(tmp_path / "m_mdl_00.cat")
    out = tmp_path / "out"
    out.mkdir()
    assert export_model(out / "m_mdl_00.cat") == model_cat
    assert (out / "m_tex_00.cat").read_bytes() == texture_cat


def test_edited_textures_go_back_into_the_texture_cat(empty_scene, tmp_path):
    from retro_models.formats.tamsoft import cat
    from retro_models.formats.textures import dds

    _, texture_cat = textured_package(tmp_path)
    import_model(tmp_path / "m_mdl_00.cat")
    skin, spec = blocky(4, 4, 3), blocky(8, 4, 4)
    paint(bpy.data.images["skin"], skin)
    paint(bpy.data.images["spec"], spec)
    out = tmp_path / "out"
    out.mkdir()
    export_model(out / "m_mdl_00.cat")
    original = cat.read(texture_cat)
    written = cat.read((out / "m_tex_00.cat").read_bytes())
    assert written.name_block == original.name_block and written.names() == ["skin", "normal", "spec", "ramp"]
    assert written.payloads[1] == original.payloads[1] and written.payloads[3] == original.payloads[3]
    skin_dds, spec_dds = dds.read(written.payloads[0]), dds.read(written.payloads[2])
    assert skin_dds.format == "RGBA" and np.array_equal(skin_dds.decode(), skin)  # lossless
    assert spec_dds.format == "DXT5"
    decoded = spec_dds.decode()
    assert np.array_equal(decoded[..., 3], spec[..., 3])  # one alpha per block: exact
    # RGB565 endpoints: at most half a 5-bit step (4) off per channel.
    assert np.abs(decoded[..., :3].astype(int) - spec[..., :3]).max() <= 4


def test_edited_gxt_texture_is_refused_and_nothing_written(empty_scene, tmp_path):
    textured_package(tmp_path)
    import_model(tmp_path / "m_mdl_00.cat")
    ramp = bpy.data.images["ramp"]
    paint(ramp, np.zeros((ramp.size[1], ramp.size[0], 4), np.uint8))
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(RuntimeError, match="'ramp'.*GXT"):
        bpy.ops.export_scene.tamsoft_tmd0(filepath=str(out / "m_mdl_00.cat"))
    assert list(out.iterdir()) == []
    # A bare tmd0 has no texture container: it exports as before.
    assert bpy.ops.export_scene.tamsoft_tmd0(filepath=str(out / "m.tmd")) == {"FINISHED"}
    assert [p.name for p in out.iterdir()] == ["m.tmd"]


# -- a model and texture CAT pair laid out as the real ones ---------------------------------------


def import_pair(folder: Path, **pair) -> tuple[bytes, bytes]:
    import texture_pair

    model, textures = texture_pair.write_pair(folder, **pair)
    import_model(folder / "pl00_head_mdl_hi.cat")
    return model, textures


def export_pair(folder: Path) -> tuple[bytes, bytes]:
    folder.mkdir(exist_ok=True)
    model = export_model(folder / "pl00_head_mdl_hi.cat")
    return model, (folder / "pl00_head_tex_hi.cat").read_bytes()


@pytest.mark.parametrize("vita", [False, True])
def test_pair_imports_with_its_textures_shown_and_exports_byte_identical(empty_scene, tmp_path, vita):
    import texture_pair

    model, textures = import_pair(tmp_path, vita=vita)
    mesh = the_mesh()
    assert mesh.data.name == "pl00_head" and "pl00_head" in bpy.data.armatures  # the package, not a texture
    expected = texture_pair.vita_files() if vita else texture_pair.dds_files()
    material = mesh.data.materials[0]
    shown = {n.image.name for n in material.node_tree.nodes if n.type == "TEX_IMAGE"}
    assert shown == {"pl00_face00", "toon_sdw_skin00"}
    for name in texture_pair.MODEL_TEXTURES:
        image = bpy.data.images[name]
        width, height = image.size
        pixels = np.empty(width * height * 4, np.float32)
        image.pixels.foreach_get(pixels)
        decoded = np.rint(pixels.reshape(height, width, 4)[::-1] * 255).astype(np.uint8)
        assert np.array_equal(decoded, expected[name][1]), name
    uv = np.empty(2 * len(mesh.data.loops), np.float32)
    mesh.data.uv_layers[0].data.foreach_get("uv", uv)
    assert uv.min() >= 0 and uv.max() <= 1
    # Blender shows the stored normals' directions (they are not unit length in the file).
    corner = np.empty(3 * len(mesh.data.loops), np.float32)
    mesh.data.corner_normals.foreach_get("vector", corner)
    vertex = np.empty(len(mesh.data.loops), np.int32)
    mesh.data.loops.foreach_get("vertex_index", vertex)
    stored = texture_pair.model_scene().meshes[0].normals.data[vertex]
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    assert np.abs(corner.reshape(-1, 3) - stored).max() < 1e-3
    assert export_pair(tmp_path / "out") == (model, textures)


def test_moving_one_vertex_changes_only_its_bytes(empty_scene, tmp_path):
    from retro_models.formats.tamsoft import cat, tmd0

    model_cat, textures = import_pair(tmp_path)
    data = the_mesh().data
    # The grid's centre, so that the bounds stay. Blender keeps custom normals relative to the edges
    # around each vertex, so a long move turns the normals of the vertex and its neighbours (a real
    # change of what Blender shows); a short one stays within the precision of the stored bytes.
    data.vertices[12].co.x += 0.01
    written, written_textures = export_pair(tmp_path / "out")
    assert written_textures == textures
    before = cat.read(model_cat).payloads[0]
    after = cat.read(written).payloads[0]
    assert len(after) == len(before)
    model = tmd0.read(before)
    stride = model.vertices.dtype.itemsize
    start = model.layout.tables["vertices"][0] + 12 * stride
    changed = np.flatnonzero(np.frombuffer(before, np.uint8) != np.frombuffer(after, np.uint8))
    assert len(changed) and changed.min() >= start and changed.max() < start + stride  # its record only
    assert np.frombuffer(after, np.float32, 3, start)[0] == np.float32(
        np.frombuffer(before, np.float32, 3, start)[0] + np.float32(0.01)
    )


def test_edited_pair_texture_is_written_in_its_format(empty_scene, tmp_path):
    import texture_pair
    from retro_models.formats.tamsoft import cat, texture_cat
    from retro_models.formats.textures import dds

    model_cat, textures = import_pair(tmp_path, mips=True)
    new = texture_pair.blocky(16, 16, 70)
    paint(bpy.data.images["pl00_eye00"], new)
    written, written_textures = export_pair(tmp_path / "out")
    assert written == model_cat  # the texture table keeps its stored sizes
    before, after = cat.read(textures), cat.read(written_textures)
    assert after.payloads[1:] == before.payloads[1:]
    eye = dds.read(texture_cat.read_bundle(after.payloads[0]).resources[0])
    assert (eye.format, eye.mip_count) == ("DXT1", 5)
    assert eye.data.startswith(dds.encode_blocks("DXT1", new))
