"""File > Export > J3D model: imported models written back byte for byte, edits made in Blender
(vertices, materials, images, meshes deleted, bones added), and a model made from scratch.

Written files are read back with the format layer (formats/j3d/model.py) and imported again; the
real models come from ../shared/corpus/j3d-models (their archives too).
"""

import os

import bpy
import numpy as np
import pytest
import retro_models
import structure
from j3d_model_fixtures import generated_bytes
from retro_models.formats import archives
from retro_models.formats.errors import ExportError
from retro_models.formats.j3d import files, model, model_convert, tex1
from retro_models.formats.scene import Mesh, Scene, Skeleton
from retro_models.operators.blender.build import build_scene
from support import corpus_file, corpus_files, data_counts

MODELS = corpus_files("j3d*/*.bmd") + corpus_files("j3d*/*.bdl")
ARCHIVES = corpus_files("j3d*/*.arc")


def _import(path, **options):
    retro_models.import_file(bpy.context, str(path), import_animations=False, **options)
    return _select(next(o for o in bpy.data.objects if o.type == "ARMATURE"))


def _select(armature):
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    armature.select_set(True)
    bpy.context.view_layer.objects.active = armature
    return armature


def _meshes(armature) -> dict[str, bpy.types.Object]:
    return {o.name: o for o in bpy.data.objects if o.type == "MESH" and o.parent == armature}


def _sorted_rows(values: np.ndarray) -> np.ndarray:
    values = np.round(np.asarray(values, np.float64), 5)
    return values[np.lexsort(values.T[::-1])]


def _generated(tmp_path):
    path = tmp_path / "generated.bmd"
    path.write_bytes(generated_bytes())
    return path


@pytest.mark.corpus
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_every_corpus_model_exports_unedited_byte_identical(empty_scene, tmp_path, path):
    _import(path)
    out = tmp_path / f"out{path.suffix}"
    assert bpy.ops.export_scene.j3d_model(filepath=str(out)) == {"FINISHED"}
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.corpus
@pytest.mark.parametrize("path", ARCHIVES, ids=lambda p: p.name)
def test_every_model_of_the_corpus_archives_exports_unedited_byte_identical(empty_scene, tmp_path, path):
    archive = archives.read_archive(path.read_bytes(), str(path))
    members = [m for m in archive.members() if os.path.splitext(m.path)[1].lower() in files.MODEL_EXTENSIONS]
    if not members:
        pytest.skip(f"{path.name} holds no model")
    retro_models.import_file(bpy.context, str(path), import_animations=False)
    armatures = {o.users_collection[0].name: o for o in bpy.data.objects if o.type == "ARMATURE"}
    assert len(armatures) == len(members)
    for member in members:
        name = os.path.splitext(os.path.basename(member.path))[0]
        _select(armatures[name])
        out = tmp_path / f"{name}{os.path.splitext(member.path)[1]}"
        retro_models.export_file(bpy.context, str(out))
        assert out.read_bytes() == archives.unwrap(member.data, member.path), member.path


def test_the_export_is_in_the_menu_and_offers_the_models_name(empty_scene, tmp_path):
    assert hasattr(bpy.types, "EXPORT_SCENE_OT_j3d_model")
    from retro_models.operators import j3d_model

    _import(_generated(tmp_path))
    assert os.path.basename(j3d_model.default_path(bpy.context)) == "generated.bmd"


def test_a_moved_vertex_moves_and_every_other_mesh_keeps_its_values(empty_scene, tmp_path):
    source = _generated(tmp_path)
    armature = _import(source)
    meshes = _meshes(armature)
    moved = meshes["shape1"].data
    moved.vertices[0].co.z += 0.5
    out = tmp_path / "moved.bmd"
    retro_models.export_file(bpy.context, str(out))
    before = model_convert.to_scene(model.read(source.read_bytes()))
    after = model_convert.to_scene(model.read(out.read_bytes()))
    expected = before.meshes[1].positions.copy()
    expected[0] = moved.vertices[0].co
    assert np.allclose(_sorted_rows(after.meshes[1].positions), _sorted_rows(expected), atol=1e-5)
    untouched_before, untouched_after = before.meshes[0], after.meshes[0]
    assert np.array_equal(untouched_after.positions, untouched_before.positions)
    assert np.array_equal(untouched_after.triangles, untouched_before.triangles)
    assert np.array_equal(untouched_after.skin_weights, untouched_before.skin_weights)
    assert np.array_equal(untouched_after.uv_layers[0].data, untouched_before.uv_layers[0].data)


