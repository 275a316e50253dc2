"""Which models an archive gives and which animations are loaded with a model (formats layer)."""

import shutil

import pytest
import support
from retro_models.formats.archives import u8
from retro_models.formats.errors import FormatError
from retro_models.formats.j3d import bck, convert, files


def _load(path, **options):
    return files.load_model(str(path), files.ModelImportOptions(**options))


@pytest.mark.corpus
def test_the_animations_beside_a_model_are_those_made_for_it(tmp_path):
    for name in ("ba.bdl", "zl.bdl", "wait01.bck", "dead.bck"):
        shutil.copy(support.corpus_file(f"j3d-models/{name}"), tmp_path / name)
    scene = _load(tmp_path / "ba.bdl")
    joints = len(scene.skeletons[0].bone_names)
    fitting = sorted(
        n for n in ("wait01", "dead") if bck.read((tmp_path / f"{n}.bck").read_bytes()).joint_count == joints
    )
    assert fitting  # the samples were taken with ba.bdl
    assert sorted(s.name for s in scene.paired) == fitting
    assert [a.name for s in scene.paired for a in s.animations] == fitting
    other = _load(tmp_path / "zl.bdl")
    assert len(other.skeletons[0].bone_names) != joints and not other.paired
    assert not _load(tmp_path / "ba.bdl", import_animations=False).paired


@pytest.mark.corpus
def test_an_unpacked_archive_pairs_the_bck_folder_beside_bmd(tmp_path):
    (tmp_path / "bdl").mkdir()
    (tmp_path / "bck").mkdir()
    shutil.copy(support.corpus_file("j3d-models/ba.bdl"), tmp_path / "bdl" / "ba.bdl")
    shutil.copy(support.corpus_file("j3d-models/wait01.bck"), tmp_path / "bck" / "wait01.bck")
    assert [s.name for s in _load(tmp_path / "bdl" / "ba.bdl").paired] == ["wait01"]


@pytest.mark.corpus
def test_sunshine_marios_model_gets_its_bcks_and_btps_from_the_archive():
    path = support.corpus_file("j3d-models/SunshineMario.arc")
    (scene,) = _load(path, model="bmd/ma_mdl1.bmd")
    kinds = [convert.animation_kind(s.animations[0]) for s in scene.paired]
    assert kinds.count("bck") == 199 and kinds.count("btp") == 24  # of the archive's 237 BCKs
    names = {s.name for s in scene.paired}
    assert {"ma_wait", "ma_wink_tx"} <= names
    assert "01_waterboost_in" not in names  # the water-boost model's, in its own folder


@pytest.mark.corpus
def test_an_archive_without_the_model_asked_for_lists_its_models(tmp_path):
    path = tmp_path / "one.arc"
    path.write_bytes(u8.build({"bdl/ba.bdl": support.corpus_file("j3d-models/ba.bdl").read_bytes()}))
    assert [s.name for s in _load(path)] == ["ba"]
    with pytest.raises(FormatError, match=r"no model 'mario' in the archive; its models: bdl/ba.bdl"):
        _load(path, model="mario")
    (tmp_path / "empty.arc").write_bytes(u8.build({"bck/wait01.bck": b"J3D1bck1"}))
    with pytest.raises(FormatError, match="no J3D model"):
        _load(tmp_path / "empty.arc")
