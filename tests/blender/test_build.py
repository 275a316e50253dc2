"""Scene → Blender: counts, values, pose and skinning fidelity of ``build_scene``.

Scenes are made here from numpy with known values; the expectations are
computed independently (parent-relative keys chained in numpy, linear blend
skinning in numpy) and compared with what Blender evaluates.
"""

import bpy
import numpy as np
import pytest
from retro_models.formats import scene as sc
from retro_models.operators.blender import compat, props
from retro_models.operators.blender.build import build_scene

KEY_FRAMES = np.array([0.0, 10.0, 20.0, 30.0])


def random_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def chain_skeleton(rng, n=5, display=None):
    """A chain of bones about one unit apart, each with a non-trivial rest rotation."""
    local = sc.compose(rng.normal(size=(n, 3)) * 0.3 + [0, 1, 0], random_quats(rng, n))
    local[0, :3, 3] = [0.2, -0.1, 0.3]
    parents = np.arange(-1, n - 1, dtype=np.int32)
    rest = local.copy()
    for i in range(1, n):
        rest[i] = rest[parents[i]] @ local[i]
    return sc.Skeleton(
        "Rig",
        [f"bone{i}" for i in range(n)],
        parents,
        rest,
        deform=np.array([True] * (n - 1) + [False]),
        bone_extras=[{"index": i, "flags": f"0x8000000{i}"} for i in range(n)],
        extras={"version": 3, "scale": [1.0, 2.0]},
        bone_display=display,
    )


def chain_animation(rng, skeleton, name="walk"):
    """Quaternion and location keys (parent-relative) for every bone at KEY_FRAMES."""
    channels = []
    local = skeleton.local_rest()
    for i, bone in enumerate(skeleton.bone_names):
        q = random_quats(rng, len(KEY_FRAMES))
        loc = local[i, :3, 3] + rng.normal(size=(len(KEY_FRAMES), 3)) * 0.1
        channels.append(sc.Channel("bone", bone, "rotation_quaternion", KEY_FRAMES, q, extras={"track": i}))
        channels.append(sc.Channel("bone", bone, "location", KEY_FRAMES, loc))
    return sc.Animation(
        name, channels, fps=25.0, frame_start=0.0, frame_end=30.0, loop=True, skeleton=0, extras={"id": 7}
    )


def expected_world(skeleton, animation, key):
    """Armature-space bone matrices at key index ``key``: the chain of parent-relative keys."""
    by = {(c.target, c.path): c.values[key] for c in animation.channels}
    local = skeleton.local_rest()
    world = np.empty_like(local)
    for i, bone in enumerate(skeleton.bone_names):
        m = local[i].copy()
        if (bone, "rotation_quaternion") in by:
            m[:3, :3] = sc.quat_to_matrix(by[bone, "rotation_quaternion"])
        if (bone, "location") in by:
            m[:3, 3] = by[bone, "location"]
        world[i] = m if skeleton.parents[i] < 0 else world[skeleton.parents[i]] @ m
    return world


def grid_mesh(rng, skeleton_size, name="Body"):
    """A strip of quads along the chain: POINT normals, two UV maps, colours, tangents, skin, a shape key."""
    rows = 6
    x, y = np.meshgrid(np.linspace(-0.5, 0.5, 3), np.linspace(0, 4, rows))
    positions = np.stack([x.ravel(), y.ravel(), 0.1 * rng.normal(size=x.size)], axis=1).astype(np.float32)
    v = positions.shape[0]
    quads = np.array(
        [
            [r * 3 + c, r * 3 + c + 1, (r + 1) * 3 + c + 1, (r + 1) * 3 + c]
            for r in range(rows - 1)
            for c in range(2)
        ]
    )
    triangles = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]]).astype(np.int32)
    f = len(triangles)
    normals = rng.normal(size=(v, 3)) + [0, 0, 3]
    normals = (normals / np.linalg.norm(normals, axis=1, keepdims=True)).astype(np.float32)
    joints = np.stack([rng.integers(0, skeleton_size, v), rng.integers(0, skeleton_size, v)], axis=1).astype(
        np.int32
    )
    joints[:, 1] = np.where(joints[:, 1] == joints[:, 0], (joints[:, 0] + 1) % skeleton_size, joints[:, 1])
    w0 = rng.uniform(0.3, 1.0, v).astype(np.float32)
    weights = np.stack([w0, 1 - w0], axis=1)
    weights[0] = [1.0, 0.0]
    tangents = np.concatenate(
        [np.tile([1.0, 0, 0], (v, 1)), np.where(np.arange(v) % 2, 1.0, -1.0)[:, None]], 1
    )
    return sc.Mesh(
        name,
        positions,
        triangles,
        normals=sc.Layer("normal", normals, "POINT"),
        uv_layers=[
            sc.Layer("UVMap", rng.uniform(0, 1, (v, 2)).astype(np.float32), "POINT"),
            sc.Layer("Detail", rng.uniform(0, 1, (3 * f, 2)).astype(np.float32), "CORNER"),
        ],
        color_layers=[sc.Layer("Col", rng.uniform(0, 1, (3 * f, 4)).astype(np.float32), "CORNER")],
        tangents=sc.Layer("tangent", tangents.astype(np.float32), "POINT"),
        material_indices=(np.arange(f) % 2).astype(np.int32),
        materials=[0, 1],
        skeleton=0,
        skin_joints=joints,
        skin_weights=weights,
        shape_keys=[sc.ShapeKey("Smile", positions + np.float32([0, 0, 0.5]), extras={"morph": 1})],
        extras={"lod": 0, "name_hash": "0xdeadbeef"},
    )


