"""Materials ⇄ node trees: texture slots, roles, mappings and the images they show."""

import bpy
import numpy as np
import pytest
from builder_support import make_scene
from retro_models.operators.blender import props
from retro_models.operators.blender.build import build_scene


def test_materials_and_images(built):
    scene, result = built
    skin = result.materials[0]
    assert skin.surface_render_method == "DITHERED" and skin.use_backface_culling
    assert props.get_extras(skin) == {"shader": "skin"}
    nodes = skin.node_tree.nodes
    image_node = next(n for n in nodes if n.type == "TEX_IMAGE")
    assert image_node.image == result.images[0] and image_node.extension == "MIRROR"
    assert props.get_extras(image_node) == {"filter": 1}
    bsdf = next(n for n in nodes if n.type == "BSDF_PRINCIPLED")
    assert bsdf.inputs["Base Color"].links[0].from_node == image_node
    clip = bsdf.inputs["Alpha"].links[0].from_node
    assert (
        clip.operation == "GREATER_THAN"
        and clip.inputs[0].links[0].from_socket == image_node.outputs["Alpha"]
    )
    mapping = nodes["Mapping 0"]
    assert image_node[props.SLOT]["translate"].to_list() == [0.25, 0.5]  # Location itself is animated
    assert tuple(mapping.inputs["Scale"].default_value) == (2.0, 3.0, 1.0)
    assert mapping.inputs["Rotation"].default_value[2] == pytest.approx(0.5)
    assert image_node.inputs["Vector"].links[0].from_node == mapping
    assert mapping.inputs["Vector"].links[0].from_node.uv_map == "UVMap"
    eyes = result.materials[1]
    assert not eyes.node_tree.nodes[-1].inputs["Vector"].links  # default UVs, no mapping
    for image, blender_image in zip(scene.images, result.images, strict=True):
        assert tuple(blender_image.size) == (image.width, image.height)
        assert blender_image.packed_file is not None and blender_image.alpha_mode == "CHANNEL_PACKED"
        pixels = np.empty(image.width * image.height * 4, np.float32)
        blender_image.pixels.foreach_get(pixels)
        top_first = np.round(pixels * 255).reshape(image.height, image.width, 4)[::-1]
        np.testing.assert_array_equal(top_first, image.pixels)
        assert blender_image[props.SOURCE_FORMAT] == "DXT5"
        assert props.get_extras(blender_image) == {"mips": 3}


def test_animatable_mapping_gives_every_slot_a_mapping_node(empty_scene):
    result = build_scene(make_scene(), bpy.context, animatable_mapping=True, set_frame_rate=False)
    eyes = result.materials[1].node_tree.nodes
    mapping = eyes["Mapping 0"]
    assert mapping.inputs["Vector"].links[0].from_socket.name == "UV"
    assert next(n for n in eyes if n.type == "TEX_IMAGE").inputs["Vector"].links[0].from_node == mapping
    assert bpy.context.scene.render.fps == 24  # left as it was
