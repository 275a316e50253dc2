"""Scene animations ⇄ Blender actions: where a BCK (or any file's animation) becomes actions and back.

A family's converter turns the file into a Scene ``Animation`` of channels; ``build_animation``
makes one action per animated datablock: bone channels on the armature object
(``armature.key_bone_channel``: parent-relative keys mapped onto pose bases), visibility on the
mesh object and shape keys on the mesh's shape keys (``mesh``), material channels on the
material's node tree (``material.key_channel``). All get a fake user so they persist; the first
animation is assigned. Keys go in with ``keyframe_points.add`` + ``foreach_set``.

What F-curves cannot hold is changed on the way in and recorded on the action
(``props.ANIMATION``): keys closer than ``compat.MERGE_DISTANCE`` are spread apart
(``_spread_close_keys``), and a looping animation gets a Cycles modifier on every F-curve with
its keys cut to the frame range (``curves.loop_keys``). ``extract_animations`` reads the
records back and undoes those changes, giving the Scene's channels while they are unedited and
Blender's keys where the user edited them.
"""

from __future__ import annotations

import dataclasses
import re
import secrets

import bpy
import numpy as np

from ...formats.curves import loop_keys, sample, split_bezier, unloop_rows, unslerp_keys
from ...formats.scene import Animation, Channel, Scene
from . import armature as bones
from . import compat, material, mesh, props
from .records import AnimationRecord, ChannelRecord, Keys, Unspread, read_record, write_record

INTERPOLATION_CODES = {"CONSTANT": 0, "LINEAR": 1, "BEZIER": 2}
_INTERPOLATION_NAMES = {code: name for name, code in INTERPOLATION_CODES.items()}
_HANDLE_FREE = 0
_POSE_PATH = re.compile(r'^pose\.bones\["((?:[^"\\]|\\.)*)"\]\.(\w+)$')


# -- keys into F-curves -------------------------------------------------------------


def _spread_close_keys(times, values, handles_left, handles_right):
    """Keys less than ``MERGE_DISTANCE`` apart, moved that far apart; the curve kept at every whole frame.

    ``FCurve.update`` merges keys closer than that, and Blender picks either of two keys on one
    frame, where the game takes the later. So a step over a short gap (a file may step over
    0.0005 frames) starts ``MERGE_DISTANCE`` after the earlier key, and a step on one frame ends
    that far before it; the segment next to the moved key is cut there (de Casteljau), so it is
    the same curve. Only the instants inside the gap differ.
    """
    times = np.array(times, np.float64)
    gaps = np.diff(times)
    close = np.flatnonzero((gaps >= 0) & (gaps < compat.MERGE_DISTANCE)) + 1
    if not len(close):
        return times, values, handles_left, handles_right
    values = np.array(values, np.float64)
    bezier = handles_left is not None and handles_right is not None
    if bezier:
        handles_left, handles_right = np.array(handles_left, np.float64), np.array(handles_right, np.float64)
    for i in close:  # few, and each depends on the previous move
        if times[i] == times[i - 1]:  # a step on one frame: the earlier key moves back
            key, target, segment = i - 1, times[i] - compat.MERGE_DISTANCE, i - 2
        else:  # a step over a short gap: the later key moves on
            key, target, segment = i, times[i - 1] + compat.MERGE_DISTANCE, i
        if segment < 0 or segment + 1 >= len(times) or not times[segment] < target < times[segment + 1]:
            shift = target - times[key]  # nothing to cut: move the key and its handles as they are
            times[key] = target
            if bezier:
                handles_left[key, 0] += shift
                handles_right[key, 0] += shift
            continue
        if not bezier:
            fraction = (target - times[segment]) / (times[segment + 1] - times[segment])
            values[key] = values[segment] + fraction * (values[segment + 1] - values[segment])
            times[key] = target
            continue
        p0 = np.array([times[segment], values[segment]])
        p3 = np.array([times[segment + 1], values[segment + 1]])
        a, d, point, e, c = split_bezier(p0, handles_right[segment], handles_left[segment + 1], p3, target)
        point[0] = target
        moved = point - np.array([times[key], values[key]])
        times[key], values[key] = point
        if key == segment + 1:  # the segment's end moved back: keep its first part
            handles_right[segment], handles_left[key] = a, d
            handles_right[key] += moved
        else:  # its start moved on: keep its last part
            handles_right[key], handles_left[segment + 1] = e, c
            handles_left[key] += moved
    return times, values, handles_left, handles_right


