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
from j3d_model_support import generated_file, import_model, made_in_blender, select
from retro_models.formats import archives
from retro_models.formats.errors import ExportError
from retro_models.formats.j3d import files, model, model_convert, tex1
from retro_models.formats.scene import axis_matrix
from retro_models.operators.blender.mesh import group_weights, vertex_group_weights
from support import corpus_file, corpus_files, data_counts

MODELS = corpus_files("j3d*/*.bmd") + corpus_files("j3d*/*.bdl")
ARCHIVES = corpus_files("j3d*/*.arc")


def _meshes(armature) -> dict[str, bpy.types.Object]:
    return {o.name: o for o in bpy.data.objects if o.type == "MESH" and o.parent == armature}


def _sorted_rows(values: np.ndarray) -> np.ndarray:
    values = np.round(np.asarray(values, np.float64), 5)
    return values[np.lexsort(values.T[::-1])]


@pytest.mark.corpus
@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.name)
def test_every_corpus_model_exports_unedited_byte_identical(empty_scene, tmp_path, path):
    import_model(path)
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
        select(armatures[name])
        out = tmp_path / f"{name}{os.path.splitext(member.path)[1]}"
        retro_models.export_file(bpy.context, str(out))
        assert out.read_bytes() == archives.unwrap(member.data, member.path), member.path


@pytest.mark.corpus
def test_a_model_posed_and_taken_through_edit_mode_unedited_exports_byte_identical(empty_scene, tmp_path):
    path = corpus_file("j3d-models/zl.bdl")
    armature = import_model(path)
    armature.pose.bones[1].rotation_quaternion = (0.7, 0.7, 0, 0)  # the pose is not the model
    for obj in _meshes(armature).values():
        bpy.context.view_layer.objects.active = obj
        bpy.ops.object.mode_set(mode="EDIT")
        bpy.ops.object.mode_set(mode="OBJECT")
    select(armature)
    out = tmp_path / "zl.bdl"
    retro_models.export_file(bpy.context, str(out))
    assert out.read_bytes() == path.read_bytes()


@pytest.mark.corpus
def test_the_weights_the_import_digests_are_those_the_vertex_groups_read_back(empty_scene):
    """The import digests each mesh's skin from the weights it gave the vertex groups (no scene
    evaluation); the export reads the groups: both must be the same numbers."""
    path = corpus_file("j3d-models/SunshineMario.arc")
    import_model(path, model="ma_mdl1")
    scene = files.load_model(str(path), files.ModelImportOptions(model="ma_mdl1", import_animations=False))[0]
    names = scene.skeletons[0].bone_names
    for mesh in scene.meshes:
        obj = bpy.data.objects[mesh.name]
        read = np.zeros((len(obj.data.vertices), len(names)), np.float32)
        ((vertex, bone, weight),) = vertex_group_weights(bpy.context, [obj], names)
        read[vertex, bone] = weight
        assert np.array_equal(group_weights(mesh.skin_joints, mesh.skin_weights, len(names)), read), mesh.name


def test_the_export_is_in_the_menu_and_offers_the_models_name(empty_scene, tmp_path):
    assert hasattr(bpy.types, "EXPORT_SCENE_OT_j3d_model")
    from retro_models.operators import j3d_model

    import_model(generated_file(tmp_path))
    assert os.path.basename(j3d_model.default_path(bpy.context)) == "generated.bmd"
    bpy.ops.wm.read_factory_settings(use_empty=True)
    import_model(corpus_file("j3d-models/SunshineMario.arc"), model="ma_mdl1")  # a model of an archive
    assert os.path.basename(j3d_model.default_path(bpy.context)) == "ma_mdl1.bmd"


