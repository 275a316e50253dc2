"""Blender → Scene: ``extract_scene`` gives back what ``build_scene`` was given, and Blender's data after edits."""

import bpy
import numpy as np
import pytest
from builder_support import X_TO_Y, assert_scenes_equal, build_and_extract, make_scene
from retro_models.operators.blender.build import build_scene
from retro_models.operators.blender.extract import extract_scene


@pytest.mark.parametrize("display", [None, X_TO_Y])
def test_round_trip_equals_input(empty_scene, display):
    scene = make_scene(display=display)
    bpy.context.scene.frame_current = (
        10  # where the mapping and visibility animations differ from the rest values
    )
    _, got = build_and_extract(scene)
    assert got.warnings == []
    assert_scenes_equal(got, scene)


def test_second_import_of_same_names_round_trips(empty_scene):
    scene = make_scene()
    build_scene(make_scene(seed=2), bpy.context)
    result, got = build_and_extract(scene)
    assert result.objects[0].name == "Body.001" and result.materials[0].name == "Skin.001"
    assert_scenes_equal(got, scene)
    # A user's rename is kept, and the channels follow it.
    result.objects[0].name = "Hero"
    got = extract_scene(bpy.context, result.armatures[0], result.objects)
    assert got.meshes[0].name == "Hero"
    assert {c.target for c in got.animations[0].channels if c.target_kind in ("object", "shape_key")} == {
        "Hero"
    }


def test_edits_are_seen(empty_scene):
    scene = make_scene()
    result = build_scene(scene, bpy.context)
    obj, image = result.objects[0], result.images[0]
    # New normals: Blender's own come back (per vertex, as they agree at every corner).
    flat = np.tile(np.float32([0.0, 0.0, 1.0]), (len(obj.data.vertices), 1))
    obj.data.normals_split_custom_set_from_vertices(flat)
    # Painted pixels: the encoded bytes from the file no longer apply.
    pixels = np.zeros(image.size[0] * image.size[1] * 4, np.float32)
    image.pixels.foreach_set(pixels)
    # A vertex without weights is reported.
    for group in obj.vertex_groups:
        group.remove([3])
    got = extract_scene(bpy.context, result.armatures[0], [obj])
    mesh = got.meshes[0]
    assert mesh.normals.domain == "POINT"
    np.testing.assert_allclose(mesh.normals.data, flat, atol=1e-4)
    assert got.images[0].source_bytes is None and got.images[0].source_format == "DXT5"
    assert not got.images[0].pixels.any()
    assert got.images[1].source_bytes == scene.images[1].source_bytes
    assert got.warnings == ["Body: 1 vertices have no bone weights"]
    assert not mesh.skin_weights[3].any()
    np.testing.assert_allclose(
        mesh.skin_weights.sum(axis=1)[np.arange(len(mesh.positions)) != 3], 1, atol=1e-6
    )
