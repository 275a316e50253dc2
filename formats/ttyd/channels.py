"""A file animation → scene channels and shape keys (fps 60, one animation per entry).

Animations hold their start before it and, looping, show it again at every end
(``Animation.hold_start``), as the game's clock clamps and wraps.

- node floats → bone channels. When a node has no centres, no compensation, and uses only
  one of its two rotations, each animated float is its own channel component (``index``)
  with Bézier handles a third of each segment away along the game's tangents, which
  reproduces the Hermite curve exactly; otherwise (and for root bones, which carry the axis
  conversion) the local matrices are baked at every frame and keyframe time into
  ``location``, ``rotation_quaternion`` and ``scale``, Bézier with handles along the game's
  slopes on either side of each key (so sub-frames follow the game too); a looping animation's
  key at its end holds the pose before the seam rather than blending back to the start. A group
  whose scale rides in the pose (``skeleton.scale_in_pose``) gets one key of every scale component
  the animation does not move (``_held_scale``); a group that compensates its parent's uneven scale
  is baked in the frames Blender poses it in (``skeleton.compensated_frames``).
- position deltas → one shape key per keyframe ("<animation>.<keyframe>", relative to the
  basis) with a LINEAR weight 0 → 1 over that keyframe's segment (CONSTANT for the first
  keyframe).
- texture-transform deltas → material channels ``texture.<slot>.translate`` (K, 2: the
  Mapping location, ``mapping_location`` of the file's translation and the sampler's scale
  and rotation) and ``texture.<slot>.image_index`` (K, 1, the scene image shown), both
  CONSTANT.
- visibility → object channels ``hide`` (1 hidden) on the meshes below the group, CONSTANT.

Bone channels carry their origin: the node-delta entries of the floats they drive, as rows
(keyframe, float, value, tangent in, tangent out), which export writes back for every channel
that was not edited (``deltas``).

Entries without data are kept as empty animations. Normal deltas and the 8-byte records
have no Scene counterpart: they travel with the animation's tables in its extras.
"""

from __future__ import annotations

import numpy as np

from ..scene import Animation, Channel, ChannelOrigin, ShapeKey, keys_digest
from . import model as fmt
from .evaluate import FPS, Evaluator, node_entry_rows, node_matrix
from .images import texture_image
from .materials import mapping_location
from .matrices import apply, decompose, inverse
from .model import NODE_FLOATS, AnimationData
from .skeleton import chain, compensated_frames, shape_matrix
from .tables import animation_extras

ROTATION_A, ROTATION_B = slice(6, 9), slice(9, 12)
PIVOTS = slice(12, 24)
MAX_BAKED_FRAMES = 100_000
SLOPE_STEP = 1e-4  # frames: the one-sided difference that gives a baked key's slopes


def scene_animation(
    model, scene, a, animation, name, axis, world, parents, bone_of, image_of, filename="<model>"
) -> tuple[Animation, list]:
    """The scene animation of entry ``a`` and its shape keys as (mesh index, ShapeKey) pairs;
    ``filename`` names the model in errors."""
    extras = {"entry": a, "name": animation.name, "label": name}
    anim = animation.data
    if anim is None:
        extras["data"] = False
        return Animation(name, fps=FPS, extras=extras), []
    extras.update(animation_extras(anim))
    result = Animation(
        name,
        fps=FPS,
        frame_start=anim.start,
        frame_end=anim.end,
        loop=anim.loop,
        hold_start=True,
        skeleton=0 if scene.skeletons else None,
        extras=extras,
    )
    if not len(anim.keyframes):
        return result, []
    evaluator = Evaluator(model, anim, filename, fmt.animation_offset(model, a))
    shape_keys, channels = _shape_keys(model, scene, evaluator, name, axis, world)
    result.channels += _node_channels(model, scene, evaluator, axis, world, parents, bone_of)
    result.channels += channels
    result.channels += _texture_channels(model, scene, evaluator, image_of)
    result.channels += _visibility_channels(model, scene, evaluator, parents)
    return result, shape_keys


def node_entries(anim: AnimationData, floats: np.ndarray) -> list[list[int]]:
    """The node-delta entries of the given node floats as (keyframe, float, value, tangent in,
    tangent out) rows in file order (index-only filler entries left out)."""
    rows = node_entry_rows(anim, fmt.running_indices(anim.keyframes, "node", anim.node_deltas["step"]))
    return rows[np.isin(rows[:, 1], floats)].tolist()


def _with_origin(channel: Channel, evaluator: Evaluator, first: int, end: int) -> Channel:
    """``channel`` with its origin: the node-delta entries of node floats ``first`` to ``end`` − 1."""
    rows = evaluator.node_entries  # ``node_entries`` of every node float, made once per animation
    channel.origin = ChannelOrigin(
        {"node_floats": [first, end], "entries": rows[(rows[:, 1] >= first) & (rows[:, 1] < end)].tolist()},
        keys_digest(channel),
    )
    return channel


