"""Animations ⇄ actions: keys, handles, loops and slerps into F-curves, and back exactly while unedited."""

import bpy
import numpy as np
import pytest
from builder_support import (
    assert_close,
    assert_scenes_equal,
    build_and_extract,
    chain_animation,
    chain_skeleton,
    euler_scene,
    make_scene,
    random_quats,
)
from retro_models.formats import scene as sc
from retro_models.formats.curves import sample, slerp, slerp_keys, unslerp_keys
from retro_models.operators.blender import compat, props
from retro_models.operators.blender.armature import bone_maps
from retro_models.operators.blender.build import build_scene
from retro_models.operators.blender.compat import MERGE_DISTANCE
from retro_models.operators.blender.extract import extract_scene
from retro_models.operators.blender.records import read_record


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


def test_sampling_matches_blender_bezier_evaluation(empty_scene):
    """The sampler used for baking agrees with Blender, also where handles overlap the next key."""
    from retro_models.formats.curves import sample
    from retro_models.operators.blender.animation import interpolation_codes, write_fcurve

    times = np.array([0.0, 4.0, 5.0, 12.0])
    values = np.array([[0.0], [2.0], [-1.0], [0.5]])
    left = np.stack([times[:, None] - [[1.0], [6.0], [0.5], [3.0]], values - 0.7], axis=-1)
    right = np.stack(
        [times[:, None] + [[3.0], [2.5], [9.0], [1.0]], values + [[1.0], [0.2], [-2.0], [0.1]]], axis=-1
    )
    action, slot = compat.new_action("probe", "OBJECT", "probe")
    (fcurve,) = compat.new_fcurves(action, slot, "location", [0])
    co = np.stack([times, values[:, 0]], axis=-1).astype(np.float32)
    write_fcurve(fcurve, co, interpolation_codes("BEZIER", len(times)), left[:, 0], right[:, 0])
    frames = np.linspace(-1, 13, 113)
    expected = [fcurve.evaluate(f) for f in frames]
    np.testing.assert_allclose(
        sample(times, values, "BEZIER", left, right, frames)[:, 0], expected, atol=1e-4
    )


def test_euler_channels_come_back(empty_scene):
    from retro_models.formats.curves import euler_to_matrix, sample

    scene = euler_scene(np.random.default_rng(5))
    result, got = build_and_extract(scene)
    root, child = got.animations[0].channels
    want = scene.animations[0].channels[0]
    assert (root.path, root.interpolation) == ("rotation_euler", "BEZIER")
    for field in ("times", "values", "handles_left", "handles_right"):
        assert_close(getattr(root, field), getattr(want, field), field)
    # The baked child, unedited: its keys exactly as imported.
    assert (child.path, child.interpolation) == ("rotation_euler", "BEZIER")
    for field in ("times", "values", "handles_left", "handles_right"):
        np.testing.assert_array_equal(getattr(child, field), getattr(want, field), field)
    # Edited (the last key's interpolation, which leaves the curve as it was): euler keys at every
    # frame, and between frames where the bake needed them, whose rotations are the original curve's.
    child_curves = [fc for fc in compat.action_fcurves(result.actions[0]) if "child" in fc.data_path]
    child_curves[0].keyframe_points[-1].interpolation = "CONSTANT"
    child = extract_scene(bpy.context, result.armatures[0], []).animations[0].channels[1]
    assert (child.path, child.interpolation, child.extras) == ("rotation_euler", "BEZIER", {})
    assert set(np.arange(21.0)) <= set(child.times.tolist()) and child.times[-1] == 20
    frames = np.arange(0, 20.01, 0.125)  # at and between the keys
    expected = sample(want.times, want.values, "BEZIER", want.handles_left, want.handles_right, frames)
    found = sample(child.times, child.values, "BEZIER", child.handles_left, child.handles_right, frames)
    # Baked twice (import, export) through float32 keys: within the 1e-4 the exports promise.
    np.testing.assert_allclose(euler_to_matrix(found), euler_to_matrix(expected), atol=5e-5)


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


