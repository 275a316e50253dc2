"""Scene animations ⇄ Blender actions: where a BCK (or any file's animation) becomes actions and back.

A family's converter turns the file into a Scene ``Animation`` of channels; ``build_animation``
makes one action per animated datablock: bone channels on the armature object
(``armature.key_bone_channel``: parent-relative keys mapped onto pose bases), visibility on the
mesh object and shape keys on the mesh's shape keys (``mesh``), material channels on the
material's node tree (``material.key_channel``). All get a fake user so they persist; the first
animation is assigned. Channels plan their F-curves and keys; each action's F-curves are then made
together and keyed with ``keyframe_points.add`` + ``foreach_set`` (``_ActionSet.make``).

What F-curves cannot hold is changed on the way in: keys closer than ``compat.MERGE_DISTANCE``
are spread apart (``_spread_close_keys``), a looping animation gets a Cycles modifier on every
F-curve with its keys cut to the frame range (``curves.loop_keys``), bone channels go through
their pose maps (``armature``). Each action records its channels (``records.ChannelRecord``).

Was a channel edited? One decision: its record keeps the digest of its F-curves as written
(``fcurve_digest``: keys, handles, interpolation, bit for bit); on export, the same digest of the
current F-curves equals it, or the channel was edited. Unedited, the channel comes back exactly
as imported, with its ``Channel.origin``: its keys are the F-curves' with the builder's changes
undone (``_restore``) and rounded to float32 as files hold them (``_as_imported``), which the
builder checked give the Scene's keys bit for bit, else the record keeps the Scene's keys
(``_keep_scene_keys``; ``_restores_exactly`` for all plain bone channels of an animation at
once). Edited, the channel is the F-curves' keys with the changes that still apply undone (loop
keys, slerp keys still on the slerp, sign flips, a bake, merged components split again), and no
origin.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import secrets

import bpy
import numpy as np

from ...formats.curves import (
    axis_angle_to_quat,
    bake_keys,
    euler_order_to_matrix,
    loop_keys,
    sample,
    split_bezier,
    unloop_rows,
)
from ...formats.errors import FormatError
from ...formats.scene import Animation, Channel, Scene, matrix_to_quat
from . import armature as bones
from . import compat, material, mesh, props
from .records import (
    AnimationRecord,
    ChannelRecord,
    Keys,
    SceneChannel,
    read_record,
    record_group,
    write_record,
)

INTERPOLATION_CODES = {"CONSTANT": 0, "LINEAR": 1, "BEZIER": 2}
_INTERPOLATION_NAMES = {code: name for name, code in INTERPOLATION_CODES.items()}
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


def write_fcurve(
    fcurve,
    co: np.ndarray,
    codes: np.ndarray,
    handles_left=None,
    handles_right=None,
    cyclic=False,
    hold_start=False,
):
    """Key ``fcurve`` in bulk: ``co`` (K, 2) float32 frames and values, ``codes`` (K,) interpolation codes
    (``interpolation_codes``), Bézier handles (K, 2) or None; ``cyclic``: repeated by a Cycles modifier
    after the keys, and before them too unless ``hold_start``."""
    count = len(co)
    points = fcurve.keyframe_points
    points.add(count)
    points.foreach_set("co", co.ravel())
    points.foreach_set("interpolation", codes)
    if handles_left is not None and handles_right is not None:
        free = np.zeros(count, np.int32)  # handle type FREE
        points.foreach_set("handle_left_type", free)
        points.foreach_set("handle_right_type", free)
        points.foreach_set("handle_left", np.ascontiguousarray(handles_left, np.float32).ravel())
        points.foreach_set("handle_right", np.ascontiguousarray(handles_right, np.float32).ravel())
    if cyclic:
        cycles = fcurve.modifiers.new("CYCLES")
        if hold_start:
            cycles.mode_before = "NONE"
    fcurve.update()


def interpolation_codes(interpolation, count: int) -> np.ndarray:
    """The F-curve codes of one interpolation for every key, or of one per key."""
    linear = INTERPOLATION_CODES["LINEAR"]  # for modes the scene does not name
    if isinstance(interpolation, str):
        codes = np.empty(count, np.int32)
        codes.fill(INTERPOLATION_CODES.get(interpolation, linear))  # np.full's Python wrapper costs more
        return codes
    code = INTERPOLATION_CODES.get
    return np.array([code(mode, linear) for mode in interpolation], np.int32)


class Curves:
    """F-curves an action will have: ``_ActionSet.fcurves`` plans them, ``_ActionSet.make`` makes every
    F-curve of an action together (each new one scans those already there; keys between would make each
    scan slower), in the order planned."""

    def __init__(self, key: int, data_path: str, indices: tuple[int, ...], group: str):
        self.key, self.data_path, self.indices, self.group = key, data_path, indices, group
        self.made: list = []  # the F-curves, once made


class Written:
    """Keys planned for ``Curves``: written by ``_ActionSet.make``; ``rows()`` gives them back as
    ``fcurve_rows`` by F-curve array index."""

    def __init__(self, curves: Curves, co, codes, bezier: bool, left, right, cyclic: bool, hold_start: bool):
        self.curves, self.co, self.codes, self.cyclic, self.hold_start = curves, co, codes, cyclic, hold_start
        self.bezier = bezier  # whether a key is Bézier
        self.left, self.right = left, right  # (K, C, 2) Bézier handles or None
        self.kept = None  # ``kept_keys``, once read

    def write(self) -> None:
        bezier = self.left is not None and self.right is not None
        if bezier:  # per F-curve: (K, 2) float32, as foreach_set takes them
            left, right = (
                np.ascontiguousarray(np.swapaxes(h, 0, 1), np.float32) for h in (self.left, self.right)
            )
        for c, fcurve in enumerate(self.curves.made):
            if bezier:
                write_fcurve(fcurve, self.co[c], self.codes, left[c], right[c], self.cyclic, self.hold_start)
            else:
                write_fcurve(fcurve, self.co[c], self.codes, cyclic=self.cyclic, hold_start=self.hold_start)
        self.left = self.right = None

    def kept_keys(self) -> np.ndarray:
        """(C, K, 6) float32 keys as Blender keeps them: frame, value, left and right handles (Blender
        moves those crossing their key); (C, K, 2) without Bézier keys. Read once."""
        if self.kept is None:
            self.kept = self.co
            if self.bezier:
                kept = np.empty((len(self.co), 3) + self.co.shape[1:], np.float32)  # (C, 3, K, 2)
                kept[:, 0] = self.co
                for c, fcurve in enumerate(self.curves.made):
                    fcurve.keyframe_points.foreach_get("handle_left", kept[c, 1].ravel())
                    fcurve.keyframe_points.foreach_get("handle_right", kept[c, 2].ravel())
                self.kept = kept.transpose(0, 2, 1, 3).reshape(self.co.shape[:2] + (6,))
        return self.kept

    def rows(self) -> dict[int, np.ndarray]:
        """The keys as ``write_fcurve`` left them (``fcurve_rows``), by F-curve array index."""
        keys = self.kept_keys()
        rows = np.zeros(keys.shape[:2] + (7,))
        rows[:, :, : keys.shape[2]] = keys
        rows[:, :, 6] = self.codes
        return dict(zip(self.curves.indices, rows, strict=True))

    def digest(self) -> str:
        """``fcurve_digest`` of ``rows()``, from the float32 keys as written."""
        indices = self.curves.indices
        keys = self.kept_keys()
        if list(indices) != sorted(indices):
            order = sorted(range(len(indices)), key=indices.__getitem__)
            keys, indices = keys[order], [indices[c] for c in order]
        count = len(self.codes)
        counts = ",".join([f"{i}:{count}" for i in indices])
        return _digest(
            counts, np.ascontiguousarray(keys), self.codes.astype(np.int8).tobytes() * len(indices)
        )


class _ActionSet:
    """The actions of one Animation, one per animated datablock, made on first use; their F-curves and
    keys are planned channel by channel and made together (``make``)."""

    def __init__(self, animation: Animation, index: int, result, assign: bool, source: str):
        self.animation = animation
        self.source = source  # the file, for errors
        self.index = index  # position in Scene.animations, for the order on export
        self.result = result
        self.assign = assign
        self.actions: dict[int, tuple] = {}  # datablock pointer → action, its ActionCurves, its record
        self.made: dict[int, set] = {}  # datablock pointer → (data path, index) of its F-curves
        self.planned: list[Curves] = []
        self.written: list[Written] = []
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
    ) -> Curves:
        """New F-curves for ``count`` components (array ``indices``, else 0…count−1), made by ``make``;
        ``record`` (None for a duplicate) tells the extractor the channel: it joins the action's record
        (``write`` adds to it)."""
        _action, _curves, animation_record = self.ensure(id_data, id_type)
        indices = tuple(range(count) if indices is None else indices)
        key = id_data.as_pointer()
        made = self.made[key]
        for index in indices:  # Blender refuses a second F-curve of one path and index: decide here
            if (data_path, index) in made:
                channel = f"{record.kind} {record.target!r} {record.path}" if record else data_path
                raise FormatError(
                    self.source,
                    0,
                    f"animation {self.animation.name!r} keys {data_path}[{index}] of {id_data.name!r} "
                    f"twice (channel {channel})",
                )
            made.add((data_path, index))
        if record is not None:
            record.order, record.data_path = self.order, data_path
            animation_record.channels.append(record)
            self.order += 1
        curves = Curves(key, data_path, indices, group)
        self.planned.append(curves)
        return curves

    def write(
        self, curves: Curves, record, times, values, interpolation, handles_left=None, handles_right=None
    ) -> Written:
        """Key ``curves`` with the components of ``values`` (K, C) and handles (K, C, 2) (written by
        ``make``).

        A looping animation repeats its frame range, not each F-curve's keys (``loop_keys``); what that
        adds goes to the channel ``record`` (None for a duplicate) for the extractor to take off.
        """
        animation = self.animation
        if animation.loop and animation.frame_end > animation.frame_start:
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
                animation.hold_start,
            )
            if sides and record is not None:
                record.loop = loop_record(sides, curves.indices, animation, channel_interpolation)
        codes = interpolation_codes(interpolation, len(times))
        bezier = (
            interpolation == "BEZIER"
            if isinstance(interpolation, str)
            else bool((codes == INTERPOLATION_CODES["BEZIER"]).any())
        )
        co = np.empty((len(curves.indices), len(times), 2), np.float32)  # per F-curve: frame, value
        co[:, :, 0] = times
        co[:, :, 1] = np.asarray(values).T
        written = Written(
            curves, co, codes, bezier, handles_left, handles_right, animation.loop, animation.hold_start
        )
        self.written.append(written)
        return written

    def make(self) -> None:
        """Make every planned F-curve, an action's together, then write every planned key."""
        by_action: dict[int, list[Curves]] = {}
        for curves in self.planned:
            by_action.setdefault(curves.key, []).append(curves)
        for key, planned in by_action.items():
            new = self.actions[key][1].new
            for curves in planned:
                curves.made = new(curves.data_path, curves.indices, curves.group)
        for written in self.written:
            written.write()
        self.planned, self.written = [], []

    def ensure(self, id_data, id_type: str) -> tuple:
        """The action animating ``id_data``, with its ``compat.ActionCurves`` and its record."""
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
                hold_start=self.animation.hold_start,
            )
            if not self.actions:
                props.set_extras(action, self.animation.extras)
            self.actions[key] = (action, compat.ActionCurves(action, slot), record)
            self.made[key] = set()
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
        for action, _curves, record in self.actions.values():
            write_record(action, record)


