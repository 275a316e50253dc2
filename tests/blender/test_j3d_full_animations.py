"""BCA, BVA, BLA and BLK applied in Blender and exported back: joint actions (BCA, like a BCK),
animated hide flags on a model's shapes (BVA), shape-key weights (BLA, BLK); unedited exports give
the same bytes, edits re-encode only the edited track, bad input changes nothing."""

import dataclasses

import bpy
import numpy as np
import pytest
import retro_models
from j3d_fixtures import bca_bytes, bla_bytes, blk_bytes, bva_bytes
from j3d_model_fixtures import generated_bytes
from j3d_support import make_armature, material_object, shape_objects
from retro_models.formats.j3d import bca, bva, cluster, convert
from retro_models.formats.j3d.container import track_keys
from retro_models.formats.scene import Animation, Channel, Scene
from retro_models.operators.blender import compat
from support import data_counts


def write(tmp_path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def export(tmp_path, name: str) -> bytes:
    out = tmp_path / name
    assert bpy.ops.export_scene.j3d_animation(filepath=str(out)) == {"FINISHED"}
    return out.read_bytes()


@pytest.mark.parametrize("rotated", [False, True], ids=["keys-kept", "baked"])
def test_bca_plays_its_frames_and_exports_the_same_bytes(empty_scene, tmp_path, rotated):
    armature = make_armature(bpy.context, 2, rotated)
    assert bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, "walk.bca", bca_bytes())) == {
        "FINISHED"
    }
    assert armature.animation_data.action is not None
    if not rotated:
        bone = armature.pose.bones["joint0"]
        for frame, (scale, degrees) in enumerate([(1.0, 0.0), (1.5, 45.0), (2.0, 90.0)]):
            bpy.context.scene.frame_set(frame)
            assert bone.scale[0] == pytest.approx(scale)
            assert np.degrees(bone.rotation_euler[2]) == pytest.approx(degrees, abs=1e-3)
    assert export(tmp_path, "out.bca") == bca_bytes()


def test_bca_edit_changes_only_that_track(empty_scene, tmp_path):
    armature = make_armature(bpy.context, 2, rotated=False)
    bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, "walk.bca", bca_bytes()))
    fcurves = compat.action_fcurves(armature.animation_data.action)
    fcurve = next(
        fc for fc in fcurves if fc.data_path == 'pose.bones["joint1"].location' and fc.array_index == 1
    )
    fcurve.keyframe_points[1].co.y += 2.0  # the pose is relative to the rest: −3.5 becomes −1.5
    original, edited = bca.read(bca_bytes()), bca.read(export(tmp_path, "edited.bca"))
    changed = np.argwhere(original.tracks != edited.tracks)
    assert changed.tolist() == [[1, 1, 2]]  # joint 1, Y, translation
    count, first = edited.tracks[1, 1, 2]
    assert edited.translation_bank[first : first + count].tolist() == pytest.approx([5.0, -1.5])
    assert edited.translation_bank[:3].tolist() == original.translation_bank.tolist()
    assert edited.scale_bank.tolist() == original.scale_bank.tolist()


def test_bva_hides_shapes_at_their_frames_and_exports_the_same_bytes(empty_scene, tmp_path):
    shapes = shape_objects(bpy.context, 3)
    assert bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, "blink.bva", bva_bytes())) == {
        "FINISHED"
    }
    expected = {0: [0, 0, 1, 0], 1: [1, 1, 1, 1], 2: [0, 1, 0, 0]}  # hidden per frame
    for frame in range(4):
        bpy.context.scene.frame_set(frame)
        for shape, hidden in expected.items():
            assert shapes[shape].hide_viewport == bool(hidden[frame]), (shape, frame)
            assert shapes[shape].hide_render == bool(hidden[frame])
    curve = compat.action_fcurves(shapes[0].animation_data.action)[0]
    assert {k.interpolation for k in curve.keyframe_points} == {"CONSTANT"}
    bpy.context.view_layer.objects.active = shapes[2]  # any shape of the animation exports it
    assert export(tmp_path, "out.bva") == bva_bytes()