def _mixed_keys(bone, index: int, keys):
    """Keys of (frame, value, interpolation) on one component of a bone's location, each key with its own
    interpolation."""
    for frame, value, _ in keys:
        bone.location[index] = value
        bone.keyframe_insert("location", index=index, frame=frame)
    (fcurve,) = [
        fc for fc in compat.action_fcurves(bone.id_data.animation_data.action) if fc.array_index == index
    ]
    for point, (_, _, interpolation) in zip(fcurve.keyframe_points, keys, strict=True):
        point.interpolation = interpolation


def test_keys_of_mixed_interpolations_export_what_blender_plays(empty_scene):
    """Per-key interpolations (a LINEAR key among Bézier ones, a CONSTANT step) and components keyed at
    different frames export as the curve Blender plays, between frames too."""
    result = build_scene(make_scene(), bpy.context)
    armature = result.armatures[0]
    action = bpy.data.actions.new("mixed")
    armature.animation_data.action = action
    bone, parent = armature.pose.bones["bone2"], armature.pose.bones["bone1"]
    _mixed_keys(bone, 0, [(1, 0.0, "LINEAR"), (5, 1.0, "BEZIER"), (9, -0.5, "BEZIER"), (13, 0.2, "LINEAR")])
    _mixed_keys(bone, 1, [(1, 0.3, "BEZIER"), (4, -1.0, "CONSTANT"), (10, 0.6, "BEZIER")])
    _mixed_keys(bone, 2, [(1, 0.0, "BEZIER"), (7, 2.0, "BEZIER")])
    (animation,) = extract_scene(bpy.context, armature, result.objects, actions=[action]).animations
    (channel,) = [c for c in animation.channels if c.path == "location"]
    for frame in np.arange(0.0, 14.0, 0.25):
        bpy.context.scene.frame_set(int(frame), subframe=float(frame % 1))
        local = np.linalg.inv(np.array(parent.matrix)) @ np.array(bone.matrix)
        got = sample(
            channel.times,
            channel.values,
            channel.interpolation,
            channel.handles_left,
            channel.handles_right,
            [frame],
        )[0]
        np.testing.assert_allclose(got, local[:3, 3], atol=1e-4, err_msg=f"frame {frame}")


@pytest.mark.parametrize("mode", ["AXIS_ANGLE", "ZXY", "YZX", "XYZ"])
def test_every_rotation_mode_exports_what_blender_plays(empty_scene, mode):
    """Axis-angle keys and eulers in any order export as the rotation Blender plays, between frames too;
    the bone's other rotation curves, which Blender does not play, are left out."""
    result = build_scene(make_scene(), bpy.context)
    armature = result.armatures[0]
    action = bpy.data.actions.new("turns")
    armature.animation_data.action = action
    bone, parent = armature.pose.bones["bone2"], armature.pose.bones["bone1"]
    bone.keyframe_insert("rotation_quaternion", frame=1)  # not played once the mode changes
    bone.rotation_mode = mode
    for frame, angle in ((1, 0.0), (9, 1.3), (15, -0.4)):
        if mode == "AXIS_ANGLE":
            bone.rotation_axis_angle = (angle, 0.3, 0.5, 0.8)
            bone.keyframe_insert("rotation_axis_angle", frame=frame)
        else:
            bone.rotation_euler = (angle, 0.4 * angle, -angle)
            bone.keyframe_insert("rotation_euler", frame=frame)
    (animation,) = extract_scene(bpy.context, armature, result.objects, actions=[action]).animations
    (channel,) = [c for c in animation.channels if c.path.startswith("rotation")]
    for frame in np.arange(0.0, 16.0, 0.25):
        bpy.context.scene.frame_set(int(frame), subframe=float(frame % 1))
        local = np.linalg.inv(np.array(parent.matrix)) @ np.array(bone.matrix)
        keys = (
            channel.times,
            channel.values,
            channel.interpolation,
            channel.handles_left,
            channel.handles_right,
        )
        got = sample(*keys, [frame])
        got = euler_matrix(got[0]) if channel.path == "rotation_euler" else sc.quat_to_matrix(got[0])
        np.testing.assert_allclose(got, local[:3, :3], atol=1e-4, err_msg=f"frame {frame}")


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
    (record,) = read_record(result.actions[0]).channels
    assert record.slerp == list(range(1, 10)) + list(range(11, 16))
    assert record.flipped and record.loop
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


