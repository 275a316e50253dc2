"""J3D models (BMD/BDL) imported into Blender: armature, meshes, skinning, textures, the BCK
played on the imported armature against the game's skinning, and bad input."""

import time

import bpy
import numpy as np
import pytest
import retro_models
import support
from j3d_model_fixtures import generated_bytes
from retro_models.formats.curves import euler_to_matrix
from retro_models.formats.errors import FormatError
from retro_models.formats.j3d import bck, evaluate, model, model_convert
from retro_models.formats.j3d import model_geometry as geometry
from retro_models.formats.scene import axis_matrix
from ttyd_support import evaluated_positions

CORPUS_MODELS = support.corpus_files("j3d*/*.bmd") + support.corpus_files("j3d*/*.bdl")


def _objects(kind):
    return [o for o in bpy.data.objects if o.type == kind]


@pytest.mark.corpus
@pytest.mark.parametrize("path", CORPUS_MODELS, ids=lambda p: p.name)
def test_every_corpus_model_imports_skinned_and_textured(empty_scene, path):
    data = path.read_bytes()
    m = model.read(data, path.name)
    scene = model_convert.to_scene(m, path.stem, path.name)
    start = time.perf_counter()
    report = retro_models.import_file(bpy.context, str(path), import_animations=False)  # the model alone
    assert time.perf_counter() - start < 2.0
    assert report.counts["armatures"] == 1 and report.counts["meshes"] == len(m.shp1.remap)
    (armature,) = _objects("ARMATURE")
    assert len(armature.data.bones) == len(m.jnt1.remap)
    assert list(armature.data.bones.keys()) == m.jnt1.names
    meshes = sorted(_objects("MESH"), key=lambda o: int(o.name[5:].split(".")[0]))
    assert sum(len(o.data.polygons) for o in meshes) == sum(len(s.triangles) for s in scene.meshes)
    for obj, mesh in zip(meshes, scene.meshes, strict=True):
        assert obj.parent == armature and obj.modifiers["Armature"].object == armature
        used = {g.name for g in obj.vertex_groups}
        joints = np.unique(mesh.skin_joints[mesh.skin_weights > 0])
        assert used == {m.jnt1.names[j] for j in joints}
        assert len(obj.data.uv_layers) == len(mesh.uv_layers)
    assert report.counts["images"] == len(scene.images) > 0
    assert all(image.size[0] > 0 for image in bpy.data.images)
    # The file's Y-up space turns to Blender's Z-up on the armature object.
    assert np.allclose(np.array(armature.matrix_world), axis_matrix(*model_convert.AXES), atol=1e-6)