def test_bva_edit_changes_only_that_shape(empty_scene, tmp_path):
    shapes = shape_objects(bpy.context, 3)
    bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, "blink.bva", bva_bytes()))
    curve = next(
        fc for fc in compat.action_fcurves(shapes[1].animation_data.action) if fc.data_path == "hide_viewport"
    )
    curve.keyframe_points.insert(3, 0.0).interpolation = "CONSTANT"  # shape 1 shown from frame 3
    original, edited = bva.read(bva_bytes()), bva.read(export(tmp_path, "edited.bva"))
    assert [tuple(t) for t in edited.tracks[[0, 2]]] == [tuple(t) for t in original.tracks[[0, 2]]]
    count, first = edited.tracks[1]
    assert edited.values[first : first + count].tolist() == [0, 0, 0, 1]
    assert edited.values[:5].tolist() == original.values.tolist()


def test_generated_model_shape_hidden_at_a_frame(empty_scene, tmp_path):
    """The J3D model import's shapes, and a BVA made from a scene that hides shape0 from frame 4."""
    model_path = write(tmp_path, "model.bmd", generated_bytes())
    retro_models.import_file(bpy.context, model_path, import_animations=False)
    shape = next(o for o in bpy.data.objects if o.name.startswith("shape0"))
    hide = Channel("object", "shape0", "hide", np.array([0.0, 4.0]), np.array([[0.0], [1.0]]), "CONSTANT")
    file = bva.write(convert.from_scene(Scene(animations=[Animation("hide", [hide], frame_end=6.0)])))
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == armature)  # the model, by its armature
    bpy.context.view_layer.objects.active = armature
    assert bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, "hide.bva", file)) == {"FINISHED"}
    bpy.context.scene.frame_set(3)
    assert not shape.hide_viewport
    bpy.context.scene.frame_set(4)
    assert shape.hide_viewport and shape.hide_render


def test_bva_without_the_shapes_is_an_error_and_changes_nothing(empty_scene, tmp_path):
    material_object(bpy.context, {"m": 1})  # an object not named shape<index>
    before = data_counts()
    with pytest.raises(RuntimeError, match="shape0"):
        bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, "blink.bva", bva_bytes()))
    assert data_counts() == before


@pytest.mark.parametrize("name, build", [("grow.bla", bla_bytes), ("grow.blk", blk_bytes)])
def test_cluster_weights_drive_shape_keys_and_export_the_same_bytes(empty_scene, tmp_path, name, build):
    material_object(bpy.context, {"m": 1})
    mesh = bpy.context.active_object
    assert mesh.data.shape_keys is None
    assert bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, name, build())) == {"FINISHED"}
    blocks = mesh.data.shape_keys.key_blocks
    assert list(blocks.keys()) == ["Basis", "cluster0", "cluster1"]
    model = cluster.read_kind(build(), name, name[-3:].encode() + b"1")
    scene = convert.to_scene(model)
    for frame in (0, 1, 2, 5):
        bpy.context.scene.frame_set(frame)
        for c in scene.animations[0].channels:
            from retro_models.formats.curves import sample

            expected = sample(c.times, c.values, c.interpolation, c.handles_left, c.handles_right, [frame])[
                0, 0
            ]
            assert blocks[c.path].value == pytest.approx(expected, abs=1e-5), (c.path, frame)
    assert export(tmp_path, "out" + name[-4:]) == build()


def test_cluster_weights_beyond_one_play_unclamped(empty_scene, tmp_path):
    """Shape-key sliders clamp the weight: the keys the apply adds reach the weights the file holds."""
    weight = Channel(
        "shape_key", convert.CLUSTER_TARGET, "cluster0", np.array([0.0, 4.0]), np.array([[-0.5], [2.5]])
    )
    file = cluster.write(
        convert.from_scene(
            Scene(animations=[Animation("big", [weight], frame_end=4.0, extras={"j3d_type": "bla"})])
        )
    )
    material_object(bpy.context, {"m": 1})
    mesh = bpy.context.active_object
    bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, "big.bla", file))
    block = mesh.data.shape_keys.key_blocks["cluster0"]
    for frame, expected in ((0, -0.5), (4, 2.5)):
        bpy.context.scene.frame_set(frame)
        assert block.value == pytest.approx(expected)


def test_a_failed_cluster_apply_removes_the_shape_keys_it_added(empty_scene, tmp_path, monkeypatch):
    from retro_models.operators import j3d

    material_object(bpy.context, {"m": 1})
    mesh = bpy.context.active_object

    def fail(*args, **kwargs):
        raise RuntimeError("build failed")

    monkeypatch.setattr(j3d, "_add_animation", fail)
    with pytest.raises(RuntimeError, match="build failed"):
        bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, "grow.bla", bla_bytes()))
    assert mesh.data.shape_keys is None