@pytest.mark.corpus
def test_a_corpus_model_edited_every_way_keeps_the_games_rules_and_the_untouched_shapes(empty_scene, tmp_path):
    """ma_mdl1 (skinned, from the Sunshine archive): one mesh moved, one re-weighted, one deleted and one
    duplicated; every other shape keeps its values, and the file keeps the loader's structural rules."""
    path = corpus_file("j3d-models/SunshineMario.arc")
    armature = _import(path, model="ma_mdl1")
    data = archives.unwrap(
        next(m for m in archives.read_archive(path.read_bytes(), str(path)).members() if m.path.endswith("ma_mdl1.bmd")).data,
        "ma_mdl1.bmd",
    )
    meshes = _meshes(armature)
    moved, reweighted, deleted, duplicated = (meshes[f"shape{i}"] for i in (0, 1, 2, 3))
    moved.data.vertices[0].co.x += 5.0
    group = reweighted.vertex_groups[0]
    group.add([v.index for v in reweighted.data.vertices], 1.0, "REPLACE")
    bpy.data.objects.remove(deleted)
    copy = duplicated.copy()
    copy.data = duplicated.data.copy()
    bpy.context.scene.collection.objects.link(copy)
    out = tmp_path / "ma_mdl1.bmd"
    retro_models.export_file(bpy.context, str(out))
    written = out.read_bytes()
    assert structure.problems(written) == []
    before = model_convert.to_scene(model.read(data))
    after = model_convert.to_scene(model.read(written))
    # Shape 2 is gone (the others move up one), the copy of shape 3 comes last.
    assert len(after.meshes) == len(before.meshes)
    kept = [m for m in before.meshes if m.name not in ("shape0", "shape1", "shape2")]
    for old, new in zip(kept, after.meshes[2:-1], strict=True):
        assert np.array_equal(old.positions, new.positions), old.name
        assert np.array_equal(old.skin_weights, new.skin_weights), old.name
    assert np.allclose(_sorted_rows(after.meshes[-1].positions), _sorted_rows(before.meshes[3].positions), atol=1e-4)
    assert np.isclose(after.meshes[0].positions[:, 0].max(), max(before.meshes[0].positions[:, 0].max(), moved.data.vertices[0].co.x), atol=1e-3)


def test_a_renamed_material_goes_into_the_name_table(empty_scene, tmp_path):
    armature = _import(_generated(tmp_path))
    material = _meshes(armature)["shape0"].data.materials[0]
    old = material.name
    material.name = "renamed"
    out = tmp_path / "renamed.bmd"
    retro_models.export_file(bpy.context, str(out))
    names = model.read(out.read_bytes()).mat3.names
    assert "renamed" in names and old not in names


def test_a_duplicated_material_becomes_a_new_mat3_entry(empty_scene, tmp_path):
    source = _generated(tmp_path)
    armature = _import(source)
    obj = _meshes(armature)["shape0"]
    copy = obj.data.materials[0].copy()
    obj.data.materials[0] = copy
    out = tmp_path / "copied.bmd"
    retro_models.export_file(bpy.context, str(out))
    original, written = model.read(source.read_bytes()), model.read(out.read_bytes())
    assert written.mat3.names == [*original.mat3.names, copy.name]
    assert written.mat3.remap[-1] == written.mat3.remap[0]


def test_an_edited_image_is_encoded_again_in_its_format(empty_scene, tmp_path):
    source = _generated(tmp_path)
    _import(source)
    image = bpy.data.images["checker"]
    width, height = image.size
    pixels = np.zeros((height, width, 4), np.float32)
    pixels[..., 0] = pixels[..., 3] = 1.0  # red
    image.pixels.foreach_set(pixels.ravel())
    out = tmp_path / "image.bmd"
    retro_models.export_file(bpy.context, str(out))
    original, written = model.read(source.read_bytes()), model.read(out.read_bytes())
    assert written.tex1.headers["format"][0] == original.tex1.headers["format"][0]  # I8, as imported
    decoded = tex1.decode(written.tex1, 0)
    assert (decoded == decoded[0, 0]).all()  # one grey: the red's intensity
    assert not np.array_equal(decoded, tex1.decode(original.tex1, 0))


def test_a_deleted_mesh_removes_its_shape(empty_scene, tmp_path):
    armature = _import(_generated(tmp_path))
    bpy.data.objects.remove(_meshes(armature)["shape0"])
    out = tmp_path / "deleted.bmd"
    retro_models.export_file(bpy.context, str(out))
    written = model.read(out.read_bytes())
    assert len(written.shp1.remap) == 1


