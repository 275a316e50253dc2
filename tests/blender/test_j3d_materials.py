"""J3D material sets in Blender: node trees that approximate the TEV, driven by BPK/BRK, BTK and BTP."""

import dataclasses
import math

import bpy
import numpy as np
import pytest
from j3d_support import material_object
from retro_models.formats import scene as sc
from retro_models.formats.j3d import bmt, btp, evaluate
from retro_models.formats.j3d.material_set import bmt_to_scene
from retro_models.formats.j3d.materials import TEXTURE_MATRIX_DTYPE, read_tables
from retro_models.operators.blender import props
from retro_models.operators.blender.build import add_animations, replace_materials
from retro_models.operators.blender.material import (
    ADDITIVE,
    MATERIAL_COLOR,
    VERTEX_COLOR,
    color_input,
    extract_material,
    slot_image_node,
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


def material_set(relative):
    path = corpus_file(relative)
    return bmt.cut_from_model(path.read_bytes(), str(path))


def on_an_object(scene):
    """The scene's materials built onto a selected mesh's materials of the same names (animation plays on
    what an object shows)."""
    existing = material_object(bpy.context, dict.fromkeys((m.name for m in scene.materials), 0))
    return replace_materials(scene, bpy.context, list(existing.values())).materials


def upstream(socket):
    """Every node feeding ``socket``, through any chain of links."""
    found, todo = [], [socket]
    while todo:
        for link in todo.pop().links:
            found.append(link.from_node)
            todo += [s for s in link.from_node.inputs if s.is_linked]
    return found


class _Images:
    """What ``extract_material`` registers images with: the image's TEX1 index."""

    def add(self, image):
        return props.get_extras(image)["tex1_index"]


@pytest.mark.parametrize("relative", MODELS)
def test_material_set_of_every_corpus_model_builds_as_decided(empty_scene, tmp_path, relative):
    path = tmp_path / "set.bmt"
    path.write_bytes(bmt.write(material_set(relative)))
    scene = bmt_to_scene(bmt.read(path.read_bytes()), "set")
    material_object(bpy.context, {"unrelated": 0})
    assert bpy.ops.import_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    for want in scene.materials:
        material = bpy.data.materials[want.name]
        tree = material.node_tree
        bsdf = next(n for n in tree.nodes if n.type == "BSDF_PRINCIPLED")
        assert material.use_backface_culling == want.backface_culling
        assert material.surface_render_method == ("BLENDED" if want.alpha_mode == "BLEND" else "DITHERED")
        feeding_colour = upstream(color_input(material))
        for i, slot in enumerate(want.textures):
            node = slot_image_node(tree, i)
            assert props.get_extras(node.image)["tex1_index"] == slot.image
            assert node.interpolation == slot.interpolation
            assert node.extension == {"CLAMP": "EXTEND", "REPEAT": "REPEAT", "MIRROR": "MIRROR"}[slot.wrap_s]
            assert (node in feeding_colour) == (slot.role == "base_color"), (want.name, i)
            uv = [n for n in upstream(node.inputs["Vector"]) if n.type == "UVMAP"]
            assert [n.uv_map for n in uv] == ([slot.uv_layer] if slot.uv_layer else [])
        textured = any(s.role == "base_color" for s in want.textures)
        clip = tree.nodes.get("Alpha Clip")
        if want.alpha_mode == "CLIP" and textured:
            assert clip.operation == "GREATER_THAN" and bsdf.inputs["Alpha"].links[0].from_node == clip
            assert clip.inputs[1].default_value == pytest.approx(want.alpha_threshold)
        else:
            assert clip is None
        if want.unlit:
            assert tuple(bsdf.inputs["Base Color"].default_value) == (0, 0, 0, 1)
            assert bsdf.inputs["Emission Strength"].default_value == 1.0
            assert not bsdf.inputs["Base Color"].is_linked
        vertex = tree.nodes.get(VERTEX_COLOR)
        assert (vertex.layer_name if vertex else "") == want.vertex_color
        if vertex is not None:
            assert vertex in feeding_colour
        assert (tree.nodes.get(MATERIAL_COLOR) is not None) == (want.tint_texture and textured)
        output = next(n for n in tree.nodes if n.type == "OUTPUT_MATERIAL")
        surface = output.inputs["Surface"].links[0].from_node
        assert surface == (tree.nodes[ADDITIVE] if want.additive else bsdf)
        # What Blender holds reads back as the same material.
        got = extract_material(material, _Images())
        assert bsdf.inputs["Specular IOR Level"].default_value == 0.0  # the game's channels are diffuse
        fields = (
            "alpha_mode",
            "backface_culling",
            "vertex_color",
            "tint_texture",
            "additive",
            "unlit",
            "specular",
        )
        for field in fields:
            assert getattr(got, field) == getattr(want, field), (want.name, field)
        if want.alpha_mode == "CLIP" and textured:
            assert got.alpha_threshold == pytest.approx(want.alpha_threshold)
        assert np.allclose(got.base_color, want.base_color)
        assert [(s.image, s.role, s.uv_layer, s.interpolation) for s in got.textures] == [
            (s.image, s.role, s.uv_layer, s.interpolation) for s in want.textures
        ]
        assert got.extras["mat3"] == want.extras["mat3"]


def centred_set():
    """kindan's material set with its one texture read through a texture matrix about a centre."""
    model = material_set("j3d/kindan_Room0_model3.bdl")
    tables = read_tables(model.mat3)
    texgens, matrices = tables["texgens"].copy(), tables["texture_matrices"].copy()
    texgens["matrix"] = 30
    matrices["center"][0] = (0.25, 0.75, 0.5)
    matrices["scale"][0] = (2.0, 0.5)
    matrices["rotation"][0] = 8192
    matrices["translate"][0] = (0.125, 0.375)
    mat3 = model.mat3
    tail = mat3.tables["texture_matrices"][len(matrices) * TEXTURE_MATRIX_DTYPE.itemsize :]
    edited = {
        "texgens": texgens.tobytes() + mat3.tables["texgens"][4:],
        "texture_matrices": matrices.tobytes() + tail,
    }
    mat3 = dataclasses.replace(mat3, tables={**mat3.tables, **edited})
    return bmt_to_scene(bmt.BMT([mat3 if s is model.mat3 else s for s in model.sections]), "room")


def mapped_uv(tree, uv):
    """Where the Mapping chain in front of texture slot 0 sends a UV (Blender's Mapping: S, R, then T)."""
    point = np.array([*uv, 0.0])
    chain = [n for n in upstream(slot_image_node(tree, 0).inputs["Vector"]) if n.type == "MAPPING"]
    for node in reversed(chain):  # from the UVs towards the image
        scale = np.array(node.inputs["Scale"].default_value)
        angle = node.inputs["Rotation"].default_value[2]
        c, s = math.cos(angle), math.sin(angle)
        rotated = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ (scale * point)
        point = rotated + np.array(node.inputs["Location"].default_value)
    return point[:2]


def test_texture_matrix_about_its_centre_then_a_btk_drives_the_same_nodes(empty_scene):
    scene = centred_set()
    slot = scene.materials[0].textures[0]
    material = on_an_object(scene)[0]
    tree = material.node_tree
    names = sorted(n.name for n in tree.nodes if n.type == "MAPPING")
    assert names == ["Mapping 0", "Mapping 0 Center", "Mapping 0 Rotation"]
    uv = np.array([0.6, 0.3])
    expected = (
        np.diag(slot.scale)
        @ np.array(
            [[math.cos(slot.rotate), -math.sin(slot.rotate)], [math.sin(slot.rotate), math.cos(slot.rotate)]]
        )
        @ (uv - slot.center)
        + np.array(slot.center)
        + slot.translate
    )
    assert mapped_uv(tree, uv) == pytest.approx(expected, abs=1e-6)
    got = extract_material(material, _Images()).textures[0]
    assert got.center == pytest.approx(slot.center) and got.rotate == pytest.approx(slot.rotate)
    assert got.translate == pytest.approx(slot.translate) and got.scale == pytest.approx(slot.scale)
    # A BTK rotation about the same centre keys the rotation node the material already has.
    channel = sc.Channel(
        "material", material.name, "texture.0.rotate", np.array([0.0, 10.0]), np.array([[0.0], [1.0]])
    )
    channel.extras[sc.TEXTURE_CENTER] = [*slot.center, 0.5]
    animation = sc.Animation("spin", [channel], frame_end=10.0)
    add_animations(
        sc.Scene("spin", animations=[animation]), bpy.context, None, [material], set_frame_rate=False
    )
    assert sorted(n.name for n in tree.nodes if n.type == "MAPPING") == names
    bpy.context.scene.frame_set(10)
    assert tree.nodes["Mapping 0 Rotation"].inputs["Rotation"].default_value[2] == pytest.approx(1.0)
    got = extract_material(material, _Images()).textures[0]
    assert got.rotate == pytest.approx(slot.rotate)  # the rest value, not the animated one


def shown(tree, kind="material", slot=0):
    rgb = tree.nodes[f"J3D {kind} {slot}"].outputs[0].default_value[:3]
    return np.array([*rgb, tree.nodes[f"J3D {kind} {slot} alpha"].outputs[0].default_value]) * 255


def test_material_colour_keys_replace_the_tint_and_truncate_as_the_game_does(empty_scene):
    scene = bmt_to_scene(material_set("j3d/kindan_Room0_model3.bdl"), "room")
    material = on_an_object(scene)[0]
    tree = material.node_tree
    # 44.9991 is 44 in the game; whole values stay themselves however float32 rounds them.
    keys = np.array([[44.9991, 45, 255, 0], [200, 17, 1, 254], [3, 128, 77, 100]]) / 255
    channel = sc.Channel("material", material.name, "color.material", np.array([0.0, 1.0, 2.0]), keys)
    channel.interpolation = "CONSTANT"
    animation = sc.Animation("colour", [channel], frame_end=2.0)
    add_animations(sc.Scene("c", animations=[animation]), bpy.context, None, [material], set_frame_rate=False)
    tint = tree.nodes[MATERIAL_COLOR]
    b_color = next(s for s in tint.inputs if s.identifier == "B_Color")
    assert b_color.links[0].from_node == tree.nodes["J3D material 0"]  # replaces the static colour
    assert tree.nodes.get("Mix") is None or tree.nodes["Mix"] == tint  # no second multiply
    for frame, want in enumerate([[44, 45, 255, 0], [200, 17, 1, 254], [3, 128, 77, 100]]):
        bpy.context.scene.frame_set(frame)
        assert shown(tree) == pytest.approx(want, abs=255e-6), frame
    # Every byte value keyed exactly shows as itself.
    values = np.arange(256, dtype=np.float64)
    ramp = np.stack([values, values[::-1], values, values], -1) / 255
    channel = sc.Channel("material", material.name, "color.material", values.copy(), ramp, "CONSTANT")
    animation = sc.Animation("ramp", [channel], frame_end=255.0)
    add_animations(sc.Scene("r", animations=[animation]), bpy.context, None, [material], set_frame_rate=False)
    for frame in range(0, 256, 3):
        bpy.context.scene.frame_set(frame)
        assert shown(tree) == pytest.approx([frame, 255 - frame, frame, frame], abs=255e-6), frame


def test_a_btp_after_the_material_set_shows_every_texture_it_names(empty_scene, tmp_path):
    path = tmp_path / "driver.bmt"
    path.write_bytes(bmt.write(material_set("j3d/driver.bmd")))
    pattern = corpus_file("j3d/grandstarget.btp")
    model = btp.read(pattern.read_bytes(), str(pattern))
    materials = material_object(bpy.context, dict.fromkeys(model.material_names, 1))
    assert bpy.ops.import_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    assert bpy.ops.import_scene.j3d_animation(filepath=str(pattern)) == {"FINISHED"}
    frames = np.arange(0, model.length + 1, 7)
    expected = evaluate.evaluate_btp(model, frames)
    used = set(expected.ravel().tolist())
    # grandstarget shows textures 0, 3 and 10 of driver's 11 (and some past them: those show the slot's
    # own image); driver's materials use 10 (and 1, 9) only.
    assert {0, 3, 10} < used
    for f, frame in enumerate(frames):
        bpy.context.scene.frame_set(int(frame))
        for n, name in enumerate(model.material_names):
            tree = materials[name].node_tree
            value = tree.nodes["Image Index 0"].outputs[0].default_value
            assert round(value) == expected[f, n]
            if value > 10:
                continue
            compare = next(
                node
                for node in tree.nodes
                if node.type == "MATH"
                and node.operation == "COMPARE"
                and abs(node.inputs[1].default_value - value) < 0.5
            )
            mix = compare.outputs[0].links[0].to_node
            image = next(s for s in mix.inputs if s.identifier == "B_Color").links[0].from_node.image
            assert props.get_extras(image)["tex1_index"] == expected[f, n], (name, frame)


def test_a_register_colour_tints_what_an_unlit_material_emits(empty_scene):
    scene = bmt_to_scene(material_set("j3d-models/BlueStarCupsulePlanet.bdl"), "planet")
    scene.materials = [m for m in scene.materials if m.name == "BlueStarMat"]
    (material,) = on_an_object(scene)
    tree = material.node_tree
    keys = np.array([[255, 128, 0, 255], [-20, 300, 64, 255]]) / 255
    channel = sc.Channel("material", material.name, "color.register1", np.array([0.0, 4.0]), keys, "LINEAR")
    add_animations(
        sc.Scene("c", animations=[sc.Animation("tint", [channel], frame_end=4.0)]),
        bpy.context,
        None,
        [material],
        set_frame_rate=False,
    )
    bsdf = next(n for n in tree.nodes if n.type == "BSDF_PRINCIPLED")
    tint = bsdf.inputs["Emission Color"].links[0].from_node
    assert tint.name == "J3D tint" and not bsdf.inputs["Base Color"].is_linked
    first = next(s for s in tint.inputs if s.identifier == "A_Color").links[0].from_node
    assert first == tree.nodes[MATERIAL_COLOR]
    assert (
        next(s for s in tint.inputs if s.identifier == "B_Color").links[0].from_node.name == "J3D register 1"
    )
    bpy.context.scene.frame_set(2)  # halfway: (117.5, 214, 32) → 117, 214, 32
    assert shown(tree, "register", 1)[:3] == pytest.approx([117, 214, 32], abs=255e-6)
