"""Golden scene dumps: what Blender holds after importing one file of every family.

Each case imports with the operator a user runs (or applies a J3D file to the selection, as
users do) and compares ``scene_dump.dump`` with ``tests/golden/<case>.txt``. The dumps were made
before the Blender layer was reshaped and prove that it changes nothing a user sees; a reviewer
reads a changed import as a diff. ``RETRO_REGENERATE_GOLDEN=1`` rewrites them.

Cases on real files (../shared/corpus) skip when the corpus is absent.
"""

from __future__ import annotations

import difflib

import bpy
import demo_creature
import numpy as np
import pytest
import retro_models
import scene_dump
import texture_pair
import tmrf_fixtures
import ttyd_support
from j3d_model_support import generated_file, import_model, made_in_blender
from j3d_support import make_armature, material_object
from retro_models.formats import scene as sc
from retro_models.formats.j3d import bck, bmt, btp
from retro_models.formats.textures import dds, gx
from retro_models.formats.textures import tpl as tpl_format
from retro_models.operators.blender.build import build_scene
from support import GOLDEN, REGENERATE, corpus_file
from tamsoft_fixtures import tmd0_bytes


def toshi_demo_creature(folder):
    for name, data in demo_creature.demo_files().items():
        (folder / name).write_bytes(data)
    assert bpy.ops.import_scene.toshi_tmd(filepath=str(folder / "demo.tmd"), lods="ALL") == {"FINISHED"}


def tamsoft_tetrahedron(folder):
    (folder / "tetra.tmd").write_bytes(tmd0_bytes(">", False))
    assert bpy.ops.import_scene.tamsoft_tmd0(filepath=str(folder / "tetra.tmd")) == {"FINISHED"}


def tamsoft_cat_pair(folder):
    """A model and texture CAT pair laid out as the measured real pair (bundles of DDS files)."""
    texture_pair.write_pair(folder)
    assert bpy.ops.import_scene.tamsoft_tmd0(filepath=str(folder / "pl00_head_mdl_hi.cat")) == {"FINISHED"}


def tmrf_full(folder):
    (folder / "full.tmdl").write_bytes(tmrf_fixtures.full_file())
    assert bpy.ops.import_scene.tertius_tmrf(filepath=str(folder / "full.tmdl")) == {"FINISHED"}


def ttyd_c_test(folder):
    (folder / "c_test").write_bytes(ttyd_support.model_bytes())
    (folder / "c_test_tex-").write_bytes(ttyd_support.tpl_bytes())
    assert bpy.ops.import_scene.ttyd_model(filepath=str(folder / "c_test")) == {"FINISHED"}


def _apply(path, **options):
    assert bpy.ops.import_scene.j3d_animation(filepath=str(path), **options) == {"FINISHED"}


def _j3d_bck(name):
    def case(folder):
        path = corpus_file(f"j3d/{name}")
        make_armature(bpy.context, bck.read(path.read_bytes(), str(path)).joint_count, rotated=False)
        _apply(path)

    return case


def _j3d_material_animation(name, **options):
    def case(folder):
        path = corpus_file(f"j3d/{name}")
        from retro_models.formats.j3d.files import READERS

        model = READERS[path.suffix].read(path.read_bytes(), str(path))
        groups = (model.register, model.konst) if path.suffix == ".brk" else (model,)
        names = sorted({n for group in groups for n in group.material_names})
        material_object(bpy.context, dict.fromkeys(names, 2))
        _apply(path, **{k: str(corpus_file(v)) for k, v in options.items()})

    return case


def j3d_bmt_then_btp(folder):
    source = corpus_file("j3d/driver.bmd")
    path = folder / "driver.bmt"
    path.write_bytes(bmt.write(bmt.cut_from_model(source.read_bytes(), str(source))))
    pattern = corpus_file("j3d/grandstarget.btp")
    names = btp.read(pattern.read_bytes(), str(pattern)).material_names
    material_object(bpy.context, {"mario_all_tx": 0, **dict.fromkeys(names, 1)})
    _apply(path)
    _apply(pattern)


def _j3d_model(relative, **options):
    """The model alone (its animations have their own cases); ``model``: which one of an archive."""

    def case(folder):
        path = corpus_file(relative)
        assert bpy.ops.import_scene.j3d_model(filepath=str(path), import_animations=False, **options) == {
            "FINISHED"
        }

    return case