def loop_record(sides: dict, indices, animation: Animation, interpolation: str) -> dict:
    """``loop_keys``' changes as the extractor reads them (``curves.unloop_rows``): cut keys by F-curve
    array index (``indices``: of each component), the channel's interpolation as the F-curve's code."""
    record = {
        "frames": [float(animation.frame_start), float(animation.frame_end)],
        "interpolation": INTERPOLATION_CODES.get(interpolation, INTERPOLATION_CODES["LINEAR"]),
    }
    for side, change in sides.items():
        if "held" not in change:
            change = {
                kind: {str(i): rows for i, rows in zip(indices, change[kind], strict=True)}
                for kind in ("original", "written")
            }
        record[side] = change
    return record


def _spread_channels(channels: list[Channel]) -> list[Channel]:
    """``_spread_channel`` of each of ``channels``: those with keys too close found all at once."""
    times = [np.asarray(c.times, np.float64) for c in channels]
    gaps = np.diff(np.concatenate(times + [np.zeros(0)]))
    close = np.concatenate([[0], np.cumsum((gaps >= 0) & (gaps < compat.MERGE_DISTANCE))])  # running count
    counts = np.array([len(t) for t in times], np.int64)
    ends = np.cumsum(counts)
    starts = ends - counts
    inside = close[np.maximum(ends - 1, starts)] - close[starts]  # close gaps between a channel's keys
    return [_spread_channel(c) if n else c for c, n in zip(channels, inside, strict=True)]


