"""The J3D model export without Blender: a model's scene (as the import gives it, with the digests the
Blender side records) back to the model's bytes, and each kind of edit changing only what it edits."""

import dataclasses
import os

import numpy as np
import pytest
import structure
import support
from j3d_model_fixtures import generated_bytes
from retro_models.formats import archives
from retro_models.formats.errors import ExportError
from retro_models.formats.j3d import files, model, model_convert, model_export, tex1
from retro_models.formats.scene import Image, Material, Mesh, Scene, Skeleton, TextureSlot
from retro_models.formats.textures import gx

MODELS = support.corpus_files("j3d*/*.bmd") + support.corpus_files("j3d*/*.bdl")
ARCHIVES = support.corpus_files("j3d*/*.arc")


def _archive_models() -> list[tuple[str, bytes]]:
    found = []
    for path in ARCHIVES:
        archive = archives.read_archive(path.read_bytes(), str(path))
        for member in archive.members():
            if os.path.splitext(member.path)[1].lower() in files.MODEL_EXTENSIONS:
                found.append((f"{path.name}/{member.path}", archives.unwrap(member.data, member.path)))
    return found


def _scene(data: bytes, name: str = "model"):
    """The model's scene as exported unedited: the import's extras, each mesh's digest as recorded."""
    scene = files._model_scene(data, name, name, files.ModelImportOptions())
    for mesh in scene.meshes:
        mesh.extras[model_export.GEOMETRY] = model_export.mesh_digest(mesh)
    for slot, material in enumerate(scene.materials):
        material.extras[model_export.SLOT] = slot
    return scene


def _section(m: model.Model, kind: type) -> bytes:
    return model.write(model.Model(b"bmd3", [m._get(kind)]))


def _export(scene, **options) -> bytes:
    return files.model_bytes(scene, files.ModelExportOptions(**options))


@pytest.mark.corpus
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_every_corpus_model_exports_unedited_to_its_own_bytes(path):
    data = path.read_bytes()
    assert _export(_scene(data)) == data


@pytest.mark.corpus
def test_every_model_inside_the_corpus_archives_exports_to_its_own_bytes():
    members = _archive_models()
    if not members:
        pytest.skip("no corpus archives")
    for name, data in members:
        assert model.write(model.read(data, name)) == data, name
        assert _export(_scene(data, name)) == data, name


def test_a_texture_section_without_textures_keeps_its_header_offset_of_zero():
    data = generated_bytes()
    m = model.read(data)
    m.tex1.headers, m.tex1.names, m.tex1.data = m.tex1.headers[:0], [], b""
    m.tex1.headers_absent, m.tex1.gaps = True, None
    written = model.write(m)
    again = model.read(written)
    assert again.tex1.headers_absent and len(again.tex1.headers) == 0
    assert model.write(again) == written
    at = again.offsets[type(again.tex1)]
    assert written[at + 0x0C : at + 0x10] == bytes(4)


def test_a_renamed_material_changes_the_name_table_only():
    data = generated_bytes()
    scene = _scene(data)
    old = scene.materials[0].name
    scene.materials[0].name = "renamed"
    written = model.read(_export(scene))
    original = model.read(data)
    assert written.mat3.names[0] == "renamed" and old not in written.mat3.names
    assert written.mat3.names[1:] == original.mat3.names[1:]
    for kind in (model.INF1, model.VTX1, model.SHP1, model.JNT1, model.TEX1):
        assert _section(written, kind) == _section(original, kind)


def test_a_copy_of_a_material_is_a_new_slot_sharing_its_record():
    data = generated_bytes()
    scene = _scene(data)
    copy = Material("copy", extras=dict(scene.materials[0].extras))  # a duplicate: its extras, a new name
    scene.materials.append(copy)
    written = model.read(_export(scene))
    original = model.read(data)
    assert written.mat3.names == [*original.mat3.names, "copy"]
    assert written.mat3.remap[-1] == original.mat3.remap[0]


