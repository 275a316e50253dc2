"""The Toshi operators as a user runs them: reports, failures, library look-ups, reloading a TKL, batch runs."""

import os
import subprocess
import sys

import bpy
import numpy as np
import pytest
from demo_creature import demo_files
from support import data_counts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def demo_dir(tmp_path):
    for name, data in demo_files().items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


def test_bad_files_report_and_leave_the_scene_unchanged(empty_scene, demo_dir):
    bpy.ops.import_scene.toshi_tmd(filepath=str(demo_dir / "demo.tmd"))
    before = data_counts()
    data = (demo_dir / "demo.tmd").read_bytes()
    cases = {
        "truncated.tmd": data[: len(data) // 2],
        "wrong_magic.tmd": b"NOPE" + data[4:],
        "empty.tmd": b"",
        # The TKL is found and read after the model: a broken library must roll back too.
        "demo_broken.tmd": data,
    }
    for name, payload in cases.items():
        (demo_dir / name).write_bytes(payload)
    (demo_dir / "broken.tkl").write_bytes(b"TPKL\0\0\0\0\xff\xff")
    for name in cases:
        tkl = (
            {"tkl_mode": "FILE", "tkl_file": str(demo_dir / "broken.tkl")}
            if name == "demo_broken.tmd"
            else {}
        )
        with pytest.raises(RuntimeError) as error:
            bpy.ops.import_scene.toshi_tmd(filepath=str(demo_dir / name), **tkl)
        message = str(error.value)
        assert "offset" in message and (name in message or "broken.tkl" in message), message
        assert data_counts() == before, name


def test_multi_file_import_keeps_going_after_a_bad_file(empty_scene, demo_dir):
    (demo_dir / "bad.tmd").write_bytes(b"TMDL\0\0\0\0")
    (demo_dir / "copy.tmd").write_bytes((demo_dir / "demo.tmd").read_bytes())
    files = [{"name": "demo.tmd"}, {"name": "bad.tmd"}, {"name": "copy.tmd"}]
    with pytest.raises(RuntimeError, match="bad.tmd"):
        bpy.ops.import_scene.toshi_tmd(directory=str(demo_dir), files=files)
    armatures = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    assert len(armatures) == 2
    assert {c.name for c in bpy.context.scene.collection.children} == {"demo", "copy"}


def test_missing_libraries_are_warnings(empty_scene, demo_dir):
    import retro_models

    os.remove(demo_dir / "demo.tkl")
    os.remove(demo_dir / "demo.tml")
    report = retro_models.import_file(bpy.context, str(demo_dir / "demo.tmd"))
    assert any("keyframe library" in w and "not found" in w for w in report.warnings)
    assert any(".tml" in w for w in report.warnings)
    assert bpy.ops.import_scene.toshi_tmd(filepath=str(demo_dir / "demo.tmd")) == {"FINISHED"}
    assert not bpy.data.images


def test_formats_only_values_are_kept_as_custom_properties(empty_scene, demo_dir):
    bpy.ops.import_scene.toshi_tmd(filepath=str(demo_dir / "demo.tmd"))
    from retro_models.operators.blender import props

    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    record = props.import_record([armature])
    header = props.get_extras(record)
    for key in ("salt", "unknown", "tkl_field", "node_flags", "animation_flags", "tkl", "tml", "tkl_library"):
        assert key in header, key
    assert props.source_file([armature]) == str(demo_dir / "demo.tmd")
    assert all("name_field" in props.get_extras(b) for b in armature.data.bones)
    actions = [a for a in bpy.data.actions if props.EXTRAS in a]
    assert actions and all({"a", "b", "c", "channel_flags"} <= set(props.get_extras(a)) for a in actions)


def test_loading_another_keyframe_library_replaces_the_actions(empty_scene, demo_dir):
    bpy.ops.import_scene.toshi_tmd(filepath=str(demo_dir / "demo.tmd"))
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = armature
    names = sorted(a.name for a in bpy.data.actions)

    from retro_models.formats.toshi import tkl

    library = tkl.read((demo_dir / "demo.tkl").read_bytes())
    library.positions = library.positions * 2  # the same table, every position doubled
    (demo_dir / "doubled.tkl").write_bytes(tkl.write(library))
    assert bpy.ops.retro_models.toshi_load_tkl(filepath=str(demo_dir / "doubled.tkl")) == {"FINISHED"}
    assert sorted(a.name for a in bpy.data.actions) == names  # replaced, not added

    from retro_models.operators.blender import props
    from retro_models.operators.blender.compat import action_fcurves

    assert props.get_extras(armature.data)["tkl_file"] == str(demo_dir / "doubled.tkl")
    doubled = [
        fc.keyframe_points[0].co[1]
        for a in bpy.data.actions
        for fc in action_fcurves(a)
        if fc.data_path.endswith(".location")
    ]
    assert doubled, "the demo creature animates locations"
    out = demo_dir / "out"
    out.mkdir()
    bpy.ops.export_scene.toshi_tmd(filepath=str(out / "demo.tmd"))
    # Export appends to the library it was last loaded from: the doubled one, unchanged.
    written = tkl.read((out / "demo.tkl").read_bytes())
    assert (written.positions == library.positions).all()


def test_file_handler_accepts_tmd_drops(addon):
    handler = bpy.types.FileHandler.bl_rna_get_subclass_py("IO_FH_retro_toshi_tmd")
    assert handler.bl_import_operator == "import_scene.toshi_tmd"
    assert handler.bl_export_operator == "export_scene.toshi_tmd"
    assert ".tmd" in handler.bl_file_extensions


def test_batch_import_command(tmp_path, demo_dir):
    (demo_dir / "bad.tmd").write_bytes(b"junk")
    script = os.path.join(ROOT, "tools", "batch_import.py")
    ok = subprocess.run(
        [sys.executable, script, "--out", str(tmp_path / "all.blend"), str(demo_dir / "demo*.tmd")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert "demo.tmd: 1 armature," in ok.stdout and (tmp_path / "all.blend").exists()
    failed = subprocess.run(
        [sys.executable, script, "--out-dir", str(tmp_path / "each"), str(demo_dir / "*.tmd")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode == 1
    assert "FAILED" in failed.stdout and "bad.tmd" in failed.stdout
    assert os.listdir(tmp_path / "each") == ["demo.blend"]


def test_switching_animations_starts_from_the_rest_pose(empty_scene, demo_dir):
    """Bones an animation does not key stay at rest, as in the game, not where the last animation left them."""
    from retro_models.operators.blender import props
    from retro_models.operators.blender.compat import action_fcurves

    bpy.ops.import_scene.toshi_tmd(filepath=str(demo_dir / "demo.tmd"))
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = armature
    walk, idle = props.to_python(armature.data[props.ANIMATIONS])
    assert bpy.ops.retro_models.use_animation(group=walk) == {"FINISHED"}
    bpy.context.scene.frame_set(7)
    assert bpy.ops.retro_models.use_animation(group=idle) == {"FINISHED"}
    bpy.context.scene.frame_set(7)
    keyed = {fc.data_path.split('"')[1] for fc in action_fcurves(armature.animation_data.action)}
    still = [b for b in armature.pose.bones if b.name not in keyed]
    assert still and len(still) < len(armature.pose.bones)
    for bone in still:
        assert np.allclose(np.array(bone.matrix_basis), np.eye(4), atol=1e-6), bone.name


def test_reloading_a_library_uses_the_import_axis(empty_scene, demo_dir):
    from retro_models.operators.blender.compat import action_fcurves

    bpy.ops.import_scene.toshi_tmd(filepath=str(demo_dir / "demo.tmd"), axis_forward="-Z", axis_up="Y")
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = armature

    def keys():
        return {
            (a.name, fc.data_path, fc.array_index): [tuple(k.co) for k in fc.keyframe_points]
            for a in bpy.data.actions
            for fc in action_fcurves(a)
        }

    before = keys()
    assert bpy.ops.retro_models.toshi_load_tkl(filepath=str(demo_dir / "demo.tkl")) == {"FINISHED"}
    after = keys()
    assert after.keys() == before.keys()
    for curve, points in before.items():
        np.testing.assert_allclose(after[curve], points, atol=1e-6, err_msg=str(curve))