def _spread_channel(channel: Channel) -> Channel:
    """The channel with keys too close for an F-curve spread apart (``_spread_close_keys``)."""
    times, values = _keys(channel)
    gaps = np.diff(times)
    if not ((gaps >= 0) & (gaps < compat.MERGE_DISTANCE)).any():
        return channel
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
    return dataclasses.replace(
        channel,
        times=columns[0][0],
        values=np.stack([column[1] for column in columns], axis=1),
        handles_left=np.stack([column[2] for column in columns], axis=1) if bezier else None,
        handles_right=np.stack([column[3] for column in columns], axis=1) if bezier else None,
    )


def _keys(channel: Channel):
    times = np.asarray(channel.times, np.float64)
    if not len(times):  # a channel without keys (legal in some files) keys nothing
        return times, np.zeros((0, 1))
    values = np.asarray(channel.values, np.float64).reshape(len(times), -1)
    return times, values


# -- build ----------------------------------------------------------------------------


def build_animation(
    scene: Scene, animation: Animation, index: int, rigs: list[bones.Rig], result, assign: bool
) -> str:
    """The actions of one Scene animation (see the module); returns the group tying them together.

    ``rigs``: per Scene skeleton, the armature its bone channels animate (``armature.Rig``).
    """
    actions = _ActionSet(animation, index, result, assign, scene.source or scene.name)
    rig = rigs[animation.skeleton or 0] if rigs else None
    if animation.channels:
        _key_channels(actions, scene, animation, rig)
    if not actions.actions and rig is not None:  # keep an animation without channels for export
        actions.ensure(rig.obj, "OBJECT")
    actions.finish()
    return actions.group


