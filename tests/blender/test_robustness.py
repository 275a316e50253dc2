"""Bad input through the operators: one error naming the file, and Blender's data as it was.

Applies that fail after they have changed existing data (a failure made to happen at their last
step, as any late error would) must leave every datablock exactly as before: the scene dump
(custom properties, node trees, actions and their assignment) and the pose-bone rotation modes,
the armature's properties and the scene's frame rate and range.
"""

import struct

import bpy
import j3d_fixtures as jf
import numpy as np
import pytest
import scene_dump
import tmrf_fixtures as tf
import toshi_fixtures as toshi_fx
from j3d_support import make_armature, material_object
from retro_models.formats import extras as codec
from retro_models.formats import scene as sc
from retro_models.formats.errors import FormatError
from retro_models.formats.tmrf import convert as tmrf_convert
from retro_models.formats.tmrf import media
from retro_models.operators.blender import build, compat, props
from retro_models.operators.blender.image import extract_image
from support import corpus_files, data_counts


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
    # The armature plays an action, so the apply keeps the scene's rate: it fails on its last action.
    built = build.build_animation

    def late(scene, animation, *args, **kwargs):
        if animation is scene.animations[-1]:
            raise FormatError("late.bin", 12, "a problem found last")
        return built(scene, animation, *args, **kwargs)

    monkeypatch.setattr(build, "build_animation", late)
    with pytest.raises(RuntimeError, match="late.bin"):
        bpy.ops.import_scene.tertius_tmrf(filepath=str(tmp_path / "animations.tani"))
    assert state() == before
    assert armature.animation_data.action == held
    assert props.get_extras(armature.data) == extras
    assert not [a for a in bpy.data.actions if a != held]
    assert not list(compat.action_fcurves(held))


# -- what reaches Blender ------------------------------------------------------------------


def toshi_files(folder, tmd: bytes, tml: bytes | None = None):
    (folder / "model.tmd").write_bytes(tmd)
    (folder / "lib.tkl").write_bytes(toshi_fx.tkl_bytes())
    (folder / "model.tml").write_bytes(toshi_fx.tml_bytes() if tml is None else tml)
    return folder / "model.tmd"


def test_non_finite_rest_matrices_are_refused_before_anything_is_made(empty_scene, tmp_path):
    data = toshi_fx.tmd_bytes()
    second = 136 + 176  # the second node (after the header's 128 bytes, 8 aux bytes, the first node)
    nan = struct.pack("<f", float("nan"))
    bad = bytearray(data)
    bad[second : second + 144] = nan * 36  # its rotation, bind and inverse bind matrices
    bad[second + 164 : second + 176] = nan * 3  # its translation
    path = toshi_files(tmp_path, bytes(bad))
    before = data_counts()
    with pytest.raises(RuntimeError) as error:
        bpy.ops.import_scene.toshi_tmd(filepath=str(path))
    message = str(error.value)
    assert "model.tmd" in message and "rest matrices" in message and "non-finite" in message, message
    assert data_counts() == before


def test_a_texture_without_texels_imports_as_a_placeholder_and_exports_the_same(empty_scene, tmp_path):
    tml = bytearray(toshi_fx.tml_bytes())
    struct.pack_into("<H", tml, 12 + 18, 0)  # the first texture 0 texels wide
    path = toshi_files(tmp_path, toshi_fx.tmd_bytes(), bytes(tml))
    assert bpy.ops.import_scene.toshi_tmd(filepath=str(path)) == {"FINISHED"}
    image = bpy.data.images["texture_1"]
    assert tuple(image.size) == (1, 1) and codec.decode(image[props.UNDECODED]) == [0, 1]
    assert extract_image(image).pixels is None and extract_image(image).width == 0
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == armature)
    bpy.context.view_layer.objects.active = armature
    (tmp_path / "out").mkdir()
    assert bpy.ops.export_scene.toshi_tmd(filepath=str(tmp_path / "out" / "model.tmd")) == {"FINISHED"}
    assert (tmp_path / "out" / "model.tml").read_bytes() == bytes(tml)


def test_an_undecodable_texture_claiming_a_large_size_gets_a_small_placeholder(empty_scene, tmp_path):
    """Found by the fuzzer: 80 bytes of TML asked for a 4096×4096 placeholder (256 MiB of floats)."""
    tml = bytearray(toshi_fx.tml_bytes())
    struct.pack_into("<2H", tml, 12 + 28 + 8 + 18, 4096, 4096)  # the second texture (format 9)
    path = toshi_files(tmp_path, toshi_fx.tmd_bytes(), bytes(tml))
    assert bpy.ops.import_scene.toshi_tmd(filepath=str(path)) == {"FINISHED"}
    image = bpy.data.images["texture_0"]
    assert tuple(image.size) == (1024, 1024) and codec.decode(image[props.UNDECODED]) == [4096, 4096]
    assert (extract_image(image).width, extract_image(image).height) == (4096, 4096)


