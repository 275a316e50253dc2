"""Scene → Blender: what ``build_scene`` makes of a whole Scene (collections, counts, progress)."""

import bpy
import numpy as np
from builder_support import make_scene
from retro_models.operators.blender.build import build_scene


def test_progress_is_reported_up_to_one(empty_scene):
    fractions = []
    build_scene(make_scene(), bpy.context, progress=fractions.append)
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and len(fractions) > 5


def test_hidden_mesh_is_one_click_away(built):
    scene, result = built
    lod = result.objects[1]
    assert lod.hide_get() and lod.hide_render and not lod.hide_viewport
    np.testing.assert_allclose(np.array(lod.matrix_world), scene.meshes[1].matrix, atol=1e-6)
    assert lod.parent is None and not lod.vertex_groups


def test_counts_and_names(built):
    scene, result = built
    assert result.counts() == {"armatures": 1, "meshes": 2, "materials": 2, "images": 2, "actions": 5}
    assert result.collection.name == "Imported"
    assert [o.name for o in result.collection.all_objects] == ["Rig", "Body", "Body_LOD1"]
    (lod,) = result.collection.children
    assert lod.name == "LOD1" and lod.objects[0] == result.objects[1]
    assert result.warnings == [] and result.baked == []
    assert bpy.context.scene.render.fps == 25
    assert (bpy.context.scene.frame_start, bpy.context.scene.frame_end) == (0, 30)
