"""Scene animations → the file's delta tables.

An animation whose channels still show what its kept tables encode is written from them
unchanged; an edited one is encoded again from its channels at every key time, quantised
to the file's 1/16 steps: node floats with Hermite tangents from the channels' slopes,
vertex offsets from the shape keys' weights, texture translations and swaps, visibility.
"""

from __future__ import annotations

import numpy as np

from ..curves import sample
from ..errors import ExportError
from ..scene import Channel, compose, keys_digest, matrix_to_quat
from . import model as fmt
from .channels import AnimationConverter
from .evaluate import euler_zyx, local_matrices
from .images import append_texture, image_lookup, tpl_index_of
from .kept import all_close, raw_name
from .materials import file_translate
from .matrices import apply, decompose, inverse
from .model import NODE_FLOATS, AnimationData
from .skeleton import compensated_frames, drawing_group, node_floats_from_matrix, shape_matrix
from .tables import stored_animation

ROTATION_B = slice(9, 12)  # the node floats of the rotation written from whole-transform channels
ELEMENT_PATHS = {"location": 0, "scale": 3}  # first node float of per-component channels
MAX_ENTRIES = 1 << 24  # delta entries of one table: beyond this no animation, only values out of reach


def sample_channel(channel: Channel, times: np.ndarray) -> np.ndarray:
    """(T, C) values of a channel at ``times`` as Blender plays them (constant outside its keys)."""
    count = len(channel.times)
    values = np.asarray(channel.values, np.float64).reshape(count, -1)
    left, right = (
        None if handles is None else np.asarray(handles, np.float64).reshape(count, -1, 2)
        for handles in (channel.handles_left, channel.handles_right)
    )
    return sample(channel.times, values, channel.interpolation, left, right, times)


def animations_from_scene(model, scene, axis, parents, world, group_of_bone, rebuilt, mapping) -> None:
    """The model's animation entries in their kept order: kept tables while the scene still shows them,
    else encoded again (always after the geometry was rebuilt)."""
    order = sorted(
        range(len(scene.animations)), key=lambda i: scene.animations[i].extras.get("entry", 1 << 30)
    )
    bone_of = np.full(len(model.groups), -1, np.int64)
    bone_of[group_of_bone] = np.arange(len(group_of_bone))
    entries = []  # (scene animation, file entry, whether its kept tables may still show it; None: no data)
    for i in order:
        animation = scene.animations[i]
        extras = animation.extras
        name = raw_name(animation.name, extras)
        if extras.get("data") is False and not animation.channels:
            entries.append((animation, fmt.Animation(name, None), None))
            continue
        entry = fmt.Animation(name, stored_animation(extras))
        kept = entry.data is not None and not rebuilt and _may_match(model, entry, animation)
        entries.append((animation, entry, kept))
    kept_ones = [n for n, (_, _, kept) in enumerate(entries) if kept]
    converter = None  # made for the first kept animation to compare with (the model's groups stay put)
    expected, textures = {}, -1
    model.animations = []
    for n, (animation, entry, kept) in enumerate(entries):
        if kept and len(model.textures) != textures:
            # The kept animations from here on, converted together with the model's textures as they are
            # now (an animation encoded again may add some, which the texture swaps then show).
            if converter is None:
                converter = AnimationConverter(
                    model, scene, axis, world, parents, bone_of, image_lookup(scene)
                )
            textures = len(model.textures)
            rest = [k for k in kept_ones if k >= n]
            converted = converter.convert([(k, entries[k][1], entries[k][0].name) for k in rest])
            expected.update(zip(rest, converted, strict=True))
        if kept is not None and not (kept and _matches(converter, animation, *expected[n])):
            try:
                entry.data = _encode_animation(
                    model, scene, animation, entry.data, axis, world, parents, group_of_bone, *mapping
                )
            except ExportError as e:  # named after the animation it is in
                raise ExportError(f"animation {animation.name!r}: {e}") from e
        model.animations.append(entry)