def test_cluster_edit_changes_only_that_cluster(empty_scene, tmp_path):
    material_object(bpy.context, {"m": 1})
    mesh = bpy.context.active_object
    bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, "grow.bla", bla_bytes()))
    curve = next(
        fc
        for fc in compat.action_fcurves(mesh.data.shape_keys.animation_data.action)
        if "cluster1" in fc.data_path
    )
    curve.keyframe_points[0].co.y = 0.75
    original, edited = cluster.bla.read(bla_bytes()), cluster.bla.read(export(tmp_path, "edited.bla"))
    assert tuple(edited.tracks[0]) == tuple(original.tracks[0])
    count, first = edited.tracks[1]
    assert edited.weights[first : first + count].tolist() == [0.75]
    assert edited.weights[:4].tolist() == original.weights.tolist()


def test_file_handler_and_export_take_the_new_kinds(addon):
    handler = bpy.types.FileHandler.bl_rna_get_subclass_py("IO_FH_retro_j3d_animation")
    for extension in (".bca", ".bva", ".bla", ".blk"):
        assert extension in handler.bl_file_extensions


def test_a_bca_exports_as_a_bck_and_back(empty_scene, tmp_path):
    """The same joint action written as keys (BCK) or a value per frame (BCA): the same pose at every frame."""
    from retro_models.formats.j3d import bck, evaluate

    make_armature(bpy.context, 2, rotated=False)
    bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, "walk.bca", bca_bytes()))
    as_bck = bck.read(export(tmp_path, "walk.bck"))
    played = evaluate.evaluate_bck(as_bck, np.arange(3))
    assert played["rotation"][:, 0, 2] == pytest.approx([0, 45, 90], abs=1e-3)
    assert played["translation"][:, 1, 1] == pytest.approx([5.0, -3.5, -3.5], abs=1e-4)
    again = bca.read(export(tmp_path, "again.bca"))
    count, first = again.tracks[0, 2, 1]
    assert again.rotation_bank[first : first + count].tolist() == [0, 8192, 16384]


def test_a_model_imports_with_the_bca_and_bva_beside_it(empty_scene, tmp_path):
    """Paired by folder as the game pairs them: a BCA with the model's joint count goes onto its armature,
    a BVA with its shape count onto its shapes; a BVA for another model and a BLA are left out."""
    from j3d_model_fixtures import generated
    from retro_models.formats.j3d.bca import FULL_DTYPE

    built, _ = generated()
    shapes, joints = len(built.shp1.remap), len(built.jnt1.remap)
    (tmp_path / "gen.bmd").write_bytes(generated_bytes())
    hide = Channel("object", "shape0", "hide", np.array([0.0, 2.0]), np.array([[0.0], [1.0]]), "CONSTANT")
    shown = [
        Channel("object", f"shape{i}", "hide", np.zeros(1), np.zeros((1, 1)), "CONSTANT")
        for i in range(1, shapes)
    ]
    visibility = Scene(animations=[Animation("blink", [hide, *shown], frame_end=3.0)])
    (tmp_path / "blink.bva").write_bytes(bva.write(convert.from_scene(visibility)))
    other = Scene(
        animations=[
            Animation("other", [hide, *shown, dataclasses.replace(hide, target="shape99")], frame_end=3.0)
        ]
    )
    (tmp_path / "other.bva").write_bytes(bva.write(convert.from_scene(other)))
    tracks = np.zeros((joints, 3, 3), FULL_DTYPE)
    tracks["count"] = 1
    still = bca.BCA(0, 1, tracks, np.ones(1, np.float32), np.zeros(1, np.int16), np.zeros(1, np.float32))
    (tmp_path / "still.bca").write_bytes(bca.write(still))
    (tmp_path / "grow.bla").write_bytes(bla_bytes())
    report = retro_models.import_file(bpy.context, str(tmp_path / "gen.bmd"))
    names = sorted(a.name for a in bpy.data.actions)
    assert any(n.startswith("still") for n in names) and any(n.startswith("blink") for n in names)
    assert not any(n.startswith(("other", "grow")) for n in names), names
    shape = next(o for o in bpy.data.objects if o.name.startswith("shape0"))
    bpy.context.scene.frame_set(2)
    assert shape.hide_viewport
    assert report.counts["actions"] >= 2