def write_fcurve(fcurve, times, values, interpolation, handles_left=None, handles_right=None, cyclic=False):
    """``interpolation``: one for every key, or one per key."""
    count = len(times)
    points = fcurve.keyframe_points
    points.add(count)
    co = np.empty((count, 2), np.float32)
    co[:, 0] = times
    co[:, 1] = values
    points.foreach_set("co", co.ravel())
    linear = INTERPOLATION_CODES["LINEAR"]  # for modes the scene does not name
    if isinstance(interpolation, str):
        codes = np.full(count, INTERPOLATION_CODES.get(interpolation, linear), np.int32)
    else:
        modes, per_key = np.unique(np.asarray(interpolation, dtype=str), return_inverse=True)
        codes = np.array([INTERPOLATION_CODES.get(m, linear) for m in modes], np.int32)[per_key]
    points.foreach_set("interpolation", codes)
    if handles_left is not None and handles_right is not None:
        free = np.full(count, _HANDLE_FREE, np.int32)
        points.foreach_set("handle_left_type", free)
        points.foreach_set("handle_right_type", free)
        points.foreach_set("handle_left", np.ascontiguousarray(handles_left, np.float32).ravel())
        points.foreach_set("handle_right", np.ascontiguousarray(handles_right, np.float32).ravel())
    if cyclic:
        fcurve.modifiers.new("CYCLES")
    fcurve.update()


class _ActionSet:
    """The actions of one Animation, one per animated datablock, made on first use."""

    def __init__(self, animation: Animation, index: int, result, assign: bool):
        self.animation = animation
        self.index = index  # position in Scene.animations, for the order on export
        self.result = result
        self.assign = assign
        self.actions: dict[int, tuple] = {}
        self.order = 0
        self.group = secrets.token_hex(8)  # ties the actions of one animation together

    def fcurves(
        self,
        id_data,
        id_type: str,
        data_path: str,
        count: int,
        group: str,
        record: ChannelRecord | None,
        indices=None,
    ):
        """New F-curves for ``count`` components (array ``indices``, else 0…count−1); ``record`` (None for
        a duplicate) tells the extractor the channel: it joins the action's record (``write`` adds to it)."""
        action, slot, animation_record = self.ensure(id_data, id_type)
        if record is not None:
            record.order, record.data_path = self.order, data_path
            animation_record.channels.append(record)
            self.order += 1
        return compat.new_fcurves(
            action, slot, data_path, range(count) if indices is None else indices, group
        )

    def write(
        self, fcurves, record, times, values, interpolation, handles_left=None, handles_right=None
    ) -> None:
        """Key ``fcurves`` with the components of ``values`` (K, C) and handles (K, C, 2).

        A looping animation repeats its frame range, not each F-curve's keys (``loop_keys``); what that
        adds goes to the channel ``record`` (None for a duplicate) for the extractor to take off.
        """
        animation = self.animation
        loop = animation.loop and animation.frame_end > animation.frame_start
        if loop:
            channel_interpolation = interpolation
            times, values, interpolation, handles_left, handles_right, sides = loop_keys(
                times,
                values,
                channel_interpolation,
                handles_left,
                handles_right,
                animation.frame_start,
                animation.frame_end,
                compat.MERGE_DISTANCE,
            )
            if sides and record is not None:
                record.loop = loop_record(sides, fcurves, animation, channel_interpolation)
        for c, fcurve in enumerate(fcurves):
            write_fcurve(
                fcurve,
                times,
                values[:, c],
                interpolation,
                None if handles_left is None else handles_left[:, c],
                None if handles_right is None else handles_right[:, c],
                animation.loop,
            )

    def ensure(self, id_data, id_type: str) -> tuple:
        """The action (with its slot and record) animating ``id_data``."""
        key = id_data.as_pointer()
        if key not in self.actions:
            name = self.animation.name if not self.actions else f"{self.animation.name} {id_data.name}"
            action, slot = compat.new_action(name, id_type, id_data.name)
            action.use_fake_user = True
            self._frame_range(action)
            record = AnimationRecord(
                self.animation.name,
                float(self.animation.fps),
                self.animation.loop,
                float(self.animation.frame_start),
                float(self.animation.frame_end),
                self.index,
                self.group,
                primary=not self.actions,
                skeleton=self.animation.skeleton,
            )
            if not self.actions:
                props.set_extras(action, self.animation.extras)
            self.actions[key] = (action, slot, record)
            self.result.actions.append(action)
            if self.assign:
                compat.assign_action(id_data, action, slot)
        return self.actions[key]

    def _frame_range(self, action) -> None:
        if self.animation.frame_end > self.animation.frame_start:
            action.use_frame_range = True
            action.frame_start = self.animation.frame_start
            action.frame_end = self.animation.frame_end
            action.use_cyclic = self.animation.loop

    def finish(self) -> None:
        for action, _slot, record in self.actions.values():
            write_record(action, record)


