"""What the fuzzer feeds: one target per file reader (read, then to_scene, as an import does),
one target for the Blender import, and the seed files each starts from.

A target's ``run(data, seed)`` reads ``data`` as if it were the seed's file, with the seed's
partner files (a model's keyframe and material libraries, its textures) unchanged. Raising
``FormatError`` is the right answer to a bad file; anything else is a defect.

Seeds are the project's own: the tests' hand-built fixtures and what the writers make of the
demo creature; plus the real samples in ../shared/corpus when that folder is present (the
environment variable RETRO_CORPUS names another folder).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("RETRO_CORPUS", ROOT.parent / "shared" / "corpus"))
TEST_FIXTURES = [
    ROOT / "tests" / "formats" / family for family in ("j3d", "tamsoft", "tmrf", "toshi", "ttyd")
]
sys.path[:0] = [str(ROOT / "tools"), *map(str, TEST_FIXTURES)]

import addon_package  # noqa: E402

addon_package.load()

import demo_creature  # noqa: E402
import j3d_fixtures  # noqa: E402
import j3d_model_fixtures  # noqa: E402
import tamsoft_fixtures  # noqa: E402
import texture_pair  # noqa: E402
import tmrf_fixtures  # noqa: E402
import toshi_fixtures  # noqa: E402
import ttyd_fixtures  # noqa: E402
from retro_models.formats import archives  # noqa: E402
from retro_models.formats.archives import compression, rarc, u8  # noqa: E402
from retro_models.formats.errors import FormatError  # noqa: E402
from retro_models.formats.j3d import bmt, bpk, brk, btk, btp, bva, cluster, material_set  # noqa: E402
from retro_models.formats.j3d import convert as j3d_convert  # noqa: E402
from retro_models.formats.j3d import files as j3d_files  # noqa: E402
from retro_models.formats.j3d import model as j3d_model  # noqa: E402
from retro_models.formats.j3d import model_convert as j3d_model_convert  # noqa: E402
from retro_models.formats.j3d import model_geometry as j3d_geometry  # noqa: E402
from retro_models.formats.j3d import model_write as j3d_model_write  # noqa: E402
from retro_models.formats.tamsoft import cat, texture_cat, tmd0  # noqa: E402
from retro_models.formats.tamsoft import convert as tamsoft_convert  # noqa: E402
from retro_models.formats.textures import dds, gx, tpl  # noqa: E402
from retro_models.formats.tmrf import convert as tmrf_convert  # noqa: E402
from retro_models.formats.tmrf import media  # noqa: E402
from retro_models.formats.toshi import convert as toshi_convert  # noqa: E402
from retro_models.formats.toshi import tkl, tmd, tml  # noqa: E402
from retro_models.formats.ttyd import convert as ttyd_convert  # noqa: E402
from retro_models.formats.ttyd import model as ttyd_model  # noqa: E402

# Real J3D models larger than this make slow seeds (mostly texels); the smaller ones suffice.
LARGEST_CORPUS_MODEL = 150_000


@dataclass
class Seed:
    name: str  # the file name the input is read as
    data: bytes
    partners: dict[str, bytes] = field(default_factory=dict)  # files read with it, unchanged
    operator: str = ""  # Blender target: the import operator (bpy.ops.import_scene.<operator>)
    imported: str = ""  # Blender target: the file the operator opens when not this one


@dataclass
class Target:
    name: str
    run: Callable[[bytes, Seed], object]
    seeds: Callable[[], list[Seed]]
    blender: bool = False  # runs in a worker with the add-on registered in bpy
    load: Callable[[], object] = lambda: None  # slow imports, done in the worker before any input
    set_up: Callable[[Seed], object] = lambda seed: None  # before each input, outside its limits
    memory_floor: int = 32 << 20  # address space any input may add, whatever its size


class ImportRefused(Exception):
    """The Blender import reported the file's problem and changed nothing: the right answer."""


def find_file(files: dict[str, bytes], ending: str) -> tuple[bytes, str]:
    """(data, name) of the file whose name has this ending: the arguments of a reader."""
    return next((data, name) for name, data in files.items() if name.endswith(ending))


