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

from collections.abc import Callable
from functools import cached_property, partial

import numpy as np

from ..scene import Animation, Channel, ChannelOrigin, ShapeKey, keys_digest
from . import model as fmt
from .evaluate import FPS, Sums, all_running_indices, cumulative, latest_sets, node_entry_rows, node_matrix
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
    each sampler) is worked out once here; the animations then take a few array operations over all of
    it, all of them together (``Sums``), rather than some per animation, group, mesh or slot; what is
    left per animation makes its channels. ``filename`` names the model in errors."""

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

    def convert(self, entries, running=None) -> list[tuple[Animation, list]]:
        """The scene animation and shape keys (as (mesh index, ShapeKey) pairs) of each of ``entries``
        ((entry index, file animation, name)), the animations' sums worked out together (``Sums``);
        ``running``: entry index → ``running_indices`` of each kind, for those known already."""
        running = running or {}
        results, keyed = [], []
        for a, animation, name in entries:
            results.append((self._animation(a, animation, name), []))
            if animation.data is not None and len(animation.data.keyframes):
                keyed.append((len(results) - 1, a, animation.data, name))
        if not keyed:
            return results
        runs = [running[a] if a in running else all_running_indices(anim) for _, a, anim, _ in keyed]
        offsets = [fmt.animation_offset(self.model, a) for _, a, _, _ in keyed]
        # What the conversion holds besides the tables: per animation, its node floats' and groups'
        # flags; per keyframe, the visibility of each group and whether each mesh is hidden.
        widths = (len(self.model.node_floats) + 2 * self.group_floats.size, sum(self.hidden_by.shape))
        chunks = Sums.chunks(self.model, [k[2] for k in keyed], runs, self.filename, offsets, widths)
        done = 0
        for sums in chunks:
            here = keyed[done : done + len(sums.anims)]
            done += len(sums.anims)
            nodes = self._node_channels(sums)
            shapes = self._shape_keys(sums, [name for _, _, _, name in here])
            textures = self._texture_channels(sums)
            visibility = self._visibility_channels(sums)
            for i, (at, _, _, _) in enumerate(here):
                result, shape_keys = results[at]
                shape_keys += shapes[i][0]
                result.channels += nodes[i] + shapes[i][1] + textures[i] + visibility[i]
        return results

    def _animation(self, a, animation, name) -> Animation:
        """The scene animation of entry ``a`` without its channels."""
        extras = {"entry": a, "name": animation.name, "label": name}
        anim = animation.data
        if anim is None:
            extras["data"] = False
            return Animation(name, fps=FPS, extras=extras)
        extras.update(animation_extras(anim))
        return Animation(
            name,
            fps=FPS,
            frame_start=anim.start,
            frame_end=anim.end,
            loop=anim.loop,
            hold_start=True,
            skeleton=0 if self.scene.skeletons else None,
            extras=extras,
        )

    def _node_channels(self, sums) -> list[list[Channel]]:
        """Each animation's bone channels."""
        n = len(sums.anims)
        if self.bones is None:
            return [[] for _ in range(n)]
        owner, targets, column = sums.targets("node")
        touched = np.zeros((n, len(self.model.node_floats)), bool)
        touched[owner, targets] = True
        mine = touched[:, self.group_floats]  # (A, G, 24)
        moved = mine.any(axis=2) | (self.compensated & touched[:, self.parent_scales].any(axis=2))
        # Direct: each moved float maps onto one channel component exactly (see the module's docstring).
        uses_a = self.rest_a | mine[:, :, ROTATION_A].any(axis=2)
        uses_b = self.rest_b | mine[:, :, ROTATION_B].any(axis=2)
        first = np.zeros(touched.shape)
        first[owner, targets] = sums.node_hermite[owner, 0, column] + sums.node_linear[owner, 0, column]
        first_moves = first[:, self.group_floats].any(axis=2)
        times = sums.times
        later = (times[:, 1:] > times[:, :-1]) | (np.arange(times.shape[1] - 1) >= sums.counts[:, None] - 1)
        starts = np.array([anim.start for anim in sums.anims])
        direct = (
            moved
            & self.may_be_direct
            & ~mine[:, :, PIVOTS].any(axis=2)
            & ~(uses_a & uses_b)
            & later.all(axis=1)[:, None]
            & ((times[:, 0] <= starts)[:, None] | ~first_moves)
        )
        held = self.held & ~(moved & ~direct)
        by_group = self._direct_channels(sums, direct, touched)
        entries = _Entries(sums)
        out = []
        for i, groups in enumerate(moved | held):
            channels, baked = [], []
            for g in np.flatnonzero(groups).tolist():
                if direct[i, g]:
                    channels += [_with_origin(c, entries.of(i), f, f + 1) for c, f in by_group[i, g]]
                elif moved[i, g]:
                    baked.append(g)
                if held[i, g]:
                    channels += self._held_scale(sums.anims[i], g, touched[i], entries.of(i))
            if baked:
                channels += _baked_channels(
                    self.model,
                    sums.evaluator(i),
                    baked,
                    self.axis,
                    self.world,
                    self.parents,
                    self.bones,
                    entries.of(i),
                )
            out.append(channels)
        return out

    def _direct_channels(self, sums, direct, touched) -> dict[tuple[int, int], list[tuple[Channel, int]]]:
        """(animation, group) → the per-component channels of each ``direct`` group (A, G) with their node
        float, every curve computed together."""
        pairs, groups = np.nonzero(direct)
        if not len(pairs):
            return {}
        doubled = self.rest_a[groups] | touched[pairs[:, None], self.group_floats[groups][:, ROTATION_A]].any(
            axis=1
        )
        floats = self.nodes[groups][:, None] + np.where(doubled[:, None], DIRECT_A, DIRECT_B)
        factors = np.where(doubled[:, None], FACTORS_A, FACTORS_B)
        moving = touched[pairs[:, None], floats]  # (pairs, 9): the components the animation moves
        floats_at, factors = floats[moving], factors[moving]
        of = pairs.repeat(moving.sum(axis=1))  # each moving float's animation
        at = sums.column("node", of, floats_at)  # every moving float is a column
        hermite, linear, slope_in, slope_out = (
            steps[of, :, at].T
            for steps in (sums.node_hermite, sums.node_linear, sums.node_slope_in, sums.node_slope_out)
        )
        counts = sums.counts[of]
        times = sums.times[of].T  # (K, floats)
        cumulative = np.cumsum(hermite + linear, axis=0)
        # The length of the segment ending at each key (1 past the last).
        lengths = np.ones(sums.times.shape)
        lengths[:, 1:] = np.diff(sums.times, axis=1)
        lengths[:, 0] = np.where(sums.counts > 1, lengths[:, 1 % lengths.shape[1]], 1.0)
        lengths[np.arange(lengths.shape[1]) >= sums.counts[:, None]] = 1.0
        per_key = lengths[of].T
        values = (self.model.node_floats[floats_at] + cumulative) * factors
        start_slope = (slope_in + linear / per_key) * factors
        end_slope = (slope_out + linear / per_key) * factors
        third = per_key / 3.0
        left, right = np.empty(values.shape + (2,)), np.empty(values.shape + (2,))
        left[:, :, 0] = times - third
        left[:, :, 1] = values - end_slope * third
        right[:-1, :, 0] = times[:-1] + third[1:]
        right[:-1, :, 1] = values[:-1] + start_slope[1:] * third[1:]
        last, columns = counts - 1, np.arange(len(counts))
        right[last, columns, 0] = times[last, columns] + third[last, columns]
        right[last, columns, 1] = values[last, columns]
        left[0, :, 1] = values[0]
        out = {}
        n = 0
        for i, g, components in zip(pairs.tolist(), groups.tolist(), moving, strict=True):
            out[i, g] = channels = []
            count = int(sums.counts[i])
            for k in np.flatnonzero(components).tolist():
                f = int(floats_at[n])
                channel = Channel(
                    "bone",
                    self.bones[g],
                    DIRECT_PATHS[k],
                    sums.times[i, :count].copy(),
                    values[:count, n, None].copy(),
                    "BEZIER",
                    left[:count, n, None].copy(),
                    right[:count, n, None].copy(),
                    extras={"node_float": f},
                    index=k % 3,
                )
                channels.append((channel, f))
                n += 1
        return out

    def _held_scale(self, anim, g, touched, entries) -> list[Channel]:
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
                np.array([anim.start]),
                value,
                "CONSTANT",
                extras={"node_float": f},
                index=c,
            )
            channels.append(_with_origin(channel, entries, f, f + 1))
        return channels

    def _shape_keys(self, sums, names) -> list[tuple[list, list[Channel]]]:
        """Each animation's shape keys (as (mesh index, ShapeKey) pairs) and their channels (``names``:
        the animations')."""
        out = [([], []) for _ in sums.anims]
        owner, targets, column = sums.targets("position")
        moves = (sums.position_steps[owner, :, column] != 0).any(axis=2)  # (targets, K)
        for m, mesh_name, first, count, matrix, local in self.mesh_vertices:
            inside = np.flatnonzero((targets >= first) & (targets < first + count))
            if not len(inside):  # no animation moves its vertices
                continue
            bounds = [0, *(np.flatnonzero(np.diff(owner[inside])) + 1).tolist(), len(inside)]
            for low, high in zip(bounds[:-1], bounds[1:], strict=True):
                mine = inside[low:high]
                i = int(owner[mine[0]])
                anim, times, name = sums.anims[i], sums.times[i], names[i]
                keys, channels = out[i]
                for k in np.flatnonzero(moves[mine].any(axis=0)).tolist():
                    steps = np.zeros((count, 3))
                    steps[targets[mine] - first] = sums.position_steps[i, k, column[mine]]
                    key = f"{name}.{k}"
                    positions = apply(matrix, local + steps).astype(np.float32)
                    keys.append((m, ShapeKey(key, positions, extras={"animation": name, "keyframe": k})))
                    if k == 0:
                        key_times = (
                            np.array([times[0]])
                            if times[0] <= anim.start
                            else np.array([anim.start, times[0]])
                        )
                        values = np.ones(1) if times[0] <= anim.start else np.array([0.0, 1.0])
                        interpolation = "CONSTANT"
                    else:
                        key_times, values = times[k - 1 : k + 1].copy(), np.array([0.0, 1.0])
                        interpolation = "LINEAR"
                    channels.append(
                        Channel("shape_key", mesh_name, key, key_times, values[:, None], interpolation)
                    )
        return out

    def _texture_channels(self, sums) -> list[list[Channel]]:
        """Each animation's material channels."""
        out = [[] for _ in sums.anims]
        model = self.model
        owner, targets, column = sums.targets("texture")
        changed = (sums.frame_steps != 0) | (sums.translate_steps != 0).any(axis=3)  # (A, K, U)
        moves = changed[owner, :, column].any(axis=1)
        # Transforms no sampler uses, or that no material slot shows: nothing the game draws moves.
        shown = [
            t
            for t in np.flatnonzero(moves).tolist()
            if int(targets[t]) < len(model.samplers) and self.slots.get(int(targets[t]))
        ]
        if not shown:
            return out
        of, columns, transforms = owner[shown], column[shown], targets[shown]
        times, row_of = _step_times(sums, of, changed[of, :, columns])  # every shown column's, together
        of_row, column_row, x = of[row_of], columns[row_of], transforms[row_of]
        full = sums.applied(of_row, times)
        table = model.texcoord_transforms
        frames = (
            table["frame_offset"].astype(np.int64)[x]
            + cumulative(sums.frame_steps, 1)[of_row, full, column_row]
        )
        translate = (
            table["translate"].astype(np.float64)[x]
            + cumulative(sums.translate_steps, 1)[of_row, full, column_row]
        )
        location = mapping_location(translate, table["scale"][x], table["rotate"][x])
        images = self.image_of(texture_image(model, x, frames & 0xFF)).astype(np.float64)
        bounds = np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=len(shown)))]).tolist()
        for p, (i, transform) in enumerate(zip(of.tolist(), transforms.tolist(), strict=True)):
            rows = slice(bounds[p], bounds[p + 1])
            for material, j in self.slots[transform]:
                for path, values in (("translate", location[rows]), ("image_index", images[rows, None])):
                    out[i].append(
                        Channel(
                            "material",
                            material,
                            f"texture.{j}.{path}",
                            times[rows].copy(),
                            values,
                            "CONSTANT",
                        )
                    )
        return out

    def _visibility_channels(self, sums) -> list[list[Channel]]:
        """Each animation's object channels."""
        out = [[] for _ in sums.anims]
        owner, targets, column = sums.targets("visibility")
        changed = sums.visibility_sets != 0  # (A, K, U)
        touched = np.zeros((len(sums.anims), self.hidden_by.shape[1]), bool)
        hit = changed[owner, :, column].any(axis=1)
        touched[owner[hit], targets[hit]] = True
        meshes = self.hidden_by @ touched.T  # (M, A): the meshes each animation may hide
        animations = np.flatnonzero(meshes.any(axis=0))
        if not len(animations):
            return out
        times, row_of = _step_times(sums, animations, changed[animations].any(axis=2))
        of_row = animations[row_of]
        full = sums.applied(of_row, times)
        chosen = latest_sets(sums.visibility_sets)[of_row, full]  # (rows, U)
        # Each row's animation's targets: (row, column, group) triples.
        counts = sums.touched["visibility"][of_row]
        rows = np.arange(len(times)).repeat(counts)
        columns = np.arange(len(rows)) - (counts.cumsum() - counts)[rows]
        groups = sums.index["visibility"][sums.first["visibility"][of_row[rows]] + columns]
        visible = np.repeat((self.model.visibility != 0)[None], len(times), 0)
        value = chosen[rows, columns]
        visible[rows, groups] = np.where(value != 0, value > 0, visible[rows, groups])
        hidden = self.hidden_by @ ~visible.T  # (M, rows): any group hidden
        bounds = np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=len(animations)))]).tolist()
        for p, i in enumerate(animations.tolist()):
            at = slice(bounds[p], bounds[p + 1])
            out[i] = [
                Channel(
                    "object",
                    self.scene.meshes[m].name,
                    "hide",
                    times[at].copy(),
                    hidden[m, at].astype(np.float64)[:, None],
                    "CONSTANT",
                )
                for m in np.flatnonzero(meshes[:, i]).tolist()
            ]
        return out


