"""J3D materials: the MAT3 tables of the corpus models parsed, and the TEV approximation's decisions."""

import dataclasses
import math
import struct

import numpy as np
import pytest
from retro_models.formats.errors import FormatError
from retro_models.formats.j3d import bmt
from retro_models.formats.j3d.mat3 import TABLES, read_mat3, write_mat3
from retro_models.formats.j3d.material_set import bmt_to_scene
from retro_models.formats.j3d.materials import (
    TABLE_DTYPES,
    TEXTURE_MATRIX_DTYPE,
    color_layer_name,
    materials_and_images,
    read_tables,
    uv_layer_name,
)
from support import corpus_file

MODELS = [
    "j3d-models/ba.bdl",
    "j3d-models/btd.bmd",
    "j3d-models/zl.bdl",
    "j3d-models/BlueStarCupsulePlanet.bdl",
    "j3d/driver.bmd",
    "j3d/kindan_Room0_model3.bdl",
]


def material_set(relative: str) -> bmt.BMT:
    path = corpus_file(relative)
    return bmt.cut_from_model(path.read_bytes(), str(path))


def with_tables(material_set, **tables):
    mat3 = material_set.mat3
    edited = dataclasses.replace(mat3, tables={**mat3.tables, **tables})
    return bmt.BMT([edited if s is mat3 else s for s in material_set.sections], material_set.framing)


def by_name(scene):
    return {m.name: m for m in scene.materials}


@pytest.mark.parametrize("relative", MODELS)
def test_every_table_parses_and_every_index_of_every_material_is_in_its_table(relative):
    model = material_set(relative)
    tables = read_tables(model.mat3)
    for name, table in tables.items():
        data = model.mat3.tables.get(name, b"")
        # Whole records, then at most the padding to the next table (less than one record, or 4-byte aligned).
        assert (
            len(table) * TABLE_DTYPES[name].itemsize
            <= len(data)
            < (len(table) + 1) * TABLE_DTYPES[name].itemsize + 32
        ), name
    # The notes: cull modes are u32 (0 none, 1 front, 2 back); the tools write back, front, none.
    assert tables["cull_modes"].tolist() == [2, 1, 0]
    assert len(tables["indirect"]) == len(model.mat3.names)  # one indirect record per material
    # Count tables are bytes padded to 4 ("This is padding…" text): only the referenced entries are counts.
    records = model.mat3.materials
    assert tables["tev_stage_counts"][records["tev_stage_count"]].max() <= 16
    assert tables["texgen_counts"][records["texgen_count"]].max() <= 8
    materials, images = materials_and_images(model.mat3, model.tex1, relative)  # no index past its table
    assert len(materials) == len(model.mat3.names) and len(images) == len(model.tex1.headers)
    for material in materials:
        for slot in material.textures:
            assert 0 <= slot.image < len(images)
        assert sum(s.role == "base_color" for s in material.textures) <= 1


@pytest.mark.parametrize("relative", MODELS)
def test_the_approximation_leaves_the_mat3_bytes_as_they_were(relative):
    model = material_set(relative)
    before = write_mat3(model.mat3)
    bmt_to_scene(model, "set", relative)
    assert write_mat3(model.mat3) == before
    path = corpus_file(relative)
    data = path.read_bytes()
    assert before == data[data.index(b"MAT3") : data.index(b"MAT3") + len(before)]


def test_alpha_compare_geq_128_clips_at_half():
    model = material_set("j3d-models/ba.bdl")
    compares = read_tables(model.mat3)["alpha_compare"]
    # GEQUAL 128 AND LEQUAL 255 (the common cutout) and the always-passing default.
    assert compares[["comp0", "ref0", "op", "comp1", "ref1"]].tolist() == [
        (7, 0, 1, 7, 0),
        (6, 128, 0, 3, 255),
    ]
    scene = bmt_to_scene(model, "ba")
    clipped = [m for m in scene.materials if m.alpha_mode == "CLIP"]
    assert len(clipped) == 1 and clipped[0].alpha_threshold == pytest.approx(127.5 / 255)
    assert all(m.backface_culling for m in scene.materials)