def _key_channels(actions: _ActionSet, scene: Scene, animation: Animation, rig: bones.Rig | None) -> None:
    """The F-curves of the animation's channels, made and keyed, each channel recorded."""
    result = actions.result
    targets = {
        "object": {o.get(props.SCENE_NAME, o.name): o for o in result.armatures + result.objects},
        # Applied to existing objects (``build.add_animations``), a Scene has no meshes: their own names.
        "shape_key": {m.name: o for m, o in zip(scene.meshes, result.objects, strict=True)}
        if scene.meshes
        else {o.get(props.SCENE_NAME, o.name): o for o in result.objects if o.type == "MESH"},
        "material": {m.name: b for m, b in zip(scene.materials, result.materials, strict=True)},
    }
    channels = [(c, None) for c in animation.channels]
    if rig is not None:
        channels = bones.component_channels(animation.channels, rig)
    keyed = []
    spreads = _spread_channels([channel for channel, _ in channels])
    posed = bones.pose_channels(spreads, rig) if rig is not None else {}  # all of them in one pass
    for (channel, parts), spread in zip(channels, spreads, strict=True):
        scene_channels = parts or [channel]
        sources = [SceneChannel(dict(c.extras), c.index, c.origin) for c in scene_channels]
        record = ChannelRecord(channel.target_kind, channel.target, channel.path, sources=sources)
        if len(spread.times) == 0:
            continue
        written = _key_channel(actions, spread, record, targets, rig, posed.get(id(spread)))
        if written is not None:
            keyed.append((record, written, scene_channels))
    actions.make()
    scene_keys = [[Keys.of(c) for c in scene_channels] for _, _, scene_channels in keyed]
    flags = iter(_are_float32([k for keys in scene_keys for k in keys]))  # one test for all
    float32 = [[next(flags) for _ in keys] for keys in scene_keys]
    exact = _restores_exactly(keyed, scene_keys, float32, rig)  # the plain bone channels, in bulk
    for i, ((record, written, _), keys) in enumerate(zip(keyed, scene_keys, strict=True)):
        record.digest = written.digest()
        if i not in exact:
            _keep_scene_keys(record, written, keys, float32[i], rig)
        elif not exact[i]:
            record.sources[0].keys = keys[0]


def _key_channel(actions, channel, record, targets, rig, posed=None) -> Written | None:
    """Plan the keys of one channel on what it animates (``_ActionSet.write``), None (and a warning)
    when the Scene built nothing it animates. ``posed``: the channel's ``armature.pose_channels`` result."""
    kind, target = channel.target_kind, channel.target
    times, values = _keys(channel)
    if kind == "bone" and rig is not None and target in rig.maps and channel.path in bones.BONE_PATHS:
        return bones.key_bone_channel(actions, channel, times, values, record, rig, posed)
    if kind == "object" and channel.path == "hide" and target in targets["object"]:
        return mesh.key_visibility(actions, targets["object"][target], times, values, record)
    shape_keys = targets["shape_key"][target].data.shape_keys if target in targets["shape_key"] else None
    if kind == "shape_key" and shape_keys:
        curves = mesh.key_shape(actions, shape_keys, channel, times, values, record)
        if curves is None:
            actions.result.warnings.append(
                f"{actions.animation.name}: no shape key {channel.path!r} on {target}"
            )
        return curves
    if kind == "material" and target in targets["material"]:
        return material.key_channel(actions, targets["material"][target], channel, times, values, record)
    actions.result.warnings.append(
        f"{actions.animation.name}: channel {kind} {target!r} {channel.path} has no target"
    )
    return None


def set_scene_frame_rate(scene, animation: Animation) -> None:
    """The Blender scene's frame rate and range from ``animation``."""
    fps = max(int(round(animation.fps)), 1)
    scene.render.fps = fps
    scene.render.fps_base = fps / animation.fps
    if animation.frame_end > animation.frame_start:
        scene.frame_start = int(np.floor(animation.frame_start))
        scene.frame_end = int(np.ceil(animation.frame_end))


# -- was a channel edited? ------------------------------------------------------------


def fcurve_digest(curves: dict[int, np.ndarray]) -> str:
    """A digest of F-curve keys (``fcurve_rows`` by array index) as Blender holds them, bit for bit:
    frames, values, interpolation and, when a key is Bézier, handles (the others' are Blender's to
    recompute). Any other digest means the keys were edited."""
    indices = sorted(curves)
    rows = np.concatenate([curves[i] for i in indices]) if len(indices) != 1 else curves[indices[0]]
    counts = ",".join(f"{i}:{len(curves[i])}" for i in indices)
    codes = rows[:, 6].astype(np.int8)
    columns = 6 if INTERPOLATION_CODES["BEZIER"] in codes else 2
    return _digest(counts, rows[:, :columns].astype(np.float32).tobytes(), codes.tobytes())


