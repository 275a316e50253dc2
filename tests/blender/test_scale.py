"""Scale on import and export: the imported objects are Scale times the size, in their object
matrices, so that exporting with the same Scale gives every file back byte for byte."""

import subprocess
import sys

import bpy
import numpy as np
import pytest
import retro_models
import support
import tmrf_fixtures
import ttyd_fixtures
from demo_creature import demo_files
from j3d_model_fixtures import generated_bytes
from mathutils import Matrix, Vector
from support import ROOT
from tamsoft_fixtures import tmd0_bytes
from ttyd_support import tpl_bytes

SCALE = 0.01


def toshi_files(folder):
    for name, data in demo_files().items():
        (folder / name).write_bytes(data)
    return folder / "demo.tmd"


def tamsoft_files(folder):
    (folder / "model.tmd").write_bytes(tmd0_bytes())
    return folder / "model.tmd"


def tmrf_files(folder):
    (folder / "model.tpak").write_bytes(tmrf_fixtures.full_file())
    return folder / "model.tpak"


def ttyd_files(folder):
    (folder / "c_test").write_bytes(ttyd_fixtures.build())
    (folder / "c_test_tex-").write_bytes(tpl_bytes())
    return folder / "c_test"


EXPORTING = {"toshi": toshi_files, "tamsoft": tamsoft_files, "tmrf": tmrf_files, "ttyd": ttyd_files}
IMPORT_OPTIONS = {"toshi": {"lods": "ALL"}}  # JPOG: every level of detail, so that export writes them all
EXPORT_OPTIONS = {"tmrf": {"file_contents": ".tpak"}}
# TTYD's vertex animations are written from the file's own delta tables while their keys are unchanged
# (formats/ttyd/deltas.py), so they keep the file's size: resized, its model is checked at rest.
RESIZED_OPTIONS = {"ttyd": {"import_animations": False}}


def import_model(folder, family: str, scale: float, **options):
    options = {**IMPORT_OPTIONS.get(family, {}), **options}
    path = EXPORTING[family](folder)
    report = retro_models.import_file(bpy.context, str(path), global_scale=scale, **options)
    assert report.counts["armatures"] == 1 and report.counts["meshes"] >= 1
    bpy.context.view_layer.update()
    return path


def the_armature():
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == armature)
    bpy.context.view_layer.objects.active = armature
    return armature


def world_bounds() -> np.ndarray:
    """(2, 3): the smallest and largest world corner of every mesh's bounding box."""
    corners = [o.matrix_world @ Vector(c) for o in bpy.data.objects if o.type == "MESH" for c in o.bound_box]
    return np.array([np.min(corners, axis=0), np.max(corners, axis=0)])


def bone_heads(frame: float) -> np.ndarray:
    """World positions of every bone's head, posed at ``frame``."""
    armature = the_armature()
    bpy.context.scene.frame_set(int(frame), subframe=frame % 1)
    bpy.context.view_layer.update()
    return np.array([armature.matrix_world @ bone.head for bone in armature.pose.bones])


@pytest.mark.parametrize("family", sorted(EXPORTING))
def test_export_with_the_import_scale_gives_the_files_back(empty_scene, tmp_path, family):
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    path = import_model(tmp_path / "in", family, SCALE)
    the_armature()
    report = retro_models.export_file(
        bpy.context,
        str(tmp_path / "out" / path.name),
        family=family,
        global_scale=SCALE,
        **EXPORT_OPTIONS.get(family, {}),
    )
    assert report.paths
    for written in report.paths:
        name = written.rsplit("/", 1)[-1]
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "in" / name).read_bytes(), name


