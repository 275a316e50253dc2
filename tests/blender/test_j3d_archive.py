"""J3D models opened from archives and compressed files, with the animations that belong to them:
one collection per model, each animation the action the J3D animation import makes, and bad
archives leaving nothing behind."""

import shutil

import bpy
import numpy as np
import pytest
import retro_models
import support
from j3d_model_fixtures import generated_bytes
from retro_models.formats import archives
from retro_models.formats.archives import compression, u8
from retro_models.formats.errors import FormatError
from retro_models.operators.blender import compat


def _curves(action):
    """Every F-curve of an action as (path, index) → keys and handles, for comparing actions."""
    found = {}
    for fcurve in compat.action_fcurves(action):
        n = len(fcurve.keyframe_points)
        found[fcurve.data_path, fcurve.array_index] = np.concatenate(
            [
                compat.read_array(fcurve.keyframe_points, f, n, 2)
                for f in ("co", "handle_left", "handle_right")
            ]
        )
    return found


def _armature():
    return next(o for o in bpy.data.objects if o.type == "ARMATURE")


@pytest.mark.corpus
def test_a_bck_beside_the_model_is_the_action_the_j3d_import_makes(empty_scene, tmp_path):
    for name in ("ba.bdl", "wait01.bck"):
        shutil.copy(support.corpus_file(f"j3d-models/{name}"), tmp_path / name)
    assert bpy.ops.import_scene.j3d_model(filepath=str(tmp_path / "ba.bdl")) == {"FINISHED"}
    (loaded,) = bpy.data.actions
    assert _armature().animation_data.action == loaded
    with_model = _curves(loaded)

    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.import_scene.j3d_model(filepath=str(tmp_path / "ba.bdl"), import_animations=False) == {
        "FINISHED"
    }
    assert not bpy.data.actions
    armature = _armature()
    bpy.context.view_layer.objects.active = armature
    armature.select_set(True)
    assert bpy.ops.import_scene.j3d_animation(filepath=str(tmp_path / "wait01.bck")) == {"FINISHED"}
    afterwards = _curves(bpy.data.actions[0])
    assert with_model.keys() == afterwards.keys() and len(with_model) > 10
    for key, values in with_model.items():
        np.testing.assert_array_equal(values, afterwards[key], err_msg=str(key))


def _mario_members(bck_count):
    """ma_mdl1 and ma_cap1 with the first BCKs of SunshineMario.arc's bck/ folder, as the game lays them out."""
    archive = archives.read_archive(support.corpus_file("j3d-models/SunshineMario.arc").read_bytes())
    bcks = sorted(m.path for m in archive.members() if m.path.startswith("bck/"))[:bck_count]
    return {path: archive.find(path).data for path in ["bmd/ma_mdl1.bmd", "bmd/ma_cap1.bmd", *bcks]}


@pytest.mark.corpus
def test_every_model_of_an_archive_gets_its_collection_and_its_bcks(empty_scene, tmp_path):
    members = _mario_members(3)
    path = tmp_path / "mario.arc"
    path.write_bytes(u8.build(members))
    report = retro_models.import_file(bpy.context, str(path))
    assert {c.name for c in bpy.context.scene.collection.children} == {"ma_mdl1", "ma_cap1"}
    armatures = {o.users_collection[0].name: o for o in bpy.data.objects if o.type == "ARMATURE"}
    mario = armatures["ma_mdl1"]
    names = sorted(a.name for a in bpy.data.actions)
    assert [n.split(".")[0] for n in names] == sorted(p[4:-4] for p in members if p.startswith("bck/"))
    assert report.counts["actions"] == 3
    assert mario.animation_data.action is not None
    assert armatures["ma_cap1"].animation_data is None  # the BCKs have ma_mdl1's joint count, not its


@pytest.mark.corpus
def test_the_model_option_picks_one_model_of_a_compressed_archive(empty_scene, tmp_path):
    path = tmp_path / "mario.szs"
    path.write_bytes(
        compression.compress(u8.build({"bmd/ma_cap1.bmd": _mario_members(0)["bmd/ma_cap1.bmd"]}))
    )
    other = {k: v for k, v in _mario_members(0).items()}
    (tmp_path / "both.arc").write_bytes(u8.build(other))
    assert bpy.ops.import_scene.j3d_model(filepath=str(tmp_path / "both.arc"), model="bmd/MA_CAP1.bmd") == {
        "FINISHED"
    }
    assert [c.name for c in bpy.context.scene.collection.children] == ["ma_cap1"]
    assert bpy.ops.import_scene.j3d_model(filepath=str(path)) == {"FINISHED"}
    assert len([o for o in bpy.data.objects if o.type == "ARMATURE"]) == 2