def loop_record(sides: dict, fcurves, animation: Animation, interpolation: str) -> dict:
    """``loop_keys``' changes as the extractor reads them (``curves.unloop_rows``): cut keys by F-curve
    array index, the channel's interpolation as the F-curve's code."""
    record = {
        "frames": [float(animation.frame_start), float(animation.frame_end)],
        "interpolation": INTERPOLATION_CODES.get(interpolation, INTERPOLATION_CODES["LINEAR"]),
    }
    for side, change in sides.items():
        if "held" not in change:
            change = {
                kind: {str(fc.array_index): rows for fc, rows in zip(fcurves, change[kind], strict=True)}
                for kind in ("original", "written")
            }
        record[side] = change
    return record


def _spread_channel(channel: Channel) -> tuple[Channel, Unspread | None]:
    """The channel with keys too close for an F-curve spread (``_spread_close_keys``), and the keys before
    and after, for the channel's record: the extractor gives the file's back while the keys are unedited."""
    times, values = _keys(channel)
    gaps = np.diff(times)
    if not ((gaps >= 0) & (gaps < compat.MERGE_DISTANCE)).any():
        return channel, None
    bezier = channel.handles_left is not None and channel.handles_right is not None
    shape = values.shape + (2,)
    left = np.asarray(channel.handles_left, np.float64).reshape(shape) if bezier else None
    right = np.asarray(channel.handles_right, np.float64).reshape(shape) if bezier else None
    columns = [
        _spread_close_keys(
            times, values[:, c], left[:, c] if bezier else None, right[:, c] if bezier else None
        )
        for c in range(values.shape[1])
    ]
    spread = dataclasses.replace(
        channel,
        times=columns[0][0],
        values=np.stack([column[1] for column in columns], axis=1),
        handles_left=np.stack([column[2] for column in columns], axis=1) if bezier else None,
        handles_right=np.stack([column[3] for column in columns], axis=1) if bezier else None,
    )
    original = Keys(times, values, channel.interpolation, left, right)
    return spread, Unspread(original, Keys(spread.times, spread.values, channel.interpolation))


def _keys(channel: Channel):
    times = np.asarray(channel.times, np.float64)
    values = np.asarray(channel.values, np.float64).reshape(len(times), -1)
    return times, values


# -- build ----------------------------------------------------------------------------


