"""Editing JPOG animations in Blender: what is written is what Blender plays, and nothing else changes.

The written files are played with ``formats.toshi.evaluate`` (the game's lerp and slerp) and
compared with Blender's bone matrices at whole and fractional frames.
"""

import bpy
import numpy as np
from demo_creature import demo_files
from retro_models.formats.toshi import convert, evaluate, tkl, tmd
from retro_models.operators.blender import compat
from test_toshi_import import operator_axis, play, set_frame

TOLERANCE = 1e-4
DEMO = demo_files()


def import_demo(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    for name, data in DEMO.items():
        (folder / name).write_bytes(data)
    assert bpy.ops.import_scene.toshi_tmd(filepath=str(folder / "demo.tmd")) == {"FINISHED"}
    return bpy.data.objects["demo"]


def export(armature, folder):
    folder.mkdir()
    bpy.ops.object.select_all(action="DESELECT")
    armature.select_set(True)
    bpy.context.view_layer.objects.active = armature
    assert bpy.ops.export_scene.toshi_tmd(filepath=str(folder / "demo.tmd")) == {"FINISHED"}
    return tmd.read((folder / "demo.tmd").read_bytes()), tkl.read((folder / "demo.tkl").read_bytes())


def largest_difference(armature, action, model, library, frames, only=None) -> float:
    """How far the game's pose of the written files is from Blender's, over ``frames`` (the bones
    named in ``only``, else all)."""
    index = [a.name for a in model.animations].index(action.name)
    play(armature, action)
    axis, display_inverse = operator_axis(), np.linalg.inv(convert.BONE_DISPLAY)
    names = model.node_names()
    worst = 0.0
    for frame in frames:
        set_frame(frame)
        world = np.array(armature.matrix_world)
        got = np.array([world @ np.array(armature.pose.bones[n].matrix) for n in names]) @ display_inverse
        expected = axis @ evaluate.pose(model, library, index, frame / convert.FPS)
        keep = [i for i, n in enumerate(names) if only is None or n in only]
        worst = max(worst, float(np.abs(got - expected)[keep].max()))
    return worst


def test_one_rotation_key_edit_changes_only_that_channel(empty_scene, tmp_path):
    armature = import_demo(tmp_path)
    model, library = tmd.read(DEMO["demo.tmd"]), tkl.read(DEMO["demo.tkl"])
    animation = model.animations[0]
    names = model.node_names()
    # The rotation channel with the most keys between which the importer added slerp keys.
    action = bpy.data.actions[animation.name]
    fcurves = compat.action_fcurves(action)

    def rotation_curves(name):
        path = f'pose.bones["{name}"].rotation_quaternion'
        return sorted((fc for fc in fcurves if fc.data_path == path), key=lambda fc: fc.array_index)

    node = max(
        (n for n in range(len(names)) if len(rotation_curves(names[n])) == 4),
        key=lambda n: (
            len(rotation_curves(names[n])[0].keyframe_points)
            - len(model.channels[int(animation.channels[n])].keys)
        ),
    )
    curves = rotation_curves(names[node])
    stored = model.channels[int(animation.channels[node])]
    assert len(curves[0].keyframe_points) > len(stored.keys)  # slerp keys were added
    frame = float(stored.keys["time"][len(stored.keys) // 2]) * convert.FPS
    points = [next(p for p in fc.keyframe_points if abs(p.co.x - frame) < 1e-3) for fc in curves]
    q = np.array([p.co.y for p in points])
    q = q + np.array([0.0, 0.15, -0.1, 0.05])
    for point, value in zip(points, q / np.linalg.norm(q), strict=True):
        point.co.y = point.handle_left.y = point.handle_right.y = value
    written, new_library = export(armature, tmp_path / "out")

    # Every other channel of every animation is stored as it was; the library only grew.
    for a, (new_anim, old_anim) in enumerate(zip(written.animations, model.animations, strict=True)):
        for n, (new_id, old_id) in enumerate(zip(new_anim.channels, old_anim.channels, strict=True)):
            if (a, n) == (0, node):
                continue
            new_keys, old_keys = written.channels[new_id].keys, model.channels[old_id].keys
            assert new_keys.tobytes() == old_keys.tobytes(), (a, names[n])
    assert new_library.positions.tobytes() == library.positions.tobytes()
    assert new_library.rotations[: len(library.rotations)].tobytes() == library.rotations.tobytes()
    # Only the edited channel's new keys: the edited key, the slerp keys beside it that Blender
    # still plays, and the few that make the game's slerp follow Blender's curve next to it. The
    # slerp keys the importer added everywhere else are gone again.
    grown = len(new_library.rotations) - len(library.rotations)
    edited = written.channels[int(written.animations[0].channels[node])]
    new_keys = ~np.isin(edited.keys["time"], stored.keys["time"])
    assert 1 <= grown <= new_keys.sum() + 1
    assert len(edited.keys) < len(curves[0].keyframe_points)
    print(
        f"{names[node]}: {len(stored.keys)} keys stored, {len(curves[0].keyframe_points)} in Blender, "
        f"{len(edited.keys)} written; {grown} rotations added to the library"
    )
    end = float(animation.duration) * convert.FPS
    frames = np.arange(0.0, end + 1e-9, 0.25)
    assert largest_difference(armature, action, written, new_library, frames) < TOLERANCE


def test_new_action_with_bezier_and_euler_keys_plays_as_in_blender(empty_scene, tmp_path):
    armature = import_demo(tmp_path)
    action = bpy.data.actions.new("swing")
    compat.assign_action(armature, action, None)
    rng = np.random.default_rng(3)
    bones = {"neck": "QUATERNION", "head": "XYZ", "leg_fl": "XYZ", "tail1": "QUATERNION"}
    for frame in (0, 8, 20):
        for name, mode in bones.items():
            bone = armature.pose.bones[name]
            bone.rotation_mode = mode
            if mode == "XYZ":
                bone.rotation_euler = rng.uniform(-0.6, 0.6, 3)
                bone.keyframe_insert("rotation_euler", frame=frame)
            else:
                q = np.array([1.0, *rng.uniform(-0.3, 0.3, 3)])
                bone.rotation_quaternion = q / np.linalg.norm(q)
                bone.keyframe_insert("rotation_quaternion", frame=frame)
            bone.location = rng.normal(size=3) * 0.05
            bone.keyframe_insert("location", frame=frame)
    for fc in compat.action_fcurves(action):
        assert all(p.interpolation == "BEZIER" for p in fc.keyframe_points)
    written, library = export(armature, tmp_path / "out")
    whole = largest_difference(armature, action, written, library, np.arange(0.0, 21.0))
    quarters = np.arange(0.0, 20.0, 0.25)
    between = largest_difference(armature, action, written, library, quarters, ["neck", "tail1"])
    euler = largest_difference(armature, action, written, library, quarters, ["head", "leg_fl"])
    print(f"whole frames {whole:.2g}; quarter frames: quaternion bones {between:.2g}, Euler {euler:.2g}")
    assert whole < TOLERANCE and between < TOLERANCE and euler < TOLERANCE