def _digest(counts: str, keys, codes: bytes) -> str:
    """``fcurve_digest`` of F-curves one after another: ``counts`` "index:keys" of each, their float32
    keys (frame, value and, when a key is Bézier, handles: 6 columns, else 2; any bytes-like) and int8
    codes."""
    digest = hashlib.sha1(counts.encode())
    digest.update(keys)
    digest.update(codes)
    return digest.hexdigest()


def _restore(record: ChannelRecord, curves: dict[int, np.ndarray], maps, target: str) -> list[Channel]:
    """The Scene channels F-curve keys give, the builder's changes that still apply undone: loop keys,
    slerp keys still on the slerp, sign flips, a bake, merged components split again.

    ``maps``: bone name → ``BoneMaps`` of the armature as export reads it; ``target``: the channel's
    target name (a bone's as the skeleton names it).
    """
    if record.loop:
        curves = {i: unloop_rows(rows, record.loop, str(i)) for i, rows in curves.items()}
    keys = _keys_of_rows([rows for _, rows in sorted(curves.items())])
    if keys is None:
        return []
    first = record.sources[0]
    channel = Channel(record.kind, target, record.path, *keys, extras=dict(first.extras), index=first.index)
    if record.kind == "bone":
        channel = bones.relative_channel(channel, record.data_path.rsplit(".", 1)[1], maps, record)
        if channel is None:
            return []
        return bones.split(channel, record.sources, maps[target]) if record.merged else [channel]
    offset = np.asarray(record.offset or 0.0, np.float64)  # a texture transform's centre
    channel.values = channel.values - offset
    for side in ("handles_left", "handles_right"):
        handles = getattr(channel, side)
        if handles is not None:
            handles = handles.copy()
            handles[..., 1] -= offset
            setattr(channel, side, handles)
    return [channel]


def _keep_scene_keys(record: ChannelRecord, written: Written, scene_keys: list[Keys], float32, rig) -> None:
    """Keep with the record the keys of each Scene channel that its F-curves as written do not give back
    bit for bit (``_as_imported``): keys not all float32 (``float32``: whether each is, ``_are_float32``),
    spread apart or baked, merged components…"""
    restored = []
    if any(float32):  # restored keys are float32: others cannot match
        bone = record.kind == "bone"
        target = rig.pose_names[record.target] if bone else record.target
        restored = _as_imported(_restore(record, written.rows(), rig.exported if bone else {}, target))
    for i, (source, keys) in enumerate(zip(record.sources, scene_keys, strict=True)):
        if not float32[i] or i >= len(restored) or not _same_keys(Keys.of(restored[i]), keys):
            source.keys = keys


def _restores_exactly(keyed, scene_keys: list[list[Keys]], float32: list[list[bool]], rig) -> dict[int, bool]:
    """``_keep_scene_keys``' answer (do the F-curves give the Scene keys back?) for each of ``keyed``
    (by position) whose ``_restore`` is one affine map of its keys (``_plain_bone``), decided in bulk:
    every such channel with as many keys and components in one pass.

    Each channel's arithmetic is ``_restore``'s (``curves.map_keys``: ``values @ a.T + b``): on the
    same values with a column stride (a column of F-curve rows), numpy's matmul takes its own loop
    over each matrix of a stack, never BLAS, so each key comes out as ``_restore`` makes it on export.
    """
    plain: dict[tuple, list] = {}  # (keys, components) → [(position, (a, b), F-curve keys (C, K, 2), codes)]
    for i, ((record, written, _), keys) in enumerate(zip(keyed, scene_keys, strict=True)):
        maps = _plain_bone(record, keys, float32[i], rig)
        if maps is not None:
            co, indices = written.co, written.curves.indices
            if indices != tuple(range(len(indices))):
                co = co[np.argsort(indices)]  # by array index, as export reads them
            plain.setdefault(co.shape[1::-1], []).append((i, maps, co, written.codes))
    exact = {}
    for (count, width), channels in plain.items():
        positions = [c[0] for c in channels]
        rows = np.empty((len(channels), count, width, 2))  # as F-curve rows: a column stride, as on export
        for row, (_, _, co, _) in zip(rows, channels, strict=True):
            row[:] = co.transpose(1, 0, 2)
        a = np.swapaxes(np.stack([maps[0] for _, maps, _, _ in channels]), 1, 2)
        b = np.stack([maps[1] for _, maps, _, _ in channels])[:, None, :]
        restored = (rows[..., 1] @ a + b).astype(np.float32).astype(np.float64)
        frames = rows[:, :, 0, 0]  # float32 already
        codes = np.stack([c[3] for c in channels])
        # One interpolation at distinct frames; else (keys on one frame, NaN) the restore goes other ways.
        plain_keys = (codes == codes[:, :1]).all(axis=1) & (np.diff(frames, axis=1) > 0).all(axis=1)
        shaped = [scene_keys[i][0].values.shape == (count, width) for i in positions]
        same = np.zeros(len(channels), bool)
        if any(shaped):
            at = np.flatnonzero(shaped)
            times = np.stack([scene_keys[positions[n]][0].times for n in at]).view(np.uint64)
            values = np.stack([scene_keys[positions[n]][0].values for n in at]).view(np.uint64)
            same[at] = (times == frames[at].view(np.uint64)).all(axis=1) & (
                values == restored[at].view(np.uint64)
            ).all(axis=(1, 2))
        for n, i in enumerate(positions):
            name = _INTERPOLATION_NAMES.get(int(codes[n, 0]))
            if plain_keys[n] and name != "BEZIER":
                exact[i] = bool(same[n]) and name == scene_keys[i][0].interpolation
    return exact