def corpus(*patterns: str) -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted({p for pattern in patterns for p in CORPUS.rglob(pattern)})


# -- file sets: a primary file and the partners read with it ------------------------------------


def as_seeds(files: dict[str, bytes]) -> list[Seed]:
    """One seed per file of a set, each with the others as partners."""
    return [Seed(name, data, {n: d for n, d in files.items() if n != name}) for name, data in files.items()]


@functools.cache
def toshi_sets() -> list[dict[str, bytes]]:
    fixture = {
        "fixture.tmd": toshi_fixtures.tmd_bytes(),
        "lib.tkl": toshi_fixtures.tkl_bytes(),
        "fixture.tml": toshi_fixtures.tml_bytes(),
    }
    return [demo_creature.demo_files(), fixture]


@functools.cache
def tamsoft_sets() -> list[dict[str, bytes]]:
    demo = tmd0.write(tamsoft_convert.from_scene(demo_creature.demo_scene()))
    model_cat = tamsoft_fixtures.cat_bytes([tamsoft_fixtures.tmd0_bytes()], ["TMD_TOON,m,skin"])
    texture_cat = tamsoft_fixtures.cat_bytes([tamsoft_fixtures.dds_rgba(4, 2)], ["DDS,pkg,skin"])
    return [
        {"little.tmd": tamsoft_fixtures.tmd0_bytes("<", True)},
        {"big.tmd": tamsoft_fixtures.tmd0_bytes(">", False)},
        {"demo.tmd": demo},
        {"m_mdl_00.cat": model_cat, "m_tex_00.cat": texture_cat},
        {
            "pl00_head_mdl_00.cat": texture_pair.model_cat(),
            "pl00_head_tex_00.cat": texture_pair.texture_cat(),
        },
    ]


def small_tpl() -> bytes:
    """One 8×8 image per GX format the reader decodes, palette formats with a palette each."""
    rng = np.random.default_rng(5)
    formats = [(f, None) for f in (gx.I4, gx.I8, gx.IA4, gx.IA8, gx.RGB565, gx.RGB5A3, gx.RGBA8, gx.CMPR)]
    formats += [(gx.C4, gx.TLUT_RGB5A3), (gx.C8, gx.TLUT_IA8), (gx.C14X2, gx.TLUT_RGB565)]
    images = [
        tpl.image_from_pixels(rng.integers(0, 256, (8, 8, 4), np.uint8), fmt, palette)
        for fmt, palette in formats
    ]
    return tpl.write(tpl.TPL(images))


@functools.cache
def ttyd_sets() -> list[dict[str, bytes]]:
    model, textures = ttyd_convert.from_scene(demo_creature.demo_scene())
    return [
        {"c_test": ttyd_fixtures.build(), "c_test_tex-": small_tpl()},
        {
            "demo": ttyd_model.write(model),
            f"{ttyd_model.text(model.header.texture_name)}-": tpl.write(textures),
        },
    ]


@functools.cache
def tmrf_files() -> dict[str, bytes]:
    demo = media.write(tmrf_convert.from_scene(demo_creature.demo_scene()))
    return {"full.tmdl": tmrf_fixtures.full_file(), "demo.tmdl": demo}


J3D_ANIMATIONS = j3d_files.READERS


@functools.cache
def j3d_files() -> dict[str, bytes]:
    """Fixtures and real samples of every J3D animation kind, and material sets."""
    files = {f"fixture{ext}": getattr(j3d_fixtures, f"{ext[1:]}_bytes")() for ext in J3D_ANIMATIONS}
    files["fixture.bmt"] = j3d_fixtures.bmt_bytes()
    for path in corpus(*(f"*{ext}" for ext in J3D_ANIMATIONS)):
        files[path.name] = path.read_bytes()
    for path in corpus("*.bmd", "*.bdl"):
        if path.stat().st_size <= LARGEST_CORPUS_MODEL:
            files[path.stem + ".bmt"] = bmt.write(bmt.cut_from_model(path.read_bytes(), str(path)))
    return files