def test_the_base_texture_is_the_first_stage_texture_read_with_uvs():
    scene = bmt_to_scene(material_set("j3d-models/ba.bdl"), "ba")
    body = by_name(scene)["ba_body"]
    # Stage 0 reads a ramp through a colour-channel texgen (toon shading); the UV-mapped texture shows.
    base = [s for s in body.textures if s.role == "base_color"]
    assert len(base) == 1 and base[0].uv_layer == "UVMap"
    ramp = next(s for s in body.textures if s.role != "base_color")
    assert ramp.role == "" and ramp.uv_layer == ""
    assert "3 TEV stages" in body.extras["unshown"] and body.extras["mat3"]["tev_stages"][0] != 0xFFFF


def test_blend_modes_lighting_and_vertex_colours():
    scene = bmt_to_scene(material_set("j3d-models/BlueStarCupsulePlanet.bdl"), "planet")
    blends = read_tables(material_set("j3d-models/BlueStarCupsulePlanet.bdl").mat3)["blend"]
    assert blends.tolist() == [(0, 1, 0, 3), (1, 4, 5, 3), (1, 4, 1, 3)]  # none, alpha blend, additive
    materials = by_name(scene)
    halo = materials["HaloMat_v_x"]
    assert halo.alpha_mode == "BLEND" and halo.additive and halo.vertex_color == color_layer_name(0)
    assert not halo.tint_texture and halo.base_color == (1.0, 1.0, 1.0, 1.0)
    assert all(m.unlit for m in scene.materials)  # channel 0 lighting off on every material
    assert sum(m.alpha_mode == "BLEND" and not m.additive for m in scene.materials) == 1
    # Environment maps (texgens from normals) and indirect texturing are named, once for the set.
    assert len(scene.warnings) == 1
    assert "indirect texturing: 1 material" in scene.warnings[0]
    assert "texture coordinates from normals: 4 materials" in scene.warnings[0]


def test_material_colour_tints_the_texture_of_a_register_channel():
    scene = bmt_to_scene(material_set("j3d/kindan_Room0_model3.bdl"), "room")
    (material,) = scene.materials
    assert material.alpha_mode == "BLEND" and not material.additive and not material.backface_culling
    assert material.tint_texture and material.vertex_color == ""
    assert material.textures[0].uv_layer == uv_layer_name(0) and material.textures[0].wrap_s == "CLAMP"
    assert scene.warnings == []


def test_texture_matrix_becomes_the_slot_transform_about_its_centre_in_blender_uv_space():
    model = material_set("j3d/kindan_Room0_model3.bdl")
    matrices = read_tables(model.mat3)["texture_matrices"].copy()
    texgens = read_tables(model.mat3)["texgens"].copy()
    (texgen,) = texgens
    assert texgen["source"] == 4 and texgen["matrix"] == 60  # TEX0, identity: read through matrix 0 instead
    texgens["matrix"] = 30
    matrices["center"][0] = (0.25, 0.75, 0.5)
    matrices["scale"][0] = (2.0, 0.5)
    matrices["rotation"][0] = 8192  # a quarter half-turn
    matrices["translate"][0] = (0.125, 0.375)
    tail = model.mat3.tables["texture_matrices"][len(matrices) * TEXTURE_MATRIX_DTYPE.itemsize :]
    texgens = texgens.tobytes() + model.mat3.tables["texgens"][4:]
    edited = with_tables(model, texture_matrices=matrices.tobytes() + tail, texgens=texgens)
    (slot,) = bmt_to_scene(edited).materials[0].textures
    # V flipped as BTK keys are: −θ, −t_v, centre at 1 − c_v.
    assert slot.center == pytest.approx((0.25, 0.25)) and slot.scale == pytest.approx((2.0, 0.5))
    assert slot.rotate == pytest.approx(-math.pi / 4) and slot.translate == pytest.approx((0.125, -0.375))
    # The game maps uv → S·R·(uv − c) + c + t; in Blender's V-up space the same point comes out.
    uv = np.array([0.6, 0.3])
    game = np.diag([2.0, 0.5]) @ rotation(math.pi / 4) @ (uv - [0.25, 0.75]) + [0.25, 0.75] + [0.125, 0.375]
    flip = np.array([uv[0], 1 - uv[1]])
    blender = (
        np.diag(slot.scale) @ rotation(slot.rotate) @ (flip - slot.center) + slot.center + slot.translate
    )
    assert blender == pytest.approx([game[0], 1 - game[1]])


def rotation(angle):
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s], [s, c]])