def _step_times(evaluator: Evaluator, changed: np.ndarray) -> np.ndarray:
    """The start and the times of the keyframes flagged in ``changed`` (K,), clamped to the start."""
    anim = evaluator.anim
    return np.unique(np.maximum(np.concatenate([[anim.start], evaluator.times[changed]]), anim.start))


def _node_direct(model, evaluator, g, parents, touched) -> bool:
    """Whether group g's animation maps onto per-component channels exactly."""
    group = model.groups[g]
    node = int(group["node"])
    floats = model.node_floats[node : node + NODE_FLOATS]
    mine = touched[node : node + NODE_FLOATS]
    uses_a = bool(floats[ROTATION_A].any() or mine[ROTATION_A].any())
    uses_b = bool(floats[ROTATION_B].any() or mine[ROTATION_B].any())
    times = evaluator.times
    steps = evaluator.node_hermite + evaluator.node_linear
    first_moves = bool(
        evaluator.columns(evaluator.node_index, steps[:1], np.arange(node, node + NODE_FLOATS)).any()
    )
    return (
        parents[g] >= 0
        and group["compensate"] == 0
        and not floats[PIVOTS].any()
        and not mine[PIVOTS].any()
        and not (uses_a and uses_b)
        and bool(np.all(np.diff(times) > 0))
        and (times[0] <= evaluator.anim.start or not first_moves)
    )


def _node_channels(model, scene, evaluator, axis, world, parents, bone_of) -> list[Channel]:
    _, index, _ = evaluator.running["node"]
    touched = np.zeros(len(model.node_floats), bool)
    touched[index] = True
    if not scene.skeletons:
        return []
    bones, bone_extras = scene.skeletons[0].bone_names, scene.skeletons[0].bone_extras
    channels, baked = [], []
    for g, group in enumerate(model.groups):
        node = int(group["node"])
        moved = touched[node : node + NODE_FLOATS].any()
        parent = int(parents[g])
        if parent >= 0 and group["compensate"]:
            parent_node = int(model.groups["node"][parent])
            moved = moved or touched[parent_node + 3 : parent_node + 6].any()
        direct = moved and _node_direct(model, evaluator, g, parents, touched)
        if direct:
            channels += _direct_channels(model, evaluator, node, touched, bones[bone_of[g]])
        elif moved:
            baked.append(g)
        if not (moved and not direct) and bone_extras[bone_of[g]].get("scale_in_pose"):
            channels += _held_scale(model, evaluator, node, touched, bones[bone_of[g]])
    if baked:
        channels += _baked_channels(model, evaluator, baked, axis, world, parents, bones, bone_of)
    return channels


def _direct_channels(model, evaluator, node, touched, bone) -> list[Channel]:
    floats = model.node_floats[node : node + NODE_FLOATS]
    doubled = bool(floats[ROTATION_A].any() or touched[node + 6 : node + 9].any())
    rotation = (6, np.radians(2.0)) if doubled else (9, np.radians(1.0))
    times = evaluator.times
    wanted = np.arange(node, node + NODE_FLOATS)
    hermite, linear, slope_in, slope_out = (
        evaluator.columns(evaluator.node_index, steps, wanted)
        for steps in (
            evaluator.node_hermite,
            evaluator.node_linear,
            evaluator.node_slope_in,
            evaluator.node_slope_out,
        )
    )
    cumulative = np.cumsum(hermite + linear, axis=0)
    count = len(times)
    durations = np.diff(times)
    lengths = np.concatenate([[durations[0] if count > 1 else 1.0], durations])  # segment ending at each key
    # The moved components (path, component, node float), their curves computed together: (K, n).
    moved = [
        (path, c, node + first + c, factor)
        for path, (first, factor) in (
            ("location", (0, 1.0)),
            ("rotation_euler", rotation),
            ("scale", (3, 1.0)),
        )
        for c in range(3)
        if touched[node + first + c]
    ]
    if not moved:
        return []
    floats_at = np.array([f for _, _, f, _ in moved])
    columns = floats_at - node
    factors = np.array([factor for _, _, _, factor in moved])
    per_key = lengths[:, None]
    values = (model.node_floats[floats_at] + cumulative[:, columns]) * factors
    start_slope = (slope_in[:, columns] + linear[:, columns] / per_key) * factors
    end_slope = (slope_out[:, columns] + linear[:, columns] / per_key) * factors
    third = per_key / 3.0
    left = np.stack(
        [np.broadcast_to(times[:, None] - third, values.shape), values - end_slope * third], axis=-1
    )
    right = np.empty_like(left)
    right[:-1, :, 0] = times[:-1, None] + third[1:]
    right[:-1, :, 1] = values[:-1] + start_slope[1:] * third[1:]
    right[-1, :, 0] = times[-1] + third[-1]
    right[-1, :, 1] = values[-1]
    left[0, :, 1] = values[0]
    channels = []
    for n, (path, c, f, _) in enumerate(moved):
        channel = Channel(
            "bone",
            bone,
            path,
            times.copy(),
            values[:, n, None].copy(),
            "BEZIER",
            left[:, n, None].copy(),
            right[:, n, None].copy(),
            extras={"node_float": int(f)},
            index=c,
        )
        channels.append(_with_origin(channel, evaluator, int(f), int(f) + 1))
    return channels