def j3d_seeds(extension: str) -> Callable[[], list[Seed]]:
    return lambda: [Seed(name, data) for name, data in j3d_files().items() if name.endswith(extension)]


# -- the pure targets: read + to_scene --------------------------------------------------------


def run_toshi(data: bytes, seed: Seed):
    """The TMD, TKL and TML of one model, the fuzzed file in its place among them."""
    files = {**seed.partners, seed.name: data}
    model = tmd.read(*find_file(files, ".tmd"))
    library = tkl.read(*find_file(files, ".tkl"))
    materials = tml.read(*find_file(files, ".tml"))
    return toshi_convert.to_scene(model, library, materials, filename=seed.name)


def tamsoft_textures(seed: Seed, model: tmd0.TMD0, names: list[str]) -> list | None:
    """The model's textures found by ``names`` in the texture CAT among the seed's files."""
    if not any(name.endswith("_tex_00.cat") for name in seed.partners):
        return None
    found = texture_cat.resources(cat.read(*find_file(seed.partners, "_tex_00.cat")))
    return texture_cat.model_textures(len(model.textures), names, found)[0]


def run_tmd0(data: bytes, seed: Seed):
    model = tmd0.read(data, seed.name)
    return tamsoft_convert.to_scene(model, tamsoft_textures(seed, model, []), name=seed.name)


def run_cat(data: bytes, seed: Seed):
    """A model CAT as the importer opens it: the tmd0 payload, textures from the CAT next to it."""
    container = cat.read(data, seed.name)
    model = tmd0.read(container.payloads[cat.model_index(container, seed.name)], seed.name)
    textures = tamsoft_textures(seed, model, texture_cat.resource_names(container))
    return tamsoft_convert.to_scene(model, textures, name=seed.name)


def run_tmrf(data: bytes, seed: Seed):
    return tmrf_convert.to_scene(media.read(data, seed.name))


def run_ttyd(data: bytes, seed: Seed):
    textures = tpl.read(*find_file(seed.partners, "-"))
    return ttyd_convert.to_scene(ttyd_model.read(data, seed.name), textures)


def run_tpl(data: bytes, seed: Seed):
    return [image.decode() for image in tpl.read(data, seed.name).images]


def run_dds(data: bytes, seed: Seed):
    return dds.read(data, seed.name).decode()


@functools.cache
def joint_count(seed_data: bytes, extension: str = ".bck") -> int:
    return J3D_ANIMATIONS[extension].read(seed_data).joint_count


def run_joints(data: bytes, seed: Seed):
    """A BCK or BCA applied to an armature with the seed's joints (another count is refused, as on import)."""
    extension = os.path.splitext(seed.name)[1]
    model = J3D_ANIMATIONS[extension].read(data, seed.name)
    joints = joint_count(seed.data, extension)
    if model.joint_count != joints:
        raise FormatError(seed.name, 0x2C, f"{model.joint_count} joints for an armature of {joints}")
    return j3d_convert.to_scene(model, [f"joint{i}" for i in range(joints)], seed.name)


def j3d_animation(module) -> Callable[[bytes, Seed], object]:
    return lambda data, seed: j3d_convert.to_scene(module.read(data, seed.name), None, seed.name)


def j3d_model_seeds() -> list[Seed]:
    """The generated model (as built, and as the model writer re-encodes it), and the real models
    that are not too large."""
    seeds = [
        Seed("generated.bmd", j3d_model_fixtures.generated_bytes()),
        Seed("rewritten.bmd", j3d_model_fixtures.rewritten_bytes()),
    ]
    return seeds + [
        Seed(p.name, p.read_bytes())
        for p in corpus("*.bmd", "*.bdl")
        if p.stat().st_size <= LARGEST_CORPUS_MODEL
    ]


def run_j3d_model(data: bytes, seed: Seed):
    return j3d_model_convert.to_scene(j3d_model.read(data, seed.name), seed.name, seed.name)


