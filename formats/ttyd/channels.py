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

from functools import cached_property

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
# A direct group's candidate channel components: location, rotation (A doubled, else B), scale; x, y, z.
DIRECT_PATHS = ("location",) * 3 + ("rotation_euler",) * 3 + ("scale",) * 3
DIRECT_A, DIRECT_B = np.array([0, 1, 2, 6, 7, 8, 3, 4, 5]), np.array([0, 1, 2, 9, 10, 11, 3, 4, 5])
FACTORS_A, FACTORS_B = (np.array([1.0] * 3 + [np.radians(d)] * 3 + [1.0] * 3) for d in (2.0, 1.0))
MAX_BAKED_FRAMES = 100_000
SLOPE_STEP = 1e-4  # frames: the one-sided difference that gives a baked key's slopes


class AnimationConverter:
    """Converts the animations of one model to scene animations and shape keys. What they drive (the
    groups' node floats and bones, the meshes' vertices and visibility groups, the material slots of
    each sampler) is worked out once here; each animation then takes a few array operations over all
    of it rather than some per group, mesh or slot. ``filename`` names the model in errors."""

    def __init__(self, model, scene, axis, world, parents, bone_of, image_of, filename="<model>"):
        self.model, self.scene, self.axis, self.world = model, scene, axis, world
        self.parents, self.bone_of, self.image_of, self.filename = parents, bone_of, image_of, filename
        groups = model.groups
        self.nodes = groups["node"].astype(np.int64)
        self.group_floats = self.nodes[:, None] + np.arange(NODE_FLOATS)  # (G, 24) node float indices
        rest = model.node_floats[self.group_floats]
        self.rest_a = rest[:, ROTATION_A].any(axis=1)
        self.rest_b = rest[:, ROTATION_B].any(axis=1)
        # What lets a group map onto per-component channels whatever the animation (``_node_channels``).
        self.may_be_direct = (parents >= 0) & (groups["compensate"] == 0) & ~rest[:, PIVOTS].any(axis=1)
        self.compensated = (groups["compensate"] != 0) & (parents >= 0)
        self.parent_scales = self.nodes[np.maximum(parents, 0)][:, None] + np.arange(3, 6)  # (G, 3)
        skeleton = scene.skeletons[0] if scene.skeletons else None
        self.bones = [skeleton.bone_names[b] for b in bone_of] if skeleton else None
        self.held = np.array(
            [bool(skeleton and skeleton.bone_extras[b].get("scale_in_pose")) for b in bone_of], bool
        )
        self.slots: dict[int, list[tuple[str, int]]] = {}  # sampler → (material, slot) that show it
        for material in scene.materials:
            for slot in material.textures:
                self.slots.setdefault(slot.extras["sampler"], []).append((material.name, slot.extras["slot"]))
        # (M, V): the visibility groups that hide each mesh (its group's and its ancestors').
        self.hidden_by = np.zeros((len(scene.meshes), len(model.visibility)), bool)
        for m, mesh in enumerate(scene.meshes):
            if mesh.extras["group"] >= 0:
                self.hidden_by[m, groups["visibility"][chain(parents, mesh.extras["group"])]] = True

    @cached_property
    def mesh_vertices(self) -> list[tuple[int, str, int, int, np.ndarray, np.ndarray]]:
        """(mesh, name, first position, count, file → scene matrix, file positions) of every mesh."""
        out = []
        for m, mesh in enumerate(self.scene.meshes):
            shape = self.model.shapes[mesh.extras["shape"]]
            first, count = int(shape["position_first"]), int(shape["position_count"])
            matrix = shape_matrix(self.axis, self.world, mesh.extras["group"])
            local = self.model.positions[first : first + count].astype(np.float64)
            out.append((m, mesh.name, first, count, matrix, local))
        return out

    def convert(self, a, animation, name, running=None) -> tuple[Animation, list]:
        """The scene animation of entry ``a`` and its shape keys as (mesh index, ShapeKey) pairs;
        ``running``: the animation's ``running_indices`` of each kind when they are known already."""
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
            skeleton=0 if self.scene.skeletons else None,
            extras=extras,
        )
        if not len(anim.keyframes):
            return result, []
        evaluator = Evaluator(self.model, anim, self.filename, fmt.animation_offset(self.model, a), running)
        shape_keys, channels = self._shape_keys(evaluator, name)
        result.channels += self._node_channels(evaluator)
        result.channels += channels
        result.channels += self._texture_channels(evaluator)
        result.channels += self._visibility_channels(evaluator)
        return result, shape_keys

    def _node_channels(self, evaluator) -> list[Channel]:
        if self.bones is None:
            return []
        anim, times = evaluator.anim, evaluator.times
        touched = np.zeros(len(self.model.node_floats), bool)
        touched[evaluator.node_index] = True
        mine = touched[self.group_floats]
        moved = mine.any(axis=1) | (self.compensated & touched[self.parent_scales].any(axis=1))
        # Direct: each moved float maps onto one channel component exactly (see the module's docstring).
        uses_a = self.rest_a | mine[:, ROTATION_A].any(axis=1)
        uses_b = self.rest_b | mine[:, ROTATION_B].any(axis=1)
        first = np.zeros(len(self.model.node_floats))
        first[evaluator.node_index] = evaluator.node_hermite[0] + evaluator.node_linear[0]
        first_moves = first[self.group_floats].any(axis=1)
        direct = (
            moved
            & self.may_be_direct
            & ~mine[:, PIVOTS].any(axis=1)
            & ~(uses_a & uses_b)
            & bool((times[1:] > times[:-1]).all())
            & ((times[0] <= anim.start) | ~first_moves)
        )
        held = self.held & ~(moved & ~direct)
        entries = _Entries(evaluator.node_entries)
        by_group = self._direct_channels(evaluator, np.flatnonzero(direct), touched, entries)
        channels, baked = [], []
        for g in np.flatnonzero(moved | held).tolist():
            if direct[g]:
                channels += by_group[g]
            elif moved[g]:
                baked.append(g)
            if held[g]:
                channels += self._held_scale(evaluator, g, touched, entries)
        if baked:
            channels += _baked_channels(
                self.model, evaluator, baked, self.axis, self.world, self.parents, self.bones, entries
            )
        return channels

    def _direct_channels(self, evaluator, groups, touched, entries) -> dict[int, list[Channel]]:
        """The per-component channels of the direct ``groups``, their curves computed together."""
        if not len(groups):
            return {}
        doubled = self.rest_a[groups] | touched[self.group_floats[groups][:, ROTATION_A]].any(axis=1)
        floats = self.nodes[groups][:, None] + np.where(doubled[:, None], DIRECT_A, DIRECT_B)
        factors = np.where(doubled[:, None], FACTORS_A, FACTORS_B)
        moving = touched[floats]  # (groups, 9): the components the animation moves
        floats_at, factors = floats[moving], factors[moving]
        at = evaluator.node_index.searchsorted(floats_at)  # every moving float is a column
        hermite, linear, slope_in, slope_out = (
            steps[:, at]
            for steps in (
                evaluator.node_hermite,
                evaluator.node_linear,
                evaluator.node_slope_in,
                evaluator.node_slope_out,
            )
        )
        times = evaluator.times
        cumulative = np.cumsum(hermite + linear, axis=0)
        count = len(times)
        durations = np.diff(times)
        # The length of the segment ending at each key.
        lengths = np.concatenate([[durations[0] if count > 1 else 1.0], durations])
        per_key = lengths[:, None]
        values = (self.model.node_floats[floats_at] + cumulative) * factors
        start_slope = (slope_in + linear / per_key) * factors
        end_slope = (slope_out + linear / per_key) * factors
        third = per_key / 3.0
        left, right = np.empty(values.shape + (2,)), np.empty(values.shape + (2,))
        left[:, :, 0] = times[:, None] - third
        left[:, :, 1] = values - end_slope * third
        right[:-1, :, 0] = times[:-1, None] + third[1:]
        right[:-1, :, 1] = values[:-1] + start_slope[1:] * third[1:]
        right[-1, :, 0] = times[-1] + third[-1]
        right[-1, :, 1] = values[-1]
        left[0, :, 1] = values[0]
        out = {}
        n = 0
        for g, components in zip(groups.tolist(), moving, strict=True):
            out[g] = channels = []
            for k in np.flatnonzero(components).tolist():
                f = int(floats_at[n])
                channel = Channel(
                    "bone",
                    self.bones[g],
                    DIRECT_PATHS[k],
                    times.copy(),
                    values[:, n, None].copy(),
                    "BEZIER",
                    left[:, n, None].copy(),
                    right[:, n, None].copy(),
                    extras={"node_float": f},
                    index=k % 3,
                )
                channels.append(_with_origin(channel, entries, f, f + 1))
                n += 1
        return out

    def _held_scale(self, evaluator, g, touched, entries) -> list[Channel]:
        """One key of each scale component the animation does not move (``skeleton.scale_in_pose``: the
        rest does not show it)."""
        node = int(self.nodes[g])
        channels = []
        for c in np.flatnonzero(~touched[node + 3 : node + 6]).tolist():
            f = node + 3 + c
            value = np.array([[float(self.model.node_floats[f])]])
            channel = Channel(
                "bone",
                self.bones[g],
                "scale",
                np.array([evaluator.anim.start]),
                value,
                "CONSTANT",
                extras={"node_float": f},
                index=c,
            )
            channels.append(_with_origin(channel, entries, f, f + 1))
        return channels

    def _shape_keys(self, evaluator, name) -> tuple[list, list[Channel]]:
        if not evaluator.position_steps.any():
            return [], []
        anim = evaluator.anim
        times = evaluator.times
        index = evaluator.position_index
        keys, channels = [], []
        for m, mesh_name, first, count, matrix, local in self.mesh_vertices:
            low, high = index.searchsorted([first, first + count])
            if low == high:  # the animation moves none of its vertices
                continue
            steps = evaluator.columns(index, evaluator.position_steps, np.arange(first, first + count))
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
                    key_times, values = times[k - 1 : k + 1].copy(), np.array([0.0, 1.0])
                    interpolation = "LINEAR"
                channels.append(
                    Channel("shape_key", mesh_name, key, key_times, values[:, None], interpolation)
                )
        return keys, channels

    def _texture_channels(self, evaluator) -> list[Channel]:
        changed = (evaluator.frame_steps != 0) | (evaluator.translate_steps != 0).any(axis=2)  # (K, touched)
        if not changed.any():
            return []
        model = self.model
        # Transforms no sampler uses, or that no material slot shows: nothing the game draws moves.
        columns = [
            column
            for column in np.flatnonzero(changed.any(axis=0)).tolist()
            if int(evaluator.texture_index[column]) < len(model.samplers)
            and self.slots.get(int(evaluator.texture_index[column]))
        ]
        if not columns:
            return []
        step_times = [_step_times(evaluator, changed[:, column]) for column in columns]
        # Every column's times at once.
        frame_offsets, translate = evaluator.textures(np.concatenate(step_times))
        channels = []
        end = 0
        for column, times in zip(columns, step_times, strict=True):
            x = int(evaluator.texture_index[column])
            rows = slice(end, end + len(times))
            end += len(times)
            transform = model.texcoord_transforms[x]
            location = mapping_location(translate[rows, x], transform["scale"], transform["rotate"])
            images = self.image_of(texture_image(model, x, frame_offsets[rows, x])).astype(np.float64)
            for material, j in self.slots[x]:
                for path, values in (("translate", location), ("image_index", images[:, None])):
                    channels.append(
                        Channel("material", material, f"texture.{j}.{path}", times.copy(), values, "CONSTANT")
                    )
        return channels

    def _visibility_channels(self, evaluator) -> list[Channel]:
        changed = evaluator.visibility_sets != 0
        if not changed.any():
            return []
        times = _step_times(evaluator, changed.any(axis=1))
        touched = np.zeros(len(self.model.visibility), bool)
        touched[evaluator.visibility_index[changed.any(axis=0)]] = True
        meshes = np.flatnonzero(self.hidden_by[:, touched].any(axis=1))
        if not len(meshes):
            return []
        hidden = self.hidden_by[meshes] @ ~evaluator.visibility(times).T  # (meshes, T): any group hidden
        return [
            Channel(
                "object",
                self.scene.meshes[m].name,
                "hide",
                times.copy(),
                row.astype(np.float64)[:, None],
                "CONSTANT",
            )
            for m, row in zip(meshes.tolist(), hidden, strict=True)
        ]


