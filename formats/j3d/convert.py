"""J3D animations ⇄ the neutral Scene (one Animation per file, fps 30).

Channels are per component (``Channel.index``), since each J3D track has its
own keys. Keyframed channels are BEZIER with handles a third of the segment
away, which reproduces the game's Hermite curve exactly; the first key's left
and last key's right handle carry the tangents the game never uses (kept for
an exact rewrite). Channel extras: ``tangent_mode`` (0 one tangent, 1 in
and out), ``empty`` (a track
with no keys: it holds the default, scale 1, rotation 0, translation 0,
colour 0, and is shown as one key of that value).

- BCK → bone channels ``scale``, ``rotation_euler`` (radians, XYZ) and
  ``location`` on the joints named by ``joint_names`` (the model's joint
  order), parent-relative in the file's Y-up joint space: the axis conversion
  belongs to the armature object.
- BTK → material channels ``texture.<slot>.scale`` (index 0 U, 1 V),
  ``texture.<slot>.rotate`` (radians, W), ``texture.<slot>.translate`` (0 U,
  1 V), plus the components the game ignores: ``scale_w``, ``rotate_u``,
  ``rotate_v``, ``translate_w``. Extras ``center`` (U, V, W).
- BRK → ``color.register<slot>`` / ``color.konst<slot>`` (index 0..3 = RGBA,
  value / 255; register colours may leave 0..1).
- BPK → ``color.material`` (index 0..3, value / 255).
- BTP → ``texture.<slot>.image_index`` (CONSTANT, one key per frame).

Animation extras keep the loop mode, the rotation exponent, the banks and
the file framing; each channel's ``origin`` holds its track as stored
([count, first, mode]; BTP: [count, first]). A channel that still has its
origin is written from it bit for bit; an edited one is encoded alone and its
entries reuse an identical run of the original bank or go at its end, so no
entry another track reads changes (the framing is kept while the banks are).
Animations without banks (made in Blender) get fresh ones (shared runs,
smallest exponent, identity remaps).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

import numpy as np

from ..curves import sample
from ..errors import FormatError
from ..scene import Animation, Channel, ChannelOrigin, Scene, keys_digest
from .bca import BCA, FULL_DTYPE
from .bca import JOINT_COUNT_OFFSET as BCA_JOINT_COUNT_OFFSET
from .bck import BCK, JOINT_COUNT_OFFSET, SOUND_DTYPE
from .bpk import BPK
from .brk import BRK, ColorGroup, color_entries
from .btk import BTK
from .btp import BTP, pattern_entries
from .bva import BVA
from .cluster import Cluster
from .container import (
    TANGENT_SHARED,
    TANGENT_SPLIT,
    TRACK_DTYPE,
    BankBuilder,
    Framing,
    Keys,
    key_entries,
    track_widths,
    tracks_keys,
)

FPS = 30.0
LOOP_ONCE, LOOP_ONCE_RESET, LOOP_REPEAT, LOOP_MIRROR_ONCE, LOOP_MIRROR = range(5)
SRT_PATHS = ("scale", "rotation_euler", "location")
SRT_DEFAULTS = (1.0, 0.0, 0.0)
# BTK (axis, component) → (path suffix, index)
TEXTURE_PATHS = {
    (0, 0): ("scale", 0),
    (1, 0): ("scale", 1),
    (2, 0): ("scale_w", None),
    (0, 1): ("rotate_u", None),
    (1, 1): ("rotate_v", None),
    (2, 1): ("rotate", None),
    (0, 2): ("translate", 0),
    (1, 2): ("translate", 1),
    (2, 2): ("translate_w", None),
}
TEXTURE_PATH = re.compile(r"texture\.(\d+)\.(scale|scale_w|rotate|rotate_u|rotate_v|translate|translate_w)$")
DEFAULT_CENTER = (0.5, 0.5, 0.0)
COLOR_SCALE = 1.0 / 255.0
FLOAT_TOLERANCE = 1e-4  # shared tangents that came back as two
MATCH_TOLERANCE = 1e-5  # scene values still showing the original keys (float32 and edit noise)


def rotation_radians(frac: int) -> float:
    """Radians per raw rotation step."""
    return 2.0**frac * np.pi / 32768.0


# -- tracks ⇄ channels ---------------------------------------------------------------


def track_channels(targets, tracks, bank, scale: float, default: float) -> list[Channel]:
    """One channel per track of ``tracks`` (M,), all reading ``bank``, named by ``targets`` (kind, target,
    path, index) each: values and tangents multiplied by ``scale``, Bézier handles a third of the
    segment away along the tangents (each segment is then exactly the game's Hermite segment; the first
    key's left and the last key's right handle use the neighbouring segment's length), the stored
    track as origin. A track without keys holds ``default``, shown as one key. All tracks at once."""
    tracks = np.asarray(tracks).reshape(-1)
    keys, counts = tracks_keys(tracks, bank)
    sizes = np.maximum(counts, 1)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    keyed = np.repeat(counts > 0, sizes)
    times, in_tangents, out_tangents = np.zeros(len(keyed)), np.zeros(len(keyed)), np.zeros(len(keyed))
    values = np.full(len(keyed), float(default))
    times[keyed] = keys.times
    values[keyed] = keys.values * scale
    in_tangents[keyed] = keys.in_tangents * scale
    out_tangents[keyed] = keys.out_tangents * scale
    segment = np.diff(times)  # across two tracks too: never used there
    third = np.where(segment > 0, segment, 1.0) / 3.0
    before, after = np.concatenate([[0.0], third]), np.concatenate([third, [0.0]])
    key = np.arange(len(keyed)) - np.repeat(starts, sizes)
    single = np.repeat(sizes == 1, sizes)
    left_third = np.where(single, 1.0 / 3.0, np.where(key > 0, before, after))
    right_third = np.where(single, 1.0 / 3.0, np.where(key < np.repeat(sizes, sizes) - 1, after, before))
    left = np.stack([times - left_third, values - in_tangents * left_third], axis=-1)[:, None, :]
    right = np.stack([times + right_third, values + out_tangents * right_third], axis=-1)[:, None, :]
    values = values[:, None]
    channels = []
    rows = zip(
        counts.tolist(),
        tracks["first"].tolist(),
        tracks["mode"].tolist(),
        starts.tolist(),
        ends.tolist(),
        strict=True,
    )
    for (kind, target, path, index), (count, first, mode, start, end) in zip(targets, rows, strict=True):
        extras = {"tangent_mode": mode}
        if count == 0:
            extras["empty"] = True
        channel = Channel(
            kind,
            target,
            path,
            times[start:end],
            values[start:end],
            "BEZIER",
            left[start:end],
            right[start:end],
            extras,
            index=index,
        )
        channel.origin = ChannelOrigin([count, first, mode], keys_digest(channel))
        channels.append(channel)
    return channels


def channel_keys(channel: Channel, scale: float) -> Keys:
    """Keys of a channel in file units (values and tangents divided by ``scale``)."""
    times = np.asarray(channel.times, dtype=np.float64)
    values = np.asarray(channel.values, dtype=np.float64).reshape(len(times), -1)[:, 0]
    if (
        channel.interpolation == "BEZIER"
        and channel.handles_left is not None
        and channel.handles_right is not None
    ):
        left = np.asarray(channel.handles_left, dtype=np.float64).reshape(len(times), -1, 2)[:, 0]
        right = np.asarray(channel.handles_right, dtype=np.float64).reshape(len(times), -1, 2)[:, 0]
        in_tangents = (values - left[:, 1]) / np.where(times - left[:, 0] != 0, times - left[:, 0], 1.0)
        out_tangents = (right[:, 1] - values) / np.where(right[:, 0] - times != 0, right[:, 0] - times, 1.0)
    elif channel.interpolation == "LINEAR" and len(times) > 1:
        slopes = np.diff(values) / np.where(np.diff(times) != 0, np.diff(times), 1.0)
        in_tangents = np.concatenate([slopes[:1], slopes])
        out_tangents = np.concatenate([slopes, slopes[-1:]])
    else:  # CONSTANT steps cannot be expressed as Hermite keys: flat tangents
        in_tangents = out_tangents = np.zeros(len(times))
    return Keys(times, values / scale, in_tangents / scale, out_tangents / scale)


@dataclass
class TrackSource:
    """What one track of a file is built from: a channel (or None for a missing one)."""

    channel: Channel | None
    scale: float  # channel units per file unit
    default: float  # the value of a track without keys, in file units


def _track_entries(source: TrackSource, integer: bool, unit: float) -> tuple[int, int, np.ndarray | None]:
    """(count, tangent mode, bank entries in file units but rotations still in radians) of one track."""
    channel = source.channel
    if channel is None:
        return 0, TANGENT_SHARED, None
    extras = channel.extras
    keys = channel_keys(channel, source.scale)
    count = len(keys.times)
    if count == 0 or (
        extras.get("empty") and count == 1 and abs(keys.values[0] - source.default) <= MATCH_TOLERANCE
    ):
        return 0, int(extras.get("tangent_mode", TANGENT_SHARED)), None
    mode = int(extras.get("tangent_mode", TANGENT_SHARED))
    if count > 1 and mode == TANGENT_SHARED:
        # A shared tangent read from a file comes back from the scene as two nearly equal ones.
        tolerance = FLOAT_TOLERANCE if "tangent_mode" in extras else 0.0
        in_tangents, out_tangents = keys.in_tangents, keys.out_tangents
        if integer:
            same = np.array_equal(np.rint(in_tangents / unit), np.rint(out_tangents / unit))
        else:
            same = np.allclose(
                in_tangents.astype(np.float32),
                out_tangents.astype(np.float32),
                rtol=tolerance,
                atol=tolerance,
            )
        if not same:
            mode = TANGENT_SPLIT
    return count, mode, key_entries(keys, mode)


def build_tracks(
    sources: list[TrackSource], dtype: str, default: float, original: list | None, unit: float = 1.0
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Track table entries (N,) and the bank for ``sources`` (values divided by ``unit``).

    With ``original`` (the source file's bank), a channel that still has its origin keeps its
    track as stored, pointing at the same entries; every other channel is encoded alone and
    added to the original bank (an identical run reused, else appended), so no stored entry
    changes. Without it, a fresh bank that shares identical runs. Returns (tracks, bank, bank
    unchanged).
    """
    integer = np.dtype(dtype).kind == "i"
    tracks = np.zeros(len(sources), TRACK_DTYPE)
    bank = None if original is None else np.asarray(original).astype(dtype)
    builder = BankBuilder(dtype, default, bank)
    for i, source in enumerate(sources):
        stored = _stored_track(source.channel, bank)
        if stored is not None:
            tracks[i] = stored
            continue
        count, mode, entries = _track_entries(source, integer, unit)
        tracks[i]["count"], tracks[i]["mode"] = count, mode
        if entries is None:
            continue
        if count > 1:
            entries = entries.reshape(count, -1)
            entries[:, 1:] /= unit
        else:
            entries = entries / unit
        if integer:
            entries = np.rint(entries)
            if entries.min() < -32768 or entries.max() > 32767:
                raise ValueError(
                    f"a key of {source.channel.target} {source.channel.path} does not fit in 16 bits"
                )
        tracks[i]["first"] = builder.add(entries.reshape(-1))
    result = builder.array()
    return tracks, result, bank is not None and np.array_equal(result.view(np.uint8), bank.view(np.uint8))


def _origin_track(channel: Channel | None) -> np.ndarray | None:
    """The (count, first, mode) track a channel was read from, if it still has its origin."""
    origin = None if channel is None else channel.origin
    if origin is None or not isinstance(origin.track, list) or len(origin.track) != 3:
        return None
    track = np.zeros(1, TRACK_DTYPE)
    track["count"], track["first"], track["mode"] = origin.track
    return track


def _stored_track(channel: Channel | None, bank: np.ndarray | None) -> np.ndarray | None:
    """The stored track of an unedited channel (keys as imported) that ``bank`` still holds."""
    track = _origin_track(channel)
    if track is None or bank is None or channel.origin.digest != keys_digest(channel):
        return None
    if int(track["first"][0]) + int(track_widths(track)[0]) > len(bank):
        return None
    return track[0]


def smallest_frac(sources: list[TrackSource], hint: int | None) -> int:
    """The rotation exponent: ``hint`` when everything fits with it, else the smallest that fits."""
    largest = 0.0
    for source in sources:
        if source.channel is not None:
            keys = channel_keys(source.channel, source.scale)
            for array in (keys.values, keys.in_tangents, keys.out_tangents):
                if len(array):
                    largest = max(largest, float(np.abs(array).max()))

    def fits(frac: int) -> bool:
        return np.rint(largest / rotation_radians(frac)) <= 32767

    if hint is not None and 0 <= hint <= 255 and fits(hint):
        return hint
    for frac in range(32):
        if fits(frac):
            return frac
    raise ValueError(f"a rotation of {largest} radians is too large for a J3D file")


# -- framing ⇄ extras ---------------------------------------------------------------


def _framing_extras(framing: Framing, gaps: list[bytes] | None) -> dict:
    extras = {
        "tag": framing.tag,
        "trailer": framing.trailer,
        "section_count_delta": framing.section_count_delta,
        "file_size_delta": framing.file_size_delta,
        "size_overrun": framing.size_overrun,
    }
    if gaps is not None:
        extras["gaps"] = list(gaps)
    return extras


def _framing(extras: dict, exact: bool) -> tuple[Framing, list[bytes] | None]:
    """The file framing from extras; gaps and trailer only when the banks were reused as they were."""
    framing = Framing()
    if "tag" in extras:
        framing.tag = bytes(extras["tag"])
    if not exact:
        return framing, None
    framing.trailer = bytes(extras.get("trailer", b""))
    framing.section_count_delta = int(extras.get("section_count_delta", 0))
    framing.file_size_delta = int(extras.get("file_size_delta", 0))
    framing.size_overrun = int(extras.get("size_overrun", 0))
    gaps = extras.get("gaps")
    return framing, None if gaps is None else [bytes(gap) for gap in gaps]


def _remap_extras(remap: np.ndarray | None) -> list[int] | None:
    if remap is None or np.array_equal(remap, np.arange(len(remap))):
        return None
    return remap.tolist()


def _remap(extras: dict, key: str, count: int) -> np.ndarray | None:
    values = extras.get(key)
    return np.asarray(values, ">u2") if values is not None and len(values) == count else None


def _animation(
    name: str, kind: str, loop_mode: int, length: int, channels: list[Channel], extras: dict
) -> Animation:
    extras = {"j3d_type": kind, "loop_mode": int(loop_mode), **extras}
    loop = loop_mode in (LOOP_REPEAT, LOOP_MIRROR)
    return Animation(name, channels, FPS, 0.0, float(length), loop, extras=extras)


def _loop_and_length(animation: Animation) -> tuple[int, int]:
    loop_mode = animation.extras.get("loop_mode")
    if loop_mode is None:
        loop_mode = LOOP_REPEAT if animation.loop else LOOP_ONCE
    return int(loop_mode), int(round(animation.frame_end - animation.frame_start))


def _bank_extras(bank: np.ndarray) -> list:
    return bank.tolist() if bank.dtype.kind == "i" else bank.astype(np.float64).tolist()


class ChannelIndex:
    """Channels of one animation by (target, path, index).

    A channel of several components without an index (an action made in Blender keys whole
    vectors) is found under each component, as the one-component channel a track needs.
    """

    def __init__(self, channels: list[Channel]):
        self.by_key = {}
        for channel in channels:
            values = np.asarray(channel.values)
            width = values.shape[1] if values.ndim == 2 else 1
            if channel.index is None and width > 1:
                for i in range(width):
                    self.by_key[(channel.target, channel.path, i)] = _component(channel, i)
            else:
                self.by_key[(channel.target, channel.path, channel.index)] = channel

    def get(self, target: str, path: str, index: int | None) -> Channel | None:
        return self.by_key.get((target, path, index))


def _component(channel: Channel, i: int) -> Channel:
    """Component ``i`` of a whole-vector channel."""
    handles = [
        None if h is None else np.asarray(h)[:, i : i + 1]
        for h in (channel.handles_left, channel.handles_right)
    ]
    return Channel(
        channel.target_kind,
        channel.target,
        channel.path,
        channel.times,
        np.asarray(channel.values)[:, i : i + 1],
        channel.interpolation,
        *handles,
        channel.extras,
        index=i,
    )


# -- BCK and BTK (scale, rotation, translation) ------------------------------------------


def _srt_channels(tracks, banks, frac, targets, kind, paths) -> list[Channel]:
    """Channels of a (N, 3 axes, 3 components) SRT track table; ``paths(n, axis, comp)`` → (path, index)."""
    by_component = [
        track_channels(
            [
                (kind, target, *paths(n, axis, component))
                for n, target in enumerate(targets)
                for axis in range(3)
            ],
            tracks[:, :, component],
            banks[component],
            rotation_radians(frac) if component == 1 else 1.0,
            SRT_DEFAULTS[component],
        )
        for component in range(3)
    ]
    # Target by target, component by component, axis by axis.
    return [
        channels[n * 3 + axis] for n in range(len(targets)) for channels in by_component for axis in range(3)
    ]


def _srt_tracks(lookup, count: int, extras: dict) -> tuple[np.ndarray, list[np.ndarray], int, bool]:
    """Build the (count, 3, 3) track table and the three banks; ``lookup(n, axis, comp)`` → channel."""
    tracks = np.zeros((count, 3, 3), TRACK_DTYPE)
    rotation_sources = [TrackSource(lookup(n, a, 1), 1.0, 0.0) for n in range(count) for a in range(3)]
    frac = smallest_frac(rotation_sources, extras.get("rotation_frac"))
    banks = []
    exact = True
    for component, bank_key in enumerate(("scale_bank", "rotation_bank", "translation_bank")):
        sources = [
            TrackSource(lookup(n, a, component), 1.0, SRT_DEFAULTS[component])
            for n in range(count)
            for a in range(3)
        ]
        dtype = "int16" if component == 1 else "float32"
        unit = rotation_radians(frac) if component == 1 else 1.0
        # Raw rotations mean other angles under another exponent: then no stored track is kept.
        original = extras.get(bank_key) if component != 1 or frac == extras.get("rotation_frac") else None
        table, bank, reused = build_tracks(sources, dtype, SRT_DEFAULTS[component], original, unit)
        tracks[:, :, component] = table.reshape(count, 3)
        banks.append(bank)
        exact = exact and reused
    return tracks, banks, frac, exact


def bck_to_scene(bck: BCK, joint_names: list[str], name: str = "", filename: str = "<bytes>") -> Scene:
    if len(joint_names) != bck.joint_count:
        raise FormatError(
            filename,
            JOINT_COUNT_OFFSET,
            f"the animation has {bck.joint_count} joints but the armature has {len(joint_names)}: "
            "it belongs to another model",
        )
    channels = _srt_channels(
        bck.tracks,
        bck.banks(),
        bck.rotation_frac,
        joint_names,
        "bone",
        lambda n, axis, component: (SRT_PATHS[component], axis),
    )
    extras = {
        "rotation_frac": bck.rotation_frac,
        **{
            key: _bank_extras(bank)
            for key, bank in zip(
                ("scale_bank", "rotation_bank", "translation_bank"), bck.banks(), strict=True
            )
        },
        **_framing_extras(bck.framing, bck.gaps),
    }
    if bck.sounds is not None:
        extras["sounds"] = np.ascontiguousarray(bck.sounds, SOUND_DTYPE).tobytes()
        extras["sound_padding"] = bck.sound_padding
        extras["sound_gap"] = bck.sound_gap
    animation = _animation(name, "bck", bck.loop_mode, bck.length, channels, extras)
    return Scene(name=name, animations=[animation])


def bck_from_animation(animation: Animation, joint_names: list[str]) -> BCK:
    index = ChannelIndex([c for c in animation.channels if c.target_kind == "bone"])

    def lookup(n, axis, component):
        return index.get(joint_names[n], SRT_PATHS[component], axis)

    extras = animation.extras
    tracks, banks, frac, exact = _srt_tracks(lookup, len(joint_names), extras)
    loop_mode, length = _loop_and_length(animation)
    framing, gaps = _framing(extras, exact)
    bck = BCK(loop_mode, frac, length, tracks, *banks, gaps=gaps, framing=framing)
    if "sounds" in extras:
        bck.sounds = np.frombuffer(bytes(extras["sounds"]), SOUND_DTYPE).copy()
        bck.sound_padding = bytes(extras.get("sound_padding", bytes(6)))
        bck.sound_gap = bytes(extras.get("sound_gap", b"")) if exact else b""
    return bck


def btk_to_scene(btk: BTK, name: str = "") -> Scene:
    def paths(n, axis, component):
        suffix, index = TEXTURE_PATHS[(axis, component)]
        return f"texture.{int(btk.texture_indices[n])}.{suffix}", index

    channels = _srt_channels(
        btk.tracks, btk.banks(), btk.rotation_frac, btk.material_names, "material", paths
    )
    for i, channel in enumerate(channels):
        channel.extras["center"] = [float(v) for v in btk.centers[i // 9]]
    extras = {
        "rotation_frac": btk.rotation_frac,
        "calculation": btk.calculation,
        "post_fields": btk.post_fields,
        **{
            key: _bank_extras(bank)
            for key, bank in zip(
                ("scale_bank", "rotation_bank", "translation_bank"), btk.banks(), strict=True
            )
        },
        **_framing_extras(btk.framing, btk.gaps),
    }
    remap = _remap_extras(btk.remap)
    if remap is not None:
        extras["remap"] = remap
    return Scene(name=name, animations=[_animation(name, "btk", btk.loop_mode, btk.length, channels, extras)])


def btk_from_animation(animation: Animation) -> BTK:
    matrices: dict[tuple[str, int], list[Channel]] = {}
    for channel in animation.channels:
        match = TEXTURE_PATH.match(channel.path) if channel.target_kind == "material" else None
        if match:
            matrices.setdefault((channel.target, int(match.group(1))), []).append(channel)
    keys = list(matrices)
    index = ChannelIndex(animation.channels)

    def lookup(n, axis, component):
        target, slot = keys[n]
        suffix, component_index = TEXTURE_PATHS[(axis, component)]
        return index.get(target, f"texture.{slot}.{suffix}", component_index)

    extras = animation.extras
    tracks, banks, frac, exact = _srt_tracks(lookup, len(keys), extras)
    centers = np.array([matrices[key][0].extras.get("center", DEFAULT_CENTER) for key in keys], np.float32)
    loop_mode, length = _loop_and_length(animation)
    framing, gaps = _framing(extras, exact)
    return BTK(
        loop_mode,
        frac,
        length,
        tracks,
        [target for target, _ in keys],
        np.array([slot for _, slot in keys], np.uint8),
        centers.reshape(len(keys), 3),
        *banks,
        remap=_remap(extras, "remap", len(keys)),
        post_fields=bytes(extras.get("post_fields", bytes(40))),
        calculation=int(extras.get("calculation", 0)),
        gaps=gaps,
        framing=framing,
    )


# -- BRK and BPK (colours) ------------------------------------------------------------------


def _color_channels(tracks, banks, targets, paths) -> list[Channel]:
    by_component = [
        track_channels(
            [("material", target, paths[n], c) for n, target in enumerate(targets)],
            tracks[:, c],
            banks[c],
            COLOR_SCALE,
            0.0,
        )
        for c in range(4)
    ]
    return [by_component[c][n] for n in range(len(targets)) for c in range(4)]


def _color_tracks(
    groups: list[list[Channel]], extras: dict, bank_keys: list[str]
) -> tuple[np.ndarray, list, bool]:
    """Tracks (N, 4) and four banks for entries given as lists of four channels (RGBA)."""
    tracks = np.zeros((len(groups), 4), TRACK_DTYPE)
    banks = []
    exact = True
    for c in range(4):
        sources = [TrackSource(group[c], COLOR_SCALE, 0.0) for group in groups]
        table, bank, reused = build_tracks(sources, "int16", 0.0, extras.get(bank_keys[c]))
        tracks[:, c] = table
        banks.append(bank)
        exact = exact and reused
    return tracks, banks, exact


COLOR_PATH = re.compile(r"color\.(register|konst)(\d+)$")


def brk_to_scene(brk: BRK, name: str = "") -> Scene:
    channels = []
    extras: dict = {"unused_frac": brk.unused_frac}
    for label, group in (("register", brk.register), ("konst", brk.konst)):
        paths = [f"color.{label}{int(slot)}" for slot in group.entries["slot"]]
        channels += _color_channels(group.entries["tracks"], group.banks, group.material_names, paths)
        for c, bank in enumerate(group.banks):
            extras[f"{label}_bank_{'rgba'[c]}"] = _bank_extras(bank)
        remap = _remap_extras(group.remap)
        if remap is not None:
            extras[f"{label}_remap"] = remap
    extras.update(_framing_extras(brk.framing, brk.gaps))
    return Scene(name=name, animations=[_animation(name, "brk", brk.loop_mode, brk.length, channels, extras)])


def brk_from_animation(animation: Animation) -> BRK:
    entries: dict[str, dict[tuple[str, int], list]] = {"register": {}, "konst": {}}
    for channel in animation.channels:
        match = COLOR_PATH.match(channel.path) if channel.target_kind == "material" else None
        if match and channel.index in range(4):
            slots = entries[match.group(1)].setdefault((channel.target, int(match.group(2))), [None] * 4)
            slots[channel.index] = channel
    extras = animation.extras
    groups = []
    exact = True
    for label in ("register", "konst"):
        keys = list(entries[label])
        tracks, banks, reused = _color_tracks(
            list(entries[label].values()), extras, [f"{label}_bank_{c}" for c in "rgba"]
        )
        exact = exact and reused
        slots = np.array([slot for _, slot in keys], np.uint8)
        group = ColorGroup(
            color_entries(slots, tracks),
            [target for target, _ in keys],
            banks,
            _remap(extras, f"{label}_remap", len(keys)),
        )
        groups.append(group)
    loop_mode, length = _loop_and_length(animation)
    framing, gaps = _framing(extras, exact)
    return BRK(
        loop_mode,
        length,
        *groups,
        unused_frac=int(extras.get("unused_frac", 0xFF)),
        gaps=gaps,
        framing=framing,
    )


def bpk_to_scene(bpk: BPK, name: str = "") -> Scene:
    channels = _color_channels(
        bpk.tracks, bpk.banks, bpk.material_names, ["color.material"] * len(bpk.tracks)
    )
    extras: dict = {"unused": bpk.unused}
    for c, bank in enumerate(bpk.banks):
        extras[f"bank_{'rgba'[c]}"] = _bank_extras(bank)
    remap = _remap_extras(bpk.remap)
    if remap is not None:
        extras["remap"] = remap
    extras.update(_framing_extras(bpk.framing, bpk.gaps))
    return Scene(name=name, animations=[_animation(name, "bpk", bpk.loop_mode, bpk.length, channels, extras)])


def bpk_from_animation(animation: Animation) -> BPK:
    entries: dict[str, list] = {}
    for channel in animation.channels:
        if (
            channel.target_kind == "material"
            and channel.path == "color.material"
            and channel.index in range(4)
        ):
            entries.setdefault(channel.target, [None] * 4)[channel.index] = channel
    extras = animation.extras
    tracks, banks, exact = _color_tracks(list(entries.values()), extras, [f"bank_{c}" for c in "rgba"])
    loop_mode, length = _loop_and_length(animation)
    framing, gaps = _framing(extras, exact)
    return BPK(
        loop_mode,
        length,
        tracks,
        list(entries),
        banks,
        remap=_remap(extras, "remap", len(entries)),
        unused=bytes(extras.get("unused", b"\xff" * 3)),
        gaps=gaps,
        framing=framing,
    )


# -- BTP (texture index per frame) -------------------------------------------------------------

IMAGE_INDEX_PATH = re.compile(r"texture\.(\d+)\.image_index$")


def btp_to_scene(btp: BTP, name: str = "") -> Scene:
    channels = []
    for entry, target in zip(btp.entries, btp.material_names, strict=True):
        count, first = int(entry["count"]), int(entry["first"])
        values = btp.indices[first : first + count].astype(np.float64)[:, None]
        channel = Channel(
            "material",
            target,
            f"texture.{int(entry['slot'])}.image_index",
            np.arange(count, dtype=np.float64),
            values,
            "CONSTANT",
        )
        channel.origin = ChannelOrigin([count, first], keys_digest(channel))
        channels.append(channel)
    extras = {"unused_frac": btp.unused_frac, "indices": _bank_extras(btp.indices)}
    remap = _remap_extras(btp.remap)
    if remap is not None:
        extras["remap"] = remap
    extras.update(_framing_extras(btp.framing, btp.gaps))
    return Scene(name=name, animations=[_animation(name, "btp", btp.loop_mode, btp.length, channels, extras)])


def _per_frame(channel: Channel) -> np.ndarray:
    """The index held at every whole frame from 0 to the last key (a step curve)."""
    times = np.rint(np.asarray(channel.times, dtype=np.float64)).astype(np.int64)
    values = np.rint(np.asarray(channel.values, dtype=np.float64).reshape(len(times), -1)[:, 0]).astype(
        np.int64
    )
    if not len(times):
        return np.zeros(0, np.int64)
    last = max(int(times.max()), 0)
    if last > 0xFFFE:
        raise ValueError(f"{channel.target} {channel.path}: a J3D pattern holds at most 65535 frames")
    frames = np.arange(last + 1)
    held = np.clip(np.searchsorted(times, frames, side="right") - 1, 0, len(times) - 1)
    return values[held]


def btp_from_animation(animation: Animation) -> BTP:
    found = []
    for channel in animation.channels:
        match = IMAGE_INDEX_PATH.match(channel.path) if channel.target_kind == "material" else None
        if match:
            found.append((channel, int(match.group(1)), _per_frame(channel)))
    extras = animation.extras
    original = extras.get("indices")
    bank = None if original is None else np.asarray(original, np.int64)
    builder = BankBuilder(">u2", None, bank)
    firsts = []
    for channel, _, values in found:
        origin = channel.origin
        stored = (
            bank is not None
            and origin is not None
            and origin.digest == keys_digest(channel)
            and isinstance(origin.track, list)
            and len(origin.track) == 2
            and origin.track[0] == len(values)
            and origin.track[1] + len(values) <= len(bank)
        )
        firsts.append(int(origin.track[1]) if stored else builder.add(values))
    indices = builder.array()
    exact = bank is not None and np.array_equal(indices, bank)
    entries = pattern_entries([len(v) for _, _, v in found], firsts, [slot for _, slot, _ in found])
    loop_mode, length = _loop_and_length(animation)
    framing, gaps = _framing(extras, exact)
    return BTP(
        loop_mode,
        length,
        entries,
        [c.target for c, _, _ in found],
        indices,
        remap=_remap(extras, "remap", len(found)),
        unused_frac=int(extras.get("unused_frac", 0xFF)),
        gaps=gaps,
        framing=framing,
    )


# -- BCA, BVA, BLA (a value per frame) and BLK (keyed cluster weights) ---------------------------

# BVA: visibility of shape <index> of the model, as the object ``hide`` (1 hidden) of the mesh the
# J3D model import names shape<index>; BLA/BLK: the weight of cluster <index> as the shape key
# cluster<index> (the file names neither). Before binding (operators/j3d.py), a cluster channel's
# target is CLUSTER_TARGET.
SHAPE_NAME = "shape{}"
SHAPE_TARGET = re.compile(r"shape(\d+)$")
CLUSTER_KEY = "cluster{}"
CLUSTER_PATH = re.compile(r"cluster(\d+)$")
CLUSTER_TARGET = "clusters"


def frame_channel(
    kind: str,
    target: str,
    path: str,
    index,
    values: np.ndarray,
    track,
    default: float,
    interpolation: str = "LINEAR",
) -> Channel:
    """One channel keyed at every frame of a full-frame track (``values``: the track's values in channel
    units); a track of no frames holds ``default`` (one key, extras ``empty``)."""
    count, first = int(track["count"]), int(track["first"])
    extras = {}
    if count == 0:
        extras["empty"] = True
        values = np.array([default])
    channel = Channel(
        kind,
        target,
        path,
        np.arange(len(values), dtype=np.float64),
        np.asarray(values, np.float64)[:, None].copy(),
        interpolation,
        extras=extras,
        index=index,
    )
    channel.origin = ChannelOrigin([count, first], keys_digest(channel))
    return channel


def per_frame_values(channel: Channel) -> np.ndarray:
    """The channel's value at every whole frame from 0 to its last key."""
    times = np.asarray(channel.times, np.float64)
    if not len(times):
        return np.zeros(0)
    last = max(int(np.rint(times.max())), 0)
    if last > 0xFFFE:
        raise ValueError(f"{channel.target} {channel.path}: a J3D track holds at most 65535 frames")
    values = np.asarray(channel.values, np.float64).reshape(len(times), -1)[:, :1]
    left, right = channel.handles_left, channel.handles_right
    if left is not None and right is not None:
        left = np.asarray(left, np.float64).reshape(len(times), -1, 2)[:, :1]
        right = np.asarray(right, np.float64).reshape(len(times), -1, 2)[:, :1]
    else:
        left = right = None
    return sample(times, values, channel.interpolation, left, right, np.arange(last + 1))[:, 0]


def build_full_tracks(
    channels: list[Channel | None],
    dtype: str,
    default: float,
    original: list | None,
    unit: float = 1.0,
    wrap: bool = False,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Full-frame tracks (N,) and their bank; like ``build_tracks``: an unedited channel keeps its stored
    track, an edited one is sampled at every frame and added to the original bank (identical runs shared).
    A missing channel, or an empty one still holding ``default``, stores no frames. ``wrap``: integer
    values are angles, taken modulo the type's range (a full turn)."""
    integer = np.dtype(dtype).kind in "iu"
    tracks = np.zeros(len(channels), FULL_DTYPE)
    bank = None if original is None else np.asarray(original).astype(dtype)
    builder = BankBuilder(dtype, None, bank)
    for i, channel in enumerate(channels):
        if channel is None:
            continue
        origin = channel.origin
        if (
            bank is not None
            and origin is not None
            and isinstance(origin.track, list)
            and len(origin.track) == 2
            and origin.digest == keys_digest(channel)
            and origin.track[0] + origin.track[1] <= len(bank)
        ):
            tracks[i] = tuple(origin.track)
            continue
        values = per_frame_values(channel)
        if not len(values) or (
            channel.extras.get("empty") and len(values) == 1 and abs(values[0] - default) <= MATCH_TOLERANCE
        ):
            continue
        values = values / unit
        if integer:
            values = np.rint(values)
            info = np.iinfo(dtype)
            if wrap:
                values = (values - info.min) % (info.max - info.min + 1) + info.min
            if values.min() < info.min or values.max() > info.max:
                raise ValueError(f"a key of {channel.target} {channel.path} does not fit in {dtype}")
        tracks[i] = (len(values), builder.add(values))
    result = builder.array()
    return tracks, result, bank is not None and np.array_equal(result.view(np.uint8), bank.view(np.uint8))


def bca_to_scene(bca: BCA, joint_names: list[str], name: str = "", filename: str = "<bytes>") -> Scene:
    if len(joint_names) != bca.joint_count:
        raise FormatError(
            filename,
            BCA_JOINT_COUNT_OFFSET,
            f"the animation has {bca.joint_count} joints but the armature has {len(joint_names)}: "
            "it belongs to another model",
        )
    channels = []
    for n, target in enumerate(joint_names):
        for component, bank in enumerate(bca.banks()):
            scale = rotation_radians(0) if component == 1 else 1.0
            for axis in range(3):
                track = bca.tracks[n, axis, component]
                count, first = int(track["count"]), int(track["first"])
                values = bank[first : first + count].astype(np.float64) * scale
                if component == 1:  # between frames Blender turns the shorter way, as the game's lerp does
                    values = np.unwrap(values)
                channels.append(
                    frame_channel(
                        "bone", target, SRT_PATHS[component], axis, values, track, SRT_DEFAULTS[component]
                    )
                )
    extras = {
        "unused": bca.unused,
        **{
            key: _bank_extras(bank)
            for key, bank in zip(
                ("scale_bank", "rotation_bank", "translation_bank"), bca.banks(), strict=True
            )
        },
        **_framing_extras(bca.framing, bca.gaps),
    }
    return Scene(name=name, animations=[_animation(name, "bca", bca.loop_mode, bca.length, channels, extras)])


def bca_from_animation(animation: Animation, joint_names: list[str]) -> BCA:
    """The BCA of the bone channels, joints in ``joint_names`` order; a component without a channel holds
    its default (scale 1, rotation 0, translation 0) for one frame (the game reads a track's last)."""
    index = ChannelIndex([c for c in animation.channels if c.target_kind == "bone"])
    extras = animation.extras
    tracks = np.zeros((len(joint_names), 3, 3), FULL_DTYPE)
    banks = []
    exact = True
    for component, key in enumerate(("scale_bank", "rotation_bank", "translation_bank")):
        default = Channel(
            "bone", "", SRT_PATHS[component], np.zeros(1), np.full((1, 1), SRT_DEFAULTS[component])
        )
        channels = [
            index.get(name, SRT_PATHS[component], axis) or default
            for name in joint_names
            for axis in range(3)
        ]
        dtype = "int16" if component == 1 else "float32"
        unit = rotation_radians(0) if component == 1 else 1.0
        table, bank, reused = build_full_tracks(
            channels, dtype, SRT_DEFAULTS[component], extras.get(key), unit, wrap=component == 1
        )
        tracks[:, :, component] = table.reshape(len(joint_names), 3)
        banks.append(bank)
        exact = exact and reused
    loop_mode, length = _loop_and_length(animation)
    framing, gaps = _framing(extras, exact)
    return BCA(
        loop_mode, length, tracks, *banks, unused=int(extras.get("unused", 0)), gaps=gaps, framing=framing
    )


def bva_to_scene(bva: BVA, name: str = "") -> Scene:
    channels = []
    for shape, track in enumerate(bva.tracks):
        count, first = int(track["count"]), int(track["first"])
        hidden = (bva.values[first : first + count] == 0).astype(np.float64)
        channel = frame_channel(
            "object", SHAPE_NAME.format(shape), "hide", None, hidden, track, 0.0, "CONSTANT"
        )
        channels.append(channel)
    extras = {
        "unused": bva.unused,
        "values": _bank_extras(bva.values),
        "tracks": [[int(t["count"]), int(t["first"])] for t in bva.tracks],
        **_framing_extras(bva.framing, bva.gaps),
    }
    return Scene(name=name, animations=[_animation(name, "bva", bva.loop_mode, bva.length, channels, extras)])


def bva_from_animation(animation: Animation) -> BVA:
    """The BVA of the ``hide`` channels of shape<index>. A shape the animation no longer has a channel
    for (not applied: not selected) keeps its stored track, or, in a new file, is always shown."""
    shapes = {}
    for channel in animation.channels:
        match = SHAPE_TARGET.match(channel.target) if channel.target_kind == "object" else None
        if match and channel.path == "hide":
            shapes[int(match.group(1))] = channel
    extras = animation.extras
    stored = extras.get("tracks") or []
    count = max(max(shapes, default=-1) + 1, len(stored))
    shown = []
    for shape in range(count):  # the file stores shown (1), the scene hidden (1): edited keys flip
        channel = shapes.get(shape)
        if channel is None and shape >= len(stored):
            channel = Channel("object", SHAPE_NAME.format(shape), "hide", np.zeros(1), np.zeros((1, 1)))
        if channel is not None and not (channel.origin and channel.origin.digest == keys_digest(channel)):
            hidden = np.clip(np.rint(np.asarray(channel.values, np.float64)), 0.0, 1.0)
            channel = dataclasses.replace(channel, values=1.0 - hidden, handles_left=None, handles_right=None)
        shown.append(channel)
    tracks, values, exact = build_full_tracks(shown, "uint8", 1.0, extras.get("values"))
    for shape, channel in enumerate(shown):
        if channel is None and sum(stored[shape]) <= len(values):
            tracks[shape] = tuple(stored[shape])
    loop_mode, length = _loop_and_length(animation)
    framing, gaps = _framing(extras, exact)
    return BVA(
        loop_mode, length, tracks, values, unused=int(extras.get("unused", 0xFF)), gaps=gaps, framing=framing
    )


def cluster_to_scene(cluster: Cluster, name: str = "") -> Scene:
    if cluster.keyed:
        targets = [
            ("shape_key", CLUSTER_TARGET, CLUSTER_KEY.format(n), None) for n in range(len(cluster.tracks))
        ]
        channels = track_channels(targets, cluster.tracks, cluster.weights, 1.0, 1.0)
    else:
        channels = []
        for n, track in enumerate(cluster.tracks):
            count, first = int(track["count"]), int(track["first"])
            values = cluster.weights[first : first + count].astype(np.float64)
            channels.append(
                frame_channel("shape_key", CLUSTER_TARGET, CLUSTER_KEY.format(n), None, values, track, 1.0)
            )
    extras = {
        "unused": cluster.unused,
        "word": cluster.word,
        "weights": _bank_extras(cluster.weights),
        **_framing_extras(cluster.framing, cluster.gaps),
    }
    kind = cluster.kind.decode()[:3]
    return Scene(
        name=name, animations=[_animation(name, kind, cluster.loop_mode, cluster.length, channels, extras)]
    )


def cluster_from_animation(animation: Animation, keyed: bool) -> Cluster:
    """The BLA (``keyed`` False) or BLK of the shape-key channels cluster<index>; a cluster without a
    channel weighs 1 (BLK: a track without keys)."""
    clusters = {}
    for channel in animation.channels:
        match = CLUSTER_PATH.match(channel.path) if channel.target_kind == "shape_key" else None
        if match:
            clusters.setdefault(int(match.group(1)), channel)
    channels = [clusters.get(n) for n in range(max(clusters, default=-1) + 1)]
    extras = animation.extras
    if keyed:
        sources = [TrackSource(c, 1.0, 1.0) for c in channels]
        tracks, weights, exact = build_tracks(sources, "float32", 1.0, extras.get("weights"))
    else:  # a BLA track needs a frame (the game reads its last): a cluster without keys weighs 1
        constant = Channel("shape_key", CLUSTER_TARGET, "", np.zeros(1), np.ones((1, 1)))
        channels = [constant if c is None else c for c in channels]
        tracks, weights, exact = build_full_tracks(channels, "float32", 1.0, extras.get("weights"))
    loop_mode, length = _loop_and_length(animation)
    framing, gaps = _framing(extras, exact)
    word = extras.get("word")
    return Cluster(
        b"blk1" if keyed else b"bla1",
        loop_mode,
        length,
        tracks,
        weights,
        unused=int(extras.get("unused", 0xFF)),
        word=None if word is None else int(word),
        gaps=gaps,
        framing=framing,
    )


def as_joint_kind(animation: Animation, kind: str) -> None:
    """Make a BCK's animation a BCA's or the reverse (``kind``): the same keys, written afresh (the
    stored tracks and banks of the other kind do not apply); the loop mode stays."""
    animation.extras = {
        "j3d_type": kind,
        **{k: animation.extras[k] for k in ("loop_mode", "tag") if k in animation.extras},
    }
    for channel in animation.channels:
        channel.origin = None


# -- entry points -------------------------------------------------------------------------------


def to_scene(model, joint_names: list[str] | None = None, name: str = "", filename: str = "<bytes>") -> Scene:
    """A Scene with one Animation; BCK needs the model's joint names in joint order (``filename``: the
    file read, named when they do not match)."""
    if isinstance(model, BCK):
        if joint_names is None:
            raise ValueError("a BCK needs the joint names of its model (joints are matched by index)")
        return bck_to_scene(model, joint_names, name, filename)
    if isinstance(model, BCA):
        if joint_names is None:
            raise ValueError("a BCA needs the joint names of its model (joints are matched by index)")
        return bca_to_scene(model, joint_names, name, filename)
    for kind, function in (
        (BTK, btk_to_scene),
        (BRK, brk_to_scene),
        (BPK, bpk_to_scene),
        (BTP, btp_to_scene),
        (BVA, bva_to_scene),
        (Cluster, cluster_to_scene),
    ):
        if isinstance(model, kind):
            return function(model, name)
    raise TypeError(f"not a J3D animation: {type(model).__name__}")


def animation_kind(animation: Animation) -> str:
    """'bck', 'btk', 'brk', 'bpk', 'btp', 'bca', 'bva', 'bla' or 'blk': from the extras, else from the
    channels (full-frame joint and cluster animations are told from keyed ones by the extras only)."""
    kind = animation.extras.get("j3d_type")
    if kind:
        return kind
    paths = {channel.path for channel in animation.channels}
    kinds = {channel.target_kind for channel in animation.channels}
    if "bone" in kinds:
        return "bck"
    if "object" in kinds:
        return "bva"
    if "shape_key" in kinds:
        return "blk"
    if any(IMAGE_INDEX_PATH.match(p) for p in paths):
        return "btp"
    if any(COLOR_PATH.match(p) for p in paths):
        return "brk"
    if "color.material" in paths:
        return "bpk"
    return "btk"


def from_scene(scene: Scene, animation: int = 0, joint_names: list[str] | None = None):
    """The J3D model of ``scene.animations[animation]`` (a BCK needs the joint order)."""
    anim = scene.animations[animation]
    kind = animation_kind(anim)
    if kind in ("bck", "bca"):
        if joint_names is None:
            raise ValueError(f"writing a {kind.upper()} needs the armature's joint names in joint order")
        return (bck_from_animation if kind == "bck" else bca_from_animation)(anim, joint_names)
    if kind in ("bla", "blk"):
        return cluster_from_animation(anim, keyed=kind == "blk")
    functions = {
        "btk": btk_from_animation,
        "brk": brk_from_animation,
        "bpk": bpk_from_animation,
        "btp": btp_from_animation,
        "bva": bva_from_animation,
    }
    if kind not in functions:
        raise ValueError(f"unknown J3D animation type {kind!r}")
    return functions[kind](anim)
