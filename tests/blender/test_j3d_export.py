"""File > Export > J3D animation: applied animations written back, edits, actions made in Blender, errors.

Armatures and materials come from the Scene builder (j3d_support); the real files
from ../shared/corpus/j3d. Written files are read back with the format layer and evaluated with
``formats.j3d.evaluate``, the game's own curves.
"""

import bpy
import numpy as np
import pytest
from j3d_support import (
    assert_same_transforms,
    blender_local,
    expected_local,
    make_armature,
    material_object,
)
from retro_models.formats.j3d import bck, bpk, convert, evaluate
from retro_models.formats.j3d.files import READERS
from retro_models.operators.blender import compat, props
from support import corpus_file, corpus_files, data_counts

ANIMATIONS = [p for p in corpus_files("j3d/*") if p.suffix in READERS]


def apply_to_matching_target(path):
    """Apply a corpus animation onto a new armature (BCK) or object with its materials (the others)."""
    model = READERS[path.suffix].read(path.read_bytes(), str(path))
    if path.suffix == ".bck":
        make_armature(bpy.context, model.joint_count, rotated=False)
    else:
        slots: dict[str, int] = {}
        for channel in convert.to_scene(model).animations[0].channels:
            slot = int(channel.path.split(".")[1]) if channel.path.startswith("texture.") else 0
            slots[channel.target] = max(slots.get(channel.target, 0), slot + 1)
        materials = material_object(bpy.context, slots)
        obj = bpy.context.active_object
        obj.active_material_index = list(materials).index(model_first_target(model))
    assert bpy.ops.import_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    return model


def model_first_target(model) -> str:
    return convert.to_scene(model).animations[0].channels[0].target


@pytest.mark.parametrize("path", ANIMATIONS, ids=lambda p: p.name)
def test_applied_animation_exports_byte_identical(empty_scene, tmp_path, path):
    apply_to_matching_target(path)
    out = tmp_path / f"out{path.suffix}"
    assert bpy.ops.export_scene.j3d_animation(filepath=str(out)) == {"FINISHED"}
    assert out.read_bytes() == path.read_bytes()


def test_edited_bck_key_changes_only_that_track(empty_scene, tmp_path):
    path = corpus_file("j3d/monl_a_clap1.bck")
    model = apply_to_matching_target(path)
    armature = bpy.context.active_object
    fcurves = compat.action_fcurves(armature.animation_data.action)
    # A keyed location track (identity rests: the pose curve is the file's track).
    fcurve = next(fc for fc in fcurves if fc.data_path.endswith(".location") and len(fc.keyframe_points) > 2)
    joint = int(fcurve.data_path.split('"')[1].removeprefix("joint"))
    axis = fcurve.array_index
    key = fcurve.keyframe_points[1]
    key.co.y += 5.0
    key.handle_left.y += 5.0
    key.handle_right.y += 5.0
    out = tmp_path / "edited.bck"
    assert bpy.ops.export_scene.j3d_animation(filepath=str(out)) == {"FINISHED"}
    edited = bck.read(out.read_bytes(), str(out))
    assert (edited.loop_mode, edited.length) == (model.loop_mode, model.length)
    frames = np.arange(model.length + 1, dtype=np.float64)
    before = evaluate.evaluate_bck(model, frames)
    after = evaluate.evaluate_bck(edited, frames)
    difference = np.abs(after["translation"] - before["translation"])
    changed = difference.max(axis=0) > 1e-4  # (joints, axes)
    assert changed[joint, axis] and changed.sum() == 1
    assert difference[int(round(key.co.x)), joint, axis] == pytest.approx(5.0, abs=1e-4)
    for component in ("scale", "rotation"):
        assert np.abs(after[component] - before[component]).max() < 1e-3


def test_edited_bpk_key_changes_only_that_channel(empty_scene, tmp_path):
    path = corpus_file("j3d/color.bpk")
    model = apply_to_matching_target(path)
    material = bpy.context.active_object.active_material
    fcurves = compat.action_fcurves(material.node_tree.animation_data.action)
    # A key well inside 0..1, so the edited colour is not clamped.
    fcurve = next(fc for fc in fcurves if len(fc.keyframe_points) > 2 and fc.keyframe_points[1].co.y < 0.5)
    key = fcurve.keyframe_points[1]
    for point in (key.co, key.handle_left, key.handle_right):
        point.y += 20 / 255
    out = tmp_path / "edited.bpk"
    assert bpy.ops.export_scene.j3d_animation(filepath=str(out)) == {"FINISHED"}
    edited = bpk.read(out.read_bytes(), str(out))
    frames = np.arange(model.length + 1, dtype=np.float64)
    before = evaluate.evaluate_bpk(model, frames).astype(np.float64)
    after = evaluate.evaluate_bpk(edited, frames).astype(np.float64)
    changed = np.abs(after - before).max(axis=0) > 0.5  # (materials, RGBA)
    assert changed.sum() == 1
    material_index, component = np.argwhere(changed)[0]
    assert model.material_names[material_index] == props.scene_name(material)
    assert np.abs(after - before)[int(round(key.co.x)), material_index, component] == pytest.approx(20, abs=1)