@pytest.mark.corpus
def test_a_bva_and_bca_on_a_real_model(empty_scene, tmp_path):
    """ba.bdl as the model import makes it: a BVA for its shapes, applied with the model's armature
    selected, hides its second shape from frame 2 and exports back unchanged."""
    from support import corpus_file

    path = corpus_file("j3d-models/ba.bdl")
    retro_models.import_file(bpy.context, str(path), import_animations=False)
    meshes = {o.name: o for o in bpy.data.objects if o.type == "MESH"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    hide = Channel("object", "shape1", "hide", np.array([0.0, 2.0]), np.array([[0.0], [1.0]]), "CONSTANT")
    shown = [
        Channel("object", name, "hide", np.zeros(1), np.zeros((1, 1)), "CONSTANT")
        for name in meshes
        if name != "shape1"
    ]
    scene = Scene(animations=[Animation("hide", [hide, *shown], frame_end=3.0)])
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == armature)
    bpy.context.view_layer.objects.active = armature
    file = write(tmp_path, "hide.bva", bva.write(convert.from_scene(scene)))
    assert bpy.ops.import_scene.j3d_animation(filepath=file) == {"FINISHED"}
    bpy.context.scene.frame_set(1)
    assert not meshes["shape1"].hide_viewport
    bpy.context.scene.frame_set(2)
    assert meshes["shape1"].hide_viewport and not meshes["shape0"].hide_viewport
    bpy.context.view_layer.objects.active = meshes["shape0"]
    assert export(tmp_path, "out.bva") == (tmp_path / "hide.bva").read_bytes()


def test_visibility_keyed_in_blender_exports_a_bva(empty_scene, tmp_path):
    """Hide in Viewport keyed on one shape of three: every selected shape gets a track, the others shown."""
    shapes = shape_objects(bpy.context, 3)
    shapes[1].hide_viewport = False
    shapes[1].keyframe_insert("hide_viewport", frame=0)
    shapes[1].hide_viewport = True
    shapes[1].keyframe_insert("hide_viewport", frame=3)
    bpy.context.view_layer.objects.active = shapes[1]
    model = bva.read(export(tmp_path, "made.bva"))
    shown = [model.values[t["first"] : t["first"] + t["count"]].tolist() for t in model.tracks]
    assert shown == [[1], [1, 1, 1, 0], [1]]


def test_cluster_weights_keyed_in_blender_export_a_blk_and_a_bla(empty_scene, tmp_path):
    material_object(bpy.context, {"m": 1})
    mesh = bpy.context.active_object
    mesh.shape_key_add(name="Basis")
    block = mesh.shape_key_add(name="cluster1")
    for frame, value in ((0, 0.0), (10, 1.0)):
        block.value = value
        block.keyframe_insert("value", frame=frame)
    keyed = cluster.blk.read(export(tmp_path, "made.blk"))
    assert len(keyed.tracks) == 2 and keyed.tracks[0]["count"] == 0  # cluster0: weight 1
    keys = track_keys(keyed.tracks[1], keyed.weights)
    assert keys.times.tolist() == [0, 10] and keys.values.tolist() == [0, 1]
    frames = cluster.bla.read(export(tmp_path, "made.bla"))
    count, first = frames.tracks[0]
    assert frames.weights[first : first + count].tolist() == [1.0]  # cluster0: weight 1
    count, first = frames.tracks[1]
    weights = frames.weights[first : first + count]
    assert count == 11 and weights[0] == 0 and weights[-1] == 1 and (np.diff(weights) >= 0).all()


def test_the_export_lists_the_visibility_animation_of_the_active_shape(empty_scene, tmp_path):
    from retro_models.operators import j3d

    shapes = shape_objects(bpy.context, 3)
    bpy.ops.import_scene.j3d_animation(filepath=write(tmp_path, "blink.bva", bva_bytes()))
    bpy.context.view_layer.objects.active = shapes[2]
    items = j3d.animation_items(None, bpy.context)
    (group, label, _) = next(item for item in items if item[1].endswith("(BVA)"))
    assert label == "blink (BVA)"
    shapes[0].animation_data.action = None  # no longer playing: chosen by name instead
    out = tmp_path / "chosen.bva"
    assert bpy.ops.export_scene.j3d_animation(filepath=str(out), animation=group) == {"FINISHED"}
    assert out.read_bytes() == bva_bytes()


