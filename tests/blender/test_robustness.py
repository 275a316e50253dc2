"""Bad input through the operators: one error naming the file, and Blender's data as it was.

Applies that fail after they have changed existing data (a failure made to happen at their last
step, as any late error would) must leave every datablock exactly as before: the scene dump
(custom properties, node trees, actions and their assignment) and the pose-bone rotation modes,
the armature's properties and the scene's frame rate and range.
"""

import bpy
import j3d_fixtures as jf
import pytest
import scene_dump
import tmrf_fixtures as tf
from j3d_support import make_armature, material_object
from retro_models.formats.errors import FormatError
from retro_models.formats.tmrf import convert as tmrf_convert
from retro_models.formats.tmrf import media
from retro_models.operators.blender import build, compat, props
from support import data_counts


def fail_at_the_end(monkeypatch):
    """The appliers' last step (the scene's frame rate and range) fails."""

    def late(*args, **kwargs):
        raise FormatError("late.bin", 12, "a problem found last")

    monkeypatch.setattr(build, "set_scene_frame_rate", late)


def state() -> tuple:
    """Everything the tests compare before and after a failed apply."""
    scene = bpy.context.scene
    modes = {
        (o.name, b.name): b.rotation_mode
        for o in bpy.data.objects
        if o.pose is not None
        for b in o.pose.bones
    }
    frames = (scene.render.fps, scene.render.fps_base, scene.frame_start, scene.frame_end)
    return scene_dump.dump(None), data_counts(), modes, frames


@pytest.mark.parametrize("name, data", [("colours.brk", jf.brk_bytes()), ("scroll.btk", jf.btk_bytes())])
def test_a_failed_material_animation_apply_changes_nothing(empty_scene, tmp_path, monkeypatch, name, data):
    material_object(bpy.context, {"m1": 1, "m2": 1, "mat": 2})
    (tmp_path / name).write_bytes(data)
    before = state()
    fail_at_the_end(monkeypatch)
    with pytest.raises(RuntimeError, match="late.bin: at offset 12"):
        bpy.ops.import_scene.j3d_animation(filepath=str(tmp_path / name), set_frame_range=True)
    assert state() == before
    for material in bpy.data.materials:
        assert material.node_tree.animation_data is None and not material.node_tree.keys()


def test_a_failed_joint_animation_apply_keeps_the_action_and_properties(empty_scene, tmp_path, monkeypatch):
    armature = make_armature(bpy.context, 2, rotated=True)
    held = bpy.data.actions.new("held")
    armature.animation_data_create().action = held
    (tmp_path / "move.bck").write_bytes(jf.bck_bytes())
    before = state()
    fail_at_the_end(monkeypatch)
    with pytest.raises(RuntimeError, match="late.bin"):
        bpy.ops.import_scene.j3d_animation(filepath=str(tmp_path / "move.bck"), set_frame_range=True)
    assert state() == before
    assert armature.animation_data.action == held


def test_a_failed_tmrf_animation_apply_keeps_the_armature_as_it_was(empty_scene, tmp_path, monkeypatch):
    scene = tmrf_convert.to_scene(media.read(tf.full_file()))
    for content in ("skeleton", "animations"):
        data = media.write(tmrf_convert.from_scene(scene, content=content))
        (tmp_path / f"{content}.t{'skl' if content == 'skeleton' else 'ani'}").write_bytes(data)
    assert bpy.ops.import_scene.tertius_tmrf(filepath=str(tmp_path / "skeleton.tskl")) == {"FINISHED"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    held = bpy.data.actions.new("held")
    armature.animation_data_create().action = held
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == armature)
    bpy.context.view_layer.objects.active = armature
    extras = props.get_extras(armature.data)
    before = state()
    fail_at_the_end(monkeypatch)
    with pytest.raises(RuntimeError, match="late.bin"):
        bpy.ops.import_scene.tertius_tmrf(filepath=str(tmp_path / "animations.tani"))
    assert state() == before
    assert armature.animation_data.action == held
    assert props.get_extras(armature.data) == extras
    assert not [a for a in bpy.data.actions if a != held]
    assert not list(compat.action_fcurves(held))
