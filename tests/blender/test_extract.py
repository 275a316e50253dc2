"""Blender → Scene: ``extract_scene`` gives back what ``build_scene`` was given, and Blender's data after edits."""

import bpy
import numpy as np
import pytest
from blender.test_build import X_TO_Y, euler_scene, make_scene, random_quats
from retro_models.formats import scene as sc
from retro_models.formats.curves import slerp, slerp_keys, unslerp_keys
from retro_models.operators.blender import compat, props
from retro_models.operators.blender.build import MERGE_DISTANCE, bone_maps, build_scene
from retro_models.operators.blender.extract import extract_scene

TOLERANCE = 1e-5


def dense_skin(mesh, bones):
    dense = np.zeros((len(mesh.positions), bones))
    np.add.at(dense, (np.arange(len(mesh.positions))[:, None], mesh.skin_joints), mesh.skin_weights)
    return dense


def assert_close(a, b, what):
    assert (a is None) == (b is None), what
    if a is not None:
        np.testing.assert_allclose(
            np.asarray(a, np.float64), np.asarray(b, np.float64), atol=TOLERANCE, err_msg=what
        )


def assert_layers_equal(a, b, what):
    a, b = [x for x in a if x is not None], [y for y in b if y is not None]
    assert [(x.name, x.domain) for x in a] == [(y.name, y.domain) for y in b], what
    for x, y in zip(a, b, strict=True):
        assert_close(x.data, y.data, f"{what} {x.name}")


def assert_scenes_equal(got: sc.Scene, want: sc.Scene):
    assert (got.name, got.extras) == (want.name, want.extras)
    for g, w in zip(got.skeletons, want.skeletons, strict=True):
        assert (g.name, g.bone_names, g.parents.tolist(), g.deform.tolist()) == (
            w.name,
            w.bone_names,
            w.parents.tolist(),
            w.deform.tolist(),
        )
        assert (g.bone_extras, g.extras) == (w.bone_extras, w.extras)
        assert_close(g.rest, w.rest, "rest")
        assert_close(g.bone_display, w.bone_display, "bone display")
    assert len(got.meshes) == len(want.meshes)
    for g, w in zip(got.meshes, want.meshes, strict=True):
        assert (g.name, g.collection, g.hidden, g.materials, g.skeleton, g.extras) == (
            w.name,
            w.collection,
            w.hidden,
            w.materials,
            w.skeleton,
            w.extras,
        )
        np.testing.assert_array_equal(g.positions, w.positions)
        np.testing.assert_array_equal(g.triangles, w.triangles)
        np.testing.assert_array_equal(g.material_indices, w.material_indices)
        assert_layers_equal([g.normals], [w.normals], "normals")
        np.testing.assert_array_equal(g.normals.data, w.normals.data)  # the source normals, exactly
        assert_layers_equal(g.uv_layers, w.uv_layers, "uv")
        assert_layers_equal(g.color_layers, w.color_layers, "colour")
        assert_layers_equal([g.tangents], [w.tangents], "tangents")
        assert (g.skin_joints is None) == (w.skin_joints is None)
        if w.skin_joints is not None:
            assert_close(dense_skin(g, len(got.skeletons[0])), dense_skin(w, len(want.skeletons[0])), "skin")
            assert g.skin_joints.shape == w.skin_joints.shape
        assert [(k.name, k.extras) for k in g.shape_keys] == [(k.name, k.extras) for k in w.shape_keys]
        for gk, wk in zip(g.shape_keys, w.shape_keys, strict=True):
            assert_close(gk.positions, wk.positions, "shape key")
        assert_close(g.matrix, w.matrix, "matrix")
    for g, w in zip(got.materials, want.materials, strict=True):
        assert (g.name, g.alpha_mode, g.backface_culling, g.extras) == (
            w.name,
            w.alpha_mode,
            w.backface_culling,
            w.extras,
        )
        assert_close(g.base_color, w.base_color, "base colour")
        assert len(g.textures) == len(w.textures)
        for gs, ws in zip(g.textures, w.textures, strict=True):
            assert (gs.image, gs.role, gs.uv_layer, gs.wrap_s, gs.wrap_t, gs.extras) == (
                ws.image,
                ws.role,
                ws.uv_layer,
                ws.wrap_s,
                ws.wrap_t,
                ws.extras,
            )
            assert_close(
                [*gs.translate, gs.rotate, *gs.scale], [*ws.translate, ws.rotate, *ws.scale], "mapping"
            )
    assert len(got.materials) == len(want.materials)
    assert len(got.images) == len(want.images)
    for g, w in zip(got.images, want.images, strict=True):
        assert (g.name, g.width, g.height, g.source_bytes, g.source_format, g.extras) == (
            w.name,
            w.width,
            w.height,
            w.source_bytes,
            w.source_format,
            w.extras,
        )
        np.testing.assert_array_equal(g.pixels, w.pixels)
    assert [a.name for a in got.animations] == [a.name for a in want.animations]
    for g, w in zip(got.animations, want.animations, strict=True):
        assert (g.fps, g.frame_start, g.frame_end, g.loop, g.skeleton, g.extras) == (
            w.fps,
            w.frame_start,
            w.frame_end,
            w.loop,
            w.skeleton,
            w.extras,
        )
        assert [(c.target_kind, c.target, c.path, c.interpolation, c.extras) for c in g.channels] == [
            (c.target_kind, c.target, c.path, c.interpolation, c.extras) for c in w.channels
        ]
        for gc, wc in zip(g.channels, w.channels, strict=True):
            what = f"{g.name} {wc.target} {wc.path}"
            assert_close(gc.times, wc.times, what)
            assert_close(gc.values, wc.values, what)
            assert_close(gc.handles_left, wc.handles_left, what)
            assert_close(gc.handles_right, wc.handles_right, what)