def test_a_bva_exports_into_the_archive_member_it_came_from(empty_scene, tmp_path):
    """A model and its BVA in a U8 archive: imported together (another model's BVA left out), the BVA
    edited and written back into its member, every other member unchanged."""
    from j3d_model_fixtures import generated
    from retro_models.formats import archives
    from retro_models.formats.archives import u8

    shapes = len(generated()[0].shp1.remap)

    def visibility(count: int) -> bytes:
        hide = [
            Channel(
                "object",
                f"shape{i}",
                "hide",
                np.array([0.0, 2.0]),
                np.array([[0.0], [float(i == 0)]]),
                "CONSTANT",
            )
            for i in range(count)
        ]
        return bva.write(convert.from_scene(Scene(animations=[Animation("blink", hide, frame_end=3.0)])))

    blink, other = visibility(shapes), visibility(shapes + 1)
    path = tmp_path / "model.arc"
    path.write_bytes(
        u8.build({"bmd/gen.bmd": generated_bytes(), "bva/blink.bva": blink, "bva/other.bva": other})
    )
    assert bpy.ops.import_scene.j3d_model(filepath=str(path)) == {"FINISHED"}
    assert not any(a.name.startswith("other") for a in bpy.data.actions)
    shape = next(o for o in bpy.data.objects if o.name.startswith("shape0"))
    bpy.context.scene.frame_set(2)
    assert shape.hide_viewport
    bpy.context.view_layer.objects.active = shape
    assert bpy.ops.export_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    members = {m.path: m.data for m in archives.read_archive(path.read_bytes()).members()}
    assert members["bva/blink.bva"] == blink  # unedited: the same bytes
    curve = next(
        fc for fc in compat.action_fcurves(shape.animation_data.action) if fc.data_path == "hide_viewport"
    )
    curve.keyframe_points[-1].co.x = 1.0  # hidden from frame 1
    assert bpy.ops.export_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    members = {m.path: m.data for m in archives.read_archive(path.read_bytes()).members()}
    edited = bva.read(members["bva/blink.bva"])
    count, first = edited.tracks[0]
    assert edited.values[first : first + count].tolist() == [1, 0]
    assert members["bmd/gen.bmd"] == generated_bytes() and members["bva/other.bva"] == other


def test_an_action_keyed_in_blender_exports_a_bca_that_plays_it(empty_scene, tmp_path):
    """Keys on a rotated-rest armature, written a value per frame: the game's pose at every frame is
    Blender's (within a 16-bit rotation step)."""
    from j3d_support import blender_local

    armature = make_armature(bpy.context, 2, rotated=True)
    bones = armature.pose.bones
    for frame, angle, offset in ((0, 0.0, 0.0), (6, 0.8, 0.5), (12, -0.4, 0.2)):
        bones["joint0"].location = (offset, 0, -offset)
        bones["joint0"].keyframe_insert("location", frame=frame)
        bones["joint1"].rotation_quaternion = (np.cos(angle / 2), 0, np.sin(angle / 2), 0)
        bones["joint1"].keyframe_insert("rotation_quaternion", frame=frame)
    model = bca.read(export(tmp_path, "new.bca"))
    assert (model.joint_count, model.length) == (2, 12)
    assert model.tracks["count"].max() == 13  # a value at each frame 0…12
    frames = np.arange(13)
    found = blender_local(bpy.context, armature, ["joint0", "joint1"], frames)
    values = {}
    for component, name in enumerate(("scale", "rotation", "translation")):
        counts, firsts = model.tracks["count"][..., component], model.tracks["first"][..., component]
        bank = model.banks()[component].astype(np.float64)
        index = firsts[None] + np.minimum(frames[:, None, None], counts[None] - 1)
        values[name] = bank[index] * (180 / 32768 if component == 1 else 1.0)
    from retro_models.formats.curves import euler_to_matrix

    rotation = euler_to_matrix(np.radians(values["rotation"]).reshape(-1, 3)).reshape(13, 2, 3, 3)
    assert np.abs(found[..., :3, 3] - values["translation"]).max() < 1e-4
    scale = np.linalg.norm(found[..., :3, :3], axis=-2)
    assert np.abs(scale - values["scale"]).max() < 1e-4
    assert np.abs(found[..., :3, :3] / scale[..., None, :] - rotation).max() < 2 * np.pi / 32768
