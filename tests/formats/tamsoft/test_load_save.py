"""A Tamsoft model on disk without Blender: bare or in its CAT, names files, writing it back."""

import pytest
from retro_models.formats.errors import ExportError, FormatError
from retro_models.formats.tamsoft import files
from tamsoft_fixtures import cat_bytes, dds_rgba, tmd0_bytes


def test_names_file_that_matches_nothing_is_a_warning(tmp_path):
    (tmp_path / "model.tmd").write_bytes(tmd0_bytes())
    (tmp_path / "names.txt").write_text("hips\nspine\n")
    chosen = files.ImportOptions(names_file=str(tmp_path / "names.txt"))
    scene = files.load(str(tmp_path / "model.tmd"), chosen)
    assert any("none of the 2 names in names.txt" in w for w in scene.warnings)


def test_undecodable_textures_are_a_warning(tmp_path):
    (tmp_path / "asuka_mdl_00.cat").write_bytes(cat_bytes([tmd0_bytes()], ["TMD_TOON,asuka,asuka_body"]))
    (tmp_path / "asuka_tex_00.cat").write_bytes(cat_bytes([b"GXT\0" + bytes(12)], ["GXT,pkg,asuka_body"]))
    scene = files.load(str(tmp_path / "asuka_mdl_00.cat"), files.ImportOptions())
    assert scene.name == "asuka"
    assert any("asuka_body (unknown GXT version 0x00000000" in w for w in scene.warnings)


def test_a_texture_the_texture_cat_lacks_is_a_warning(tmp_path):
    (tmp_path / "a_mdl_00.cat").write_bytes(cat_bytes([tmd0_bytes()], ["TMD_TOON,a,a_face"]))
    (tmp_path / "a_tex_00.cat").write_bytes(cat_bytes([dds_rgba()], ["GXT,pkg,a_body"]))
    scene = files.load(str(tmp_path / "a_mdl_00.cat"), files.ImportOptions())
    assert scene.images[0].name == "a_face" and scene.images[0].pixels is None
    assert "a_tex_00.cat: not in the texture CAT: a_face" in scene.warnings


def test_a_jpog_model_is_refused_by_name(tmp_path):
    (tmp_path / "jpog.tmd").write_bytes(b"TMDL" + bytes(60))
    with pytest.raises(FormatError, match="Toshi / JPOG model"):
        files.load(str(tmp_path / "jpog.tmd"), files.ImportOptions())


def test_load_then_save_gives_the_files_back(tmp_path):
    model_cat = cat_bytes([tmd0_bytes(), b"OTHER"], ["TMD_TOON,pkg,m", "X,pkg,x"])
    (tmp_path / "m_mdl_00.cat").write_bytes(model_cat)
    scene = files.load(str(tmp_path / "m_mdl_00.cat"), files.ImportOptions())
    out = tmp_path / "out"
    out.mkdir()
    assert files.save(scene, str(out / "m_mdl_00.cat"), files.ExportOptions()) == [str(out / "m_mdl_00.cat")]
    assert (out / "m_mdl_00.cat").read_bytes() == model_cat
    # A name without either extension gets .tmd: the bare model.
    assert files.save(scene, str(out / "renamed"), files.ExportOptions()) == [str(out / "renamed.tmd")]
    assert (out / "renamed.tmd").read_bytes() == tmd0_bytes()


def test_a_bare_model_cannot_go_into_a_cat(tmp_path):
    (tmp_path / "model.tmd").write_bytes(tmd0_bytes())
    scene = files.load(str(tmp_path / "model.tmd"), files.ImportOptions())
    with pytest.raises(ExportError, match="not imported from a CAT"):
        files.save(scene, str(tmp_path / "model_mdl_00.cat"), files.ExportOptions())
    assert not (tmp_path / "model_mdl_00.cat").exists()