def _plain_bone(record: ChannelRecord, keys: list[Keys], float32: list[bool], rig):
    """The inverse map (a, b) ``_restore`` takes a bone channel's F-curve keys back by, when that is
    all it does (at distinct frames, one interpolation but BEZIER: ``_restores_exactly`` sees to that):
    one Scene channel of float32 keys without handles keying a whole vector, nothing added, flipped or
    baked on the way in; else None."""
    if (
        rig is None
        or record.kind != "bone"
        or len(keys) != 1
        or not float32[0]
        or record.array_index is not None
        or record.merged
        or record.loop
        or record.slerp
        or record.flipped
        or record.baked
        or keys[0].handles_left is not None
        or keys[0].handles_right is not None
    ):
        return None
    pose_path = record.data_path.rsplit(".", 1)[1]
    bone = rig.exported.get(rig.pose_names[record.target])
    if bone is None or pose_path == "rotation_euler" or pose_path not in bone.inverses:
        return None
    return bone.inverses[pose_path]


def _are_float32(keys: list[Keys]) -> list[bool]:
    """Whether each of ``keys`` holds float32 values only, tested all together."""
    arrays = [
        [a.ravel() for a in (k.times, k.values, k.handles_left, k.handles_right) if a is not None]
        for k in keys
    ]
    sizes = np.array([sum(map(len, parts)) for parts in arrays], np.int64)
    flat = np.concatenate([a for parts in arrays for a in parts] + [np.zeros(0)])
    inexact = np.concatenate([[0], np.cumsum(flat.astype(np.float32) != flat)])  # running count
    ends = np.cumsum(sizes)
    return (inexact[ends] == inexact[ends - sizes]).tolist()


def _as_imported(channels: list[Channel]) -> list[Channel]:
    """Restored channels with their keys rounded to float32, as a file holds them: unedited, the Scene's
    own keys wherever ``_keep_scene_keys`` kept none (float32 pose values mapped back may differ from
    the file's in the last bits of a float64)."""
    for channel in channels:
        for name in ("times", "values", "handles_left", "handles_right"):
            array = getattr(channel, name)
            if array is not None:
                setattr(channel, name, np.asarray(array, np.float32).astype(np.float64))
    return channels


def _same_keys(a: Keys, b: Keys) -> bool:
    if a.interpolation != b.interpolation:
        return False
    for x, y in (
        (a.times, b.times),
        (a.values, b.values),
        (a.handles_left, b.handles_left),
        (a.handles_right, b.handles_right),
    ):
        if (x is None) != (y is None) or (
            x is not None and (x.shape != y.shape or x.tobytes() != y.tobytes())
        ):
            return False
    return True


# -- extract --------------------------------------------------------------------------


def extract_animations(context, armature_obj, skeleton, mesh_objs, materials, actions, renamed, recorded):
    """The animations of the given actions, or of those imported with these objects and those assigned to them."""
    if actions is None:
        records = {a.as_pointer(): r for a in bpy.data.actions if (r := read_record(a)) is not None}
        tagged = [a for a in bpy.data.actions if a.as_pointer() in records]
        actions = _imported_actions(armature_obj, mesh_objs, materials, records, tagged, recorded)
    else:  # the records of the given actions' groups alone (decoding all grows with every import)
        groups = {record_group(a) for a in actions} - {None}
        tagged = [a for a in bpy.data.actions if record_group(a) in groups]
        records = {a.as_pointer(): read_record(a) for a in tagged}
    maps = bones.bone_maps(skeleton) if skeleton is not None else {}
    modes = {b.name: b.rotation_mode for b in armature_obj.pose.bones} if armature_obj else {}
    animations = []
    for action in actions:
        record = records.get(action.as_pointer())
        if record is None:
            animations.append(_untagged_animation(context, action, maps, modes))
            continue
        members = [
            (a, records[a.as_pointer()]) for a in tagged if records[a.as_pointer()].group == record.group
        ]
        animations.append(_tagged_animation(action, record, members, maps, renamed))
    return animations