def build_animation(
    scene: Scene,
    animation: Animation,
    index: int,
    skeleton_maps,
    result,
    assign: bool,
    blender_names: bool = False,
) -> str:
    """The actions of one Scene animation (see the module); returns the group tying them together.

    ``blender_names``: the skeleton's bone names are the armature's (else the built ones, which
    Blender may have shortened, are looked up through the joint order).
    """
    actions = _ActionSet(animation, index, result, assign)
    armature = maps = None
    pose_names: dict[str, str] = {}
    if result.armatures:
        skeleton = scene.skeletons[animation.skeleton or 0]
        armature, maps = result.armatures[animation.skeleton or 0], skeleton_maps[animation.skeleton or 0]
        order = skeleton.bone_names if blender_names else armature.data[props.JOINT_ORDER]
        pose_names = dict(zip(skeleton.bone_names, order, strict=True))
    targets = {
        "object": {o.get(props.SCENE_NAME, o.name): o for o in result.armatures + result.objects},
        "shape_key": {m.name: o for m, o in zip(scene.meshes, result.objects, strict=True)},
        "material": {m.name: b for m, b in zip(scene.materials, result.materials, strict=True)},
    }
    channels = [(c, None) for c in animation.channels]
    if maps is not None:
        channels = bones.component_channels(animation.channels, maps, armature, pose_names)
    for channel, parts in channels:
        record = ChannelRecord(channel.target_kind, channel.target, channel.path, extras=dict(channel.extras))
        channel, record.unspread = _spread_channel(channel)
        times, values = _keys(channel)
        if len(times) == 0:
            continue
        if not _key_channel(
            actions, channel, record, times, values, parts, targets, maps, armature, pose_names
        ):
            kind = channel.target_kind
            result.warnings.append(
                f"{animation.name}: channel {kind} {channel.target!r} {channel.path} has no target"
            )
    if not actions.actions and armature is not None:  # keep an animation without channels for export
        actions.ensure(armature, "OBJECT")
    actions.finish()
    return actions.group


def _key_channel(actions, channel, record, times, values, parts, targets, maps, armature, pose_names) -> bool:
    """Key one channel on what it animates; False when the Scene built nothing it can animate."""
    kind, target = channel.target_kind, channel.target
    if kind == "bone" and maps is not None and target in maps and channel.path in bones.BONE_PATHS:
        bones.key_bone_channel(
            actions,
            channel,
            times,
            values,
            record,
            maps[target],
            armature,
            pose_names[target],
            actions.result,
            parts,
        )
    elif kind == "object" and channel.path == "hide" and target in targets["object"]:
        mesh.key_visibility(actions, targets["object"][target], times, values, record)
    elif (
        kind == "shape_key"
        and target in targets["shape_key"]
        and targets["shape_key"][target].data.shape_keys
    ):
        key = targets["shape_key"][target].data.shape_keys
        if not mesh.key_shape(actions, key, channel, times, values, record):
            actions.result.warnings.append(
                f"{actions.animation.name}: no shape key {channel.path!r} on {target}"
            )
    elif kind == "material" and target in targets["material"]:
        material.key_channel(actions, targets["material"][target], channel, times, values, record)
    else:
        return False
    return True


def set_scene_frame_rate(scene, animation: Animation) -> None:
    """The Blender scene's frame rate and range from ``animation``."""
    fps = max(int(round(animation.fps)), 1)
    scene.render.fps = fps
    scene.render.fps_base = fps / animation.fps
    if animation.frame_end > animation.frame_start:
        scene.frame_start = int(np.floor(animation.frame_start))
        scene.frame_end = int(np.ceil(animation.frame_end))


# -- extract --------------------------------------------------------------------------


def extract_animations(context, armature_obj, skeleton, mesh_objs, materials, actions, renamed, recorded):
    """The animations of the given actions, or of those imported with these objects and those assigned to them."""
    records = {a.as_pointer(): r for a in bpy.data.actions if (r := read_record(a)) is not None}
    tagged = [a for a in bpy.data.actions if a.as_pointer() in records]
    if actions is None:
        owners = [
            armature_obj,
            *mesh_objs,
            *(o.data.shape_keys for o in mesh_objs),
            *(m.node_tree for m in materials),
        ]
        assigned = [o.animation_data.action for o in owners if o is not None and o.animation_data]
        assigned = [a for a in assigned if a is not None]
        if armature_obj is not None and props.ANIMATIONS in armature_obj.data:
            recorded = props.to_python(armature_obj.data[props.ANIMATIONS])
        groups = set(recorded) | {
            records[a.as_pointer()].group for a in assigned if a.as_pointer() in records
        }
        actions = [
            a for a in tagged if records[a.as_pointer()].primary and records[a.as_pointer()].group in groups
        ]
        actions.sort(key=lambda a: records[a.as_pointer()].index)
        if armature_obj is not None:
            actions += [a for a in assigned[:1] if a.as_pointer() not in records]
    maps = bones.bone_maps(skeleton) if skeleton is not None else {}
    animations = []
    for action in actions:
        record = records.get(action.as_pointer())
        if record is None:
            animations.append(_untagged_animation(context, action, maps))
            continue
        members = [
            (a, records[a.as_pointer()]) for a in tagged if records[a.as_pointer()].group == record.group
        ]
        animations.append(_tagged_animation(action, record, members, maps, renamed))
    return animations


