"""Looping animations repeat their frame range in Blender as the games do, not each F-curve's keys.

A channel's keys may start after the animation's start, stop before its end, or reach beyond
both (J3D's monl_a_clap1.bck keys −3…64 of a 60-frame loop). The games clamp inside the range and
repeat it with period end − start; Blender's Cycles modifier repeats the keyed range, so the
builder cuts the keys to the range and holds the first and last values up to the bounds
(``curves.loop_keys``), and the extractor takes that off again (``curves.unloop_rows``).

At end + k·period exactly Blender shows the held last value where a repeating game shows the start
(as for keys that end on the end), so the wrapped frames checked here avoid those instants, except
for animations that hold their start (``Animation.hold_start``, TTYD): their key at the end shows
the start, and nothing repeats before the start.
"""

import bpy
import j3d_support as j3d_playback
import numpy as np
import pytest
import ttyd_support as ttyd_playback
from retro_models.formats.curves import loop_keys, sample, unloop_rows
from retro_models.formats.j3d import bck, evaluate
from retro_models.formats.j3d import convert as j3d_convert
from retro_models.formats.j3d.container import track_keys
from retro_models.formats.scene import Animation
from retro_models.formats.ttyd import model as fmt
from retro_models.operators.blender import compat
from retro_models.operators.blender.animation import (
    INTERPOLATION_CODES,
    fcurve_rows,
    interpolation_codes,
    loop_record,
    write_fcurve,
)
from retro_models.operators.blender.compat import MERGE_DISTANCE
from retro_models.operators.blender.extract import extract_scene
from retro_models.operators.blender.records import read_record
from support import corpus_file

START, END = 0.0, 20.0
KEY_TIMES = (4.0, 10.0)  # walk's two keyframes, later than the start and well before the end
# Inside the range (before the first key, between the keys, holding after the last), then wrapped.
TTYD_FRAMES = (0.0, 2.0, 4.0, 7.5, 12.0, 19.5, 22.0, 27.5, 33.0, 47.5, 61.0)


def late_walk_bytes() -> bytes:
    """The playback test's model with walk's keyframes at 4 and 10 of a looping 0…20, the body shown."""
    model = fmt.read(ttyd_playback.model_bytes())
    walk = model.animations[0].data
    walk.keyframes["time"] = KEY_TIMES
    walk.base["start"], walk.base["end"], walk.base["loop"] = START, END, 1
    walk.visibility_deltas["value"] = 1  # shown, not hidden: Blender evaluates no hidden mesh to compare
    return fmt.write(model)