def build_and_extract(scene, **options):
    result = build_scene(scene, bpy.context)
    return result, extract_scene(
        bpy.context, result.armatures[0] if result.armatures else None, result.objects, **options
    )


@pytest.mark.parametrize("display", [None, X_TO_Y])
def test_round_trip_equals_input(empty_scene, display):
    scene = make_scene(display=display)
    bpy.context.scene.frame_current = (
        10  # where the mapping and visibility animations differ from the rest values
    )
    _, got = build_and_extract(scene)
    assert got.warnings == []
    assert_scenes_equal(got, scene)


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


def test_euler_channels_come_back(empty_scene):
    scene = euler_scene(np.random.default_rng(5))
    result, got = build_and_extract(scene)
    root, child = got.animations[0].channels
    want = scene.animations[0].channels[0]
    assert (root.path, root.interpolation) == ("rotation_euler", "BEZIER")
    for field in ("times", "values", "handles_left", "handles_right"):
        assert_close(getattr(root, field), getattr(want, field), field)
    # The baked child: euler keys at every frame whose rotations are the original curve's.
    assert (child.path, child.interpolation, child.extras) == ("rotation_euler", "LINEAR", {})
    np.testing.assert_array_equal(child.times, np.arange(21.0))
    from retro_models.formats.curves import euler_to_matrix, sample

    expected = sample(want.times, want.values, "BEZIER", want.handles_left, want.handles_right, child.times)
    np.testing.assert_allclose(euler_to_matrix(child.values), euler_to_matrix(expected), atol=1e-5)


