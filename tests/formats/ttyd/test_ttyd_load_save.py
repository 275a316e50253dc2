"""A TTYD model on disk without Blender: its TPL found by name, and the texture format option."""

import numpy as np
import pytest
import ttyd_fixtures as F
from retro_models.formats.errors import FormatError
from retro_models.formats.textures import gx
from retro_models.formats.textures import tpl as tpl_format
from retro_models.formats.ttyd import files


def test_missing_texture_file_is_a_warning(tmp_path):
    (tmp_path / "c_test").write_bytes(F.build())
    scene = files.load(str(tmp_path / "c_test"), files.ImportOptions())
    assert any("c_test_tex-" in w for w in scene.warnings)
    assert all(image.pixels is None for image in scene.images)


def test_texture_file_found_whatever_its_case(tmp_path):
    (tmp_path / "C_TEST_TEX-").write_bytes(b"")
    assert files.find_tpl(str(tmp_path / "c_test"), "c_test_tex") == str(tmp_path / "C_TEST_TEX-")
    assert files.find_tpl(str(tmp_path / "c_test"), "other") is None


def test_other_files_are_refused(tmp_path):
    (tmp_path / "c_test-").write_bytes(b"\x00\x20\xaf\x30" + bytes(0x200))
    with pytest.raises(FormatError, match="not a Paper Mario TTYD model"):
        files.load(str(tmp_path / "c_test-"), files.ImportOptions())


@pytest.mark.parametrize(("choice", "expected"), [("ORIGINAL", gx.RGB5A3), ("I8", gx.I8)])
def test_edited_textures_take_the_chosen_format(tmp_path, choice, expected):
    (tmp_path / "c_test").write_bytes(F.build())
    scene = files.load(str(tmp_path / "c_test"), files.ImportOptions())
    for image in scene.images:  # no TPL was found: every image is new
        image.pixels, image.width, image.height = np.full((8, 8, 4), 200, np.uint8), 8, 8
    out = tmp_path / "out"
    out.mkdir()
    written = files.save(scene, str(out / "c_test"), files.ExportOptions(texture_format=choice))
    assert written == [str(out / "c_test"), str(out / "c_test_tex-")]
    tpl = tpl_format.read((out / "c_test_tex-").read_bytes())
    assert {image.format for image in tpl.images} == {expected}
    assert all("format" not in image.extras for image in scene.images)  # the option is not kept on them
