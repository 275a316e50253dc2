"""What the builder records on each action so that export gets the Scene's animation back.

Every action the builder makes carries one ``AnimationRecord`` in its ``props.ANIMATION``
property: the Scene animation it belongs to (name, frame rate and range, its place among the
import's animations, the group tying the actions of one animation together) and a
``ChannelRecord`` for each Scene channel it keys: where the channel's F-curves are, what the
builder did to its keys on the way in (for the extractor to undo on edited channels), the digest
of the F-curves as written (``animation.fcurve_digest``: the one test of "was this channel
edited?") and the Scene channel itself: extras, component, origin (``ChannelOrigin``) and, when
the F-curves as written do not give them back bit for bit, its keys. ``write_record`` and
``read_record`` are the only way in and out. The animation's fields are ID properties, for the
cheap reads of lists and panels; the channel records are one JSON text, as the extras codec's JSON
form has them, except that bytes and the arrays of numbers of keys (as their float64 bytes) lie one
after another in one bytes property (``BYTES``), the text holding where (``_Spans``): Blender copies
one string or bytes property at once where it copies a tree of ID properties node by node
(appending the actions of a large import from another .blend: 36 s as trees, 0.4 s as text), and
raw bytes need neither base64 nor JSON escapes. Records saved by earlier versions, the channels a
tree of ID properties or a text with its bytes in base64 (``formats.extras``), still read.
"""

from __future__ import annotations

import base64
import json
from dataclasses import MISSING, dataclass, field, fields
from functools import cache

import numpy as np

from ...formats import extras as codec
from ...formats.scene import Channel, ChannelOrigin
from . import props


@dataclass
class Keys:
    """A channel's keys, as the Scene had them."""

    times: np.ndarray  # (K,) float64 frames
    values: np.ndarray  # (K, C) float64
    interpolation: str = "LINEAR"
    handles_left: np.ndarray | None = None  # (K, C, 2)
    handles_right: np.ndarray | None = None

    @classmethod
    def of(cls, channel: Channel) -> Keys:
        times = np.asarray(channel.times, np.float64)
        handles = [
            None if h is None else np.asarray(h, np.float64).reshape(len(times), -1, 2)
            for h in (channel.handles_left, channel.handles_right)
        ]
        values = np.asarray(channel.values, np.float64).reshape(len(times), -1)
        return cls(times, values, channel.interpolation, *handles)


@dataclass
class SceneChannel:
    """One Scene channel a record's F-curves carry, with what F-curves do not hold."""

    extras: dict = field(default_factory=dict)  # Channel.extras
    index: int | None = None  # Channel.index
    origin: ChannelOrigin | None = None  # Channel.origin
    keys: Keys | None = None  # the keys, when the F-curves as written do not give them back bit for bit


@dataclass
class ChannelRecord:
    """A Scene channel (or the per-component channels merged into one) as its F-curves hold it."""

    kind: str  # Channel.target_kind
    target: str  # Channel.target as imported (export follows renames)
    path: str  # Channel.path
    order: int = 0  # place among the animation's channels (export keeps the order)
    data_path: str = ""  # of the channel's F-curves
    array_index: int | None = None  # the one F-curve of ``data_path`` it keys; None: one per component
    digest: str = ""  # animation.fcurve_digest of the F-curves as written
    # The Scene channel, or (``merged``) the per-component channels merged into these F-curves.
    sources: list[SceneChannel] = field(default_factory=list)
    # What the builder changed on the way in:
    loop: dict | None = None  # curves.loop_keys' changes, by F-curve array index (for curves.unloop_rows)
    slerp: list[float] = field(default_factory=list)  # frames curves.slerp_keys added
    flipped: list[int] = field(default_factory=list)  # quaternion keys sign-flipped for continuity
    baked: str = ""  # the path sampled at every frame ("rotation_euler": into quaternions)
    offset: list[float] = field(default_factory=list)  # added to each component (a texture centre)

    @property
    def merged(self) -> bool:
        """Whether the F-curves key a whole vector merged from per-component channels."""
        return self.array_index is None and any(s.index is not None for s in self.sources)


@dataclass
class AnimationRecord:
    """One action's share of a Scene animation."""

    name: str  # Animation.name as imported (export follows renames)
    fps: float
    loop: bool
    frame_start: float
    frame_end: float
    index: int  # place among the import's animations (export keeps the order)
    group: str  # shared by the actions of one animation (one per animated datablock)
    primary: bool  # the group's first action: it holds the animation's extras
    skeleton: int | None = None  # Animation.skeleton
    channels: list[ChannelRecord] = field(default_factory=list)
    hold_start: bool = False  # Animation.hold_start


BYTES = "channel_bytes"  # the record's key: the bytes its channel records hold, one after another


def write_record(action, record: AnimationRecord) -> None:
    stored = _plain(record)
    spans = _Spans()
    stored["channels"] = json.dumps(record.channels, default=spans.jsonable, check_circular=False)
    if spans.parts:
        stored[BYTES] = b"".join(spans.parts)
    action[props.ANIMATION] = stored


def read_record(action) -> AnimationRecord | None:
    """The action's record; None for an action the builder did not make."""
    if props.ANIMATION not in action:
        return None
    data = action[props.ANIMATION].to_dict()
    held = data.pop(BYTES, b"")
    channels = [_channel(d) for d in _channel_dicts(data.pop("channels", "[]"), held)]
    return AnimationRecord(**{k: codec.decode(v) for k, v in data.items()}, channels=channels)