def textures_every_gx_format(folder):
    """Every GX format (palettes in each palette format) and DDS, decoded into Blender images."""
    rng = np.random.default_rng(11)
    images = []
    palette_formats = {gx.C4: gx.TLUT_IA8, gx.C8: gx.TLUT_RGB565, gx.C14X2: gx.TLUT_RGB5A3}
    for fmt, name in sorted(gx.NAMES.items()):
        pixels = rng.integers(0, 256, (8, 8, 4), np.uint8)
        entry = tpl_format.image_from_pixels(pixels, fmt, palette_formats.get(fmt))
        decoded = tpl_format.read(tpl_format.write(tpl_format.TPL([entry]))).images[0].decode()
        images.append(sc.Image(f"gx_{name}", decoded, 8, 8, source_format=name))
    for fmt in ("DXT1", "DXT3", "DXT5", "A8R8G8B8"):
        data = dds.encode(rng.integers(0, 256, (8, 8, 4), np.uint8), fmt)
        decoded = dds.read(data).decode()
        images.append(sc.Image(f"dds_{fmt}", decoded, 8, 8, source_bytes=data, source_format=fmt))
    build_scene(sc.Scene(name="textures", images=images), bpy.context)


def textures_corpus_tpl(folder):
    """The real TPL's images, decoded into Blender images."""
    path = corpus_file("tpl/mygalaxyicon.tpl")
    images = []
    for i, entry in enumerate(tpl_format.read(path.read_bytes(), str(path)).images):
        pixels = entry.decode()
        images.append(sc.Image(f"tpl_{i}", pixels, pixels.shape[1], pixels.shape[0]))
    build_scene(sc.Scene(name="textures", images=images), bpy.context)


def _j3d_model_export(edit):
    """A J3D model exported after ``edit(folder)`` (which leaves its armature selected), then imported again
    into an empty scene: what the written file holds."""

    def case(folder):
        edit(folder)
        retro_models.export_file(bpy.context, str(folder / "exported.bmd"))
        bpy.ops.wm.read_factory_settings(use_empty=True)
        assert bpy.ops.import_scene.j3d_model(filepath=str(folder / "exported.bmd")) == {"FINISHED"}

    return case


def _edited_generated_model(folder):
    """The generated model with a vertex moved, a material renamed, its image painted and a mesh deleted."""
    armature = import_model(generated_file(folder))
    meshes = {o.name: o for o in bpy.data.objects if o.parent == armature}
    meshes["shape1"].data.vertices[0].co.z += 0.5
    meshes["shape1"].data.materials[0].name = "renamed"
    bpy.data.images["checker"].pixels.foreach_set(np.full(8 * 8 * 4, 0.5, np.float32))
    bpy.data.objects.remove(meshes["shape0"])


CASES = {
    "toshi_demo_creature": toshi_demo_creature,
    "tamsoft_tetrahedron": tamsoft_tetrahedron,
    "tamsoft_cat_pair": tamsoft_cat_pair,
    "tmrf_full": tmrf_full,
    "ttyd_c_test": ttyd_c_test,
    "j3d_bck_angrydemo": _j3d_bck("angrydemo.bck"),
    "j3d_bck_monl_a_clap1": _j3d_bck("monl_a_clap1.bck"),
    "j3d_btk_daisy_sky": _j3d_material_animation("daisy_sky.btk"),
    "j3d_btk_planetdisk": _j3d_material_animation("planetdisk.btk"),
    "j3d_brk_attack": _j3d_material_animation("attack.brk"),
    "j3d_brk_normal": _j3d_material_animation("normal.brk"),
    "j3d_bpk_color": _j3d_material_animation("color.bpk"),
    "j3d_btp_grandstarget": _j3d_material_animation("grandstarget.btp", textures_file="j3d/driver.bmd"),
    "j3d_bmt_then_btp": j3d_bmt_then_btp,
    "j3d_model_ba": _j3d_model("j3d-models/ba.bdl"),
    "j3d_model_bluestarcupsuleplanet": _j3d_model("j3d-models/BlueStarCupsulePlanet.bdl"),
    "j3d_model_sunshinemario_arc_ma_mdl1": _j3d_model("j3d-models/SunshineMario.arc", model="ma_mdl1"),
    "j3d_model_export_edited": _j3d_model_export(_edited_generated_model),
    "j3d_model_export_made_in_blender": _j3d_model_export(lambda folder: made_in_blender()),
    "textures_every_gx_format": textures_every_gx_format,
    "textures_corpus_tpl": textures_corpus_tpl,
}


@pytest.mark.parametrize("case", CASES)
def test_import_matches_golden_dump(empty_scene, tmp_path, case):
    CASES[case](tmp_path)
    text = scene_dump.dump()
    golden = GOLDEN / f"{case}.txt"
    if REGENERATE:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"no golden dump {golden}: run with RETRO_REGENERATE_GOLDEN=1 to write it"
    expected = golden.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(
            difflib.unified_diff(expected.splitlines(True), text.splitlines(True), "golden", "import", n=1)
        )
        pytest.fail(f"import differs from the golden dump (RETRO_REGENERATE_GOLDEN=1 rewrites it):\n{diff}")
