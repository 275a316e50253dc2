"""Action records: an AnimationRecord comes back from the action as it was written, every field exact."""

import base64
import dataclasses
import json

import bpy
import numpy as np
from retro_models.formats.scene import ChannelOrigin
from retro_models.operators.blender import props, records
from retro_models.operators.blender.records import (
    AnimationRecord,
    ChannelRecord,
    Keys,
    SceneChannel,
    channel_targets,
    is_primary,
    read_record,
    record_group,
    record_index,
    write_record,
)


def assert_same(got, want, where="record"):
    """Equal dataclasses, lists and dicts; arrays equal bit for bit."""
    assert type(got) is type(want), where
    if dataclasses.is_dataclass(want):
        for f in dataclasses.fields(want):
            assert_same(getattr(got, f.name), getattr(want, f.name), f"{where}.{f.name}")
    elif isinstance(want, np.ndarray):
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), where
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, dict):
        assert got.keys() == want.keys(), where
        for key in want:
            assert_same(got[key], want[key], f"{where}[{key!r}]")
    else:
        assert got == want, where


def test_record_comes_back_exactly(empty_scene):
    times = np.array([0.0, 1.0 / 3.0, 12.5])
    values = np.array([[0.1, -0.0], [1e-300, np.pi], [-2.5, 7.0]])
    handles = np.stack([np.broadcast_to(times[:, None], (3, 2)), values + 0.25], axis=-1)
    keys = Keys(times, values, "BEZIER", handles - 1.0, handles + 1.0)
    channel = ChannelRecord(
        "bone",
        'arm "L"',
        "location",
        order=3,
        data_path='pose.bones["arm \\"L\\""].location',
        digest="0123abcd",
        sources=[
            SceneChannel(
                {"raw": b"\x00\xff", "nothing": None, "big": 2**40, "mixed": [1, "a"]}, 0, keys=keys
            ),
            SceneChannel(
                {}, 2, ChannelOrigin({"bytes": b"\x01", "ids": [3, 4]}, "feed"), Keys(times, values[:, :1])
            ),
            SceneChannel(origin=ChannelOrigin()),
        ],
        loop={"frames": [0.0, 10.0], "interpolation": 1, "start": {"held": True}},
        slerp=[1.0, 2.0],
        flipped=[2],
        baked="rotation_euler",
        offset=[0.5, -0.5],
    )
    record = AnimationRecord(
        "walk", 29.97, True, -3.0, 64.0, 7, "f00d", False, skeleton=1, channels=[channel]
    )
    action = bpy.data.actions.new("walk")
    write_record(action, record)
    assert_same(read_record(action), record)
    # What the sidebar reads to list and switch animations.
    assert (record_group(action), record_index(action), is_primary(action)) == ("f00d", 7, False)
    assert channel_targets(action) == [("bone", 'arm "L"')]


def test_defaults_come_back_and_other_actions_have_none(empty_scene):
    record = AnimationRecord("idle", 30.0, False, 0.0, 0.0, 0, "beef", True)
    record.channels.append(ChannelRecord("object", "Body", "hide", sources=[SceneChannel()]))
    action = bpy.data.actions.new("idle")
    write_record(action, record)
    assert_same(read_record(action), record)
    assert read_record(bpy.data.actions.new("made by hand")) is None


def test_values_met_twice_are_held_once(empty_scene):
    """Bytes and key arrays lie in one bytes property, each object once: a bone's location and rotation
    share their times and the stored keys of their origin."""
    times, stored = np.array([0.0, 1.0 / 3.0]), b"\x01\x02\x03"
    record = AnimationRecord("walk", 30.0, False, 0.0, 1.0, 0, "cafe", True)
    for path, width in (("location", 3), ("rotation_quaternion", 4)):
        keys = Keys(times, np.arange(2.0 * width).reshape(2, width))
        source = SceneChannel({"keys": stored} if width == 3 else {}, None, ChannelOrigin(stored, "d"), keys)
        record.channels.append(ChannelRecord("bone", "hip", path, sources=[source]))
    action = bpy.data.actions.new("walk")
    write_record(action, record)
    held = action[props.ANIMATION][records.BYTES]
    assert len(held) == len(stored) + 8 * (2 + 6 + 8)  # the stored keys, the times, each channel's values
    assert_same(read_record(action), record)


def test_channels_are_one_text_and_earlier_trees_still_read(empty_scene):
    """The channel records are one string property (Blender copies it at once when appending); a record
    saved as a tree of ID properties, or as a text with its bytes in base64, as earlier versions did,
    still reads."""
    times, values = np.array([0.0, 2.0]), np.array([[1.0], [3.0]])
    record = AnimationRecord("run", 30.0, False, 0.0, 2.0, 0, "cafe", True)
    record.channels.append(
        ChannelRecord(
            "bone", "hip", "location", sources=[SceneChannel({"raw": b"\x01"}, 0, keys=Keys(times, values))]
        )
    )
    action = bpy.data.actions.new("run")
    write_record(action, record)
    assert isinstance(action[props.ANIMATION]["channels"], str)

    def as_bytes(array):
        return {"__bytes__": base64.b64encode(array.astype("<f8").tobytes()).decode("ascii")}

    tree = props.to_python(action[props.ANIMATION])
    tree["channels"] = [
        {
            "kind": "bone",
            "target": "hip",
            "path": "location",
            "sources": [
                {
                    "extras": {"raw": {"__bytes__": "AQ=="}},
                    "index": 0,
                    "keys": {"times": as_bytes(times), "values": as_bytes(values)},
                }
            ],
        }
    ]
    tree.pop(records.BYTES)
    old = bpy.data.actions.new("run, saved earlier")
    old[props.ANIMATION] = tree
    assert_same(read_record(old), record)
    assert channel_targets(old) == [("bone", "hip")]
    tree["channels"] = json.dumps(tree["channels"])  # base64 bytes in the text
    text = bpy.data.actions.new("run, saved as text earlier")
    text[props.ANIMATION] = tree
    assert_same(read_record(text), record)
    assert channel_targets(text) == [("bone", "hip")]