def test_a_moved_vertex_moves_and_every_other_mesh_keeps_its_values(empty_scene, tmp_path):
    source = generated_file(tmp_path)
    armature = import_model(source)
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
def test_a_corpus_model_edited_every_way_keeps_the_games_rules_and_the_untouched_shapes(
    empty_scene, tmp_path
):
    """ma_mdl1 (skinned, from the Sunshine archive): one mesh moved, one re-weighted, one deleted and one
    duplicated; every other shape keeps its values, and the file keeps the loader's structural rules."""
    path = corpus_file("j3d-models/SunshineMario.arc")
    armature = import_model(path, model="ma_mdl1")
    data = archives.unwrap(
        next(
            m
            for m in archives.read_archive(path.read_bytes(), str(path)).members()
            if m.path.endswith("ma_mdl1.bmd")
        ).data,
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
    assert np.allclose(
        _sorted_rows(after.meshes[-1].positions), _sorted_rows(before.meshes[3].positions), atol=1e-4
    )
    assert np.isclose(
        after.meshes[0].positions[:, 0].max(),
        max(before.meshes[0].positions[:, 0].max(), moved.data.vertices[0].co.x),
        atol=1e-3,
    )


def test_a_new_mesh_weighted_to_a_bone_with_a_models_material_becomes_a_new_shape(empty_scene, tmp_path):
    source = generated_file(tmp_path)
    armature = import_model(source)
    material = _meshes(armature)["shape1"].data.materials[0]
    bpy.ops.mesh.primitive_cube_add(size=0.5)
    cube = bpy.context.active_object
    cube.parent = armature
    cube.modifiers.new("Armature", "ARMATURE").object = armature
    cube.vertex_groups.new(name="hand").add(list(range(8)), 1.0, "REPLACE")
    cube.data.materials.append(material)
    select(armature)
    out = tmp_path / "cube.bmd"
    retro_models.export_file(bpy.context, str(out))
    data = out.read_bytes()
    original, written = model.read(source.read_bytes()), model.read(data)
    assert len(written.shp1.remap) == 3
    again = model_convert.to_scene(written)
    cube_mesh = again.meshes[2]
    assert len(cube_mesh.triangles) == 12
    assert set(np.unique(cube_mesh.skin_joints[cube_mesh.skin_weights > 0]).tolist()) == {2}  # "hand"
    assert np.allclose(np.abs(cube_mesh.positions - cube_mesh.positions.mean(axis=0)), 0.25, atol=1e-4)
    for index in (0, 1):  # the imported shapes are as they were
        assert np.array_equal(
            again.meshes[index].positions, model_convert.to_scene(original).meshes[index].positions
        )


def test_a_renamed_material_goes_into_the_name_table(empty_scene, tmp_path):
    armature = import_model(generated_file(tmp_path))
    material = _meshes(armature)["shape0"].data.materials[0]
    old = material.name
    material.name = "renamed"
    out = tmp_path / "renamed.bmd"
    retro_models.export_file(bpy.context, str(out))
    names = model.read(out.read_bytes()).mat3.names
    assert "renamed" in names and old not in names


def test_a_duplicated_material_becomes_a_new_mat3_entry(empty_scene, tmp_path):
    source = generated_file(tmp_path)
    armature = import_model(source)
    obj = _meshes(armature)["shape0"]
    copy = obj.data.materials[0].copy()
    obj.data.materials[0] = copy
    out = tmp_path / "copied.bmd"
    retro_models.export_file(bpy.context, str(out))
    original, written = model.read(source.read_bytes()), model.read(out.read_bytes())
    assert written.mat3.names == [*original.mat3.names, copy.name]
    assert written.mat3.remap[-1] == written.mat3.remap[0]


def test_an_edited_image_is_encoded_again_in_its_format(empty_scene, tmp_path):
    source = generated_file(tmp_path)
    import_model(source)
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


def test_an_image_swapped_in_the_material_replaces_the_texture_it_showed(empty_scene, tmp_path):
    source = generated_file(tmp_path)
    armature = import_model(source)
    material = _meshes(armature)["shape0"].data.materials[0]
    node = next(n for n in material.node_tree.nodes if n.type == "TEX_IMAGE")
    swapped = bpy.data.images.new("painted", 16, 8, alpha=True)
    swapped.pixels.foreach_set(np.tile([0.0, 0.0, 1.0, 1.0], 16 * 8).astype(np.float32))
    node.image = swapped
    out = tmp_path / "swapped.bmd"
    retro_models.export_file(bpy.context, str(out))
    written = model.read(out.read_bytes())
    header = written.tex1.headers[0]
    assert (header["width"], header["height"], header["format"]) == (16, 8, 1)  # I8, as the texture was
    decoded = tex1.decode(written.tex1, 0)
    assert (decoded == decoded[0, 0]).all() and decoded[0, 0, 0] < 64  # blue's intensity


def test_a_deleted_mesh_removes_its_shape(empty_scene, tmp_path):
    armature = import_model(generated_file(tmp_path))
    bpy.data.objects.remove(_meshes(armature)["shape0"])
    out = tmp_path / "deleted.bmd"
    retro_models.export_file(bpy.context, str(out))
    written = model.read(out.read_bytes())
    assert len(written.shp1.remap) == 1


def test_an_added_bone_is_refused_by_name_and_nothing_is_written(empty_scene, tmp_path):
    armature = import_model(generated_file(tmp_path))
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


def test_a_model_made_in_blender_reads_back_with_its_geometry_weights_and_texture(empty_scene, tmp_path):
    obj, pixels = made_in_blender()
    out = tmp_path / "scratch.bmd"
    report = retro_models.export_file(bpy.context, str(out))
    assert report.paths == [str(out)]
    data = out.read_bytes()
    assert structure.problems(data) == []
    again = model_convert.to_scene(model.read(data, str(out)))
    assert again.skeletons[0].bone_names == ["root", "top"]
    assert list(again.skeletons[0].parents) == [-1, 0]
    (mesh,) = again.meshes
    # Blender's Z-up turns into the file's Y-up (Forward / Up default −Z / Y).
    blender = np.array([v.co for v in obj.data.vertices], np.float64)
    expected = (np.linalg.inv(axis_matrix(*model_convert.AXES))[:3, :3] @ blender.T).T
    assert np.allclose(_sorted_rows(mesh.positions), _sorted_rows(expected), atol=1e-4)
    assert len(mesh.triangles) == 2
    dense = np.zeros((len(mesh.positions), 2))
    np.add.at(dense, (np.arange(len(mesh.positions))[:, None], mesh.skin_joints), mesh.skin_weights)
    for position, weights in ((expected[1], [0.5, 0.5]), (expected[0], [1, 0]), (expected[3], [0, 1])):
        found = np.flatnonzero(np.abs(mesh.positions - position).max(axis=1) < 1e-4)
        assert len(found) and np.allclose(dense[found[0]], weights, atol=1e-3)
    (material,) = again.materials  # its TEV stage shows the texture
    assert material.name == "painted" and [t.image for t in material.textures] == [0]
    (image,) = again.images
    assert (image.width, image.height) == (8, 8)
    green = np.round(pixels[::-1, :, 1] * 255)  # the Scene's first row is the image's top
    assert np.abs(image.pixels[..., 1].astype(float) - green).max() <= 16  # CMPR's precision
    assert mesh.uv_layers and np.allclose(np.sort(np.unique(mesh.uv_layers[0].data, axis=0), axis=0).min(), 0)