def _imported_actions(armature_obj, mesh_objs, materials, records, tagged, recorded) -> list:
    """The first action of every animation imported with these objects or assigned to them, in import
    order; then the armature's active action when the builder did not make it."""
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
    groups = set(recorded) | {records[a.as_pointer()].group for a in assigned if a.as_pointer() in records}
    actions = [
        a for a in tagged if records[a.as_pointer()].primary and records[a.as_pointer()].group in groups
    ]
    actions.sort(key=lambda a: records[a.as_pointer()].index)
    if armature_obj is not None:
        actions += [a for a in assigned[:1] if a.as_pointer() not in records]
    return actions


def pose_target(data_path: str) -> tuple[str, str] | None:
    """(bone name, pose property) an F-curve's data path keys, or None for anything but a pose bone."""
    match = _POSE_PATH.match(data_path)
    return (re.sub(r"\\(.)", r"\1", match.group(1)), match.group(2)) if match else None


def _curves_by_path(action) -> dict[str, list]:
    by_path: dict[str, list] = {}
    for fcurve in compat.action_fcurves(action):
        by_path.setdefault(fcurve.data_path, []).append(fcurve)
    for curves in by_path.values():
        curves.sort(key=lambda fc: fc.array_index)
    return by_path


def fcurve_rows(fcurve) -> np.ndarray:
    """(K, 7) keys of an F-curve: frame, value, left handle, right handle, interpolation code."""
    points = fcurve.keyframe_points
    count = len(points)
    rows = np.empty((count, 7))
    for column, field in ((0, "co"), (2, "handle_left"), (4, "handle_right")):
        rows[:, column : column + 2] = compat.read_array(points, field, count, 2)
    rows[:, 6] = compat.read_array(points, "interpolation", count, 1, np.int32)
    return rows


def _keys_of_rows(curves: list[np.ndarray]):
    """(times, values (K, C), interpolation, handles_left, handles_right) of one channel's F-curve rows.

    A channel has one interpolation, an F-curve one per key (its segment's; the last key's is unused).
    Keys mixing LINEAR and BEZIER become BEZIER, each LINEAR segment's handles a third of the way
    along its line (it plays the same); components keyed at different frames, or CONSTANT mixed with
    the others, are baked to BEZIER keys that play as Blender does (``curves.bake_keys``). Other
    Blender interpolations (SINE, BACK…) count as LINEAR. None when no F-curve has keys.
    """
    curves = [rows for rows in curves if len(rows)]
    if not curves:
        return None
    times = curves[0][:, 0]
    if all(len(rows) == len(times) for rows in curves):  # codes and times tested for all curves at once
        keys = np.stack(curves, axis=1)  # (K, C, 7)
        used = set(_segment_codes(keys).ravel().tolist())
        same_times = bool((keys[:, :, 0] == times[:, None]).all())
    else:
        used = set(np.concatenate([_segment_codes(rows) for rows in curves]).tolist())
        same_times = False
    if len(used) == 1 and (same_times or used != {INTERPOLATION_CODES["BEZIER"]}):
        interpolation = _INTERPOLATION_NAMES[used.pop()]
        if not same_times:  # a curve of straight lines or steps is itself at the union of its keys
            times = np.unique(np.concatenate([rows[:, 0] for rows in curves]))
            columns = [sample(rows[:, 0], rows[:, 1:2], interpolation, None, None, times) for rows in curves]
            return times, np.concatenate(columns, axis=1), interpolation, None, None
        if interpolation != "BEZIER":
            return times, keys[:, :, 1], interpolation, None, None
        return times, keys[:, :, 1], interpolation, keys[:, :, 2:4], keys[:, :, 4:6]
    if same_times and INTERPOLATION_CODES["CONSTANT"] not in used:
        keys = np.stack([_linear_handles(rows, _segment_codes(rows)) for rows in curves], 1)
        return times, keys[:, :, 1], "BEZIER", keys[:, :, 2:4], keys[:, :, 4:6]
    frames = np.unique(np.concatenate([rows[:, 0] for rows in curves]))
    baked = bake_keys(frames, lambda at: np.concatenate([_played(rows, at) for rows in curves], axis=1))
    return baked[0], baked[1], "BEZIER", baked[2], baked[3]


def _segment_codes(rows: np.ndarray) -> np.ndarray:
    """The interpolation code of each segment of an F-curve's rows (K, 7) (of its one key when it has
    one), or of several F-curves' (K, C, 7): Blender's easings beyond CONSTANT, LINEAR and BEZIER count
    as LINEAR."""
    codes = rows[:-1, ..., 6] if len(rows) > 1 else rows[..., 6]
    return np.where(codes > INTERPOLATION_CODES["BEZIER"], INTERPOLATION_CODES["LINEAR"], codes).astype(int)


