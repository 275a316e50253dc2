"""Material sets (BMT, or the MAT3 + TEX1 of a model) → Scene materials and images."""

import dataclasses

import numpy as np
import pytest
from retro_models.formats.errors import FormatError
from retro_models.formats.j3d import bmt
from retro_models.formats.j3d.material_set import bmt_to_scene
from support import corpus_file


@pytest.fixture
def driver():
    path = corpus_file("j3d/driver.bmd")
    return bmt.cut_from_model(path.read_bytes(), str(path))


def with_tables(material_set, **tables):
    mat3 = material_set.mat3
    edited = dataclasses.replace(mat3, tables={**mat3.tables, **tables})
    return bmt.BMT([edited if s is mat3 else s for s in material_set.sections], material_set.framing)


def test_model_materials_with_their_textures(driver):
    scene = bmt_to_scene(driver, "driver")
    assert [m.name for m in scene.materials] == ["mario_all_tx", "mario_eye_tx"]
    body, eyes = scene.materials
    assert body.backface_culling and body.alpha_mode == "OPAQUE"
    assert [scene.images[t.image].name for t in body.textures] == ["mario_all", "k_hilight_mario5"]
    assert [(t.wrap_s, t.wrap_t) for t in body.textures][0] == ("REPEAT", "REPEAT")
    assert scene.images[eyes.textures[0].image].name == "mario_eye.0" and eyes.textures[0].wrap_s == "MIRROR"
    image = scene.images[body.textures[0].image]
    assert image.pixels.shape == (128, 256, 4) and image.source_format == "CMPR"
    assert driver.tex1.names[image.extras["tex1_index"]] == "mario_all"
    # Every TEX1 texture, in TEX1 order (a BTP may show any of them); shared texels decoded once.
    assert [i.extras["tex1_index"] for i in scene.images] == list(range(len(driver.tex1.headers)))
    shared = driver.tex1.data_positions()
    first = {int(p): i for i, p in reversed(list(enumerate(shared)))}
    for i, position in enumerate(shared):
        same = scene.images[first[int(position)]]
        if scene.images[i].width == same.width and scene.images[i].source_format == same.source_format:
            assert scene.images[i].pixels is same.pixels
    record = body.extras["mat3"]
    assert len(record["tev_stages"]) == 16 and "blend" in record


def test_blend_and_alpha_compare_give_the_alpha_mode():
    path = corpus_file("j3d/kindan_Room0_model3.bdl")
    scene = bmt_to_scene(bmt.cut_from_model(path.read_bytes(), str(path)))
    assert scene.materials[0].alpha_mode == "BLEND"
    assert scene.images[0].pixels.shape == (16, 8, 4)


def test_colours_and_cull_modes_come_from_their_tables(driver):
    colors = bytes([255, 0, 0, 128]) * 4
    edited = with_tables(driver, material_colors=colors, cull_modes=bytes(16))
    body = bmt_to_scene(edited).materials[0]
    assert np.allclose(body.base_color, (1.0, 0.0, 0.0, 128 / 255))
    assert not body.backface_culling


def test_an_index_past_its_table_names_the_material_and_the_place_of_the_index(driver):
    with pytest.raises(FormatError, match="mario_all_tx.*cull mode") as caught:
        bmt_to_scene(with_tables(driver, cull_modes=b""), filename="driver.bmd")
    data = corpus_file("j3d/driver.bmd").read_bytes()
    record = driver.mat3.material(0)
    assert caught.value.filename == "driver.bmd" and caught.value.offset > 0
    assert data[caught.value.offset] == record["cull_mode"]
    assert data[caught.value.offset - 1 : caught.value.offset + 7] == record.tobytes()[:8]


def test_a_texture_index_past_its_table_points_at_that_slot(driver):
    textures = driver.mat3.material(0)["textures"]
    with pytest.raises(FormatError, match="texture index") as caught:
        bmt_to_scene(with_tables(driver, texture_remap=b""), filename="driver.bmd")
    data = corpus_file("j3d/driver.bmd").read_bytes()
    assert data[caught.value.offset : caught.value.offset + 2] == textures[:1].tobytes()
    assert caught.value.offset == driver.mat3.index_offset(0, "textures")