def _game_positions(m: model.Model, frame_values: dict, frame: int) -> list[np.ndarray]:
    """Every mesh vertex as the game skins it at a frame, from the file's tables (Y-up)."""
    graph = geometry.read_graph(m)
    rotation = euler_to_matrix(np.radians(frame_values["rotation"][frame]))
    scale = frame_values["scale"][frame]
    compensate = m.jnt1.joints()["scale_compensate"] == 1
    pose = np.zeros((len(graph.parents), 4, 4))
    for j, parent in enumerate(graph.parents):
        local = np.eye(4)
        local[:3, :3] = rotation[j] * scale[j]
        local[:3, 3] = frame_values["translation"][frame][j]
        if parent >= 0 and compensate[j] and m.inf1.scaling_rule == geometry.MAYA:
            local[:3, :3] /= scale[parent][:, None]
        pose[j] = (pose[parent] if parent >= 0 else np.eye(4)) @ local
    binds = geometry.inverse_binds(m)
    skin = geometry.draw_skin(m, geometry.world_matrices(m, graph.parents))
    draw = np.einsum("dk,dkij->dij", skin.weights.astype(np.float64), pose[skin.joints])
    weighted = m.drw1.kinds == 1
    draw[weighted] = np.einsum(
        "dk,dkij->dij", skin.weights[weighted], pose[skin.joints[weighted]] @ binds[skin.joints[weighted]]
    )
    arrays = geometry.arrays(m)
    out = []
    for s in range(len(m.shp1.remap)):
        g = geometry.decode_shape(m, s)
        keys = g.indices[geometry.POS] * len(draw) + g.draw
        _, first = np.unique(keys, return_index=True)
        p = arrays[geometry.POS][g.indices[geometry.POS][first]].astype(np.float64)
        d = draw[g.draw[first]]
        out.append(np.einsum("nij,nj->ni", d[:, :3, :3], p) + d[:, :3, 3])
    return out


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "animation_name"), [("ba.bdl", "wait01.bck"), ("btd.bmd", "dead.bck")])
def test_bck_on_the_imported_armature_moves_vertices_as_the_game_skins_them(
    empty_scene, tmp_path, name, animation_name
):
    path = support.corpus_file(f"j3d-models/{name}")
    animation = support.corpus_file(f"j3d-models/{animation_name}")
    m = model.read(path.read_bytes(), path.name)
    retro_models.import_file(bpy.context, str(path))
    (armature,) = _objects("ARMATURE")
    bpy.context.view_layer.objects.active = armature
    armature.select_set(True)
    retro_models.import_file(bpy.context, str(animation))
    assert armature.animation_data.action is not None
    clip = bck.read(animation.read_bytes(), animation.name)
    frames = [0, 7, 23, clip.length - 1]
    values = evaluate.evaluate_bck(clip, np.array(frames, float))
    meshes = sorted(_objects("MESH"), key=lambda o: int(o.name[5:].split(".")[0]))
    axis = axis_matrix(*model_convert.AXES)[:3, :3]
    worst = 0.0
    for k, frame in enumerate(frames):
        bpy.context.scene.frame_set(frame)
        expected = _game_positions(m, values, k)
        for obj, game in zip(meshes, expected, strict=True):
            found = evaluated_positions(obj) @ np.array(obj.matrix_world)[:3, :3].T
            worst = max(worst, float(np.abs(found - game @ axis.T).max()))
    # Envelope vertices: Blender skins from the rest pose, the game from the inverse binds
    # (W · invBind ≈ I to about 0.01 units in these models); rigid ones agree to float32.
    assert worst < 0.005, worst
    # The unedited action exports back to the same file.
    retro_models.export_file(bpy.context, str(tmp_path / animation_name))
    assert (tmp_path / animation_name).read_bytes() == animation.read_bytes()


def test_truncated_model_gives_one_format_error_and_changes_nothing(empty_scene, tmp_path):
    data = generated_bytes()
    path = tmp_path / "cut.bdl"
    path.write_bytes(data[: len(data) // 2])
    before = support.data_counts()
    with pytest.raises(FormatError, match="cut.bdl"):
        retro_models.import_file(bpy.context, str(path))
    assert support.data_counts() == before


def test_material_animations_apply_to_the_imported_materials_by_name(empty_scene, tmp_path):
    import j3d_fixtures
    from j3d_model_fixtures import generated
    from retro_models.operators.blender import compat

    built, _ = generated()
    built.mat3.names[0] = "m1"  # the material the fixture BPK animates
    (tmp_path / "gen.bmd").write_bytes(model.write(built))
    (tmp_path / "color.bpk").write_bytes(j3d_fixtures.bpk_bytes())
    retro_models.import_file(bpy.context, str(tmp_path / "gen.bmd"))
    for obj in _objects("MESH"):
        obj.select_set(True)
    report = retro_models.import_file(bpy.context, str(tmp_path / "color.bpk"))
    assert "m1" in " ".join(report.notes)
    tree = bpy.data.materials["m1"].node_tree
    assert tree.animation_data is not None and compat.action_fcurves(tree.animation_data.action)
    assert bpy.data.materials["cloth"].node_tree.animation_data is None
