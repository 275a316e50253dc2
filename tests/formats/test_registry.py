"""The registry of families: routing files by extension and content, the options, the inspection."""

import dataclasses
import importlib

import numpy as np
import pytest
import ttyd_fixtures
from demo_creature import demo_files
from retro_models.formats import inspect, options, registry
from retro_models.formats.errors import FormatError
from retro_models.formats.textures import gx, tpl
from tamsoft_fixtures import cat_bytes, tmd0_bytes
from tmrf_fixtures import full_file


@pytest.fixture
def files(tmp_path):
    """One file of each kind, named as users name them (TTYD files have no extension)."""
    demo = demo_files()
    contents = {
        "demo.tmd": demo["demo.tmd"],
        "demo.tkl": demo["demo.tkl"],
        "tamsoft.tmd": tmd0_bytes(">", True),
        "junk.tmd": b"junk",
        "model_mdl_00.cat": cat_bytes([tmd0_bytes()], ["TMD_TOON,pkg,m"]),
        "creature.tskm": full_file(),
        "c_test": ttyd_fixtures.build(),
        "c_test-": tpl.write(tpl.TPL([tpl.image_from_pixels(np.zeros((4, 4, 4), np.uint8), gx.I8, None)])),
    }
    for name, data in contents.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("demo.tmd", "toshi"),
        ("tamsoft.tmd", "tamsoft"),
        ("junk.tmd", "toshi"),  # neither recognises it: the first listing .tmd, whose reader says why
        ("model_mdl_00.cat", "tamsoft"),
        ("creature.tskm", "tmrf"),
        ("demo.tkl", "toshi"),  # not an import extension: recognised by its content
        ("c_test-", "textures"),
    ],
)
def test_family_for_goes_by_extension_then_content(files, name, family):
    assert registry.family_for(str(files / name)).name == family


def test_family_for_a_file_without_extension_and_the_whole_file(files):
    path = files / "c_test"
    assert registry.family_for(str(path)).name == "ttyd"
    assert registry.family_for(str(path), path.read_bytes()).name == "ttyd"


def test_unknown_files_are_a_format_error(tmp_path):
    (tmp_path / "notes.txt").write_bytes(b"hello")
    with pytest.raises(FormatError, match=r"notes\.txt.*not a supported file"):
        registry.family_for(str(tmp_path / "notes.txt"))


def test_the_header_is_enough_to_tell_tmd_files_apart(files):
    header = registry.read_header(str(files / "tamsoft.tmd"))
    assert len(header) <= registry.HEADER_SIZE
    assert registry.family_for("x.tmd", header).name == "tamsoft"


def test_every_option_is_described_and_the_default_axes_are_the_converters():
    for family in registry.FAMILIES:
        for operation in (family.importer, family.exporter):
            if operation is None:
                continue
            defaults = operation.options()
            for field in dataclasses.fields(defaults):
                described = options.describe(field)
                assert described.label and described.description, (family.name, field.name)
            if hasattr(defaults, "axis_forward"):
                convert = importlib.import_module(f"retro_models.formats.{family.converter_module}")
                assert (defaults.axis_forward, defaults.axis_up) == convert.AXES


def test_options_name_every_unknown_option_and_refuse_values_not_offered():
    toshi = registry.FAMILIES[0].importer.options
    with pytest.raises(TypeError, match="unknown option.*animations, colour"):
        options.make(toshi, {"lods": "ALL", "animations": False, "colour": 1})
    with pytest.raises(ValueError, match="lods.*FIRST, ALL"):
        options.make(toshi, {"lods": "SOME"})
    with pytest.raises(ValueError, match="axis_up"):
        options.make(toshi, {"axis_up": "W"})
    chosen = options.make(toshi, {"lods": "ALL", "axis_forward": "-Z", "axis_up": "Y"})
    assert chosen.lods == "ALL" and chosen.import_animations
    assert chosen.axis().tolist() == options.oriented(("-Z", "Y"))().axis().tolist()


def test_inspect_summarizes_through_the_registry(files):
    assert "Toshi model (TMD)" in inspect.summarize((files / "demo.tmd").read_bytes(), "demo.tmd")
    assert "TMRF version" in inspect.summarize(full_file(), "creature.tskm")
    assert "TTYD model" in inspect.summarize((files / "c_test").read_bytes(), "a/c_test")
    with pytest.raises(FormatError, match="not a supported file"):
        inspect.summarize(b"hello", "notes.txt")
    assert inspect.main([str(files / "demo.tmd"), str(files / "junk.tmd")]) == 1