def node_entries(anim: AnimationData, floats: np.ndarray) -> list[list[int]]:
    """The node-delta entries of the given node floats as (keyframe, float, value, tangent in,
    tangent out) rows in file order (index-only filler entries left out)."""
    rows = node_entry_rows(anim, fmt.running_indices(anim.keyframes, "node", anim.node_deltas["step"]))
    return rows[np.isin(rows[:, 1], floats)].tolist()


class _Entries:
    """An animation's ``node_entry_rows``, found by node float."""

    def __init__(self, rows: np.ndarray):
        self.rows = rows
        self.order = np.argsort(rows[:, 1], kind="stable")
        self.floats = rows[self.order, 1]

    def between(self, first: int, end: int) -> list[list[int]]:
        """The rows of node floats ``first`` to ``end`` − 1, in file order."""
        low, high = self.floats.searchsorted([first, end])
        return self.rows[np.sort(self.order[low:high])].tolist()


def _with_origin(channel: Channel, entries: _Entries, first: int, end: int) -> Channel:
    """``channel`` with its origin: the node-delta entries of node floats ``first`` to ``end`` − 1."""
    channel.origin = ChannelOrigin(
        {"node_floats": [first, end], "entries": entries.between(first, end)}, keys_digest(channel)
    )
    return channel


def _step_times(evaluator: Evaluator, changed: np.ndarray) -> np.ndarray:
    """The start and the times of the keyframes flagged in ``changed`` (K,), clamped to the start, sorted
    without repeats (``np.unique``'s, NaN once; it costs more than the work on these few times)."""
    start = evaluator.anim.start
    times = np.sort(np.maximum(np.concatenate([[start], evaluator.times[changed]]), start))
    nan = np.isnan(times)
    keep = np.empty(len(times), bool)
    keep[:1] = True
    keep[1:] = (times[1:] != times[:-1]) & ~(nan[1:] & nan[:-1])
    return times[keep]


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


def _baked_channels(model, evaluator, groups, axis, world, parents, bones, entries) -> list[Channel]:
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
        bone = bones[g]
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
            channels.append(_with_origin(channel, entries, node, node + NODE_FLOATS))
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