def node_entries(anim: AnimationData, floats: np.ndarray) -> list[list[int]]:
    """The node-delta entries of the given node floats as (keyframe, float, value, tangent in,
    tangent out) rows in file order (index-only filler entries left out)."""
    kf, index, entries = fmt.running_indices(anim.keyframes, "node", anim.node_deltas["step"])
    rows = node_entry_rows(anim.node_deltas[entries], kf, index)
    return rows[np.isin(rows[:, 1], floats)].tolist()


class _Entries:
    """The ``node_entry_rows`` of the animations of ``sums``, found by animation and node float."""

    def __init__(self, sums: Sums):
        animation, kf, column, deltas = sums.node_deltas
        index = sums.index["node"][sums.first["node"][animation] + column]
        rows = node_entry_rows(deltas, animation, kf, index)
        self.rows = rows[:, 1:]
        self.span = int(index.max(initial=0)) + 1
        keys = rows[:, 0] * self.span + rows[:, 2]
        self.order = np.argsort(keys, kind="stable")
        self.keys = keys[self.order]

    def of(self, animation: int) -> Callable[[int, int], list[list[int]]]:
        """``between`` for one animation."""
        return partial(self.between, animation)

    def between(self, animation: int, first: int, end: int) -> list[list[int]]:
        """The rows of ``animation``'s node floats ``first`` to ``end`` − 1, in file order."""
        base = animation * self.span
        low, high = self.keys.searchsorted([base + min(first, self.span), base + min(end, self.span)])
        return self.rows[np.sort(self.order[low:high])].tolist()


