"""Meshes ⇄ mesh objects: geometry, layers, normals, skinning and shape keys."""

import bpy
import numpy as np
import pytest
from builder_support import KEY_FRAMES, attribute, expected_world, make_scene
from retro_models.formats import scene as sc
from retro_models.operators.blender import mesh as mesh_module
from retro_models.operators.blender import props
from retro_models.operators.blender.build import build_scene
from retro_models.operators.blender.extract import extract_scene


def test_mesh_values(built):
    scene, result = built
    mesh, obj = scene.meshes[0], result.objects[0]
    data = obj.data
    corners = mesh.triangles.ravel()
    assert (len(data.vertices), len(data.polygons), len(data.loops)) == (
        len(mesh.positions),
        len(mesh.triangles),
        len(corners),
    )
    np.testing.assert_array_equal(attribute(data.attributes, "position", "vector", 3), mesh.positions)
    np.testing.assert_array_equal(attribute(data.attributes, ".corner_vert", "value", 1, np.int32), corners)
    np.testing.assert_array_equal(
        attribute(data.uv_layers, "UVMap", "uv", 2), mesh.uv_layers[0].data[corners]
    )
    np.testing.assert_array_equal(attribute(data.uv_layers, "Detail", "uv", 2), mesh.uv_layers[1].data)
    np.testing.assert_array_equal(
        attribute(data.color_attributes, "Col", "color", 4), mesh.color_layers[0].data
    )
    np.testing.assert_array_equal(
        attribute(data.attributes, props.SOURCE_NORMAL, "vector", 3), mesh.normals.data
    )
    np.testing.assert_array_equal(
        attribute(data.attributes, props.TANGENT, "vector", 3), mesh.tangents.data[:, :3]
    )
    np.testing.assert_array_equal(
        attribute(data.attributes, props.TANGENT_SIGN, "value", 1), mesh.tangents.data[:, 3]
    )
    corner_normals = np.empty(len(corners) * 3, np.float32)
    data.corner_normals.foreach_get("vector", corner_normals)
    corner_normals = corner_normals.reshape(-1, 3)
    np.testing.assert_allclose(corner_normals, mesh.normals.data[corners], atol=1e-3)
    material_index = np.empty(len(data.polygons), np.int32)
    data.polygons.foreach_get("material_index", material_index)
    np.testing.assert_array_equal(material_index, mesh.material_indices)
    assert [m.name for m in data.materials] == ["Skin", "Eyes"]
    assert props.get_extras(data) == mesh.extras
    assert obj.parent == result.armatures[0]
    assert obj.modifiers[0].type == "ARMATURE" and obj.modifiers[0].object == result.armatures[0]
    assert [k.name for k in data.shape_keys.key_blocks] == ["Basis", "Smile"]
    np.testing.assert_array_equal(
        attribute(data.shape_keys.key_blocks, "Smile", "co", 3), mesh.shape_keys[0].positions
    )


