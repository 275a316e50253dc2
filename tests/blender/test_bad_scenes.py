"""Legal but odd scenes (found by the fuzzer) build without a traceback."""

import bpy
import numpy as np
import pytest
from retro_models.formats import scene as sc
from retro_models.formats.errors import FormatError
from retro_models.operators.blender import compat
from retro_models.operators.blender.build import build_scene


def skeleton() -> sc.Skeleton:
    return sc.Skeleton("rig", ["root"], np.array([-1], np.int32), np.eye(4)[None])


def test_a_skin_whose_weights_are_all_zero_makes_no_groups(empty_scene):
    mesh = sc.Mesh(
        "tri",
        np.eye(3, dtype=np.float32),
        np.array([[0, 1, 2]], np.int32),
        skeleton=0,
        skin_joints=np.zeros((3, 1), np.int32),
        skin_weights=np.zeros((3, 1), np.float32),
    )
    result = build_scene(sc.Scene("odd", skeletons=[skeleton()], meshes=[mesh]), bpy.context)
    assert len(result.objects[0].vertex_groups) == 0


def test_a_channel_without_keys_keys_nothing(empty_scene):
    empty = sc.Channel("bone", "root", "location", np.zeros(0), np.zeros((0, 3)))
    keyed = sc.Channel("bone", "root", "scale", np.array([0.0, 10.0]), np.ones((2, 3)))
    animation = sc.Animation("walk", [empty, keyed], frame_end=10.0, skeleton=0)
    result = build_scene(sc.Scene("odd", skeletons=[skeleton()], animations=[animation]), bpy.context)
    paths = {fc.data_path for fc in compat.action_fcurves(result.actions[0])}
    assert paths == {'pose.bones["root"].scale'}


def test_a_mesh_whose_triangles_are_all_degenerate_keeps_its_vertices(empty_scene):
    mesh = sc.Mesh(
        "flat",
        np.eye(3, dtype=np.float32),
        np.array([[0, 0, 1], [2, 2, 2]], np.int32),
        normals=sc.Layer("normal", np.tile(np.float32([0, 0, 1]), (3, 1))),
        uv_layers=[sc.Layer("UVMap", np.zeros((3, 2), np.float32))],
    )
    result = build_scene(sc.Scene("odd", meshes=[mesh]), bpy.context)
    data = result.objects[0].data
    assert (len(data.vertices), len(data.polygons)) == (3, 0)
    assert result.warnings == ["flat: 2 degenerate triangles left out"]


def test_two_channels_for_one_fcurve_are_a_format_error_naming_the_channel(empty_scene):
    material = sc.Material("skin")
    colour = sc.Channel("material", "skin", "color.base_color", np.array([0.0, 10.0]), np.ones((2, 4)))
    animation = sc.Animation("glow", [colour, colour], frame_end=10.0)
    scene = sc.Scene("odd", materials=[material], animations=[animation], source="glow.brk")
    with pytest.raises(
        FormatError, match=r"glow\.brk: .*'glow' keys .* twice \(channel material .skin. color\.base_color\)"
    ):
        build_scene(scene, bpy.context)