def test_hand_made_action_is_exported(empty_scene):
    scene = make_scene()
    result = build_scene(scene, bpy.context)
    armature = result.armatures[0]
    action = bpy.data.actions.new("pose")
    armature.animation_data.action = action
    bone = armature.pose.bones["bone2"]
    bone.rotation_quaternion = (0.8, 0.6, 0.0, 0.0)
    bone.location = (0.1, 0.2, 0.3)
    bone.keyframe_insert("rotation_quaternion", frame=3)
    bone.keyframe_insert("location", frame=3)
    got = extract_scene(bpy.context, armature, result.objects, actions=[action])
    (animation,) = got.animations
    assert animation.name == "pose" and animation.fps == 25
    by_path = {c.path: c for c in animation.channels}
    assert {c.target for c in animation.channels} == {"bone2"}
    bpy.context.scene.frame_set(3)
    skeleton = got.skeletons[0]
    parent_pose = np.array(armature.pose.bones["bone1"].matrix)
    local = np.linalg.inv(parent_pose) @ np.array(bone.matrix)
    np.testing.assert_allclose(by_path["location"].values[0], local[:3, 3], atol=1e-5)
    np.testing.assert_allclose(
        sc.quat_to_matrix(by_path["rotation_quaternion"].values[0]), local[:3, :3], atol=1e-5
    )
    assert skeleton.bone_names[2] == "bone2"


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


def test_bezier_bone_channels_round_trip(empty_scene):
    """Bézier quaternion and location keys on a rotated rest: mapped exactly while handles share frames."""
    rng = np.random.default_rng(3)
    scene = euler_scene(rng)
    # What comes back when a scene leaves these out.
    scene.skeletons[0].deform = np.ones(2, bool)
    scene.skeletons[0].bone_extras = [{}, {}]
    times = np.array([0.0, 6.0, 15.0])
    quats = rng.normal(size=(3, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    frames = np.stack([times - 2, times + 2], axis=-1)  # the same handle frames for every component
    left = np.stack([np.broadcast_to(frames[:, None, 0], (3, 4)), quats - 0.1], axis=-1)
    right = np.stack([np.broadcast_to(frames[:, None, 1], (3, 4)), quats + 0.1], axis=-1)
    location = rng.normal(size=(3, 3))
    scene.animations[0].channels = [
        sc.Channel("bone", "child", "rotation_quaternion", times, quats, "BEZIER", left, right, {"q": 1}),
        sc.Channel("bone", "child", "location", times, location, "BEZIER", left[:, :3], right[:, :3]),
    ]
    result, got = build_and_extract(scene)
    assert result.baked == []
    assert_scenes_equal(got, scene)


def test_euler_keys_on_a_rotated_rest_follow_the_curve_between_keys(empty_scene):
    """Euler keys made in Blender on a bone whose rest is rotated come back as the curve Blender plays."""
    context = bpy.context
    armature = bpy.data.objects.new("rig", bpy.data.armatures.new("rig"))
    context.scene.collection.objects.link(armature)
    context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode="EDIT")
    bone = armature.data.edit_bones.new("tilted")
    bone.head, bone.tail, bone.roll = (0, 0, 0), (0.3, 0.2, 1.0), 0.4
    bpy.ops.object.mode_set(mode="OBJECT")
    pose_bone = armature.pose.bones["tilted"]
    pose_bone.rotation_mode = "XYZ"
    for frame, angles in ((1, (0.0, 0.0, 0.0)), (11, (1.2, -0.5, 0.3))):
        pose_bone.rotation_euler = angles
        pose_bone.keyframe_insert("rotation_euler", frame=frame)  # Bézier, as users key
    scene = extract_scene(context, armature, [])
    (channel,) = [c for c in scene.animations[0].channels if c.path == "rotation_euler"]
    rest = np.array(armature.data.bones["tilted"].matrix_local)[:3, :3]
    for frame in (3, 6, 9):
        context.scene.frame_set(frame)
        played = rest @ np.array(pose_bone.matrix_basis)[:3, :3]
        key = int(np.flatnonzero(np.isclose(channel.times, frame))[0])
        got = euler_matrix(channel.values[key])
        np.testing.assert_allclose(got, played, atol=1e-5, err_msg=f"frame {frame}")


def euler_matrix(angles) -> np.ndarray:
    from retro_models.formats.curves import euler_to_matrix

    return euler_to_matrix(np.asarray(angles, np.float64)[None])[0]


def test_slerp_keys_follow_the_slerp_between_distant_keys():
    """F-curves interpolate quaternions per component: whole frames between distant keys get the slerp,
    taken off again while they still lie on it (either sign), and kept once edited."""
    frames = np.array([0.0, 10.0, 10.5])
    half_turn = np.array([[1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0.0998, 0.995]])
    half_turn = half_turn / np.linalg.norm(half_turn, axis=1, keepdims=True)
    times, values, added = slerp_keys(frames, half_turn, MERGE_DISTANCE)
    np.testing.assert_array_equal(times, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10.5])
    np.testing.assert_array_equal(added, np.arange(1, 10))
    angles = 2 * np.arccos(np.clip(np.abs(values[:11, 0]), 0, 1))
    np.testing.assert_allclose(angles, np.radians(np.arange(11) * 18.0), atol=1e-9)  # even steps: a slerp
    signs = np.where(np.isin(np.arange(len(times)), [3, 7, 11]), -1.0, 1.0)[:, None]  # either sign
    kept = unslerp_keys(times, (values * signs).astype(np.float32), added)
    np.testing.assert_array_equal(kept[0], frames)
    edited = values.copy()
    edited[3] = [1, 0, 0, 0]
    assert len(unslerp_keys(times, edited, added)[0]) == len(times)
    # Keys a frame apart, or closer to a whole frame than F-curves keep apart, get none.
    assert len(slerp_keys([0.0, 1.0, 1.99], half_turn, MERGE_DISTANCE)[2]) == 0