def j3d_model_meshes(model, name: str) -> list:
    """The meshes ``model_convert.to_scene`` makes, without decoding the textures."""
    graph = j3d_geometry.read_graph(model, name)
    skin = j3d_geometry.draw_skin(model, j3d_geometry.world_matrices(model, graph.parents), name)
    arrays, turns = j3d_geometry.arrays(model, name), j3d_model_convert.normal_matrices(skin.matrices)
    meshes = []
    for s in range(len(model.shp1.remap)):
        try:
            material = int(graph.shape_materials[s])
            meshes.append(j3d_model_convert.shape_mesh(model, s, arrays, skin, turns, material, name))
        except j3d_geometry.Unsupported:
            continue
    return meshes


def rewrite_j3d_model(data: bytes, seed: Seed):
    """The model read, every shape re-encoded from its import (``model_write``), written and read again:
    whatever the reader accepts, the writer turns into a file the reader accepts (an ExportError
    for data the format cannot hold is a defect here: the data came from the format)."""
    model = j3d_model.read(data, seed.name)
    meshes = j3d_model_meshes(model, seed.name)
    layers = [m.positions for m in meshes] + [x.data for m in meshes for x in m.uv_layers + m.color_layers]
    layers += [m.normals.data for m in meshes if m.normals is not None]
    weights = [np.abs(np.where(m.skin_weights != 0, m.skin_weights, 0).sum(axis=1)) for m in meshes]
    normals = model.vtx1.format(10)
    if (
        not all(np.isfinite(x).all() for x in layers)
        or not all((w > 1e-9).all() for w in weights)
        or (normals is not None and int(normals["count"]) != 0)
    ):
        return None  # NaN values, vertices without weights, NBT normals: refused by the writer by design
    shapes = {m.extras["shape"]: j3d_model_write.shape_data(m) for m in meshes if len(m.triangles)}
    return j3d_model.read(j3d_model.write(j3d_model_write.replace_shapes(model, shapes)), seed.name)


def run_bmt(data: bytes, seed: Seed):
    return material_set.bmt_to_scene(bmt.read(data, seed.name), seed.name, seed.name)


def dds_seeds() -> list[Seed]:
    pixels = np.random.default_rng(3).integers(0, 256, (8, 8, 4), np.uint8)
    seeds = [Seed(f"texture_{fmt}.dds", dds.encode(pixels, fmt)) for fmt in dds.ENCODINGS]
    return seeds + [Seed("fixture.dds", tamsoft_fixtures.dds_rgba(4, 2))]


def tpl_seeds() -> list[Seed]:
    files = {"formats.tpl": small_tpl(), **{p.name: p.read_bytes() for p in corpus("*.tpl")}}
    for textures in ttyd_sets():
        files.update({f"{name}.tpl": data for name, data in textures.items() if name.endswith("-")})
    return [Seed(name, data) for name, data in files.items()]


def run_archive(data: bytes, seed: Seed):
    """An archive as an import would open it: every member's bytes, then the archive written back."""
    archive = archives.read_archive(data, seed.name)
    members = [member.path for member in archive.members()]
    return members, (rarc.write if isinstance(archive, rarc.RARC) else u8.write)(archive)


@functools.cache
def archive_files() -> dict[str, bytes]:
    """A generated U8 (plain and in Yaz0), the small real archives, and one of them in Yay0."""
    files = {
        "fixture.u8": u8.build(
            {f"anim/{name}": data for name, data in j3d_files().items() if "fixture" in name}
        )
    }
    files["fixture.szs"] = compression.compress(files["fixture.u8"])
    for path in corpus("*.arc"):
        if path.stat().st_size <= LARGEST_CORPUS_MODEL:
            files[path.name] = path.read_bytes()
    if (plain := next((d for d in files.values() if d[:4] == b"RARC"), None)) is not None:
        files["rarc.szp"] = compression.compress(plain, compression.YAY0)
    return files


def compressed_seeds() -> list[Seed]:
    """Yaz0 and Yay0 streams of J3D fixtures (every token kind occurs in them)."""
    fixtures = {name: data for name, data in j3d_files().items() if "fixture" in name}
    return [
        Seed(f"{name}.{magic.decode().lower()}", compression.compress(data, magic))
        for name, data in fixtures.items()
        for magic in (compression.YAZ0, compression.YAY0)
    ]