@pytest.mark.parametrize("family", sorted(EXPORTING))
def test_export_with_scale_one_writes_the_size_seen_in_blender(empty_scene, tmp_path, family):
    """Imported with Scale s, exported with Scale 1: the file, imported with Scale 1, is the size (and
    plays the poses) the model had in Blender."""
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    path = import_model(tmp_path / "in", family, SCALE, **RESIZED_OPTIONS.get(family, {}))
    has_action = the_armature().animation_data is not None and the_armature().animation_data.action
    frame = 1.5 if has_action else 0.0
    bounds, heads = world_bounds(), bone_heads(frame)
    bpy.context.scene.frame_set(0)
    the_armature()
    written = tmp_path / "out" / path.name
    retro_models.export_file(bpy.context, str(written), family=family, **EXPORT_OPTIONS.get(family, {}))
    assert written.read_bytes() != path.read_bytes()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    retro_models.import_file(
        bpy.context, str(written), **IMPORT_OPTIONS.get(family, {}), **RESIZED_OPTIONS.get(family, {})
    )
    bpy.context.view_layer.update()
    np.testing.assert_allclose(world_bounds(), bounds, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(bone_heads(frame), heads, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("family", sorted(EXPORTING))
def test_the_model_is_scale_times_the_size_and_plays_scaled(empty_scene, tmp_path, family):
    (tmp_path / "one").mkdir()
    (tmp_path / "scaled").mkdir()
    import_model(tmp_path / "one", family, 1.0)
    has_action = the_armature().animation_data is not None and the_armature().animation_data.action
    frame = 1.5 if has_action else 0.0
    bounds, heads = world_bounds(), bone_heads(frame)
    mesh_data = {
        o.name: np.array([v.co for v in o.data.vertices]) for o in bpy.data.objects if o.type == "MESH"
    }
    bpy.ops.wm.read_factory_settings(use_empty=True)
    import_model(tmp_path / "scaled", family, SCALE)
    np.testing.assert_allclose(world_bounds(), SCALE * bounds, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bone_heads(frame), SCALE * heads, rtol=1e-5, atol=1e-6)
    assert np.abs(heads).max() > 0.01  # the bones stand somewhere that a scale moves
    for obj in bpy.data.objects:  # the data keep the file's values: only object matrices scale
        if obj.type == "MESH":
            np.testing.assert_array_equal([v.co for v in obj.data.vertices], mesh_data[obj.name])
        if obj.parent is None:
            assert tuple(obj.matrix_world.to_scale()) == pytest.approx((SCALE,) * 3)


def test_j3d_models_scale_after_their_axis_conversion(empty_scene, tmp_path):
    (tmp_path / "model.bmd").write_bytes(generated_bytes())
    retro_models.import_file(bpy.context, str(tmp_path / "model.bmd"))
    (armature,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    axes = np.array(armature.matrix_world)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    retro_models.import_file(bpy.context, str(tmp_path / "model.bmd"), global_scale=SCALE)
    bpy.context.view_layer.update()
    (armature,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    np.testing.assert_allclose(np.array(armature.matrix_world), np.diag([SCALE] * 3 + [1]) @ axes, atol=1e-7)


@pytest.mark.corpus
def test_a_game_model_and_its_animations_are_scale_times_the_size(empty_scene):
    path = support.corpus_file("j3d-models/ba.bdl")
    measured = []
    for scale in (1.0, SCALE):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        retro_models.import_file(bpy.context, str(path), global_scale=scale)
        bpy.context.view_layer.update()
        action = the_armature().animation_data and the_armature().animation_data.action
        frame = 0.5 * sum(action.frame_range) if action else 0.0
        measured.append((world_bounds(), bone_heads(frame)))
    (bounds, heads), (scaled_bounds, scaled_heads) = measured
    assert np.abs(bounds).max() > 1  # a real model, of some size
    np.testing.assert_allclose(scaled_bounds, SCALE * bounds, rtol=1e-4, atol=1e-4 * SCALE)
    np.testing.assert_allclose(scaled_heads, SCALE * heads, rtol=1e-4, atol=1e-4 * SCALE)


def test_every_operator_with_forward_and_up_has_scale(addon):
    import dataclasses

    from retro_models.formats import registry

    checked = 0
    for family in registry.FAMILIES:
        for operation in (family.importer, family.exporter):
            if operation is None or "axis_forward" not in {
                f.name for f in dataclasses.fields(operation.options)
            }:
                continue
            category, name = operation.idname.split(".")
            prop = getattr(getattr(bpy.ops, category), name).get_rna_type().properties["global_scale"]
            assert (prop.name, prop.default, prop.hard_min, prop.hard_max) == (
                "Scale",
                1.0,
                pytest.approx(0.001),
                pytest.approx(1000.0),
            ), operation.idname
            checked += 1
    assert checked >= 9  # five imports (J3D models among them) and four exports


def test_scale_out_of_range_is_refused(empty_scene, tmp_path):
    (tmp_path / "model.tmd").write_bytes(tmd0_bytes())
    with pytest.raises(ValueError, match="global_scale"):
        retro_models.import_file(bpy.context, str(tmp_path / "model.tmd"), global_scale=0.0)
    assert not bpy.data.objects


def test_batch_takes_the_scale(addon, tmp_path):
    from retro_models.operators import batch

    chosen = batch.family_options(["global_scale=0.01"])
    assert {name for name, values in chosen.items() if values.get("global_scale") == 0.01} == {
        "toshi",
        "j3d_model",
        "tamsoft",
        "tmrf",
        "ttyd",
    }
    (tmp_path / "model.tmd").write_bytes(tmd0_bytes())
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "batch_import.py"), tmp_path / "model.tmd"]
        + ["--option", "global_scale=0.01", "-j", "1", "--out", tmp_path / "model.blend"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with bpy.data.libraries.load(str(tmp_path / "model.blend")) as (source, loaded):
        loaded.objects = [name for name in source.objects]
    (armature,) = [o for o in loaded.objects if o.type == "ARMATURE"]
    assert tuple(armature.matrix_basis.to_scale()) == pytest.approx((SCALE,) * 3)


def test_scale_lengths_sizes_lengths_only():
    from retro_models.formats.scene import Animation, Channel, Mesh, Scene, ShapeKey, Skeleton, scale_lengths

    rest = np.tile(np.eye(4), (2, 1, 1))
    rest[1, :3, 3] = (0, 2, 0)
    rest[1, :3, :3] *= 3  # a bone's own scale is no length
    mesh = Mesh("m", np.ones((1, 3), np.float32), np.zeros((0, 3), np.int32), matrix=rest[1].copy())
    mesh.shape_keys = [ShapeKey("k", np.full((1, 3), 2, np.float32))]
    keys = np.array([[1.0, 2.0, 3.0]])
    handles = np.full((1, 3, 2), 5.0)
    channels = [
        Channel("bone", "b", "location", np.zeros(1), keys, "BEZIER", handles, handles),
        Channel("bone", "b", "scale", np.zeros(1), keys),
    ]
    scene = Scene(
        skeletons=[Skeleton("s", ["a", "b"], np.array([-1, 0]), rest)],
        meshes=[mesh],
        animations=[Animation("walk", channels)],
    )
    scale_lengths(scene, 0.5)
    np.testing.assert_array_equal(scene.skeletons[0].rest[1, :3, 3], (0, 1, 0))
    np.testing.assert_array_equal(scene.skeletons[0].rest[1, :3, :3], 3 * np.eye(3))
    np.testing.assert_array_equal(mesh.positions, [[0.5] * 3])
    np.testing.assert_array_equal(mesh.shape_keys[0].positions, [[1.0] * 3])
    np.testing.assert_array_equal(mesh.matrix[:3, 3], (0, 1, 0))
    location, scale = scene.animations[0].channels
    np.testing.assert_array_equal(location.values, keys / 2)
    np.testing.assert_array_equal(location.handles_left[..., 1], 2.5)  # values, not frames
    np.testing.assert_array_equal(location.handles_right[..., 0], 5.0)
    np.testing.assert_array_equal(scale.values, keys)


def test_meshes_without_an_armature_have_their_world_matrix_divided(empty_scene):
    from retro_models.operators.blender.extract import extract_scene

    data = bpy.data.meshes.new("plane")
    data.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    obj = bpy.data.objects.new("plane", data)
    bpy.context.scene.collection.objects.link(obj)
    obj.matrix_basis = Matrix.Translation((0, 0, 0.02)) @ Matrix.Scale(SCALE, 4)
    bpy.context.view_layer.update()
    (mesh,) = extract_scene(bpy.context, None, [obj], scale=SCALE).meshes
    np.testing.assert_allclose(mesh.matrix, Matrix.Translation((0, 0, 2)), atol=1e-6)
    (mesh,) = extract_scene(bpy.context, None, [obj], scale=1.0).meshes
    np.testing.assert_allclose(mesh.matrix, obj.matrix_world, atol=1e-9)
    obj.matrix_basis = Matrix.Scale(SCALE, 4)
    bpy.context.view_layer.update()
    assert extract_scene(bpy.context, None, [obj], scale=SCALE).meshes[0].matrix is None


def test_an_unevenly_scaled_armature_is_written_at_its_mean_size_with_a_warning(empty_scene, tmp_path):
    import_model(tmp_path, "tamsoft", 1.0)
    armature = the_armature()
    armature.scale = (1.0, 2.0, 4.0)
    report = retro_models.export_file(bpy.context, str(tmp_path / "out.tmd"), family="tamsoft")
    assert any("scaled unevenly (1.0, 2.0, 4.0)" in w for w in report.warnings), report.warnings
    bpy.ops.wm.read_factory_settings(use_empty=True)
    (tmp_path / "again").mkdir()
    (tmp_path / "again" / "model.tmd").write_bytes((tmp_path / "out.tmd").read_bytes())
    retro_models.import_file(bpy.context, str(tmp_path / "again" / "model.tmd"))
    bpy.context.view_layer.update()
    mean = world_bounds()
    bpy.ops.wm.read_factory_settings(use_empty=True)
    import_model(tmp_path / "again", "tamsoft", 1.0)  # the original again, at its own size
    np.testing.assert_allclose(mean, 2.0 * world_bounds(), rtol=1e-5, atol=1e-6)  # ∛(1·2·4) = 2