def test_quaternion_keys_play_the_slerp_and_come_back_exactly(empty_scene):
    """A looping LINEAR quaternion channel on a rotated rest, with a sign flip: Blender plays the slerp at
    every whole frame, export gets the keys back bit for bit, and an edited slerp key is kept."""
    rng = np.random.default_rng(8)
    rest = np.stack(
        [sc.compose([0.0, 0, 0], [1.0, 0, 0, 0]), sc.compose([0.0, 1, 0], random_quats(rng, 1)[0])]
    )
    skeleton = sc.Skeleton("Rig", ["root", "child"], np.array([-1, 0], np.int32), rest)
    times = np.array([0.0, 10.0, 10.5, 16.0])
    quats = np.array([[1.0, 0, 0, 0], [0, 0.6, 0, 0.8], [0, -0.62, 0.1, -0.78], [0.3, 0.5, -0.5, 0.64]])
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    channel = sc.Channel("bone", "child", "rotation_quaternion", times, quats, "LINEAR", extras={"q": 1})
    animation = sc.Animation("swing", [channel], frame_end=12.0, loop=True, skeleton=0)
    scene = sc.Scene(skeletons=[skeleton], animations=[animation])
    result = build_scene(scene, bpy.context)
    armature = result.armatures[0]
    (record,) = props.to_python(result.actions[0][props.ANIMATION])["channels"]
    assert record["slerp"] == list(range(1, 10)) + list(range(11, 16))
    assert "flipped" in record and "loop" in record
    pose_bone = armature.pose.bones["child"]
    basis_rotation = bone_maps(skeleton)["child"].basis_rotation
    for frame in range(13):
        bpy.context.scene.frame_set(frame)
        played = sc.quat_to_matrix(np.array(pose_bone.rotation_quaternion))
        game = basis_rotation(sc.quat_to_matrix(slerp(times, quats, [frame])))[0]
        np.testing.assert_allclose(played, game, atol=1e-5, err_msg=f"frame {frame}")

    got = extract_scene(bpy.context, armature, []).animations[0].channels[0]
    np.testing.assert_array_equal(got.times, times)
    np.testing.assert_array_equal(got.values.astype(np.float32), quats.astype(np.float32))
    assert got.extras == {"q": 1}

    w = next(fc for fc in compat.action_fcurves(result.actions[0]) if fc.array_index == 0)
    w.keyframe_points[3].co.y += 0.1  # the slerp key at frame 3
    w.update()
    got = extract_scene(bpy.context, armature, []).animations[0].channels[0]
    np.testing.assert_array_equal(got.times, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10.5, 11, 12, 13, 14, 15, 16])