def _held_scale(model, evaluator, node, touched, bone) -> list[Channel]:
    """One key of each scale component the animation does not move (``skeleton.scale_in_pose``: the
    rest does not show it)."""
    channels = []
    for c in np.flatnonzero(~touched[node + 3 : node + 6]):
        f = node + 3 + int(c)
        value = np.array([[float(model.node_floats[f])]])
        channel = Channel(
            "bone",
            bone,
            "scale",
            np.array([evaluator.anim.start]),
            value,
            "CONSTANT",
            extras={"node_float": f},
            index=int(c),
        )
        channels.append(_with_origin(channel, evaluator, int(f), int(f) + 1))
    return channels


def bake_times(anim: AnimationData, keyframe_times: np.ndarray) -> np.ndarray:
    """Every whole frame from start to end plus the keyframe times inside (only those for spans of
    more than MAX_BAKED_FRAMES, which no real animation has)."""
    span = anim.end - anim.start
    whole = np.isfinite(span) and 0 <= span <= MAX_BAKED_FRAMES
    frames = np.arange(np.ceil(anim.start), np.floor(anim.end) + 1.0) if whole else np.zeros(0)
    inside = keyframe_times[(keyframe_times >= anim.start) & (keyframe_times <= max(anim.end, anim.start))]
    times = np.union1d(frames, inside)
    return times if len(times) else np.array([anim.start])


def _held(anim: AnimationData, times: np.ndarray) -> np.ndarray:
    """Times at or past a looping animation's end moved just before it: a key there holds the pose the
    game shows up to the loop seam (at the seam itself it starts again, which the loop shows)."""
    if anim.loop and anim.end > anim.start:
        return np.minimum(times, np.nextafter(anim.end, -np.inf))
    return times


def _baked_channels(model, evaluator, groups, axis, world, parents, bones, bone_of) -> list[Channel]:
    """Every frame's decomposed local matrix, with Bézier handles along the game's one-sided slopes at
    each key, so that Blender follows the Hermite curves between frames too (in the frames of
    ``compensated_frames`` for a group that compensates an uneven scale)."""
    anim = evaluator.anim
    times = bake_times(anim, evaluator.times)
    lengths = np.diff(times)
    before = np.concatenate([[lengths[0] if len(lengths) else 1.0], lengths]) / 3.0
    after = np.concatenate([lengths, [lengths[-1] if len(lengths) else 1.0]]) / 3.0
    eps = SLOPE_STEP
    channels = []
    for g in groups:
        node = int(model.groups["node"][g])
        frames = compensated_frames(model, axis, world, parents, g)

        def transforms(at, node=node, g=g, frames=frames):
            at = _held(anim, at)
            floats = evaluator.node_floats(at, np.arange(node, node + NODE_FLOATS))
            parent_scale = None
            if model.groups["compensate"][g] and parents[g] >= 0:
                parent_node = int(model.groups["node"][parents[g]])
                parent_scale = evaluator.node_floats(at, np.arange(parent_node + 3, parent_node + 6))
            with np.errstate(all="ignore"):
                matrices = node_matrix(floats, parent_scale)
            if parents[g] < 0:
                matrices = axis @ matrices
            if frames is not None:
                matrices = frames[0] @ matrices @ inverse(frames[1])
            return decompose(matrices)

        here, earlier, later = transforms(times), transforms(times - eps), transforms(times + eps)
        rotation = _continuous(here[1])
        bone = bones[bone_of[g]]
        for k, path in enumerate(("location", "rotation_quaternion", "scale")):
            values = rotation if k == 1 else here[k]
            left_slope = (values - _aligned(earlier[k], values, k == 1)) / eps
            right_slope = (_aligned(later[k], values, k == 1) - values) / eps
            left = np.stack(
                [
                    np.broadcast_to((times - before)[:, None], values.shape),
                    values - left_slope * before[:, None],
                ],
                axis=-1,
            )
            right = np.stack(
                [
                    np.broadcast_to((times + after)[:, None], values.shape),
                    values + right_slope * after[:, None],
                ],
                axis=-1,
            )
            channel = Channel(
                "bone", bone, path, times.copy(), values, "BEZIER", left, right, extras={"baked": True}
            )
            channels.append(_with_origin(channel, evaluator, node, node + NODE_FLOATS))
    return channels