def test_scales_that_overflow_down_the_chain_are_refused(empty_scene, tmp_path):
    """Found by the fuzzer: finite BCK scales whose product down the joints is infinite in Blender."""
    data = bytearray(jf.bck_bytes())
    bank = data.index(struct.pack(">7f", 1.0, 0.0, 1.0, 0.0, 10.0, 2.0, 0.05))
    struct.pack_into(">f", data, bank, 7e31)  # the scale every constant scale track uses
    (tmp_path / "huge.bck").write_bytes(bytes(data))
    armature = make_armature(bpy.context, 2, rotated=False)
    message = import_error(bpy.ops.import_scene.j3d_animation, tmp_path / "huge.bck")
    assert "huge.bck: animation 'huge': the poses of bone" in message and "beyond single floats" in message
    assert armature.animation_data is None or armature.animation_data.action is None


def test_a_non_finite_texture_centre_is_refused(empty_scene, tmp_path):
    """Found by the fuzzer: a BTK centre of NaN made every key of its Mapping node NaN."""
    data = bytearray(jf.btk_bytes())
    struct.pack_into(">f", data, data.index(struct.pack(">3f", 0.5, 0.5, 0.0)) + 4, float("nan"))
    (tmp_path / "centre.btk").write_bytes(bytes(data))
    material_object(bpy.context, {"mat": 2})
    message = import_error(bpy.ops.import_scene.j3d_animation, tmp_path / "centre.btk")
    assert (
        "centre.btk: animation 'centre', material 'mat' texture.1" in message and "texture centre" in message
    )
    assert bpy.data.materials["mat"].node_tree.animation_data is None


def test_non_finite_positions_and_keys_are_refused_and_normals_are_cleaned(empty_scene):
    triangle = np.eye(3, dtype=np.float32)
    skeleton = sc.Skeleton("rig", ["root"], np.array([-1], np.int32), np.eye(4)[None])
    bad_position = sc.Mesh(
        "tri", np.where(np.eye(3) > 0, np.nan, 0).astype(np.float32), np.array([[0, 1, 2]])
    )
    key = sc.Channel("bone", "root", "location", np.array([0.0, 5.0]), np.array([[0, 0, 0], [np.inf, 0, 0]]))
    flat_rest = np.array([np.eye(4), np.diag([1.0, 0.0, 1.0, 1.0])])  # a bone scaled to nothing
    huge_rest = np.array([np.eye(4), np.eye(4)])
    huge_rest[1, 0, 3] = 1e300  # finite, but not as a float
    late = sc.Channel("bone", "root", "scale", np.array([0.0, 2e6]), np.ones((2, 3)))
    cases = {
        "mesh 'tri': positions: 3 non-finite": sc.Scene("a", meshes=[bad_position]),
        "location: key values: 1 non-finite": sc.Scene(
            "b", skeletons=[skeleton], animations=[sc.Animation("walk", [key], skeleton=0)]
        ),
        "key times must be finite and within": sc.Scene(
            "c", skeletons=[skeleton], animations=[sc.Animation("walk", [late], skeleton=0)]
        ),
        "frame rate inf": sc.Scene("d", animations=[sc.Animation("walk", fps=float("inf"))]),
        "frame rate 1e-300": sc.Scene("d", animations=[sc.Animation("walk", fps=1e-300)]),
        "the rest matrix of bone 'flat' has no inverse": sc.Scene(
            "f", skeletons=[sc.Skeleton("rig", ["root", "flat"], np.array([-1, 0]), flat_rest)]
        ),
        "rest matrices: 1 non-finite": sc.Scene(
            "g", skeletons=[sc.Skeleton("rig", ["root", "flat"], np.array([-1, 0]), huge_rest)]
        ),
    }
    for problem, scene in cases.items():
        before = data_counts()
        with pytest.raises(FormatError, match=problem):
            build.build_scene(scene, bpy.context)
        assert data_counts() == before, problem
    normals = np.array([[0, 0, 1], [np.nan, 0, 1], [0, np.inf, 1]], np.float32)
    scene = sc.Scene("e", meshes=[sc.Mesh("tri", triangle, np.array([[0, 1, 2]]), sc.Layer("n", normals))])
    result = build.build_scene(scene, bpy.context)
    assert scene.warnings == ["mesh 'tri': normals 'n': 2 non-finite values set to 0"]
    assert np.isfinite(scene.meshes[0].normals.data).all() and result.objects


# -- messages ------------------------------------------------------------------------------


