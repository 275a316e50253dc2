"""J3D files and the Scene steps between them and the selection, without Blender."""

import numpy as np
import pytest
import support
from j3d_fixtures import bck_bytes, bmt_bytes, btk_bytes
from retro_models.formats.errors import ExportError, FormatError
from retro_models.formats.j3d import apply, bmt, btk, convert, files
from retro_models.formats.scene import Animation, Channel, Skeleton


def skeleton(names: list[str]) -> Skeleton:
    count = len(names)
    return Skeleton("rig", names, np.full(count, -1, np.int32), np.tile(np.eye(4), (count, 1, 1)))


def test_a_bck_binds_to_an_armature_with_its_joint_count(tmp_path):
    (tmp_path / "walk.bck").write_bytes(bck_bytes())
    scene = files.load(str(tmp_path / "walk.bck"), files.ImportOptions())
    assert scene.skeletons[0].bone_names == ["joint 0", "joint 1"]  # the file's joints, by index
    with pytest.raises(FormatError, match="2 joints but the armature has 3") as error:
        apply.bind_joints(scene, skeleton(["a", "b", "c"]), str(tmp_path / "walk.bck"))
    assert error.value.offset == apply.JOINT_COUNT_OFFSET
    apply.bind_joints(scene, skeleton(["hips", "head"]), str(tmp_path / "walk.bck"))
    assert {c.target for c in scene.animations[0].channels} == {"hips", "head"}
    assert scene.skeletons[0].name == "rig" and scene.animations[0].skeleton == 0


def test_a_bound_bck_saves_back_to_the_same_bytes(tmp_path):
    (tmp_path / "walk.bck").write_bytes(bck_bytes())
    scene = files.load(str(tmp_path / "walk.bck"), files.ImportOptions())
    apply.bind_joints(scene, skeleton(["hips", "head"]), str(tmp_path / "walk.bck"))
    animation = scene.animations[0]
    apply.set_playback(animation, looping=animation.loop, mirrored=False)
    assert files.save(scene, str(tmp_path / "out.bck"), files.ExportOptions()) == [str(tmp_path / "out.bck")]
    assert (tmp_path / "out.bck").read_bytes() == bck_bytes()


def test_btk_uv_flip_is_its_own_inverse(tmp_path):
    (tmp_path / "scroll.btk").write_bytes(btk_bytes())
    scene = files.load(str(tmp_path / "scroll.btk"), files.ImportOptions())
    assert scene.animations[0].extras["uv_v_up"]
    apply.to_blender_uv(scene)
    assert btk.write(convert.from_scene(scene)) == btk_bytes()


def test_a_material_set_cut_from_a_model(tmp_path):
    source = support.corpus_file("j3d/driver.bmd")
    (tmp_path / "driver.bmt").write_bytes(bmt.write(bmt.cut_from_model(source.read_bytes(), str(source))))
    scene = files.load(str(tmp_path / "driver.bmt"), files.ImportOptions())
    assert [m.name for m in scene.materials] == ["mario_all_tx", "mario_eye_tx"] and scene.images


def test_unknown_extensions(tmp_path):
    (tmp_path / "set.bmd").write_bytes(bmt_bytes())
    with pytest.raises(FormatError, match="not a J3D animation or material set"):
        files.load(str(tmp_path / "set.bmd"), files.ImportOptions())
    with pytest.raises(ExportError, match="name the file .bck"):
        files.kind_of("out.bmt")
    assert files.kind_of("OUT.BTP") == "btp"


def test_playback_follows_how_the_action_loops(tmp_path):
    (tmp_path / "walk.bck").write_bytes(bck_bytes())
    animation = files.load(str(tmp_path / "walk.bck"), files.ImportOptions()).animations[0]
    stored = animation.extras["loop_mode"]
    apply.set_playback(animation, looping=stored == convert.LOOP_REPEAT, mirrored=False)
    assert animation.extras["loop_mode"] == stored  # unchanged while it loops as imported
    apply.set_playback(animation, looping=True, mirrored=True)
    assert animation.extras["loop_mode"] == convert.LOOP_MIRROR
    apply.set_playback(animation, looping=False, mirrored=False)
    assert animation.extras["loop_mode"] == convert.LOOP_ONCE
    animation.frame_end = apply.MAX_FRAMES + 1
    with pytest.raises(ExportError, match="at most 32767"):
        apply.set_playback(animation, looping=False, mirrored=False)


def test_quaternion_keys_become_eulers_and_unkeyed_components_hold_the_rest():
    half_turn = np.array([[1, 0, 0, 0], [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)]])
    animation = Animation(
        "turn", [Channel("bone", "hips", "rotation_quaternion", np.array([0.0, 2.0]), half_turn, "LINEAR")]
    )
    apply.quaternions_to_eulers(animation)
    (rotation,) = animation.channels
    assert rotation.path == "rotation_euler" and rotation.times.tolist() == [0, 1, 2]
    np.testing.assert_allclose(rotation.values[:, 2], [0, np.pi / 4, np.pi / 2], atol=1e-9)
    rig = skeleton(["hips"])
    rig.rest[0, :3, 3] = (0, 0, 5)
    apply.hold_rest(animation, rig)
    held = {(c.path, c.index): c.values.ravel().tolist() for c in animation.channels[1:]}
    assert held[("location", 2)] == [5.0] and held[("scale", 0)] == [1.0]
    assert ("rotation_euler", 0) not in held  # keyed by the action