def test_nearest_min_filter_shows_closest():
    model = material_set("j3d/kindan_Room0_model3.bdl")
    model.tex1.headers["min_filter"][:] = 0
    assert bmt_to_scene(model).materials[0].textures[0].interpolation == "Closest"
    model.tex1.headers["min_filter"][:] = 1
    assert bmt_to_scene(model).materials[0].textures[0].interpolation == "Linear"


def test_a_texgen_index_past_its_table_names_the_material_and_its_place():
    model = material_set("j3d/kindan_Room0_model3.bdl")
    with pytest.raises(FormatError, match="lambert54_v.*texgen index") as caught:
        bmt_to_scene(with_tables(model, texgens=b""), filename="room.bdl")
    assert caught.value.filename == "room.bdl" and caught.value.offset == model.mat3.index_offset(
        0, "texgens"
    )


def test_layer_names():
    assert [uv_layer_name(n) for n in range(3)] == ["UVMap", "UVMap.001", "UVMap.002"]
    assert [color_layer_name(n) for n in range(2)] == ["Color", "Color.001"]


def test_a_mat3_without_indirect_table_shares_the_name_table_offset():
    """Files from before indirect texturing give the indirect table the name table's offset."""
    model = material_set("j3d/kindan_Room0_model3.bdl")
    tables = {k: v for k, v in model.mat3.tables.items() if k != "indirect"}
    order = [name for name in model.mat3.order if name != "indirect"]
    data = bytearray(write_mat3(dataclasses.replace(model.mat3, tables=tables, order=order)))
    names_at = struct.unpack_from(">I", data, 12 + 4 * TABLES.index("names"))[0]
    struct.pack_into(">I", data, 12 + 4 * TABLES.index("indirect"), names_at)
    mat3 = read_mat3(bytes(data), 0, len(data), "old.bmd")
    assert mat3.names == model.mat3.names and mat3.tables["indirect"] == b""
    assert write_mat3(mat3) == bytes(data)
    (material,) = bmt_to_scene(bmt.BMT([mat3, model.tex1])).materials
    assert "unshown" not in material.extras and material.textures[0].role == "base_color"


def test_a_table_the_file_leaves_out_counts_as_unused():
    model = material_set("j3d/kindan_Room0_model3.bdl")
    mat3 = model.mat3
    tables = {k: v for k, v in mat3.tables.items() if k not in ("texgens", "color_channels", "blend")}
    order = [name for name in mat3.order if name in tables or name in ("materials", "remap", "names")]
    edited = dataclasses.replace(mat3, tables=tables, order=order)
    (material,) = bmt_to_scene(bmt.BMT([edited, model.tex1])).materials
    assert material.textures[0].uv_layer == "" and not material.unlit
    assert material.alpha_mode == "BLEND"  # without a blend table, the translucent mode flag decides


@pytest.mark.parametrize(
    "compare, mode, threshold",
    [
        ((7, 0, 1, 7, 0), "OPAQUE", None),  # always
        ((6, 128, 0, 3, 255), "CLIP", 127.5),  # GEQUAL 128 and LEQUAL 255: the common cutout
        ((4, 0, 1, 4, 0), "CLIP", 0.5),  # GREATER 0 or GREATER 0
        ((6, 0, 0, 7, 0), "OPAQUE", None),  # GEQUAL 0 passes everything
        ((6, 64, 1, 7, 0), "OPAQUE", None),  # … or always
        ((6, 64, 0, 4, 100), "CLIP", 100.5),  # both must pass: the higher bar
        ((6, 64, 1, 4, 100), "CLIP", 63.5),  # either passes: the lower bar
    ],
)
def test_alpha_compare_to_alpha_clip(compare, mode, threshold):
    model = material_set("j3d/kindan_Room0_model3.bdl")
    model.mat3.materials["flag"][:] = 1  # opaque, so that the compare decides
    blend = bytes([0, 1, 0, 3]) + model.mat3.tables["blend"][4:]  # no blending
    entry = bytes(compare) + b"\xff" * 3
    edited = with_tables(model, blend=blend, alpha_compare=entry + model.mat3.tables["alpha_compare"][8:])
    (material,) = bmt_to_scene(edited).materials
    assert material.alpha_mode == mode
    if threshold is not None:
        assert material.alpha_threshold == pytest.approx(threshold / 255)
