"""Images ⇄ Blender images: packed pixels and the encoded bytes from the file."""

import bpy
import numpy as np
from retro_models.formats import scene as sc
from retro_models.operators.blender.build import build_scene
from retro_models.operators.blender.extract import extract_scene


def test_undecoded_image_comes_back_without_pixels(empty_scene):
    image = sc.Image("raw", None, 8, 4, source_bytes=b"\x01\x02", source_format="CMPR")
    scene = sc.Scene(
        images=[image],
        materials=[sc.Material("M", textures=[sc.TextureSlot(0)])],
        meshes=[sc.Mesh("Tri", np.eye(3, dtype=np.float32), np.array([[0, 1, 2]], np.int32), materials=[0])],
    )
    result = build_scene(scene, bpy.context)
    assert tuple(result.images[0].size) == (8, 4)
    got = extract_scene(bpy.context, None, result.objects)
    assert (got.images[0].pixels, got.images[0].width, got.images[0].height) == (None, 8, 4)
    assert got.images[0].source_bytes == b"\x01\x02"
    assert got.meshes[0].skeleton is None and got.animations == []