def import_error(operator, path) -> str:
    before = data_counts()
    with pytest.raises(RuntimeError) as error:
        operator(filepath=str(path))
    assert data_counts() == before
    return str(error.value)


def test_a_file_of_another_kind_names_the_importer_that_takes_it(empty_scene, tmp_path):
    (tmp_path / "ba.bdl").write_bytes(jf.j3d(b"J3D2", b"bdl4", [jf.pad(32)]))
    message = import_error(bpy.ops.import_scene.j3d_animation, tmp_path / "ba.bdl")
    assert "ba.bdl is a J3D model" in message and "offset" not in message, message
    (tmp_path / "model.tmd").write_bytes(toshi_fx.tmd_bytes())
    message = import_error(bpy.ops.import_scene.tertius_tmrf, tmp_path / "model.tmd")
    assert "model.tmd is a Toshi / JPOG model file: use File > Import > Toshi / JPOG model (.tmd)" in message


def test_a_corrupt_material_library_is_called_corrupt(empty_scene, tmp_path):
    path = toshi_files(tmp_path, toshi_fx.tmd_bytes(), toshi_fx.tml_bytes()[:40])
    message = import_error(bpy.ops.import_scene.toshi_tmd, path)
    assert "model.tml: at offset" in message and "the material library is corrupt" in message, message
    # Found by its materials instead of its name: a warning, and the model imports without it.
    (tmp_path / "model.tml").rename(tmp_path / "other.tml")
    from retro_models.formats.toshi import files

    scene = files.load(str(path), files.ImportOptions())
    assert "corrupt: other.tml: expected 2 × texture" in scene.warnings[0], scene.warnings


def test_a_failed_export_names_the_users_path_and_leaves_no_file(empty_scene, tmp_path, capfd):
    material_object(bpy.context, {"m1": 1, "m2": 1})
    (tmp_path / "a.brk").write_bytes(jf.brk_bytes())
    assert bpy.ops.import_scene.j3d_animation(filepath=str(tmp_path / "a.brk")) == {"FINISHED"}
    target = tmp_path / "missing" / "out.brk"
    with pytest.raises(RuntimeError) as error:
        bpy.ops.export_scene.j3d_animation(filepath=str(target))
    assert str(target) in str(error.value) and ".tmp" not in str(error.value), error.value
    assert not (tmp_path / "missing").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["a.brk"]


def test_a_btk_with_fields_past_32_bits_imports_and_exports_the_same(empty_scene, tmp_path):
    """Three Sunshine BTKs hold such values; ID properties cannot, the extras codec keeps them."""
    data = bytearray(jf.btk_bytes())
    ttk1 = data.index(b"TTK1")
    struct.pack_into(">I", data, ttk1 + 0x5C, 0xFFFFFFF0)  # the calculation type
    struct.pack_into(">2I", data, ttk1 + 0x34, 0x80000000, 0xFFFFFFFF)  # the "post" offsets
    (tmp_path / "big.btk").write_bytes(bytes(data))
    material_object(bpy.context, {"mat": 2})
    assert bpy.ops.import_scene.j3d_animation(filepath=str(tmp_path / "big.btk")) == {"FINISHED"}
    action = bpy.data.materials["mat"].node_tree.animation_data.action
    assert props.get_extras(action)["calculation"] == 0xFFFFFFF0
    assert bpy.ops.export_scene.j3d_animation(filepath=str(tmp_path / "out.btk")) == {"FINISHED"}
    assert (tmp_path / "out.btk").read_bytes() == bytes(data)


def test_keys_far_apart_add_a_bounded_number_of_slerp_frames():
    from retro_models.formats import curves

    quats = np.array([[1.0, 0, 0, 0], [0.0, 0, 0, 1]])
    for end, step in ((100.0, 1), (1e6, 62)):
        times, values, added = curves.slerp_keys(np.array([0.0, end]), quats, 0.01)
        assert len(added) <= curves.SLERP_BUDGET and np.all(np.diff(added) == step)
        assert added[0] == 1 and 0 < added[-1] < end and np.all(np.diff(times) > 0)
        np.testing.assert_allclose(values[1:-1], curves.slerp(np.array([0.0, end]), quats, added), atol=1e-12)
        kept_times, _ = curves.unslerp_keys(times, values, added)
        assert list(kept_times) == [0.0, end]


@pytest.mark.parametrize("path", corpus_files("j3d*/*.bck"), ids=lambda p: p.name)
def test_real_joint_animations_pass_the_pose_bound(empty_scene, path):
    """Deep chains of real joints (58 in dead.bck) stay far inside the bound on their poses."""
    from retro_models.formats.j3d import bck

    make_armature(bpy.context, bck.read(path.read_bytes(), str(path)).joint_count, rotated=False)
    assert bpy.ops.import_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