def test_weights(built):
    scene, result = built
    mesh, obj = scene.meshes[0], result.objects[0]
    names = [g.name for g in obj.vertex_groups]
    expected = np.zeros((len(mesh.positions), 4), np.float32)
    np.add.at(expected, (np.arange(len(mesh.positions))[:, None], mesh.skin_joints), mesh.skin_weights)
    got = np.zeros_like(expected)
    for v in obj.data.vertices:
        for g in v.groups:
            got[v.index, int(names[g.group][4:])] = g.weight
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("budget", [None, 100])
def test_the_vertex_groups_of_several_meshes_read_back_at_once(empty_scene, monkeypatch, budget):
    """One read for meshes of different sizes: more groups than one reader modifier passes, bones
    without a group on some meshes, a group that is no bone, a mesh without groups, two objects on one
    mesh, a mesh without vertices. Each gives what Blender holds per vertex, by bone then vertex, and
    nothing is left behind; the same when a small budget reads them in several evaluations."""
    if budget is not None:
        monkeypatch.setattr(mesh_module, "_READ_BUDGET", budget)
    rng = np.random.default_rng(7)
    names = [f"bone{i}" for i in range(20)]

    def weighted(name: str, vertex_count: int, groups: list[str]):
        mesh = bpy.data.meshes.new(name)
        mesh.vertices.add(vertex_count)
        obj = bpy.data.objects.new(name, mesh)
        bpy.context.scene.collection.objects.link(obj)
        for group_name in groups:
            group = obj.vertex_groups.new(name=group_name)
            for weight in (0.25, 0.5, rng.random()):  # ties between groups
                vertices = rng.choice(vertex_count, vertex_count // 8, replace=False)
                group.add(vertices.tolist(), weight, "REPLACE")
        return obj

    big = weighted("big", 300, [*names[:-1], "not a bone"])
    small = weighted("small", 57, names[3:7])
    twin = bpy.data.objects.new("twin", small.data)
    bpy.context.scene.collection.objects.link(twin)
    objs = [big, weighted("bare", 40, []), small, twin, weighted("no vertices", 0, names[:2])]
    counts = [len(c) for c in (bpy.data.objects, bpy.data.scenes, bpy.data.node_groups, bpy.data.meshes)]

    read = mesh_module.vertex_group_weights(bpy.context, objs, names)

    assert len(read) == len(objs)
    dense = []
    for obj, (vertices, bones, weights) in zip(objs, read, strict=True):
        expected = np.zeros((len(obj.data.vertices), len(names)), np.float32)
        for group in obj.vertex_groups:
            for vertex in range(len(obj.data.vertices)) if group.name in names else ():
                try:
                    expected[vertex, names.index(group.name)] = group.weight(vertex)
                except RuntimeError:  # not in the group
                    pass
        got = np.zeros_like(expected)
        got[vertices, bones] = weights
        np.testing.assert_array_equal(got, expected, err_msg=obj.name)
        assert (weights > 0).all() and len(weights) == np.count_nonzero(expected), obj.name
        assert (np.lexsort((vertices, bones)) == np.arange(len(bones))).all(), obj.name  # by bone, vertex
        assert (vertices.dtype, bones.dtype, weights.dtype) == (np.int64, np.int64, np.float32)
        dense.append(expected)
    assert len(read[0][0]) and not len(read[1][0]) and len(read[2][0]) and not len(read[4][0])
    assert all(np.array_equal(a, b) for a, b in zip(read[2], read[3], strict=True))  # one mesh, two objects
    assert [
        len(c) for c in (bpy.data.objects, bpy.data.scenes, bpy.data.node_groups, bpy.data.meshes)
    ] == counts
    assert bpy.context.scene == empty_scene
    assert mesh_module.vertex_group_weights(bpy.context, [], names) == []
    for influences in (None, 2):  # the sparse and the dense way to the strongest bones agree
        joints, strongest, unweighted = mesh_module.strongest_bones(dense[0], influences)
        sparse = mesh_module._strongest(*read[0], 300, len(names), influences)
        np.testing.assert_array_equal(sparse[0], joints)
        np.testing.assert_array_equal(sparse[1], strongest)
        assert sparse[2] == unweighted == int((dense[0].sum(axis=1) == 0).sum())
    # Strongest first, equal weights by bone; fewer bones than influences: as many columns as bones.
    joints, strongest, unweighted = mesh_module.strongest_bones(
        np.float32([[0.2, 0.4, 0, 0.4], [0, 0, 0, 0]]), 2
    )
    assert (
        joints.tolist() == [[1, 3], [0, 0]] and strongest.tolist() == [[0.5, 0.5], [0, 0]] and unweighted == 1
    )
    assert mesh_module.strongest_bones(np.float32([[0.3, 0.1]]), 4)[0].tolist() == [[0, 1]]


def test_the_skin_read_back_is_known_without_reading_the_groups():
    """``grouped_skin`` (a J3D import's digest) equals the strongest bones of the dense weights the
    vertex groups get, with bones named twice per vertex, bones outside the skeleton and ties."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        joints = rng.integers(-1, 7, (rng.integers(0, 30), rng.integers(1, 17)))  # up to 16 influences
        weights = rng.choice([0, 0.25, 0.3, 0.5, 1.0], joints.shape).astype(np.float32)
        for influences in (None, 1, joints.shape[1], 6):
            expected = mesh_module.strongest_bones(mesh_module.group_weights(joints, weights, 6), influences)
            got = mesh_module.grouped_skin(joints, weights, 6, influences)
            if expected[0] is None:
                assert got == (None, None, 0)
                continue
            np.testing.assert_array_equal(got[0], expected[0])
            np.testing.assert_array_equal(got[1], expected[1])
            assert got[2] == expected[2]


def linear_blend(mesh, skeleton, world, positions):
    skinning = world @ np.linalg.inv(skeleton.rest)
    homogeneous = np.concatenate([positions, np.ones((len(positions), 1))], axis=1)
    per_joint = np.einsum("vkij,vj->vki", skinning[mesh.skin_joints], homogeneous)[..., :3]
    return (per_joint * mesh.skin_weights[..., None]).sum(axis=1)


def test_skinning_matches_linear_blend(empty_scene):
    scene = make_scene()
    result = build_scene(scene, bpy.context)
    mesh, obj = scene.meshes[0], result.objects[0]
    smile = mesh.shape_keys[0].positions
    for key, shape_value in ((2, 0.5), (0, 0.0)):
        bpy.context.scene.frame_set(int(KEY_FRAMES[key]))
        assert not obj.hide_viewport and not obj.hide_render
        evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        deformed = evaluated.to_mesh()
        got = np.empty(len(deformed.vertices) * 3, np.float32)
        deformed.vertices.foreach_get("co", got)
        evaluated.to_mesh_clear()
        base = mesh.positions + shape_value * (smile - mesh.positions)
        expected = linear_blend(
            mesh, scene.skeletons[0], expected_world(scene.skeletons[0], scene.animations[0], key), base
        )
        np.testing.assert_allclose(got.reshape(-1, 3), expected, atol=1e-4)
    bpy.context.scene.frame_set(10)
    assert obj.hide_viewport and obj.hide_render


def test_degenerate_triangles_are_left_out(empty_scene):
    positions = np.eye(4, 3, dtype=np.float32)
    triangles = np.array([[0, 1, 2], [1, 1, 3], [0, 2, 3], [0, 3, 9]], np.int32)
    uv = np.arange(24, dtype=np.float32).reshape(12, 2)
    mesh = sc.Mesh(
        "Strip",
        positions,
        triangles,
        uv_layers=[sc.Layer("UVMap", uv, "CORNER")],
        material_indices=np.array([0, 1, 1, 0], np.int32),
        materials=[0, 1],
    )
    scene = sc.Scene(meshes=[mesh], materials=[sc.Material("A"), sc.Material("B")])
    result = build_scene(scene, bpy.context)
    assert result.warnings == ["Strip: 2 degenerate triangles left out"]
    data = result.objects[0].data
    np.testing.assert_array_equal(
        attribute(data.attributes, ".corner_vert", "value", 1, np.int32), [0, 1, 2, 0, 2, 3]
    )
    np.testing.assert_array_equal(attribute(data.uv_layers, "UVMap", "uv", 2), uv[[0, 1, 2, 6, 7, 8]])
    assert [p.material_index for p in data.polygons] == [0, 1]


def test_polygons_are_triangulated(empty_scene):
    result = build_scene(make_scene(), bpy.context)
    data = result.objects[0].data
    import bmesh

    mesh = bmesh.new()
    mesh.from_mesh(data)
    bmesh.ops.join_triangles(
        mesh, faces=mesh.faces[:], angle_face_threshold=np.pi, angle_shape_threshold=np.pi
    )
    quads = len(mesh.faces)
    mesh.to_mesh(data)
    mesh.free()
    got = extract_scene(bpy.context, result.armatures[0], result.objects).meshes[0]
    assert quads < 20 and len(got.triangles) == 20
    assert got.uv_layers[1].domain == "CORNER" and len(got.uv_layers[1].data) == 60
    assert len(got.material_indices) == 20
    # Read in bulk from the corners and faces: the same as Blender's triangles give one by one.
    data.calc_loop_triangles()
    np.testing.assert_array_equal(got.triangles, [t.vertices[:] for t in data.loop_triangles])
    np.testing.assert_array_equal(got.material_indices, [t.material_index for t in data.loop_triangles])
    assert len(set(got.material_indices.tolist())) > 1