# Cheap reads of a record's top-level fields, for lists and panels that look at every action.


def record_group(action) -> str | None:
    """``AnimationRecord.group`` of the action (None for an action the builder did not make)."""
    stored = action.get(props.ANIMATION)
    return None if stored is None else stored.get("group")


def record_index(action) -> int | None:
    """``AnimationRecord.index`` of the action."""
    stored = action.get(props.ANIMATION)
    return None if stored is None else codec.decode(stored.get("index"))


def is_primary(action) -> bool:
    """``AnimationRecord.primary`` of the action."""
    stored = action.get(props.ANIMATION)
    return bool(stored is not None and stored.get("primary"))


def channel_targets(action) -> list[tuple[str, str]]:
    """(``ChannelRecord.kind``, ``ChannelRecord.target``) of each channel the action keys."""
    stored = action.get(props.ANIMATION)
    channels = [] if stored is None else _channel_dicts(stored.get("channels", "[]"))
    return [(c["kind"], c["target"]) for c in channels]


def _channel_dicts(stored, held: bytes | None = None) -> list[dict]:
    """The stored channel records as plain values: one JSON text, its bytes in ``held`` (None: left as
    their spans) or in base64, or (a .blend saved by an earlier version) ID properties through the
    extras codec."""
    if isinstance(stored, str):
        return json.loads(stored, object_hook=lambda data: _untagged(data, held))
    return [codec.decode(c) for c in stored]


def _fields(value) -> dict:
    """A record dataclass's fields, those at their default left out."""
    fields = {}
    for name, default in _stored_fields(type(value)):
        v = getattr(value, name)
        if v is not None and not (type(v) is type(default) and v == default):
            fields[name] = v
    return fields


def _plain(record: AnimationRecord) -> dict:
    """The animation's fields as ID properties hold them (the channels apart)."""
    return {name: codec.encode(v) for name, v in _fields(record).items() if name != "channels"}


class _Spans:
    """The bytes of a record's channels one after another: each value's span in them, as the text holds
    it (``{SPAN: [start, stop]}``). A value met again (the times of a bone's location and rotation, the
    stored keys their origins share) is held once."""

    def __init__(self):
        self.parts: list = []
        self.size = 0
        self.seen: dict[int, dict] = {}  # by id: the values live in the record while it is written

    def span(self, value) -> dict:
        """The span of ``value`` (bytes, or an array as its float64 bytes), held on first use."""
        span = self.seen.get(id(value))
        if span is None:
            # Arrays are held as they are (``b"".join`` reads their buffer): no copy before the join.
            data = np.ascontiguousarray(value, "<f8") if type(value) is np.ndarray else bytes(value)
            size = data.nbytes if type(data) is np.ndarray else len(data)
            self.parts.append(data)
            span = self.seen[id(value)] = {_SPAN: [self.size, self.size + size]}
            self.size += size
        return span

    def jsonable(self, value):
        """What ``json.dumps`` cannot write by itself: record dataclasses as dicts, bytes and the arrays
        of keys (as float64 bytes) as their spans; anything else as the extras codec's JSON form has
        it (numpy values plain)."""
        kind = type(value)
        if kind is Keys:
            return {name: self.span(v) if type(v) is np.ndarray else v for name, v in _fields(value).items()}
        if _stored_fields(kind) is not None:
            return _fields(value)
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, (bytes, bytearray, memoryview)):
            return self.span(value)
        raise TypeError(f"a record cannot hold {kind.__name__}")


_SPAN = "__span__"


def _untagged(data: dict, held: bytes | None):
    """Bytes where the text holds them: a span of ``held`` (left as it is without ``held``), or base64
    (as the records of earlier versions)."""
    if len(data) == 1:
        if _SPAN in data and held is not None:
            start, stop = data[_SPAN]
            return held[start:stop]
        if codec.BYTES in data:
            return base64.b64decode(data[codec.BYTES])
    return data


class _Kept:
    """The default of a field kept whatever its value: no value is of this type."""


@cache
def _stored_fields(cls) -> tuple[tuple[str, object], ...] | None:
    """(name, default) of each field of a record dataclass, in order; a value of the default's type and
    equal to it is left out where the default is a str, list or dict (``_Kept()`` for the others). None
    for any other class."""
    if not hasattr(cls, "__dataclass_fields__"):
        return None
    defaults = (
        (f.name, f.default_factory() if f.default_factory is not MISSING else f.default) for f in fields(cls)
    )
    return tuple((name, d if type(d) in (str, list, dict) else _Kept()) for name, d in defaults)


def _array(data: bytes, *shape: int) -> np.ndarray:
    return np.frombuffer(data, "<f8").reshape(shape).copy()


def _keys(data: dict) -> Keys:
    times = _array(data.pop("times"), -1)
    count = len(times)
    arrays = {"values": (count, -1), "handles_left": (count, -1, 2), "handles_right": (count, -1, 2)}
    return Keys(times, **{k: _array(v, *arrays[k]) if k in arrays else v for k, v in data.items()})


def _channel(data: dict) -> ChannelRecord:
    sources = [
        SceneChannel(
            **{
                k: ChannelOrigin(**v) if k == "origin" else _keys(v) if k == "keys" else v
                for k, v in source.items()
            }
        )
        for source in data.pop("sources", [])
    ]
    return ChannelRecord(**data, sources=sources)