def lod_mesh():
    """A hidden, static, placed mesh in its own collection, with corner normals."""
    matrix = sc.compose([1.0, 2.0, 3.0], [0.5, 0.5, 0.5, 0.5], [2.0, 2.0, 2.0])
    normals = np.tile(np.float32([0.0, 0.0, 1.0]), (3, 1))
    return sc.Mesh(
        "Body_LOD1",
        np.eye(3, dtype=np.float32),
        np.array([[0, 1, 2]], np.int32),
        normals=sc.Layer("normal", normals, "CORNER"),
        materials=[1],
        material_indices=np.zeros(1, np.int32),
        collection="LOD1",
        hidden=True,
        matrix=matrix,
    )


def test_image(rng, name="skin", w=4, h=2, alpha=True):
    pixels = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    if not alpha:
        pixels[..., 3] = 255
    return sc.Image(
        name, pixels, w, h, source_bytes=bytes(range(40)), source_format="DXT5", extras={"mips": 3}
    )


test_image.__test__ = False


def make_scene(seed=1, display=None):
    rng = np.random.default_rng(seed)
    skeleton = chain_skeleton(rng, display=display)
    animation = chain_animation(rng, skeleton)
    images = [test_image(rng), test_image(rng, "eyes", 2, 2, alpha=False)]
    materials = [
        sc.Material(
            "Skin",
            base_color=(1.0, 0.5, 0.25, 1.0),
            alpha_mode="CLIP",
            backface_culling=True,
            textures=[
                sc.TextureSlot(
                    0,
                    uv_layer="UVMap",
                    wrap_s="MIRROR",
                    wrap_t="CLAMP",
                    translate=(0.25, 0.5),
                    rotate=0.5,
                    scale=(2.0, 3.0),
                    extras={"filter": 1},
                )
            ],
            extras={"shader": "skin"},
        ),
        sc.Material("Eyes", textures=[sc.TextureSlot(1)]),
    ]
    animation.channels.append(
        sc.Channel("material", "Skin", "texture.0.translate", KEY_FRAMES, rng.uniform(0, 1, (4, 2)))
    )
    animation.channels.append(
        sc.Channel(
            "material",
            "Skin",
            "texture.0.image_index",
            KEY_FRAMES,
            np.array([[0.0], [1], [0], [1]]),
            interpolation="CONSTANT",
        )
    )
    animation.channels.append(
        sc.Channel("shape_key", "Body", "Smile", KEY_FRAMES, np.array([[0.0], [1], [0.5], [0]]))
    )
    animation.channels.append(
        sc.Channel(
            "object", "Body", "hide", KEY_FRAMES, np.array([[0.0], [1], [0], [1]]), interpolation="CONSTANT"
        )
    )
    return sc.Scene(
        name="Test",
        skeletons=[skeleton],
        meshes=[grid_mesh(rng, skeleton_size=4), lod_mesh()],  # the last bone does not deform
        materials=materials,
        images=images,
        animations=[animation, chain_animation(rng, skeleton, "run")],
        extras={"file": "test.bin"},
    )