def _may_match(model, entry, animation) -> bool:
    """Whether the kept tables are valid for the model and play the scene animation's frame range."""
    anim = entry.data
    try:
        fmt.validate_animation(model, entry)
    except ValueError:
        return False
    if (animation.loop, animation.frame_start, animation.frame_end) != (anim.loop, anim.start, anim.end):
        return animation.loop == anim.loop and all_close(
            [animation.frame_start, animation.frame_end], [anim.start, anim.end]
        )
    return True


def _matches(converter, animation, expected, keys) -> bool:
    """Whether the scene animation still shows exactly what the kept tables encode: ``expected`` and its
    shape ``keys``, as ``converter`` converts them."""

    def keyed(channels):
        return {(c.target_kind, c.target, c.path, c.index): c for c in channels}

    got, want = keyed(animation.channels), keyed(expected.channels)
    if got.keys() != want.keys():
        return False
    for key, channel in want.items():
        other = got[key]
        if other.interpolation != channel.interpolation or not all(
            all_close(getattr(other, f), getattr(channel, f))
            for f in ("times", "values", "handles_left", "handles_right")
        ):
            return False
    for m, key in keys:
        found = [k for k in converter.scene.meshes[m].shape_keys if k.name == key.name]
        if not found or not all_close(found[0].positions, key.positions):
            return False
    return True


