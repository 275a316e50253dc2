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


def test_apply_modifiers_reads_the_skin_of_every_mesh_its_modifiers_make(built):
    """Modifiers on two skinned meshes and a static one, applied in one export: each skin is read from
    what the modifiers make (a Mirror doubles the vertices, weights and all), every mesh is back after."""
    _, result = built
    body = result.objects[0]
    copy = body.copy()  # a second skinned mesh (parent and Armature modifier copied), without shape keys
    copy.data = body.data.copy()
    copy.shape_key_clear()
    body.users_collection[0].objects.link(copy)
    objs = [*result.objects, copy]
    plain = extract_scene(bpy.context, result.armatures[0], objs)
    for obj in objs:
        obj.modifiers.new("Mirror", "MIRROR").use_mirror_merge = False
    own, meshes_before = [obj.data for obj in objs], len(bpy.data.meshes)

    got = extract_scene(bpy.context, result.armatures[0], objs, apply_modifiers=True)

    assert [m.skin_joints is not None for m in got.meshes] == [True, False, True]
    for mirrored, mesh in zip(got.meshes, plain.meshes, strict=True):
        count = len(mesh.positions)
        assert len(mirrored.positions) == 2 * count, mesh.name
        for half in (slice(None, count), slice(count, None)) if mesh.skin_joints is not None else ():
            np.testing.assert_array_equal(mirrored.skin_joints[half], mesh.skin_joints)
            np.testing.assert_array_equal(mirrored.skin_weights[half], mesh.skin_weights)
    assert got.warnings == [f"{body.name}: shape keys left out: its modifiers (Mirror…) were applied"]
    assert [obj.data for obj in objs] == own and len(bpy.data.meshes) == meshes_before
