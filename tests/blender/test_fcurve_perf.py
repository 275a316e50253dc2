"""F-curves made in bulk per action (compat.ActionCurves) on both ways Blender groups them, and the
benchmark's TMRF chain (bench/bench.py) imported at a small size."""

import sys
from pathlib import Path

import bpy
import pytest
from retro_models.formats.tmrf import convert, media
from retro_models.operators.blender import compat
from retro_models.operators.blender.build import build_scene

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench  # noqa: E402  (the benchmark driver: its workloads and its table)


@pytest.mark.parametrize("by_name", [True, False], ids=["group named in fcurves.new", "group assigned"])
def test_curves_go_to_groups_made_once(empty_scene, monkeypatch, by_name):
    if not by_name:  # the way of a Blender whose fcurves.new takes no group
        monkeypatch.setattr(compat, "_GROUP_KEYWORD", None)
    action, slot = compat.new_action("probe", "OBJECT", "probe")
    curves = compat.ActionCurves(action, slot)
    order = [("a", "location"), ("b", "location"), ("a", "scale"), ("b", "rotation_euler")]
    made = [curves.new(f'pose.bones["{bone}"].{path}', range(3), bone) for bone, path in order]
    groups = action.groups if not compat.SLOTTED_ACTIONS else action.layers[0].strips[0].channelbags[0].groups
    assert [g.name for g in groups] == ["a", "b"]
    assert all(fc.group.name == bone for fcs, (bone, _) in zip(made, order, strict=True) for fc in fcs)
    assert len(compat.action_fcurves(action)) == 12


def test_the_benchmark_chain_imports_with_one_group_per_bone(empty_scene):
    data = media.write(convert.from_scene(bench.chain_scene(50)))
    result = build_scene(convert.to_scene(media.read(data)), bpy.context)
    (action,) = result.actions
    curves = compat.action_fcurves(action)
    assert len(curves) == 50 * 7 and all(len(fc.keyframe_points) == 30 for fc in curves)
    assert len({fc.group.name for fc in curves}) == 50


def test_the_benchmark_table_puts_each_ratio_next_to_its_goal():
    numbers = {"import": 2.0, "floor": 1.0, "actions": 0.7, "floor actions": 0.07, "fcurves": 7000}
    results = {
        "tmrf1000": {**numbers, "memory MB": 50.0},
        "tmrf2000": {**numbers, "import": 4.4, "memory MB": 99.0},
    }
    lines = [row.line() for row in bench.rows(results)]
    assert any(
        "import/floor" in line and "2.000" in line and "≤ 1.25" in line and "MISSES" in line for line in lines
    )
    assert any("µs per F-curve" in line and "100.000" in line for line in lines)
    assert any("growth 1000→2000" in line and "2.200" in line for line in lines)