def _pack(kf: np.ndarray, index: np.ndarray, values: np.ndarray, count: int) -> tuple[np.ndarray, ...]:
    """Delta entries sorted by (keyframe, index) as (keyframe first, keyframe count, steps, values, keyframe).

    ``values`` (N, C) int may exceed the signed byte: such entries become several with step 0
    (the first carries everything else the caller attaches). Gaps above 255 get zero entries.
    """
    if not len(kf):
        empty = np.zeros(0, np.int64)
        return (
            np.zeros(count, np.int64),
            np.zeros(count, np.int64),
            empty,
            np.zeros((0, values.shape[1]), np.int64),
            empty,
        )
    order = np.lexsort((index, kf))
    kf, index, values = kf[order], index[order], values[order]
    parts = np.maximum(1, -(-np.abs(values).max(axis=1, initial=0) // 127))
    _check_entries(parts)
    row = np.repeat(np.arange(len(kf)), parts)
    within = np.arange(len(row)) - np.repeat(np.cumsum(parts) - parts, parts)
    remaining = np.abs(values[row]) - 127 * within[:, None]
    split = np.sign(values[row]) * np.clip(remaining, 0, 127)
    kf, index, first_part = kf[row], index[row], within == 0
    previous = np.concatenate([[0], index[:-1]])
    new_keyframe = np.concatenate([[True], kf[1:] != kf[:-1]])
    step = index - np.where(new_keyframe, 0, previous)
    fillers = np.maximum(0, (step - 1) // 255)
    total = fillers + 1
    _check_entries(total)
    out_row = np.repeat(np.arange(len(kf)), total)
    position = np.arange(len(out_row)) - np.repeat(np.cumsum(total) - total, total)
    is_entry = position == fillers[out_row]
    steps = np.where(is_entry, step[out_row] - 255 * fillers[out_row], 255)
    out_values = np.where(is_entry[:, None], split[out_row], 0)
    out_kf = kf[out_row]
    counts = np.bincount(out_kf, minlength=count) if len(out_kf) else np.zeros(count, np.int64)
    firsts = np.cumsum(counts) - counts
    source = np.where(is_entry & first_part[out_row], order[row][out_row], -1)
    return firsts, counts, steps, out_values, source


def _check_entries(counts: np.ndarray) -> None:
    """An ExportError when the entries ``counts`` make are more than a table holds (``MAX_ENTRIES``)."""
    total = counts.sum(dtype=np.float64)
    if total > MAX_ENTRIES:
        raise ExportError(f"values too far apart to encode: {total:.0f} delta entries")


def _slopes(channel: Channel, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slopes (value per frame) of a channel at the start and the end of each segment ending at a time."""
    lengths = np.diff(times, prepend=times[0] - 1.0)
    eps = np.maximum(lengths * 1e-3, 1e-6)
    previous = np.concatenate([[times[0] - 1.0], times[:-1]])
    start = (sample_channel(channel, previous + eps)[:, 0] - sample_channel(channel, previous)[:, 0]) / eps
    end = (sample_channel(channel, times)[:, 0] - sample_channel(channel, times - eps)[:, 0]) / eps
    return start, end


def _encode_animation(
    model, scene, animation, stored, axis, world, parents, group_of_bone, slot_samplers, shape_of
):
    """Delta tables for a scene animation (values quantised to the file's steps)."""
    start = float(animation.frame_start)
    # Channels still as imported keep their keyframes: only the edited ones' key times are added.
    kept_times = [stored.keyframes["time"]] if stored is not None else []
    edited = [c for c in animation.channels if stored is None or not _unedited(c)]
    times = np.unique(
        np.concatenate([[start], *kept_times, *(np.asarray(c.times, np.float64) for c in edited)]).astype(
            np.float32
        )
    ).astype(np.float64)
    count = len(times)
    anim = AnimationData(bbox=stored.bbox.copy() if stored is not None else np.zeros(6, np.float32))
    anim.base = np.array([(int(animation.loop), start, float(animation.frame_end))], fmt.BASE_DTYPE)
    anim.keyframes = np.zeros(count, fmt.KEYFRAME_DTYPE)
    anim.keyframes["time"] = times
    unchanged = stored is not None and np.array_equal(stored.keyframes["time"].astype(np.float64), times)
    _encode_nodes(model, scene, animation, anim, times, axis, world, parents, group_of_bone, unchanged)
    _encode_vertices(model, scene, animation, anim, times, axis, world, shape_of)
    _encode_textures(model, scene, animation, anim, times, slot_samplers)
    _encode_visibility(model, scene, animation, anim, times, shape_of)
    if stored is not None:
        anim.unknown_records = stored.unknown_records
        if np.array_equal(stored.keyframes["time"], anim.keyframes["time"]):
            anim.normal_deltas = stored.normal_deltas
            for part in ("first", "count"):
                anim.keyframes[f"normal_{part}"] = stored.keyframes[f"normal_{part}"]
    return anim


def _store(anim, kind, table, dtype, firsts, counts, steps, fields: dict) -> None:
    records = np.zeros(len(steps), dtype)
    records["step"] = steps
    for key, value in fields.items():
        records[key] = value
    setattr(anim, table, records)
    anim.keyframes[f"{kind}_first"], anim.keyframes[f"{kind}_count"] = firsts, counts


class _NodeCurves:
    """Node float values and slopes at every keyframe time, and the floats that channels drive."""

    def __init__(self, base: np.ndarray, count: int):
        self.target = np.broadcast_to(base, (count, len(base))).copy()
        self.start_slope, self.end_slope = np.zeros_like(self.target), np.zeros_like(self.target)
        self.driven = np.zeros(len(base), bool)


def _encode_nodes(
    model, scene, animation, anim, times, axis, world, parents, group_of_bone, same_times
) -> None:
    """Node deltas: the original entries of every bone channel still as imported (when the keyframe
    times are too), the others encoded from the channels' values and slopes."""
    if not scene.skeletons:
        return
    base = model.node_floats.astype(np.float64)
    curves = _NodeCurves(base, len(times))
    whole = _sample_float_channels(model, scene, animation, times, group_of_bone, curves)
    for g, channels in whole.items():
        _sample_matrix_channels(model, channels, g, times, axis, world, parents, curves)
    kept = _kept_entries(animation, len(base)) if same_times else None
    if kept is not None:
        curves.driven &= ~kept[0]
    quantised = np.round((curves.target - base) * 16).astype(np.int64)
    delta = np.diff(quantised, axis=0, prepend=np.zeros((1, len(base)), np.int64))
    tangent_in = np.clip(np.round(np.degrees(np.arctan(curves.start_slope))), -89, 89).astype(np.int64)
    tangent_out = np.clip(np.round(np.degrees(np.arctan(curves.end_slope))), -89, 89).astype(np.int64)
    tangent_in[0] = tangent_out[0] = 0  # the first keyframe applies at once
    used = curves.driven & ((delta != 0) | (tangent_in != 0) | (tangent_out != 0))
    kf, index = np.nonzero(used)
    rows = np.stack([kf, index, delta[kf, index], tangent_in[kf, index], tangent_out[kf, index]], axis=1)
    if kept is not None:
        rows = np.concatenate([kept[1], rows])
    kf, index = rows[:, 0], rows[:, 1]
    firsts, counts, steps, values, source = _pack(kf, index, rows[:, 2:3], len(times))
    has = source >= 0
    tin, tout = np.zeros(len(steps), np.int64), np.zeros(len(steps), np.int64)
    tin[has], tout[has] = rows[source[has], 3], rows[source[has], 4]
    _store(anim, "node", "node_deltas", fmt.NODE_DELTA_DTYPE, firsts, counts, steps,
           {"value": values[:, 0], "tangent_in": tin, "tangent_out": tout})  # fmt: skip


def _unedited(channel: Channel) -> bool:
    """Whether the channel still has its keys as imported (its origin's digest)."""
    return channel.origin is not None and keys_digest(channel) == channel.origin.digest


def _kept_entries(animation, floats: int) -> tuple[np.ndarray, np.ndarray]:
    """The node floats the bone channels still as imported drive, and their original entries as
    (N, 5) rows (keyframe, float, value, tangent in, tangent out)."""
    bone_channels = [c for c in animation.channels if c.target_kind == "bone"]
    # A baked bone's three channels share its floats: one edited re-encodes them all.
    edited = {c.target for c in bone_channels if not _unedited(c) and c.index is None}
    kept = np.zeros(floats, bool)
    rows = []
    for channel in bone_channels:
        track = channel.origin.track if _unedited(channel) else None
        if not isinstance(track, dict) or "node_floats" not in track:
            continue
        first, end = track["node_floats"]
        if end - first > 1 and channel.target in edited:
            continue
        if 0 <= first < end <= floats and not kept[first:end].any():
            kept[first:end] = True
            rows += track["entries"]
    return kept, np.array(rows, np.int64).reshape(-1, 5)


def _sample_float_channels(model, scene, animation, times, group_of_bone, curves: _NodeCurves) -> dict:
    """Per-component bone channels into the node floats they drive; returns the other bone channels
    as {group: {path: channel}}."""
    bones = {name: b for b, name in enumerate(scene.skeletons[0].bone_names)}
    whole: dict[int, dict[str, Channel]] = {}
    for channel in animation.channels:
        b = bones.get(channel.target)
        if channel.target_kind != "bone" or b is None or b >= len(group_of_bone):
            continue
        g = int(group_of_bone[b])
        node = int(model.groups["node"][g])
        if channel.index is None:
            whole.setdefault(g, {})[channel.path] = channel
            continue
        if channel.path == "rotation_euler":
            doubled = bool(model.node_floats[node + 6 : node + 9].any())
            offset, factor = (6, np.radians(2.0)) if doubled else (9, np.radians(1.0))
        elif channel.path in ELEMENT_PATHS:
            offset, factor = ELEMENT_PATHS[channel.path], 1.0
        else:
            continue
        f = node + offset + channel.index
        curves.target[:, f] = sample_channel(channel, times)[:, 0] / factor
        slopes = _slopes(channel, times)
        curves.start_slope[:, f], curves.end_slope[:, f] = slopes[0] / factor, slopes[1] / factor
        curves.driven[f] = True
    return whole


def _sample_matrix_channels(model, channels, g, times, axis, world, parents, curves: _NodeCurves) -> None:
    """Whole-transform channels of group ``g`` (the rest where one is missing) into fresh node floats,
    with the slopes Blender's curves have at each segment's ends (so Hermite follows them between keys).
    A group that compensates its parent's scale keeps it (the parent's rest scale), and its channels
    in ``compensated_frames`` are taken back to its local matrix."""
    node = int(model.groups["node"][g])
    rest = local_matrices(model, model.node_floats, parents)[g]
    frames = compensated_frames(model, axis, world, parents, g)
    parent_scale = None
    if model.groups["compensate"][g] and parents[g] >= 0:
        parent_node = int(model.groups["node"][parents[g]])
        parent_scale = model.node_floats[parent_node + 3 : parent_node + 6].astype(np.float64)
    if frames is not None:
        rest = frames[0] @ rest @ inverse(frames[1])
    location, rotation, scale = decompose(rest)
    values = {"location": location, "rotation_quaternion": rotation, "scale": scale}
    if "rotation_euler" in channels:
        values["rotation_quaternion"] = None

    def floats_at(at: np.ndarray) -> np.ndarray:
        sampled = {
            path: sample_channel(channels[path], at)
            if path in channels
            else np.broadcast_to(v, (len(at), len(v)))
            for path, v in values.items()
            if v is not None
        }
        if "rotation_euler" in channels:
            rotations = euler_zyx(np.degrees(sample_channel(channels["rotation_euler"], at)))[:, :3, :3]
            sampled["rotation_quaternion"] = matrix_to_quat(rotations)
        matrices = compose(sampled["location"], sampled["rotation_quaternion"], sampled["scale"])
        if parents[g] < 0:
            matrices = axis.T @ matrices
        if frames is not None:
            matrices = inverse(frames[0]) @ matrices @ frames[1]
        floats = node_floats_from_matrix(matrices, parent_scale).astype(np.float64)
        floats[:, ROTATION_B] = np.unwrap(floats[:, ROTATION_B], period=360.0, axis=0)
        return floats

    lengths = np.diff(times, prepend=times[0] - 1.0)
    eps = np.maximum(lengths * 1e-3, 1e-6)[:, None]
    previous = times - lengths
    floats = floats_at(times)
    start = floats_at(previous)
    after = floats_at(previous + eps[:, 0])
    # Rotations are angles: a difference across ±180 is taken the short way.
    end_slope = (floats - floats_at(times - eps[:, 0])) / eps
    start_slope = (after - start) / eps
    for slope in (end_slope, start_slope):
        angles = slope[:, ROTATION_B] * eps
        slope[:, ROTATION_B] = ((angles + 180.0) % 360.0 - 180.0) / eps
    curves.target[:, node : node + NODE_FLOATS] = floats
    curves.start_slope[:, node : node + NODE_FLOATS] = start_slope
    curves.end_slope[:, node : node + NODE_FLOATS] = end_slope
    curves.driven[node : node + NODE_FLOATS] = True


def _encode_vertices(model, scene, animation, anim, times, axis, world, shape_of) -> None:
    offsets = np.zeros((len(times), len(model.positions), 3))
    weights = {(c.target, c.path): c for c in animation.channels if c.target_kind == "shape_key"}
    for m, mesh in enumerate(scene.meshes):
        s = shape_of[m]
        shape = model.shapes[s]
        first, count = int(shape["position_first"]), int(shape["position_count"])
        g = drawing_group(model, s)
        unmatrix = inverse(shape_matrix(axis, world, g))
        basis = apply(unmatrix, mesh.positions)
        for key in mesh.shape_keys:
            channel = weights.get((mesh.name, key.name))
            if channel is None or len(key.positions) != count:
                continue
            weight = sample_channel(channel, times)[:, 0]
            offsets[:, first : first + count] += weight[:, None, None] * (
                apply(unmatrix, key.positions) - basis
            )
    quantised = np.round(offsets * 16).astype(np.int64)
    delta = np.diff(quantised, axis=0, prepend=np.zeros((1,) + quantised.shape[1:], np.int64))
    kf, index = np.nonzero((delta != 0).any(axis=2))
    firsts, counts, steps, values, _ = _pack(kf, index, delta[kf, index], len(times))
    _store(
        anim, "position", "position_deltas", fmt.VERTEX_DELTA_DTYPE, firsts, counts, steps, {"delta": values}
    )


def _encode_textures(model, scene, animation, anim, times, slot_samplers) -> None:
    materials = {m.name: i for i, m in enumerate(scene.materials)}
    base = model.texcoord_transforms
    translate = np.broadcast_to(
        base["translate"].astype(np.float64), (len(times),) + base["translate"].shape
    ).copy()
    frames = np.broadcast_to(base["frame_offset"].astype(np.int64), (len(times), len(base))).copy()
    for channel in animation.channels:
        parts = channel.path.split(".")
        if channel.target_kind != "material" or len(parts) != 3 or parts[0] != "texture":
            continue
        sampler = slot_samplers.get(
            (materials.get(channel.target), int(parts[1]) if parts[1].isdigit() else -1)
        )
        if sampler is None:
            continue
        values = sample_channel(channel, times)
        if parts[2] == "translate" and values.shape[1] == 2:
            translate[:, sampler] = file_translate(values, base["scale"][sampler], base["rotate"][sampler])
        elif parts[2] == "image_index":
            frames[:, sampler] = _frame_offsets(
                model, scene, sampler, np.round(values[:, 0]).astype(np.int64)
            )
    previous_t = np.concatenate([base["translate"][None].astype(np.float64), translate[:-1]])
    previous_f = np.concatenate([base["frame_offset"][None].astype(np.int64), frames[:-1]])
    d_translate = (translate.astype(np.float32) - previous_t.astype(np.float32)).astype(np.float32)
    d_frame = (frames - previous_f + 128) % 256 - 128
    kf, index = np.nonzero((d_frame != 0) | (d_translate != 0).any(axis=2))
    firsts, counts, steps, values, source = _pack(kf, index, np.zeros((len(kf), 1), np.int64), len(times))
    has = source >= 0
    frame_step, moved = np.zeros(len(steps), np.int64), np.zeros((len(steps), 2), np.float32)
    frame_step[has] = d_frame[kf[source[has]], index[source[has]]]
    moved[has] = d_translate[kf[source[has]], index[source[has]]]
    _store(anim, "texture", "texture_deltas", fmt.TEXTURE_DELTA_DTYPE, firsts, counts, steps,
           {"frame_step": frame_step, "translate": moved})  # fmt: skip


def _frame_offsets(model, scene, sampler: int, images: np.ndarray) -> np.ndarray:
    """Frame offsets from the sampler's first texture to a texture of each scene image (added when missing)."""
    first = int(model.samplers["first_texture"][sampler])
    out = np.zeros(len(images), np.int64)
    for image in np.unique(images):
        window = model.textures["tpl_index"][first : first + 256]
        found = np.flatnonzero(window == tpl_index_of(scene, image))
        if len(found):
            offset = int(found[0])
        else:
            offset = append_texture(model, scene, int(image)) - first
            if not 0 <= offset < 256:
                raise ExportError(f"texture swap to image {image} is out of reach of sampler {sampler}")
        out[images == image] = offset
    return out


def _encode_visibility(model, scene, animation, anim, times, shape_of) -> None:
    meshes = {m.name: i for i, m in enumerate(scene.meshes)}
    shown = np.broadcast_to(model.visibility != 0, (len(times), len(model.visibility))).copy()
    driven = np.zeros(len(model.visibility), bool)
    for channel in animation.channels:
        m = meshes.get(channel.target)
        if channel.target_kind != "object" or channel.path != "hide" or m is None:
            continue
        g = drawing_group(model, shape_of[m])
        if g < 0:
            continue
        v = int(model.groups["visibility"][g])
        shown[:, v] = sample_channel(channel, times)[:, 0] < 0.5
        driven[v] = True
    previous = np.concatenate([(model.visibility != 0)[None], shown[:-1]])
    kf, index = np.nonzero(driven & (shown != previous))
    firsts, counts, steps, _, source = _pack(kf, index, np.zeros((len(kf), 1), np.int64), len(times))
    values = np.zeros(len(steps), np.int64)
    has = source >= 0
    values[has] = np.where(shown[kf[source[has]], index[source[has]]], 1, -1)
    _store(
        anim,
        "visibility",
        "visibility_deltas",
        fmt.VISIBILITY_DELTA_DTYPE,
        firsts,
        counts,
        steps,
        {"value": values},
    )