def _continuous(quaternions: np.ndarray) -> np.ndarray:
    """Quaternions with signs chosen so that each is on the side of the one before."""
    signs = np.where(np.einsum("ij,ij->i", quaternions[1:], quaternions[:-1]) < 0, -1.0, 1.0)
    return quaternions * np.concatenate([[1.0], np.cumprod(signs)])[:, None]


def _aligned(values: np.ndarray, reference: np.ndarray, quaternion: bool) -> np.ndarray:
    """``values`` with each quaternion's sign matching ``reference``'s (other paths unchanged)."""
    if not quaternion:
        return values
    return values * np.where(np.einsum("ij,ij->i", values, reference) < 0, -1.0, 1.0)[:, None]


def _shape_keys(model, scene, evaluator, name, axis, world) -> tuple[list, list[Channel]]:
    if not evaluator.position_steps.any():
        return [], []
    anim = evaluator.anim
    times = evaluator.times
    keys, channels = [], []
    for m, mesh in enumerate(scene.meshes):
        s = mesh.extras["shape"]
        shape = model.shapes[s]
        first, count = int(shape["position_first"]), int(shape["position_count"])
        matrix = shape_matrix(axis, world, mesh.extras["group"])
        local = model.positions[first : first + count].astype(np.float64)
        steps = evaluator.columns(
            evaluator.position_index, evaluator.position_steps, np.arange(first, first + count)
        )
        for k in np.flatnonzero(steps.any(axis=(1, 2))):
            key = f"{name}.{k}"
            positions = apply(matrix, local + steps[k]).astype(np.float32)
            keys.append((m, ShapeKey(key, positions, extras={"animation": name, "keyframe": int(k)})))
            if k == 0:
                key_times = (
                    np.array([times[0]]) if times[0] <= anim.start else np.array([anim.start, times[0]])
                )
                values = np.ones(1) if times[0] <= anim.start else np.array([0.0, 1.0])
                interpolation = "CONSTANT"
            else:
                key_times, values, interpolation = times[k - 1 : k + 1].copy(), np.array([0.0, 1.0]), "LINEAR"
            channels.append(Channel("shape_key", mesh.name, key, key_times, values[:, None], interpolation))
    return keys, channels


def _texture_channels(model, scene, evaluator, image_of) -> list[Channel]:
    changed = (evaluator.frame_steps != 0) | (evaluator.translate_steps != 0).any(axis=2)  # (K, touched)
    if not changed.any():
        return []
    channels = []
    for column in np.flatnonzero(changed.any(axis=0)):
        x = int(evaluator.texture_index[column])
        if x >= len(model.samplers):  # a transform no sampler uses: nothing the game draws moves
            continue
        times = _step_times(evaluator, changed[:, column])
        frame_offsets, translate = evaluator.textures(times)
        transform = model.texcoord_transforms[x]
        translate = mapping_location(translate[:, x], transform["scale"], transform["rotate"])
        tpl_images = [texture_image(model, x, o) for o in frame_offsets[:, x]]
        images = image_of(np.array(tpl_images, np.int64)).astype(np.float64)
        for material in scene.materials:
            for slot in material.textures:
                if slot.extras["sampler"] != x:
                    continue
                j = slot.extras["slot"]
                for path, values in (("translate", translate), ("image_index", images[:, None])):
                    channels.append(
                        Channel(
                            "material", material.name, f"texture.{j}.{path}", times.copy(), values, "CONSTANT"
                        )
                    )
    return channels


def _visibility_channels(model, scene, evaluator, parents) -> list[Channel]:
    changed = evaluator.visibility_sets != 0
    if not changed.any():
        return []
    times = _step_times(evaluator, changed.any(axis=1))
    visible = evaluator.visibility(times)
    touched = np.zeros(len(model.visibility), bool)
    touched[evaluator.visibility_index[changed.any(axis=0)]] = True
    channels = []
    for mesh in scene.meshes:
        g = mesh.extras["group"]
        if g < 0:
            continue
        groups = model.groups["visibility"][chain(parents, g)]
        if not touched[groups].any():
            continue
        hidden = (~visible[:, groups]).any(axis=1).astype(np.float64)
        channels.append(Channel("object", mesh.name, "hide", times.copy(), hidden[:, None], "CONSTANT"))
    return channels