def _unescape(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)


def _curves_by_path(action) -> dict[str, list]:
    by_path: dict[str, list] = {}
    for fcurve in compat.action_fcurves(action):
        by_path.setdefault(fcurve.data_path, []).append(fcurve)
    for curves in by_path.values():
        curves.sort(key=lambda fc: fc.array_index)
    return by_path


def fcurve_rows(fcurve, loop: dict | None) -> np.ndarray:
    """(K, 7) keys of an F-curve: frame, value, left handle, right handle, interpolation code; without
    the keys the builder added for a looping animation (``loop``: the channel record's)."""
    points = fcurve.keyframe_points
    count = len(points)
    rows = np.empty((count, 7))
    for column, field in ((0, "co"), (2, "handle_left"), (4, "handle_right")):
        rows[:, column : column + 2] = compat.read_array(points, field, count, 2)
    rows[:, 6] = compat.read_array(points, "interpolation", count, 1, np.int32)
    return rows if loop is None else unloop_rows(rows, loop, str(fcurve.array_index))


def _read_keys(fcurves, loop: dict | None = None):
    """(times, values (K, C), interpolation, handles_left, handles_right) of one channel's F-curves.

    None when no F-curve has keys.
    """
    keys = []
    for fcurve in fcurves:
        rows = fcurve_rows(fcurve, loop)
        if len(rows) == 0:
            continue
        interpolation = _INTERPOLATION_NAMES.get(int(rows[0, 6]), "")
        keys.append((rows[:, :2], rows[:, 2:4], rows[:, 4:6], interpolation))
    if not keys:
        return None
    interpolation = keys[0][3] if keys[0][3] in ("CONSTANT", "LINEAR", "BEZIER") else "LINEAR"
    times = keys[0][0][:, 0]
    if all(len(k[0]) == len(times) and np.array_equal(k[0][:, 0], times) for k in keys):
        values = np.stack([k[0][:, 1] for k in keys], axis=1)
        if interpolation != "BEZIER":
            return times, values, interpolation, None, None
        return (
            times,
            values,
            interpolation,
            np.stack([k[1] for k in keys], 1),
            np.stack([k[2] for k in keys], 1),
        )
    # Components keyed at different frames: resample all at the union of their key frames.
    times = np.unique(np.concatenate([k[0][:, 0] for k in keys]))
    columns = [sample(k[0][:, 0], k[0][:, 1:], k[3], k[1][:, None], k[2][:, None], times)[:, 0] for k in keys]
    return times, np.stack(columns, axis=1), "LINEAR", None, None


def _animation_of(action, record: AnimationRecord) -> Animation:
    frame_start, frame_end = record.frame_start, record.frame_end
    if action.use_frame_range:
        frame_start, frame_end = float(action.frame_start), float(action.frame_end)
    # The imported name while Blender's differs only by a ".001" suffix; the user's rename otherwise.
    name = record.name if re.fullmatch(re.escape(record.name) + r"(\.\d{3,})?", action.name) else action.name
    return Animation(
        name,
        fps=record.fps,
        frame_start=frame_start,
        frame_end=frame_end,
        loop=record.loop,
        skeleton=record.skeleton,
        extras=props.get_extras(action),
    )


def _tagged_animation(primary, record: AnimationRecord, members, maps, renamed) -> Animation:
    """The Scene animation of an action group (``members``: (action, record) pairs) in channel order."""
    animation = _animation_of(primary, record)
    entries = []
    for action, action_record in members:
        curves = _curves_by_path(action)
        entries += [(c, curves[c.data_path]) for c in action_record.channels if c.data_path in curves]
    for channel_record, fcurves in sorted(entries, key=lambda e: e[0].order):
        if channel_record.array_index is not None:  # one component; the others are other channels
            fcurves = [fc for fc in fcurves if fc.array_index == channel_record.array_index]
        target = renamed.get((channel_record.kind, channel_record.target), channel_record.target)
        pose = _POSE_PATH.match(channel_record.data_path) if channel_record.kind == "bone" else None
        if pose is not None:  # the bone's name in Blender, which the skeleton uses
            target = _unescape(pose.group(1))
        animation.channels += _recorded_channels(channel_record, fcurves, target, maps)
    return animation


