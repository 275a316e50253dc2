"""A JPOG model on disk without Blender: finding its libraries, warnings, and writing the trio back."""

import os

import pytest
from demo_creature import demo_files
from retro_models.formats.errors import ExportError
from retro_models.formats.toshi import files, tkl, tmd


@pytest.fixture
def demo_dir(tmp_path):
    for name, data in demo_files().items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


def test_libraries_found_whatever_their_case(demo_dir):
    model = tmd.read((demo_dir / "demo.tmd").read_bytes())
    os.rename(demo_dir / "demo.tkl", demo_dir / f"{model.tkl_name.upper()}.TKL")
    os.rename(demo_dir / "demo.tml", demo_dir / "Other.TML")
    assert files.find_tkl(str(demo_dir / "demo.tmd"), model.tkl_name) == str(
        demo_dir / f"{model.tkl_name.upper()}.TKL"
    )
    # No TML with the model's stem: the one defining every material the model names.
    assert files.find_tml(str(demo_dir / "demo.tmd"), set(model.material_names())) == str(
        demo_dir / "Other.TML"
    )
    assert files.find_tml(str(demo_dir / "demo.tmd"), {"not_in_any_library"}) is None


def test_missing_libraries_are_warnings(demo_dir):
    os.remove(demo_dir / "demo.tkl")
    os.remove(demo_dir / "demo.tml")
    scene = files.load(str(demo_dir / "demo.tmd"), files.ImportOptions())
    assert any("keyframe library" in w and "not found" in w for w in scene.warnings)
    assert any(".tml" in w for w in scene.warnings)


def test_chosen_libraries_and_the_import_record(demo_dir):
    os.rename(demo_dir / "demo.tkl", demo_dir / "elsewhere.tkl")
    chosen = files.ImportOptions(tkl_mode="FILE", tkl_file=str(demo_dir / "elsewhere.tkl"))
    scene = files.load(str(demo_dir / "demo.tmd"), chosen)
    assert not scene.warnings and scene.name == "demo" and files.TKL_LIBRARY in scene.extras
    extras = scene.skeletons[0].extras
    assert extras["tkl_file"] == str(demo_dir / "elsewhere.tkl")
    assert files.library_name(scene.extras) == tmd.read((demo_dir / "demo.tmd").read_bytes()).tkl_name


def test_load_then_save_writes_the_same_trio(demo_dir):
    """The keyframe library kept with the scene is the one appended to when the destination has none."""
    scene = files.load(str(demo_dir / "demo.tmd"), files.ImportOptions(lods="ALL"))
    out = demo_dir / "out"
    out.mkdir()
    written = files.save(scene, str(out / "demo.tmd"), files.ExportOptions())
    assert sorted(os.path.basename(p) for p in written) == ["demo.tkl", "demo.tmd", "demo.tml"]
    for name in ("demo.tmd", "demo.tkl", "demo.tml"):
        assert (out / name).read_bytes() == (demo_dir / name).read_bytes(), name


def test_a_new_library_needs_a_name_and_nothing_is_written(demo_dir):
    scene = files.load(str(demo_dir / "demo.tmd"), files.ImportOptions())
    out = demo_dir / "out"
    out.mkdir()
    with pytest.raises(ExportError, match="name"):
        files.save(scene, str(out / "demo.tmd"), files.ExportOptions(tkl_mode="NEW"))
    assert list(out.iterdir()) == []
    files.save(scene, str(out / "demo.tmd"), files.ExportOptions(tkl_mode="NEW", new_tkl_name="fresh"))
    assert tkl.read((out / "fresh.tkl").read_bytes()).name == "fresh"