def test_action_made_in_blender_exports_a_bck(empty_scene, tmp_path):
    armature = make_armature(bpy.context, 3, rotated=True)
    bones = armature.pose.bones
    # joint0 keys its location (LINEAR), joint1 its rotation, joint2 its scale (Bézier, Blender's
    # default): each keeps its rest in the components it does not key.
    for frame, angle, offset in ((0, 0.0, 0.0), (10, 0.8, 0.5), (24, -0.4, 0.2)):
        bones["joint0"].location = (offset, 0, -offset)
        bones["joint0"].keyframe_insert("location", frame=frame)
        bones["joint1"].rotation_quaternion = (np.cos(angle / 2), 0, np.sin(angle / 2), 0)
        bones["joint1"].keyframe_insert("rotation_quaternion", frame=frame)
        bones["joint2"].scale = (1 + offset, 1, 1 - offset)
        bones["joint2"].keyframe_insert("scale", frame=frame)
    action = armature.animation_data.action
    for fcurve in compat.action_fcurves(action)[:3]:
        for key in fcurve.keyframe_points:
            key.interpolation = "LINEAR"
    out = tmp_path / "new.bck"
    assert bpy.ops.export_scene.j3d_animation(filepath=str(out)) == {"FINISHED"}
    model = bck.read(out.read_bytes(), str(out))
    assert (model.joint_count, model.length, model.loop_mode) == (3, 24, convert.LOOP_ONCE)
    frames = np.arange(0, 25)
    names = ["joint0", "joint1", "joint2"]
    # Rotations are 16-bit: within a step (π / 32768 × 2^frac) per component of the file's values.
    step = convert.rotation_radians(model.rotation_frac)
    expected, found = expected_local(model, frames), blender_local(bpy.context, armature, names, frames)
    scale = np.linalg.norm(found[..., :3, :3], axis=-2)
    assert np.abs(np.linalg.norm(expected[..., :3, :3], axis=-2) - scale).max() < 1e-4
    rotation_error = expected[..., :3, :3] / scale[..., None, :] - found[..., :3, :3] / scale[..., None, :]
    assert np.abs(rotation_error).max() < 2 * step
    assert np.abs(expected[..., :3, 3] - found[..., :3, 3]).max() < 1e-4


def test_cyclic_action_made_in_blender_loops(empty_scene, tmp_path):
    armature = make_armature(bpy.context, 1, rotated=False)
    bone = armature.pose.bones["joint0"]
    for frame in (0, 8):
        bone.location = (frame / 8, 0, 0)
        bone.keyframe_insert("location", frame=frame)
    for fcurve in compat.action_fcurves(armature.animation_data.action):
        fcurve.modifiers.new("CYCLES")
    out = tmp_path / "loop.bck"
    assert bpy.ops.export_scene.j3d_animation(filepath=str(out)) == {"FINISHED"}
    model = bck.read(out.read_bytes(), str(out))
    assert (model.loop_mode, model.length) == (convert.LOOP_REPEAT, 8)
    assert_same_transforms(
        expected_local(model, np.arange(9)), blender_local(bpy.context, armature, ["joint0"], np.arange(9))
    )


def test_export_without_an_armature_writes_nothing(empty_scene, tmp_path):
    out = tmp_path / "none.bck"
    before = data_counts()
    with pytest.raises(RuntimeError, match="select the armature"):
        bpy.ops.export_scene.j3d_animation(filepath=str(out))
    assert not out.exists() and data_counts() == before


def test_wrong_kind_is_refused_and_writes_nothing(empty_scene, tmp_path):
    apply_to_matching_target(corpus_file("j3d/color.bpk"))
    out = tmp_path / "wrong.btk"
    with pytest.raises(RuntimeError, match=r"BPK animation with no BTK channels: export it as \.bpk"):
        bpy.ops.export_scene.j3d_animation(filepath=str(out))
    assert not out.exists()


def test_armature_without_an_action_is_refused(empty_scene, tmp_path):
    armature = make_armature(bpy.context, 2, rotated=False)
    out = tmp_path / "idle.bck"
    with pytest.raises(RuntimeError, match=f"armature {armature.name!r} plays no action"):
        bpy.ops.export_scene.j3d_animation(filepath=str(out))
    assert not out.exists()


def test_chosen_animation_exports_instead_of_the_playing_one(empty_scene, tmp_path):
    path = corpus_file("j3d/monl_a_clap1.bck")
    armature = make_armature(bpy.context, 7, rotated=False)
    bpy.ops.import_scene.j3d_animation(filepath=str(path))
    first = props.to_python(armature.data[props.ANIMATIONS])[0]
    # A second animation plays now: a copy of the file made to ping-pong.
    model = bck.read(path.read_bytes(), str(path))
    model.loop_mode = 4
    other = tmp_path / "pingpong.bck"
    other.write_bytes(bck.write(model))
    bpy.ops.import_scene.j3d_animation(filepath=str(other))
    out = tmp_path / "chosen.bck"
    assert bpy.ops.export_scene.j3d_animation(filepath=str(out), animation=first) == {"FINISHED"}
    assert out.read_bytes() == path.read_bytes()
    assert bpy.ops.export_scene.j3d_animation(filepath=str(out)) == {"FINISHED"}
    assert out.read_bytes() == other.read_bytes()


def test_export_is_in_the_menu_and_file_handler(addon):
    from retro_models.formats.registry import FAMILIES

    menu = [(f.exporter.idname, f.exporter.menu) for f in FAMILIES if f.exporter]
    assert (
        "export_scene.j3d_animation",
        "J3D animation (.bck .btk .brk .bpk .btp .bca .bva .bla .blk)",
    ) in menu
    handler = bpy.types.FileHandler.bl_rna_get_subclass_py("IO_FH_retro_j3d_animation")
    assert handler.bl_export_operator == "export_scene.j3d_animation"