def _linear_handles(rows: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``rows`` with the handles on each side of a LINEAR segment a third of the way along it."""
    rows = rows.copy()
    linear = np.flatnonzero(codes == INTERPOLATION_CODES["LINEAR"])
    step = (rows[linear + 1, :2] - rows[linear, :2]) / 3
    rows[linear, 4:6] = rows[linear, :2] + step
    rows[linear + 1, 2:4] = rows[linear + 1, :2] - step
    return rows


def _played(rows: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """(N, 1) values an F-curve of mixed interpolations plays at ``frames``."""
    codes = _segment_codes(rows)
    seg = np.clip(np.searchsorted(rows[:, 0], frames, side="right") - 1, 0, len(codes) - 1)
    played = np.empty((len(frames), 1))
    for code in np.unique(codes):
        at = codes[seg] == code
        played[at] = sample(
            rows[:, 0],
            rows[:, 1:2],
            _INTERPOLATION_NAMES[code],
            rows[:, None, 2:4],
            rows[:, None, 4:6],
            frames[at],
        )
    return played


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
        hold_start=record.hold_start,
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
        pose = pose_target(channel_record.data_path) if channel_record.kind == "bone" else None
        if pose is not None:  # the bone's name in Blender, which the skeleton uses
            target = pose[0]
        animation.channels += _recorded_channels(channel_record, fcurves, target, maps)
    return animation


def _recorded_channels(record: ChannelRecord, fcurves, target: str, maps) -> list[Channel]:
    """The Scene channels of one record: as imported, with their origins, while the F-curves are as
    written; else as the F-curves now give them, without origins (see the module)."""
    curves = {fc.array_index: fcurve_rows(fc) for fc in fcurves}
    if fcurve_digest(curves) != record.digest:
        return _restore(record, curves, maps, target)
    unkept = any(source.keys is None for source in record.sources)
    restored = _as_imported(_restore(record, curves, maps, target)) if unkept else []
    if unkept and len(restored) != len(record.sources):  # the armature changed under the keys
        return restored
    channels = []
    for i, source in enumerate(record.sources):
        channel = restored[i] if source.keys is None else _channel_of(record, source, target)
        channel.origin = source.origin
        channels.append(channel)
    return channels


def _channel_of(record: ChannelRecord, source: SceneChannel, target: str) -> Channel:
    """A Scene channel from its record, with the keys the record kept."""
    keys = source.keys
    return Channel(
        record.kind,
        target,
        record.path,
        keys.times,
        keys.values,
        keys.interpolation,
        keys.handles_left,
        keys.handles_right,
        extras=dict(source.extras),
        index=source.index,
    )


def _untagged_animation(context, action, maps, modes: dict[str, str]) -> Animation:
    """The Scene animation of an action made in Blender; ``modes``: pose bone → rotation mode (a bone
    plays only the rotation curves of its mode)."""
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
        pose = pose_target(data_path)
        if pose is None:
            continue
        bone, path = pose
        mode = modes.get(bone, "QUATERNION")
        if path in _ROTATION_MODES and mode not in _ROTATION_MODES[path]:
            continue  # Blender does not play it
        keys = _keys_of_rows([fcurve_rows(fc) for fc in fcurves])
        if keys is None:
            continue
        times, values, interpolation, left, right = keys
        channel = Channel("bone", bone, path, times, values, interpolation, left, right)
        if path == "rotation_axis_angle" or (path == "rotation_euler" and mode != "XYZ"):
            channel, path = _as_quaternions(channel, mode), "rotation_quaternion"
        channel = bones.relative_channel(channel, path, maps, None)
        if channel is not None:
            animation.channels.append(channel)
    return animation


# The rotation curves each pose rotation mode plays.
_ROTATION_MODES = {
    "rotation_quaternion": ("QUATERNION",),
    "rotation_axis_angle": ("AXIS_ANGLE",),
    "rotation_euler": ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"),
}


def _as_quaternions(channel: Channel, mode: str) -> Channel:
    """A pose channel of axis-angles, or eulers in another order than XYZ, as the quaternion channel that
    plays the same rotations: its keys again for steps, else Bézier keys baked along it."""

    def quaternions(frames):
        rotations = sample(
            channel.times,
            channel.values,
            channel.interpolation,
            channel.handles_left,
            channel.handles_right,
            frames,
        )
        if mode == "AXIS_ANGLE":
            return axis_angle_to_quat(rotations)
        return matrix_to_quat(euler_order_to_matrix(rotations, mode))

    if channel.interpolation == "CONSTANT":
        keys = (channel.times, quaternions(channel.times), None, None)
    else:
        keys = bake_keys(channel.times, quaternions, quaternion=True)
    channel.path = "rotation_quaternion"
    channel.times, channel.values, channel.handles_left, channel.handles_right = keys
    channel.interpolation = "CONSTANT" if channel.interpolation == "CONSTANT" else "BEZIER"
    return channel
