"""The add-on's Texture Folder preference: texture files found neither next to the model nor through
an option are looked for there, in every family that looks for texture files by name."""

import contextlib

import bpy
import pytest
import texture_pair
import ttyd_fixtures
from demo_creature import demo_files
from retro_models.operators.blender import props
from test_options import addon_name
from test_ttyd_operators import tpl_bytes


def jpog(models, textures):
    files = demo_files()
    (models / "demo.tmd").write_bytes(files["demo.tmd"])
    (models / "demo.tkl").write_bytes(files["demo.tkl"])
    (textures / "DEMO.TML").write_bytes(files["demo.tml"])  # any case, as next to the model
    return bpy.ops.import_scene.toshi_tmd, models / "demo.tmd"


def tamsoft(models, textures):
    texture_pair.write_pair(models)
    (models / "pl00_head_tex_hi.cat").rename(textures / "pl00_head_tex_hi.cat")
    return bpy.ops.import_scene.tamsoft_tmd0, models / "pl00_head_mdl_hi.cat"


def ttyd(models, textures):
    (models / "c_test").write_bytes(ttyd_fixtures.build())
    (textures / "c_test_tex-").write_bytes(tpl_bytes())
    return bpy.ops.import_scene.ttyd_model, models / "c_test"


@pytest.mark.parametrize("lay_out", [jpog, tamsoft, ttyd])
def test_textures_only_in_the_texture_folder_are_found(empty_scene, tmp_path, lay_out):
    models, textures = tmp_path / "models", tmp_path / "textures"
    models.mkdir(), textures.mkdir()
    run, model = lay_out(models, textures)
    assert run(filepath=str(model)) == {"FINISHED"}
    assert not decoded_images()  # not found without it

    bpy.ops.wm.read_factory_settings(use_empty=True)
    with texture_folder(textures):
        assert run(filepath=str(model)) == {"FINISHED"}
    assert decoded_images() and len(decoded_images()) == len(bpy.data.images)


@contextlib.contextmanager
def texture_folder(folder):
    """The add-on's Texture Folder preference set to ``folder`` for the time of the block."""
    preferences = bpy.context.preferences.addons[addon_name()].preferences
    preferences.texture_folder = str(folder)
    try:
        yield
    finally:
        preferences.texture_folder = ""


def decoded_images() -> list:
    """The images showing texels read from a file (not a placeholder)."""
    return [image for image in bpy.data.images if props.UNDECODED not in image]


def test_a_texture_next_to_the_model_comes_first(empty_scene, tmp_path):
    models, textures = tmp_path / "models", tmp_path / "textures"
    models.mkdir(), textures.mkdir()
    run, model = ttyd(models, textures)
    (models / "c_test_tex-").write_bytes(tpl_bytes())
    (textures / "c_test_tex-").write_bytes(b"not a TPL")  # would fail the import if it were read
    with texture_folder(textures):
        assert run(filepath=str(model)) == {"FINISHED"}
    assert decoded_images() and len(decoded_images()) == len(bpy.data.images)


def test_jpog_tamsoft_and_ttyd_imports_have_a_texture_folder_option_that_picks_folders(addon):
    from test_options import operator_rna

    for idname in ("import_scene.toshi_tmd", "import_scene.tamsoft_tmd0", "import_scene.ttyd_model"):
        assert operator_rna(idname).properties["texture_folder"].subtype == "DIR_PATH", idname