def seeds_ending(file_sets: Callable[[], list[dict[str, bytes]]], ending: str | tuple[str, ...]):
    return lambda: [s for files in file_sets() for s in as_seeds(files) if s.name.endswith(ending)]


PURE_TARGETS = [
    Target("toshi.tmd", run_toshi, seeds_ending(toshi_sets, ".tmd")),
    Target("toshi.tkl", run_toshi, seeds_ending(toshi_sets, ".tkl")),
    Target("toshi.tml", run_toshi, seeds_ending(toshi_sets, ".tml")),
    Target("tamsoft.tmd0", run_tmd0, seeds_ending(tamsoft_sets, ".tmd")),
    Target("tamsoft.cat", run_cat, seeds_ending(tamsoft_sets, "_mdl_00.cat")),
    Target("j3d.bck", run_joints, j3d_seeds(".bck")),
    Target("j3d.bca", run_joints, j3d_seeds(".bca")),
    Target("j3d.bva", j3d_animation(bva), j3d_seeds(".bva")),
    Target("j3d.bla", j3d_animation(cluster.bla), j3d_seeds(".bla")),
    Target("j3d.blk", j3d_animation(cluster.blk), j3d_seeds(".blk")),
    Target("j3d.btk", j3d_animation(btk), j3d_seeds(".btk")),
    Target("j3d.brk", j3d_animation(brk), j3d_seeds(".brk")),
    Target("j3d.btp", j3d_animation(btp), j3d_seeds(".btp")),
    Target("j3d.bpk", j3d_animation(bpk), j3d_seeds(".bpk")),
    Target("j3d.bmt", run_bmt, j3d_seeds(".bmt")),
    Target("j3d.model", run_j3d_model, j3d_model_seeds),
    Target("j3d.model.rewrite", rewrite_j3d_model, j3d_model_seeds),
    Target("tmrf.media", run_tmrf, lambda: [Seed(n, d) for n, d in tmrf_files().items()]),
    Target("ttyd.model", run_ttyd, seeds_ending(ttyd_sets, ("c_test", "demo"))),
    Target("textures.tpl", run_tpl, tpl_seeds),
    Target("textures.dds", run_dds, dds_seeds),
    Target("archives.archive", run_archive, lambda: [Seed(n, d) for n, d in archive_files().items()]),
    Target(
        "archives.compressed", lambda data, seed: compression.decompress(data, seed.name), compressed_seeds
    ),
]


# -- the Blender import -----------------------------------------------------------------------


def blender_seeds() -> list[Seed]:
    """Every file an import reads, each fuzzed in turn while the operator opens its model."""
    families = [
        ("toshi_tmd", toshi_sets(), ".tmd"),
        ("tamsoft_tmd0", tamsoft_sets(), (".tmd", "_mdl_00.cat")),
        ("tertius_tmrf", [{name: data} for name, data in tmrf_files().items()], ".tmdl"),
        ("ttyd_model", ttyd_sets(), ("c_test", "demo")),
        ("j3d_animation", [{name: data} for name, data in j3d_files().items()], ""),
        ("j3d_model", [{seed.name: seed.data} for seed in j3d_model_seeds()], ""),
    ]
    seeds = []
    for operator, file_sets, model_ending in families:
        for files in file_sets:
            model = next(name for name in files if name.endswith(model_ending))
            for seed in as_seeds(files):
                seed.operator, seed.imported = operator, model
                seeds.append(seed)
    return seeds


def load_blender():
    """bpy and the registered add-on: only a worker that runs the Blender target imports them."""
    from . import blender_import

    return blender_import


BLENDER_TARGET = Target(
    "blender.import",
    lambda data, seed: load_blender().run(data, seed),
    blender_seeds,
    blender=True,
    load=load_blender,
    set_up=lambda seed: load_blender().set_up(seed),
    # Blender's data outgrows the file: the 114 KB angrydemo.bck becomes a 20 MB action.
    memory_floor=256 << 20,
)
TARGETS = {target.name: target for target in [*PURE_TARGETS, BLENDER_TARGET]}
OK_ERRORS = (FormatError, ImportRefused)
