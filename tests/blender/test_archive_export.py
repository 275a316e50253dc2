"""J3D animations exported into the archive they were imported from: the member replaced, every
other member and the archive's compression kept, the edit there when the archive is imported again."""

import shutil

import bpy
import numpy as np
import pytest
import support
from retro_models.formats import archives
from retro_models.formats.j3d import bck, evaluate, files, model
from retro_models.operators.blender import compat, props

MODEL = "04_tobikomi"  # a model of SunshineMario.arc with an animation of each kind beside it
MEMBER = "04_tobikomi/04_tobikomi.bck"


def _members(path) -> dict[str, bytes]:
    return {m.path: m.data for m in archives.read_archive(path.read_bytes(), str(path)).members()}


def _import(path):
    assert bpy.ops.import_scene.j3d_model(filepath=str(path), model=MODEL) == {"FINISHED"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = armature
    armature.select_set(True)
    return armature


def _moving_key(action):
    """A location F-curve with keys to edit (its bone's rest is where the file's track starts)."""
    return next(
        fc
        for fc in compat.action_fcurves(action)
        if fc.data_path.endswith(".location") and len(fc.keyframe_points) > 2
    )


@pytest.mark.corpus
def test_an_edited_bck_key_exports_into_the_archive_member_it_came_from(empty_scene, tmp_path):
    path = tmp_path / "mario.szs"
    shutil.copyfile(support.corpus_file("j3d-models/SunshineMario.arc"), path)
    original = path.read_bytes()
    armature = _import(path)
    action = armature.animation_data.action
    assert props.get_extras(action)[files.ARCHIVE_MEMBER] == MEMBER
    assert props.get_extras(bpy.data.collections[MODEL])[files.ARCHIVE_MEMBER] == f"{MODEL}/{MODEL}.bmd"

    assert bpy.ops.export_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    assert path.read_bytes() == original  # nothing edited: the archive's very bytes

    fcurve = _moving_key(action)
    key = fcurve.keyframe_points[1]
    curve, frame, moved = (fcurve.data_path, fcurve.array_index), key.co.x, key.co.y + 5.0
    for point in (key.co, key.handle_left, key.handle_right):
        point.y += 5.0
    assert bpy.ops.export_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    written = path.read_bytes()
    assert written[:4] == b"Yaz0" and len(written) <= 1.05 * len(original)
    before, after = _members(support.corpus_file("j3d-models/SunshineMario.arc")), _members(path)
    assert list(after) == list(before)
    assert [p for p in before if before[p] != after[p]] == [MEMBER]
    old, new = (bck.read(data, MEMBER) for data in (before[MEMBER], after[MEMBER]))
    frames = np.arange(old.length + 1, dtype=np.float64)
    difference = np.abs(
        evaluate.evaluate_bck(new, frames)["translation"] - evaluate.evaluate_bck(old, frames)["translation"]
    )
    assert (difference.max(axis=0) > 1e-4).sum() == 1  # one joint's one axis
    # The most at the edited key (in the file's units: the pose moves in its bone's scaled space).
    assert difference.max() > 1 and difference[int(round(frame))].max() == difference.max()

    bpy.ops.wm.read_factory_settings(use_empty=True)
    again = _moving_key(_import(path).animation_data.action)
    assert (again.data_path, again.array_index) == curve
    assert again.evaluate(frame) == pytest.approx(moved, abs=1e-3)


@pytest.mark.corpus
def test_an_export_into_an_archive_without_the_member_writes_nothing(empty_scene, tmp_path):
    path = tmp_path / "mario.arc"
    shutil.copyfile(support.corpus_file("j3d-models/SunshineMario.arc"), path)
    original = path.read_bytes()
    _import(path)
    with pytest.raises(RuntimeError, match=r"mario\.arc has no member 'bck/nothing\.bck'"):
        bpy.ops.export_scene.j3d_animation(filepath=str(path), member="bck/nothing.bck")
    with pytest.raises(RuntimeError, match=r"mario\.arc: at offset \d+"):  # a damaged archive: FormatError
        path.write_bytes(original[: len(original) // 3])
        bpy.ops.export_scene.j3d_animation(filepath=str(path))
    assert path.read_bytes() == original[: len(original) // 3]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mario.arc"]  # no temporary file left


@pytest.mark.corpus
def test_an_edited_model_exports_into_the_archive_member_it_came_from(empty_scene, tmp_path):
    path = tmp_path / "mario.szs"
    shutil.copyfile(support.corpus_file("j3d-models/SunshineMario.arc"), path)
    original = path.read_bytes()
    _import(path)
    for obj in bpy.data.objects:
        obj.select_set(True)
    assert bpy.ops.export_scene.j3d_model(filepath=str(path)) == {"FINISHED"}
    assert path.read_bytes() == original  # nothing edited: the archive's very bytes
    mesh = next(o for o in bpy.data.objects if o.type == "MESH")
    mesh.data.vertices[0].co.x += 1.0
    assert bpy.ops.export_scene.j3d_model(filepath=str(path)) == {"FINISHED"}
    before, after = _members(support.corpus_file("j3d-models/SunshineMario.arc")), _members(path)
    assert list(after) == list(before)
    assert [p for p in before if before[p] != after[p]] == [f"{MODEL}/{MODEL}.bmd"]
    assert model.read(after[f"{MODEL}/{MODEL}.bmd"], "edited").shp1 is not None