@pytest.fixture
def late_walk(empty_scene, tmp_path):
    (tmp_path / "c_test").write_bytes(late_walk_bytes())
    (tmp_path / "c_test_tex-").write_bytes(ttyd_playback.tpl_bytes())
    assert bpy.ops.import_scene.ttyd_model(filepath=str(tmp_path / "c_test")) == {"FINISHED"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    model = fmt.read((tmp_path / "c_test").read_bytes())
    return tmp_path, model, armature, bpy.data.objects["body"]


def walk_fcurves(armature, body):
    owners = (armature, body, body.data.shape_keys, body.data.materials[0].node_tree)
    return [fc for owner in owners for fc in compat.action_fcurves(owner.animation_data.action)]


def test_ttyd_channels_keyed_inside_the_range_loop_with_the_animation(late_walk):
    _, model, armature, body = late_walk
    assert model.animations[0].data.loop
    fcurves = walk_fcurves(armature, body)
    frames = {(fc.keyframe_points[0].co[0], fc.keyframe_points[-1].co[0]) for fc in fcurves}
    assert frames == {(START, END)}  # every channel spans the range: one period for all
    late = [fc for fc in fcurves if "key_blocks" in fc.data_path or "pose.bones" in fc.data_path]
    assert late and all(fc.keyframe_points[0].interpolation == "CONSTANT" for fc in late)  # holds to key 4
    ttyd_playback.assert_plays(model, 0, armature, body, TTYD_FRAMES)


def test_ttyd_loop_keys_are_taken_off_on_export(late_walk):
    files, _, armature, _ = late_walk
    out = files / "out"
    out.mkdir()
    bpy.context.view_layer.objects.active = armature
    assert bpy.ops.export_scene.ttyd_model(filepath=str(out / "c_test")) == {"FINISHED"}
    assert (out / "c_test").read_bytes() == (files / "c_test").read_bytes()


@pytest.fixture
def clap(empty_scene):
    path = corpus_file("j3d/monl_a_clap1.bck")
    model = bck.read(path.read_bytes(), str(path))
    armature = j3d_playback.make_armature(bpy.context, model.joint_count, rotated=False)
    assert bpy.ops.import_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    return path, model, armature


def test_j3d_keys_beyond_the_length_wrap_into_it(clap):
    _, model, armature = clap
    assert model.loop_mode == 2 and model.length == 60
    fcurves = compat.action_fcurves(armature.animation_data.action)
    keyed = [fc for fc in fcurves if len(fc.keyframe_points) > 1]
    assert {(fc.keyframe_points[0].co[0], fc.keyframe_points[-1].co[0]) for fc in keyed} == {(0.0, 60.0)}
    # The game wraps the frame into [0, 60) before evaluating its keys −3…64.
    frames = np.concatenate([np.arange(0, 60), np.arange(61, 120), [121, 178, 250]])
    names = [f"joint{i}" for i in range(model.joint_count)]
    expected = j3d_playback.expected_local(model, np.mod(frames, model.length))
    j3d_playback.assert_same_transforms(
        expected, j3d_playback.blender_local(bpy.context, armature, names, frames)
    )


def test_j3d_edited_cut_key_is_exported_as_a_key(clap):
    """An edited key at a cut stays a key of the file; the unedited cut at the end gives back its keys."""
    path, model, armature = clap
    fcurves = compat.action_fcurves(armature.animation_data.action)
    records = read_record(armature.animation_data.action).channels
    record = next(c for c in records if "original" in (c.loop or {}).get("start", {}))  # a key at −3 cut off
    component = int(next(iter(record.loop["start"]["original"])))
    cut = next(fc for fc in fcurves if (fc.data_path, fc.array_index) == (record.data_path, component))
    assert cut.keyframe_points[0].co[0] == 0.0
    point = cut.keyframe_points[0]
    for coordinates in (point.co, point.handle_left, point.handle_right):
        coordinates[1] += 0.25
    cut.update()  # may reallocate the keys: ``point`` is not to be read again
    scene = extract_scene(bpy.context, armature, [])
    written = bck.read(bck.write(j3d_convert.from_scene(scene, joint_names=scene.skeletons[0].bone_names)))
    joint, axis = int(record.target.removeprefix("joint")), record.sources[0].index
    edited = track_keys(written.tracks[joint, axis, 1], written.banks()[1])
    before = track_keys(model.tracks[joint, axis, 1], model.banks()[1])
    assert before.times[0] == -3.0 and edited.times[0] == 0.0 and edited.times[-1] == before.times[-1]
    unit = evaluate.rotation_unit(written.rotation_frac)
    assert abs(edited.values[0] * unit - np.degrees(cut.keyframe_points[0].co[1])) <= unit
    frames = np.arange(0, 60)
    others = np.ones(model.tracks.shape[:2], bool)
    others[joint, axis] = False
    expected, found = evaluate.evaluate_bck(model, frames), evaluate.evaluate_bck(written, frames)
    for name in ("scale", "translation"):
        np.testing.assert_array_equal(found[name], expected[name])
    np.testing.assert_array_equal(found["rotation"][:, others], expected["rotation"][:, others])


@pytest.mark.parametrize("hold_start", [False, True], ids=["cycles", "hold-start"])
@pytest.mark.parametrize("interpolation", ["CONSTANT", "LINEAR", "BEZIER"])
@pytest.mark.parametrize(
    "start, end, sides",
    [(0.0, 20.0, "cut cut"), (-5.0, 30.0, "held held"), (2.0, 15.0, "cut cut"), (30.0, 40.0, "cut held")],
    ids=["keys-beyond", "keys-inside", "keys-on-bounds", "keys-before"],
)
def test_looped_f_curve_repeats_the_range_and_gives_the_keys_back(
    empty_scene, interpolation, start, end, sides, hold_start
):
    """One F-curve through the builder's and extractor's functions: Blender plays the original curve,
    wrapped into [start, end), and the extractor reads the original keys. With ``hold_start`` (TTYD)
    the start holds before the start and shows at every end too, as the game plays it."""
    times = np.array([-3.0, 2.0, 9.5, 15.0, 23.0])
    values = np.array([[0.5], [-1.0], [2.0], [0.25], [1.5]])
    left = np.stack([times[:, None] - 1.5, values - 0.3], axis=-1)
    right = np.stack([times[:, None] + 1.0, values + 0.4], axis=-1)
    handles = (left, right) if interpolation == "BEZIER" else (None, None)
    cut = loop_keys(times, values, interpolation, *handles, start, end, MERGE_DISTANCE, hold_start)
    new_times, new_values, modes, new_left, new_right, changed = cut
    assert " ".join("held" if "held" in changed[s] else "cut" for s in ("start", "end")) == sides
    action, slot = compat.new_action("probe", "OBJECT", "probe")
    (fcurve,) = compat.new_fcurves(action, slot, "location", [0])
    write_fcurve(
        fcurve,
        np.stack([new_times, new_values[:, 0]], axis=-1).astype(np.float32),
        interpolation_codes(modes, len(new_times)),
        None if new_left is None else new_left[:, 0],
        None if new_right is None else new_right[:, 0],
        cyclic=True,
        hold_start=hold_start,
    )
    period = end - start
    if hold_start:  # every end included; the last MERGE_DISTANCE before one held (see loop_keys)
        frames = start + np.concatenate([np.arange(-period, 3 * period, 0.75), period * np.arange(1, 4)])
        inside = np.mod(frames - start, period)
        frames = frames[(inside <= period - MERGE_DISTANCE) | (frames < start)]
        wrapped = np.where(frames < start, start, start + np.mod(frames - start, period))
    else:
        frames = start + np.arange(0.0, 3 * period, 0.75)
        frames = frames[
            (frames == start) | ~np.isclose(np.mod(frames - start, period), 0.0)
        ]  # see the module doc
        wrapped = start + np.mod(frames - start, period)
    expected = sample(times, values, interpolation, *handles, wrapped)[:, 0]
    np.testing.assert_allclose([fcurve.evaluate(f) for f in frames], expected, atol=2e-5)
    animation = Animation("probe", frame_start=start, frame_end=end, loop=True)
    rows = unloop_rows(fcurve_rows(fcurve), loop_record(changed, [0], animation, interpolation), "0")
    np.testing.assert_array_equal(rows[:, 0], times.astype(np.float32))
    np.testing.assert_array_equal(rows[:, 1], values[:, 0].astype(np.float32))
    if interpolation == "BEZIER":
        np.testing.assert_allclose(rows[:, 2:4], left[:, 0], atol=1e-6)
        np.testing.assert_allclose(rows[:, 4:6], right[:, 0], atol=1e-6)
    assert set(rows[:, 6]) == {INTERPOLATION_CODES[interpolation]}