def test_an_added_bone_is_refused_by_name_and_nothing_is_written(empty_scene, tmp_path):
    armature = _import(_generated(tmp_path))
    bpy.ops.object.mode_set(mode="EDIT")
    bone = armature.data.edit_bones.new("tail")
    bone.head, bone.tail = (0, 0, 0), (0, 1, 0)
    bone.parent = armature.data.edit_bones[0]
    bpy.ops.object.mode_set(mode="OBJECT")
    out = tmp_path / "tail.bmd"
    counts = data_counts()
    with pytest.raises(ExportError, match="'tail'") as raised:
        retro_models.export_file(bpy.context, str(out))
    assert "tail.bmd" in str(raised.value)
    assert not out.exists() and data_counts() == counts
    # The operator reports it (an error report raises in background mode) and leaves a file as it was.
    out.write_bytes(b"kept")
    with pytest.raises(RuntimeError, match="'tail'"):
        bpy.ops.export_scene.j3d_model(filepath=str(out))
    assert out.read_bytes() == b"kept"


def _scratch_scene() -> Scene:
    """Two bones and a textured quad pair skinned to them, as someone would make them in Blender."""
    rest = np.tile(np.eye(4), (2, 1, 1))
    rest[1, :3, 3] = (0, 1, 0)
    skeleton = Skeleton("Rig", ["root", "top"], np.array([-1, 0], np.int32), rest)
    positions = np.array([[0, 0, 0], [1, 0, 0], [1, 2, 0], [0, 2, 0]], np.float32)
    mesh = Mesh(
        "quad",
        positions,
        np.array([[0, 1, 2], [0, 2, 3]], np.int32),
        material_indices=np.zeros(2, np.int32),
        materials=[0],
        skeleton=0,
        skin_joints=np.array([[0, 1], [0, 1], [1, 0], [1, 0]], np.int32),
        skin_weights=np.array([[1, 0], [0.5, 0.5], [1, 0], [1, 0]], np.float32),
    )
    from retro_models.formats.scene import Image, Layer, Material, TextureSlot

    mesh.uv_layers = [
        Layer("UVMap", np.array([[0, 0], [1, 0], [1, 1], [0, 0], [1, 1], [0, 1]], np.float32), "CORNER")
    ]
    pixels = np.zeros((8, 8, 4), np.uint8)
    pixels[..., 1] = np.arange(8)[:, None] * 32
    pixels[..., 3] = 255
    image = Image("green", pixels, 8, 8)
    material = Material("painted", textures=[TextureSlot(0, uv_layer="UVMap")])
    return Scene("scratch", [skeleton], [mesh], [material], [image])


def test_a_model_made_from_scratch_reads_back_with_its_geometry_weights_and_texture(empty_scene, tmp_path):
    scene = _scratch_scene()
    result = build_scene(scene, bpy.context, collection_name="made in blender")
    armature = _select(result.armatures[0])
    for key in [k for k in result.collection.keys()]:  # nothing of an import: made in Blender
        del result.collection[key]
    out = tmp_path / "scratch.bmd"
    retro_models.export_file(bpy.context, str(out))
    again = model_convert.to_scene(model.read(out.read_bytes(), str(out)))
    assert again.skeletons[0].bone_names == ["root", "top"]
    (mesh,) = again.meshes
    expected = scene.meshes[0]
    corners = mesh.positions[mesh.triangles.reshape(-1)]
    assert np.allclose(
        np.sort(corners, axis=0),
        np.sort(expected.positions[expected.triangles.reshape(-1)], axis=0),
        atol=1e-5,
    )
    dense = np.zeros((len(mesh.positions), 2))
    np.add.at(
        dense,
        (np.arange(len(mesh.positions))[:, None].repeat(mesh.skin_joints.shape[1], 1), mesh.skin_joints),
        mesh.skin_weights,
    )
    by_position = {tuple(np.round(p, 4)): d for p, d in zip(mesh.positions, dense)}
    assert np.allclose(by_position[(1.0, 0.0, 0.0)], [0.5, 0.5], atol=1e-3)
    assert np.allclose(by_position[(0.0, 2.0, 0.0)], [0.0, 1.0], atol=1e-3)
    assert (
        again.images[0].width == 8
        and np.abs(again.images[0].pixels[..., 1].astype(int) - scene.images[0].pixels[..., 1]).max() <= 16
    )
    assert armature.name
