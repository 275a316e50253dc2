"""TMRF files on disk without Blender: the extension's contents, animation-only files bound to a
skeleton, and the options reaching the writer."""

import numpy as np
import pytest
import tmrf_fixtures as fx
from retro_models.formats.errors import ExportError
from retro_models.formats.scene import Skeleton
from retro_models.formats.tmrf import convert, files, media


def animations_file(tmp_path):
    scene = convert.to_scene(media.read(fx.full_file()))
    path = tmp_path / "moves.tapk"
    path.write_bytes(media.write(convert.from_scene(scene, content="animations")))
    return path


def test_the_extension_chooses_the_contents():
    chosen = files.ExportOptions(file_contents=".tskl")
    assert files.export_target("out/rig.tani", chosen) == ("out/rig.tani", "animations")
    assert files.export_target("out/rig", chosen) == ("out/rig.tskl", "skeleton")
    assert files.export_target("out/rig.txt", files.ExportOptions()) == ("out/rig.txt.tmdl", "everything")


def test_load_then_save_gives_the_file_back(tmp_path):
    (tmp_path / "model.tpak").write_bytes(fx.full_file())
    scene = files.load(str(tmp_path / "model.tpak"), files.ImportOptions())
    assert scene.name == "model" and not files.is_animation_only(scene)
    assert files.save(scene, str(tmp_path / "out.tpak"), files.ExportOptions()) == [
        str(tmp_path / "out.tpak")
    ]
    assert (tmp_path / "out.tpak").read_bytes() == fx.full_file()


def test_options_that_do_not_go_together_write_nothing(tmp_path):
    (tmp_path / "model.tpak").write_bytes(fx.full_file())
    scene = files.load(str(tmp_path / "model.tpak"), files.ImportOptions())
    with pytest.raises(ExportError, match="need compressed normals"):
        files.save(scene, str(tmp_path / "bad.tpak"), files.ExportOptions(normals="NONE", tangents="HIGH"))
    assert not (tmp_path / "bad.tpak").exists()


def test_animation_only_files_bind_to_a_skeleton_by_bone_name(tmp_path):
    scene = files.load(str(animations_file(tmp_path)), files.ImportOptions())
    assert files.is_animation_only(scene)
    rig = Skeleton("rig", ["root"], np.array([-1], np.int32), np.eye(4)[None])
    files.retarget(scene, rig, np.eye(4))
    assert scene.warnings == [
        "animation walk: bones missing from armature 'rig' left out (kept for writing the file back): arm"
    ]
    assert scene.skeletons == [rig] and {c.target for a in scene.animations for c in a.channels} == {"root"}
    (source,) = scene.extras[files.ANIMATION_LAYOUTS]
    assert all(a.extras[files.ANIMATION_SOURCE] == source for a in scene.animations)


def test_applied_animations_are_written_back_under_their_file_name(tmp_path):
    scene = files.load(str(animations_file(tmp_path)), files.ImportOptions())
    skeleton = convert.to_scene(media.read(fx.full_file())).skeletons[0]
    files.retarget(scene, skeleton, np.eye(4))
    (layout,) = scene.extras[files.ANIMATION_LAYOUTS].values()
    assert layout[files.FILE_NAME] == "moves"
    files.sources(scene, "out/Moves.tapk", "animations")
    assert scene.extras["tmrf"] == layout and len(scene.animations) == 2
    files.save(scene, str(tmp_path / "moves.tpak"), files.ExportOptions())  # no skeleton added
    assert (tmp_path / "moves.tpak").read_bytes() == animations_file(tmp_path).read_bytes()


def test_under_another_name_applied_animations_are_new_resources_of_their_kind(tmp_path):
    scene = files.load(str(animations_file(tmp_path)), files.ImportOptions())
    skeleton = convert.to_scene(media.read(fx.full_file())).skeletons[0]
    files.retarget(scene, skeleton, np.eye(4))
    files.sources(scene, "out/all.tmdl", "everything")
    assert "tmrf" not in scene.extras and files.ANIMATION_LAYOUTS not in scene.extras
    assert not any(files.ANIMATION_SOURCE in a.extras for a in scene.animations)
    assert [a.extras[convert.KIND] for a in scene.animations] == ["frame", "track"]