def _with_origin(channel: Channel, entries, first: int, end: int) -> Channel:
    """``channel`` with its origin: the node-delta entries of node floats ``first`` to ``end`` − 1
    (``entries``: those of its animation, ``_Entries.of``)."""
    channel.origin = ChannelOrigin(
        {"node_floats": [first, end], "entries": entries(first, end)}, keys_digest(channel)
    )
    return channel


def _step_times(sums: Sums, animations: np.ndarray, changed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``changed`` (R, K), keyframes flagged in animation ``animations[row]``: its start and
    the flagged keyframes' times, clamped to the start, sorted without repeats (``np.unique``'s, NaN once),
    all rows' one after another; and each time's row."""
    starts = np.array([anim.start for anim in sums.anims])[animations]
    flagged, keyframes = np.nonzero(changed)
    rows = np.concatenate([np.arange(len(animations)), flagged])
    times = np.maximum(np.concatenate([starts, sums.times[animations[flagged], keyframes]]), starts[rows])
    order = np.lexsort((times, rows))  # stable: a row's start, then its keyframes in order, as np.sort
    times, rows = times[order], rows[order]
    nan = np.isnan(times)
    keep = np.empty(len(times), bool)
    keep[:1] = True
    keep[1:] = (rows[1:] != rows[:-1]) | ((times[1:] != times[:-1]) & ~(nan[1:] & nan[:-1]))
    return times[keep], rows[keep]


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
