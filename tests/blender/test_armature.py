"""Skeletons ⇄ armatures: bones, rest, display axes and the pose the bone channels give."""

import bpy
import numpy as np
import pytest
from builder_support import KEY_FRAMES, X_TO_Y, assign, euler_scene, expected_world, make_scene, pose_matrices
from retro_models.operators.blender import compat, props
from retro_models.operators.blender.build import build_scene


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
