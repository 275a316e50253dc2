"""The Python entry for scripts: ``retro_models.import_file`` and ``export_file`` for every family,
their reports, and failures that leave Blender's data and the disk as they were."""

import bpy
import numpy as np
import pytest
import retro_models
import tmrf_fixtures
import ttyd_fixtures
from demo_creature import demo_files
from j3d_fixtures import bck_bytes
from j3d_support import make_armature
from retro_models.formats.errors import ExportError, FormatError, SelectionError
from retro_models.formats.textures import gx, tpl
from retro_models.formats.tmrf import media
from support import data_counts
from tamsoft_fixtures import tmd0_bytes


def select_only(obj) -> None:
    for other in bpy.context.view_layer.objects:
        other.select_set(other == obj)
    bpy.context.view_layer.objects.active = obj


def the_armature():
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    select_only(armature)
    return armature


@pytest.fixture
def out(tmp_path):
    (tmp_path / "out").mkdir()
    return tmp_path / "out"


def test_toshi(empty_scene, tmp_path, out):
    for name, data in demo_files().items():
        (tmp_path / name).write_bytes(data)
    report = retro_models.import_file(bpy.context, str(tmp_path / "demo.tmd"), lods="ALL")
    assert report.counts["armatures"] == 1 and report.counts["actions"] > 0 and not report.warnings
    assert str(report).startswith("demo.tmd: 1 armature, ")
    the_armature()
    report = retro_models.export_file(bpy.context, str(out / "demo.tmd"), family="toshi")
    assert sorted(report.paths) == sorted(str(out / n) for n in ("demo.tmd", "demo.tkl", "demo.tml"))
    for name in ("demo.tmd", "demo.tkl", "demo.tml"):
        assert (out / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_tamsoft(empty_scene, tmp_path, out):
    (tmp_path / "model.tmd").write_bytes(tmd0_bytes())
    report = retro_models.import_file(bpy.context, str(tmp_path / "model.tmd"))
    assert report.counts["meshes"] == 1
    the_armature()
    report = retro_models.export_file(bpy.context, str(out / "model"), family="tamsoft")
    assert report.paths == [str(out / "model.tmd")] and (out / "model.tmd").read_bytes() == tmd0_bytes()


def test_tmrf(empty_scene, tmp_path, out):
    (tmp_path / "skeleton.tskl").write_bytes(tmrf_fixtures.full_file())
    report = retro_models.import_file(
        bpy.context, str(tmp_path / "skeleton.tskl"), axis_forward="-Z", axis_up="Y"
    )
    assert report.counts["armatures"] == 1 and report.counts["meshes"] == 1
    the_armature()
    report = retro_models.export_file(bpy.context, str(out / "again"), file_contents=".tpak", family="tmrf")
    assert report.paths == [str(out / "again.tpak")]
    written, original = (
        media.read(d) for d in ((out / "again.tpak").read_bytes(), tmrf_fixtures.full_file())
    )
    assert [written.type_name(r) for r in written.walk()] == [original.type_name(r) for r in original.walk()]


def test_ttyd(empty_scene, tmp_path, out):
    (tmp_path / "c_test").write_bytes(ttyd_fixtures.build())
    report = retro_models.import_file(bpy.context, str(tmp_path / "c_test"))
    assert any("c_test_tex-" in w for w in report.warnings)  # no TPL next to it
    the_armature()
    for image in bpy.data.images:  # painted: encoded afresh in the chosen format
        image.scale(8, 8)
        image.pixels.foreach_set(np.full(8 * 8 * 4, 0.5, np.float32))
    report = retro_models.export_file(bpy.context, str(out / "c_test"), texture_format="IA8")
    assert report.paths == [str(out / "c_test"), str(out / "c_test_tex-")]
    assert {image.format for image in tpl.read((out / "c_test_tex-").read_bytes()).images} == {gx.IA8}


def test_j3d(empty_scene, tmp_path, out):
    (tmp_path / "walk.bck").write_bytes(bck_bytes())
    armature = make_armature(bpy.context, 2, rotated=False)
    report = retro_models.import_file(bpy.context, str(tmp_path / "walk.bck"))
    assert report.counts["actions"] == 1 and report.counts["meshes"] == 0
    assert any(f"on armature {armature.name!r}" in note for note in report.notes)
    report = retro_models.export_file(bpy.context, str(out / "walk.bck"))
    assert report.paths == [str(out / "walk.bck")] and (out / "walk.bck").read_bytes() == bck_bytes()


def test_options_are_checked_by_name_and_value(empty_scene, tmp_path):
    (tmp_path / "model.tmd").write_bytes(tmd0_bytes())
    with pytest.raises(TypeError, match="unknown option.*bone_names, lods"):
        retro_models.import_file(bpy.context, str(tmp_path / "model.tmd"), lods="ALL", bone_names="x.txt")
    with pytest.raises(ValueError, match="axis_up"):
        retro_models.import_file(bpy.context, str(tmp_path / "model.tmd"), axis_up="W")
    with pytest.raises(TypeError, match="family="):  # JPOG and Tamsoft both write .tmd
        retro_models.export_file(bpy.context, str(tmp_path / "out.tmd"))
    with pytest.raises(TypeError, match="no family 'gltf'"):
        retro_models.export_file(bpy.context, str(tmp_path / "out.tmd"), family="gltf")
    assert not bpy.data.objects


def test_failures_leave_the_data_and_the_disk_as_they_were(empty_scene, tmp_path, out):
    (tmp_path / "model.tmd").write_bytes(tmd0_bytes())
    retro_models.import_file(bpy.context, str(tmp_path / "model.tmd"))
    the_armature()
    with pytest.raises(ExportError, match="not imported from a CAT"):
        retro_models.export_file(bpy.context, str(out / "model_mdl_00.cat"))
    before = data_counts()
    (tmp_path / "cut.tmd").write_bytes(tmd0_bytes()[:100])
    with pytest.raises(FormatError, match="cut.tmd"):
        retro_models.import_file(bpy.context, str(tmp_path / "cut.tmd"))
    (tmp_path / "walk.bck").write_bytes(bck_bytes())
    select_only(next(o for o in bpy.data.objects if o.type == "MESH"))
    bpy.context.view_layer.objects.active = None
    with pytest.raises(SelectionError, match="select the armature"):
        retro_models.import_file(bpy.context, str(tmp_path / "walk.bck"))
    (tmp_path / "icon.tpl").write_bytes(
        tpl.write(tpl.TPL([tpl.image_from_pixels(np.zeros((4, 4, 4), np.uint8), gx.I8)]))
    )
    with pytest.raises(FormatError, match="imports these with the models"):
        retro_models.import_file(bpy.context, str(tmp_path / "icon.tpl"))
    assert data_counts() == before
    with pytest.raises(ExportError, match="select the armature"):
        retro_models.export_file(bpy.context, str(out / "walk.bck"))
    assert list(out.iterdir()) == [] and data_counts() == before