def test_an_edited_image_is_encoded_again_in_its_format_and_the_others_keep_their_bytes():
    path = support.corpus_file("j3d-models/ba.bdl")
    data = path.read_bytes()
    scene = _scene(data)
    original = model.read(data)
    image = scene.images[0]
    index = image.extras["tex1_index"]
    image.pixels = image.pixels.copy()
    image.pixels[: image.height // 2, :, :3] = [255, 0, 0]
    written = model.read(_export(scene))
    header, before = written.tex1.headers[index], original.tex1.headers[index]
    assert header["format"] == before["format"]
    assert (header["width"], header["height"]) == (before["width"], before["height"])
    decoded = tex1.decode(written.tex1, index)
    assert decoded[0, 0, 0] > decoded[-1, 0, 0]  # the top half turned red
    for other in range(len(original.tex1.headers)):
        if other != index:
            assert np.array_equal(tex1.decode(written.tex1, other), tex1.decode(original.tex1, other))
    for kind in (model.INF1, model.VTX1, model.SHP1, model.MAT3):
        assert _section(written, kind) == _section(original, kind)


def test_image_format_option_encodes_every_image_in_that_format():
    data = generated_bytes()
    scene = _scene(data)
    written = model.read(_export(scene, image_format="RGB5A3"))
    assert set(written.tex1.headers["format"].tolist()) == {gx.RGB5A3}


def test_a_bone_the_model_does_not_have_is_refused_by_name():
    scene = _scene(generated_bytes())
    skeleton = scene.skeletons[0]
    skeleton.bone_names.append("tail")
    skeleton.parents = np.append(skeleton.parents, 0).astype(np.int32)
    with pytest.raises(ExportError, match="'tail'"):
        _export(scene)


def test_a_bone_with_another_parent_is_refused_by_name():
    scene = _scene(generated_bytes())
    skeleton = scene.skeletons[0]
    skeleton.parents = skeleton.parents.copy()
    skeleton.parents[2] = 0
    with pytest.raises(ExportError, match=f"'{skeleton.bone_names[2]}'"):
        _export(scene)


def test_a_moved_vertex_changes_its_shape_and_keeps_the_others():
    data = generated_bytes()
    scene = _scene(data)
    mesh = scene.meshes[1]
    mesh.positions = mesh.positions.copy()
    mesh.positions[0] += [0, 0, 0.5]
    written = model.read(_export(scene))
    again = model_convert.to_scene(written)
    assert np.allclose(_sorted_rows(again.meshes[1].positions), _sorted_rows(mesh.positions), atol=1e-5)
    assert np.array_equal(again.meshes[0].positions, scene.meshes[0].positions)
    original = model.read(data)
    assert written.jnt1.names == original.jnt1.names
    for field in ("flags", "scale", "rotation", "translation"):  # the bounds follow the vertices
        assert np.array_equal(written.jnt1.entries[field], original.jnt1.entries[field])
    assert _section(written, model.MAT3) == _section(original, model.MAT3)


def _sorted_rows(values: np.ndarray) -> np.ndarray:
    values = np.round(np.asarray(values, np.float64), 5)
    return values[np.lexsort(values.T[::-1])]


def test_a_shape_without_its_mesh_is_removed():
    scene = _scene(generated_bytes())
    scene.meshes.pop(0)
    written = model.read(_export(scene))
    assert len(written.shp1.remap) == 1


def test_a_mesh_with_two_materials_is_refused_by_name():
    scene = _scene(generated_bytes())
    mesh = scene.meshes[0]
    mesh.materials = [0, 1]
    mesh.material_indices = np.arange(len(mesh.triangles), dtype=np.int32) % 2
    with pytest.raises(ExportError, match="'shape0'"):
        _export(scene)


def test_the_file_name_asks_for_a_model_extension(tmp_path):
    scene = _scene(generated_bytes())
    with pytest.raises(ExportError, match="model.obj"):
        files.save_model(scene, str(tmp_path / "model.obj"), files.ModelExportOptions())
    assert not list(tmp_path.iterdir())


def test_a_bdl_named_bmd_is_written_without_mdl3_and_a_copied_material_drops_it_too(tmp_path):
    data = support.corpus_file("j3d-models/ba.bdl").read_bytes()
    original = model.read(data)
    files.save_model(_scene(data), str(tmp_path / "ba.bmd"), files.ModelExportOptions())
    written = model.read((tmp_path / "ba.bmd").read_bytes())
    assert written.kind == b"bmd3" and written.raw(b"MDL3") is None
    assert structure.problems((tmp_path / "ba.bmd").read_bytes()) == []
    for kind in (model.INF1, model.VTX1, model.SHP1, model.MAT3, model.TEX1):
        assert _section(written, kind) == _section(original, kind)
    scene = _scene(data)
    scene.materials.append(Material("copy", extras=dict(scene.materials[0].extras)))
    files.save_model(scene, str(tmp_path / "ba.bdl"), files.ModelExportOptions())
    assert model.read((tmp_path / "ba.bdl").read_bytes()).kind == b"bmd3"
    assert any("written as a BMD" in w for w in scene.warnings)


@pytest.mark.parametrize("edit", ["move", "remove", "add"])
def test_edited_models_keep_the_loaders_structural_rules(edit):
    scene = _scene(support.corpus_file("j3d-models/ba.bdl").read_bytes())
    shapes = len(scene.meshes)
    if edit == "move":
        scene.meshes[1].positions = scene.meshes[1].positions * 2
    elif edit == "remove":
        scene.meshes.pop(1)
    else:
        added = dataclasses.replace(scene.meshes[0], extras={})
        scene.meshes.append(added)
    written = _export(scene)
    assert structure.problems(written) == []
    count = {"move": shapes, "remove": shapes - 1, "add": shapes + 1}[edit]
    assert len(model.read(written).shp1.remap) == count


@pytest.mark.corpus
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_every_edited_texture_keeps_its_format_size_and_mip_levels(path):
    data = path.read_bytes()
    scene = _scene(data)
    for image in scene.images:
        if image.pixels is not None:
            image.pixels = image.pixels.copy()
            image.pixels[..., :3] = 255 - image.pixels[..., :3]  # every colour changed, alpha kept
    written_bytes = _export(scene)
    original, written = model.read(data), model.read(written_bytes)
    fields = ["format", "width", "height", "mip_count", "palette_format", "wrap_s", "min_filter"]
    for name in fields:
        assert np.array_equal(written.tex1.headers[name], original.tex1.headers[name]), name
    assert structure.problems(written_bytes) == []
    for index, image in enumerate(scene.images):
        decoded = tex1.decode(written.tex1, image.extras["tex1_index"])
        grey = decoded[..., :3].astype(int).mean(axis=-1)
        wanted = image.pixels[..., :3].astype(int).mean(axis=-1)
        assert np.abs(grey - wanted).mean() < 24, (index, image.source_format)


def test_a_material_of_another_model_is_refused_by_name():
    scene = _scene(generated_bytes())
    other = support.corpus_file("j3d-models/ba.bdl").read_bytes()
    foreign = _scene(other).materials[0]  # slot 0 of another model: another record
    scene.materials.append(foreign)
    scene.meshes[0].materials = [len(scene.materials) - 1]
    with pytest.raises(ExportError, match=f"'{foreign.name}'"):
        _export(scene)


def test_an_image_swapped_into_a_material_replaces_the_texture_it_showed():
    data = support.corpus_file("j3d-models/ba.bdl").read_bytes()
    scene = _scene(data)
    material = next(m for m in scene.materials if m.textures)
    shown = material.textures[0].image
    other = next(
        i for i, image in enumerate(scene.images) if image.pixels.shape != scene.images[shown].pixels.shape
    )
    material.textures[0].image = other
    written = model.read(_export(scene))
    original = model.read(data)
    index = scene.images[shown].extras["tex1_index"]
    height, width = scene.images[other].pixels.shape[:2]
    header = written.tex1.headers[index]
    assert (header["width"], header["height"]) == (width, height)
    assert header["format"] == original.tex1.headers[index]["format"]
    for i in range(len(original.tex1.headers)):
        if i != index:
            assert np.array_equal(tex1.decode(written.tex1, i), tex1.decode(original.tex1, i))


def test_a_mesh_with_unweighted_vertices_is_refused_naming_the_file_and_the_mesh(tmp_path):
    scene = _scene(generated_bytes())
    mesh = scene.meshes[1]
    mesh.skin_weights = mesh.skin_weights.copy()
    mesh.skin_weights[:3] = 0
    path = tmp_path / "unweighted.bmd"
    with pytest.raises(
        ExportError, match=r"unweighted\.bmd: mesh 'shape1' has 3 vertices without bone weights"
    ):
        files.save_model(scene, str(path), files.ModelExportOptions())
    assert not path.exists()


def _made_scene(textured: bool = True):
    """A scene as made in Blender (no imported model): two bones, a weighted triangle, a material."""
    rest = np.tile(np.eye(4), (2, 1, 1))
    rest[1, 2, 3] = 1.0
    skeleton = Skeleton("Rig", ["root", "top"], np.array([-1, 0], np.int32), rest)
    mesh = Mesh(
        "tri",
        np.array([[0, 0, 0], [1, 0, 0], [0, 0, 1]], np.float32),
        np.array([[0, 1, 2]], np.int32),
        material_indices=np.zeros(1, np.int32),
        materials=[0],
        skeleton=0,
        skin_joints=np.array([[0], [0], [1]], np.int32),
        skin_weights=np.ones((3, 1), np.float32),
    )
    pixels = np.full((8, 8, 4), 200, np.uint8)
    material = Material("paint", textures=[TextureSlot(0)] if textured else [])
    return Scene("made", [skeleton], [mesh], [material], [Image("img", pixels, 8, 8)])


def test_a_model_made_from_scratch_reads_back_and_an_untextured_material_is_refused():
    written = _export(_made_scene())
    assert structure.problems(written) == []
    again = model_convert.to_scene(model.read(written))
    assert again.skeletons[0].bone_names == ["root", "top"] and len(again.meshes[0].triangles) == 1
    assert [t.image for t in again.materials[0].textures] == [0]
    with pytest.raises(ExportError, match="'paint'"):
        _export(_made_scene(textured=False))