def assign(obj, action):
    """Make ``action`` the object's active action (its first slot on Blender 4.4+)."""
    obj.animation_data.action = action
    if hasattr(action, "slots"):
        obj.animation_data.action_slot = action.slots[0]


def attribute(owner, name, field, width, dtype=np.float32):
    """``owner[name]``'s values (an attribute, UV map or shape key) as a (N, width) array."""
    data = owner[name].data if hasattr(owner[name], "data") else owner[name]
    out = np.empty(len(data) * width, dtype)
    data.foreach_get(field, out)
    return out.reshape(len(data), width) if width > 1 else out


@pytest.fixture
def built(empty_scene):
    scene = make_scene()
    return scene, build_scene(scene, bpy.context, collection_name="Imported")


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


def test_actions(built):
    scene, result = built
    walk, tree_action, key_action, object_action, run = result.actions
    assert [a.name for a in result.actions] == [
        "walk",
        "walk Shader Nodetree",
        "walk Key",
        "walk Body",
        "run",
    ]
    assert all(a.use_fake_user for a in result.actions)
    armature, body = result.armatures[0], result.objects[0]
    assert armature.animation_data.action == walk
    assert body.animation_data.action == object_action
    assert body.data.shape_keys.animation_data.action == key_action
    assert result.materials[0].node_tree.animation_data.action == tree_action
    assert (walk.use_frame_range, walk.frame_start, walk.frame_end, walk.use_cyclic) == (True, 0, 30, True)
    curves = compat.action_fcurves(walk)
    assert len(curves) == 5 * 7 and all(fc.modifiers[0].type == "CYCLES" for fc in curves)
    assert {fc.group.name for fc in curves} == set(scene.skeletons[0].bone_names)
    assert props.get_extras(walk) == {"id": 7}
    paths = {fc.data_path for fc in compat.action_fcurves(tree_action)}
    assert paths == {'nodes["Mapping 0"].inputs[1].default_value', '["texture.0.image_index"]'}
    image_index = next(fc for fc in compat.action_fcurves(tree_action) if "image_index" in fc.data_path)
    assert [k.interpolation for k in image_index.keyframe_points] == ["CONSTANT"] * 4
    assert {fc.data_path for fc in compat.action_fcurves(object_action)} == {"hide_viewport", "hide_render"}


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


def test_armature(built):
    scene, result = built
    skeleton = scene.skeletons[0]
    armature = result.armatures[0].data
    assert [b.name for b in armature.bones] == skeleton.bone_names
    assert list(armature[props.JOINT_ORDER]) == skeleton.bone_names
    assert [b.parent.name if b.parent else None for b in armature.bones] == [None] + skeleton.bone_names[:-1]
    assert [b.use_deform for b in armature.bones] == skeleton.deform.tolist()
    rest = np.array([np.array(b.matrix_local) for b in armature.bones])
    np.testing.assert_allclose(rest, skeleton.rest, atol=1e-5)
    assert all(b.length > 0.1 for b in armature.bones)
    assert props.get_extras(armature) == skeleton.extras
    assert [props.get_extras(b) for b in armature.bones] == skeleton.bone_extras
    assert {p.rotation_mode for p in result.armatures[0].pose.bones} == {"QUATERNION"}


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


def pose_matrices(armature):
    return np.array([np.array(p.matrix) for p in armature.pose.bones])