def _recorded_channels(record: ChannelRecord, fcurves, target: str, maps) -> list[Channel]:
    """The Scene channels one channel record and its F-curves give (several for merged components)."""
    keys = _read_keys(fcurves, record.loop)
    if keys is None:
        return []
    if record.parts and _keys_hash(fcurves, record.loop) == record.written:
        return [
            bones.part_channel(part, record.path, target) for part in record.parts
        ]  # unedited: as imported
    times, values, interpolation, left, right = keys
    channel = Channel(
        record.kind, target, record.path, times, values, interpolation, left, right, record.extras
    )
    if record.kind == "bone":
        pose_path = fcurves[0].data_path.rsplit(".", 1)[1]
        if record.index is not None:
            channel = bones.component_channel(channel, pose_path, fcurves[0].array_index, maps, record.index)
        else:
            channel = bones.relative_channel(channel, pose_path, maps, record.flipped, record.baked)
        if channel is None:
            return []
        if record.parts:  # merged per-component channels, edited: split them again
            return bones.split(channel, record.parts)
        if (
            record.source is not None and _keys_hash(fcurves, record.loop) == record.written
        ):  # unedited: exact
            channel.values = record.source.reshape(channel.values.shape)
        if record.slerp and channel.path == "rotation_quaternion" and channel.interpolation == "LINEAR":
            channel.times, channel.values = unslerp_keys(channel.times, channel.values, record.slerp)
    else:  # one component, or keys offset by a texture transform's centre (material.key_channel)
        channel.index = record.index
        offset = np.asarray(record.offset or 0.0, np.float64)
        channel.values = channel.values - offset
        for side in ("handles_left", "handles_right"):
            handles = getattr(channel, side)
            if handles is not None:
                handles = handles.copy()
                handles[..., 1] -= offset
                setattr(channel, side, handles)
    if record.unspread is not None:
        _unspread(channel, record.unspread)
    return [channel]


def _unspread(channel: Channel, unspread: Unspread) -> None:
    """The file's keys back in place of those the builder spread apart, while they are unedited."""
    spread = unspread.spread
    if len(channel.times) != len(spread.times) or channel.values.shape != spread.values.shape:
        return
    if not (
        np.allclose(channel.times, spread.times, rtol=0, atol=1e-3)
        and np.allclose(channel.values, spread.values, rtol=1e-5, atol=1e-6)
    ):
        return
    channel.times, channel.values = unspread.keys.times, unspread.keys.values
    if unspread.keys.handles_left is not None and channel.handles_left is not None:
        channel.handles_left, channel.handles_right = unspread.keys.handles_left, unspread.keys.handles_right


def _keys_hash(fcurves, loop: dict | None) -> str:
    rows = [fcurve_rows(fc, loop) for fc in fcurves]
    co = [r[:, :2].astype(np.float32) for r in rows]
    interpolation = _INTERPOLATION_NAMES.get(int(rows[0][0, 6]), "") if co and len(co[0]) else ""
    return bones.keys_hash(
        np.stack(co) if co and all(len(c) == len(co[0]) for c in co) else np.zeros(0), interpolation
    )


def _untagged_animation(context, action, maps) -> Animation:
    render = context.scene.render
    start, end = action.frame_range
    animation = Animation(
        action.name,
        fps=render.fps / render.fps_base,
        frame_start=float(start),
        frame_end=float(end),
        skeleton=0,
    )
    for data_path, fcurves in _curves_by_path(action).items():
        match = _POSE_PATH.match(data_path)
        if not match:
            continue
        keys = _read_keys(fcurves)
        if keys is None:
            continue
        times, values, interpolation, left, right = keys
        channel = Channel(
            "bone", _unescape(match.group(1)), match.group(2), times, values, interpolation, left, right
        )
        channel = bones.relative_channel(channel, match.group(2), maps, [], "")
        if channel is not None:
            animation.channels.append(channel)
    return animation