def test_switching_action_in_the_action_editor_starts_from_rest(empty_scene):
    """Channels the new action does not key go back to rest, as the games start each animation."""
    rng = np.random.default_rng(11)
    skeleton = chain_skeleton(rng)
    walk = chain_animation(rng, skeleton)
    nod = chain_animation(rng, skeleton, "nod")
    nod.channels = [c for c in nod.channels if c.target != "bone3" and c.path != "location"]
    result = build_scene(sc.Scene(name="rig", skeletons=[skeleton], animations=[walk, nod]), bpy.context)
    armature = result.armatures[0]
    scene = bpy.context.scene
    compat.assign_action(armature, result.actions[0], compat.action_slot(result.actions[0]))
    bpy.context.view_layer.update()  # the viewport's redraw, between the import and the user's switch
    scene.frame_set(10)
    bone3, bone1 = armature.pose.bones["bone3"], armature.pose.bones["bone1"]
    assert not np.allclose(bone3.matrix_basis, np.eye(4))
    compat.assign_action(
        armature, result.actions[1], compat.action_slot(result.actions[1])
    )  # as the editor does
    bpy.context.view_layer.update()
    scene.frame_set(10)
    np.testing.assert_allclose(np.array(bone3.matrix_basis), np.eye(4), atol=1e-6)  # not keyed: rest
    np.testing.assert_allclose(bone1.location, (0, 0, 0), atol=1e-6)  # rotation keyed, location at rest
    assert not np.allclose(np.array(bone1.rotation_quaternion), (1, 0, 0, 0))


def test_channels_keyed_together_make_what_each_makes_alone(empty_scene):
    """The builder maps quaternions, finds their sign flips and which need slerp keys for all channels of
    an animation at once: each channel gets the F-curves and record it gets when keyed alone."""
    from retro_models.operators.blender.animation import fcurve_rows

    rng = np.random.default_rng(21)
    skeleton = chain_skeleton(rng)
    every_frame = np.arange(12.0)
    angles = np.linspace(0.0, 1.0, 12)
    turn = np.stack([np.cos(angles), np.sin(angles), 0 * angles, 0 * angles], axis=1)
    flips = turn * np.where(np.arange(12) >= 6, -1.0, 1.0)[:, None]  # one flip: the next channel starts anew
    handles = np.stack([np.broadcast_to(every_frame[:, None], (12, 4)), flips + 0.1], axis=-1)
    channels = [
        sc.Channel("bone", "bone0", "rotation_quaternion", every_frame, flips),  # no slerp keys
        sc.Channel("bone", "bone1", "rotation_quaternion", [0.0, 9.0, 20.0], random_quats(rng, 3)),
        sc.Channel(
            "bone", "bone2", "rotation_quaternion", every_frame, flips, "BEZIER", handles - 0.5, handles
        ),
        sc.Channel("bone", "bone3", "location", every_frame, rng.normal(size=(12, 3))),
    ]

    def built(keyed):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        animation = sc.Animation("move", keyed, frame_end=20.0, skeleton=0)
        result = build_scene(sc.Scene(skeletons=[skeleton], animations=[animation]), bpy.context)
        (action,) = result.actions
        rows = {(fc.data_path, fc.array_index): fcurve_rows(fc) for fc in compat.action_fcurves(action)}
        records = {r.target: (r.slerp, r.flipped, r.digest) for r in read_record(action).channels}
        return rows, records

    together = built(channels)
    alone = [built([channel]) for channel in channels]
    assert together[1]["bone1"][0] and together[1]["bone0"][1] and together[1]["bone2"][1]
    assert together[1] == {k: v for _, records in alone for k, v in records.items()}
    assert together[0].keys() == {k for rows, _ in alone for k in rows}
    for rows, _ in alone:
        for key, keys in rows.items():
            np.testing.assert_array_equal(together[0][key], keys, err_msg=str(key))