def test_a_compressed_model_imports_as_the_model(empty_scene, tmp_path):
    path = tmp_path / "model.szs"
    path.write_bytes(compression.compress(generated_bytes()))
    report = retro_models.import_file(bpy.context, str(path))
    assert report.counts["armatures"] == 1 and report.counts["meshes"] >= 1
    assert [c.name for c in bpy.context.scene.collection.children] == ["model"]


@pytest.mark.parametrize(
    "broken, member",
    [
        (lambda good: good[: len(good) // 2], "mario.arc"),  # the archive cut short
        (
            lambda good: u8.build(
                {"bmd/fine.bmd": generated_bytes(), "bmd/cut.bmd": generated_bytes()[:300]}
            ),
            "cut",
        ),
        (
            lambda good: u8.build({"bmd/fine.bmd": generated_bytes(), "bck/cut.bck": b"J3D1bck1" + bytes(8)}),
            "cut",
        ),
    ],
    ids=["truncated archive", "truncated model member", "corrupt animation member"],
)
def test_a_bad_archive_or_member_is_one_format_error_and_leaves_nothing(
    empty_scene, tmp_path, broken, member
):
    good = u8.build({"bmd/fine.bmd": generated_bytes()})
    path = tmp_path / "mario.arc"
    path.write_bytes(broken(good))
    before = support.data_counts()
    with pytest.raises(FormatError) as caught:
        retro_models.import_file(bpy.context, str(path))
    assert str(path) in caught.value.filename
    if member == "cut":
        assert caught.value.filename.startswith(f"{path}/b") and "/cut." in caught.value.filename
    assert caught.value.problem
    assert support.data_counts() == before
    with pytest.raises(RuntimeError, match=str(path)):  # the operator's error report
        bpy.ops.import_scene.j3d_model(filepath=str(path))
    assert support.data_counts() == before


def _switches(material):
    """Per switched texture slot: index value → the image it shows, and the value nodes driving the switch."""
    from retro_models.operators.blender import props

    tree = material.node_tree
    found = {}
    for node in tree.nodes:
        if props.SWITCHED_IMAGE in node:
            slot = node.label.split(".")[1]
            found.setdefault(slot, {})[node[props.SWITCHED_IMAGE]] = node.image.name
    drivers = sorted(n.name for n in tree.nodes if n.type == "VALUE" and n.name.startswith("Image Index"))
    return found, drivers


@pytest.mark.corpus
def test_paired_texture_patterns_switch_the_images_they_show_once(empty_scene, tmp_path):
    archive = archives.read_archive(support.corpus_file("j3d-models/SunshineMario.arc").read_bytes())
    patterns = ["btp/ma_die_tx.btp", "btp/ma_sit_tx.btp", "btp/ma_bdwn_tx.btp"]  # 9; 3 6 7 8; 3 6 7 8 9
    members = {p: archive.find(p).data for p in ["bmd/ma_mdl1.bmd", *patterns]}
    (tmp_path / "mario.arc").write_bytes(u8.build(members))
    retro_models.import_file(bpy.context, str(tmp_path / "mario.arc"))
    eyes = sorted(m.name for m in bpy.data.materials if "eye" in m.name)
    with_model = {name: _switches(bpy.data.materials[name]) for name in eyes}
    actions = {a.name: _curves(a) for a in bpy.data.actions}
    # Each switch shows the images the patterns use, once, behind one driven value.
    assert {name: {s: sorted(v) for s, v in switch.items()} for name, (switch, _) in with_model.items()} == {
        name: {"0": [3, 6, 7, 8, 9]} for name in eyes
    }
    assert all(drivers == ["Image Index 0"] for _, drivers in with_model.values())

    bpy.ops.wm.read_factory_settings(use_empty=True)
    (tmp_path / "ma_mdl1.bmd").write_bytes(members["bmd/ma_mdl1.bmd"])
    retro_models.import_file(bpy.context, str(tmp_path / "ma_mdl1.bmd"), import_animations=False)
    for path in patterns:  # the J3D animation import, one file after the other, on every material
        (tmp_path / path[4:]).write_bytes(members[path])
        assert bpy.ops.import_scene.j3d_animation(filepath=str(tmp_path / path[4:])) == {"FINISHED"}
    assert {name: _switches(bpy.data.materials[name]) for name in eyes} == with_model
    afterwards = {a.name: _curves(a) for a in bpy.data.actions}
    assert afterwards.keys() == actions.keys() and len(actions) == 2 * len(patterns)
    for name, curves in actions.items():
        assert curves.keys() == afterwards[name].keys()
        for key, values in curves.items():
            np.testing.assert_array_equal(values, afterwards[name][key], err_msg=f"{name} {key}")