# A signed axis permutation: bones whose files point them along X are shown along Y.
X_TO_Y = np.array([[0.0, 1, 0, 0], [-1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])


@pytest.mark.parametrize("display", [None, X_TO_Y])
def test_pose_matches_chained_keys(empty_scene, display):
    scene = make_scene(display=display)
    result = build_scene(scene, bpy.context)
    armature = result.armatures[0]
    shown = np.eye(4) if display is None else display
    for animation, action in ((scene.animations[0], None), (scene.animations[1], result.actions[-1])):
        if action is not None:
            assign(armature, action)
        for key, frame in enumerate(KEY_FRAMES):
            bpy.context.scene.frame_set(int(frame))
            expected = expected_world(scene.skeletons[0], animation, key) @ shown
            np.testing.assert_allclose(pose_matrices(armature), expected, atol=1e-4)


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


def euler_scene(rng):
    """Two bones with the same Bézier euler channel: the root's rest rotation is the identity, the child's not."""
    rest = np.stack(
        [sc.compose([0.0, 0, 0], [1.0, 0, 0, 0]), sc.compose([0.0, 1, 0], random_quats(rng, 1)[0])]
    )
    skeleton = sc.Skeleton("Rig", ["root", "child"], np.array([-1, 0], np.int32), rest)
    times = np.array([0.0, 8.0, 20.0])
    values = rng.uniform(-1.5, 1.5, (3, 3))
    left = np.stack([np.broadcast_to((times - [2, 3, 4])[:, None], (3, 3)), values - 0.3], axis=-1)
    right = np.stack([np.broadcast_to((times + [3, 2, 4])[:, None], (3, 3)), values + 0.4], axis=-1)
    channels = [
        sc.Channel("bone", bone, "rotation_euler", times, values, "BEZIER", left, right)
        for bone in ("root", "child")
    ]
    return sc.Scene(skeletons=[skeleton], animations=[sc.Animation("turn", channels, skeleton=0)])


def test_euler_bezier_kept_on_identity_rest_and_baked_otherwise(empty_scene):
    from mathutils import Euler

    scene = euler_scene(np.random.default_rng(5))
    result = build_scene(scene, bpy.context)
    armature = result.armatures[0]
    assert [p.rotation_mode for p in armature.pose.bones] == ["XYZ", "QUATERNION"]
    assert result.baked == ["turn: child rotation_euler"]
    channel = scene.animations[0].channels[0]
    fcurves = compat.action_fcurves(armature.animation_data.action)
    root_curves = sorted((fc for fc in fcurves if "root" in fc.data_path), key=lambda fc: fc.array_index)
    for c, fcurve in enumerate(root_curves):
        for k, point in enumerate(fcurve.keyframe_points):
            assert point.interpolation == "BEZIER"
            np.testing.assert_allclose(tuple(point.co), (channel.times[k], channel.values[k, c]), rtol=1e-6)
            np.testing.assert_allclose(tuple(point.handle_left), channel.handles_left[k, c], rtol=1e-6)
            np.testing.assert_allclose(tuple(point.handle_right), channel.handles_right[k, c], rtol=1e-6)
    skeleton = scene.skeletons[0]
    for frame in range(0, 21):
        bpy.context.scene.frame_set(frame)
        euler = [fc.evaluate(frame) for fc in root_curves]  # Blender's own Bézier evaluation
        root = np.eye(4)
        root[:3, :3] = np.array(Euler(euler, "XYZ").to_matrix())
        child_local = root.copy()
        child_local[:3, 3] = skeleton.local_rest()[1, :3, 3]
        child = root @ child_local
        np.testing.assert_allclose(pose_matrices(armature), np.stack([root, child]), atol=1e-4)


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


def test_animatable_mapping_gives_every_slot_a_mapping_node(empty_scene):
    result = build_scene(make_scene(), bpy.context, animatable_mapping=True, set_frame_rate=False)
    eyes = result.materials[1].node_tree.nodes
    mapping = eyes["Mapping 0"]
    assert mapping.inputs["Vector"].links[0].from_socket.name == "UV"
    assert next(n for n in eyes if n.type == "TEX_IMAGE").inputs["Vector"].links[0].from_node == mapping
    assert bpy.context.scene.render.fps == 24  # left as it was


def test_sampling_matches_blender_bezier_evaluation(empty_scene):
    """The sampler used for baking agrees with Blender, also where handles overlap the next key."""
    from retro_models.formats.curves import sample
    from retro_models.operators.blender.build import _write_fcurve

    times = np.array([0.0, 4.0, 5.0, 12.0])
    values = np.array([[0.0], [2.0], [-1.0], [0.5]])
    left = np.stack([times[:, None] - [[1.0], [6.0], [0.5], [3.0]], values - 0.7], axis=-1)
    right = np.stack(
        [times[:, None] + [[3.0], [2.5], [9.0], [1.0]], values + [[1.0], [0.2], [-2.0], [0.1]]], axis=-1
    )
    action, slot = compat.new_action("probe", "OBJECT", "probe")
    (fcurve,) = compat.new_fcurves(action, slot, "location", [0])
    _write_fcurve(fcurve, times, values[:, 0], "BEZIER", left[:, 0], right[:, 0])
    frames = np.linspace(-1, 13, 113)
    expected = [fcurve.evaluate(f) for f in frames]
    np.testing.assert_allclose(
        sample(times, values, "BEZIER", left, right, frames)[:, 0], expected, atol=1e-4
    )
