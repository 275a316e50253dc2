"""What the game computes for a model at any time of one of its animations.

Times are frames at 60 per second. Before the start the animation shows its
start; a looping animation wraps with period end − start; otherwise the pose
after the last keyframe holds.

Keyframe k (time Tk) carries deltas. The pose at time t starts from the
model's own tables, applies every keyframe with Tk ≤ t in full, and the next
keyframe (the first with Tk > t) partly, with u = (t − Tk−1) / (Tk − Tk−1):
- positions and normals: + u · delta (delta bytes are 1/16 units);
- node floats: Hermite from 0 to the delta (1/16 units) with start slope
  tan(tangent_in°) and end slope tan(tangent_out°) (value per frame, so ×
  duration per unit u); when |tangent_out| ≥ 89 the game blends linearly;
- texture-transform deltas (frame offset, translation) and visibility
  changes only once their keyframe is reached.
The first keyframe is never applied partly (nothing comes before it), and a
single-keyframe animation applies in full at every time. Inside a keyframe
the index of each delta is the running sum of the index steps.

Everything is vectorised over times and entries; per-keyframe sums are
precomputed once, for many animations together (``Sums``: a model has
hundreds, each small).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..curves import euler_to_matrix
from ..errors import FormatError
from ..scene import world_from_local
from .model import DELTA_TABLES, NODE_FLOATS, AnimationData, Model, group_parents, running_indices

FPS = 60.0
DELTA_UNIT = 1.0 / 16.0
LINEAR_TANGENT = 89  # |tangent_out| at or above this: the game blends the node value linearly
EVALUATION_BUDGET = 1 << 24  # keyframes × touched targets: beyond this a file is hostile, not a model
CHUNK_CELLS = 1 << 20  # cells of the tables of the animations evaluated together (a few MB at most)


@dataclass
class Pose:
    """Evaluated tables, one row per requested time."""

    positions: np.ndarray  # (T, P, 3) float64
    normals: np.ndarray  # (T, N, 3) float64
    frame_offsets: np.ndarray  # (T, X) int64, texture-coordinate transform frame offsets (u8 wrap)
    translate: np.ndarray  # (T, X, 2) float64
    visibility: np.ndarray  # (T, G) bool
    node_floats: np.ndarray  # (T, F) float64


def local_time(anim: AnimationData, times) -> np.ndarray:
    """Animation time shown at each of ``times``: clamped to the start, wrapped when looping."""
    return _local_time(np.asarray(times, np.float64), anim.start, anim.end, anim.loop)


def _local_time(times: np.ndarray, start, end, loop) -> np.ndarray:
    """``local_time`` with the animation's start, end and loop once or per time."""
    t = np.maximum(times, start)
    period = end - start
    wraps = np.logical_and(loop, period > 0)
    with np.errstate(all="ignore"):  # times that do not wrap compute what they do not keep
        wrapped = start + np.mod(t - start, np.where(wraps, period, 1.0))
    return np.where(wraps & (t >= end), wrapped, t)


def _applied(times: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The keyframes (at ``times``) applied in full at each local time ``t`` (a single one: always)."""
    if len(times) <= 1:
        return np.full(t.shape, len(times), np.int64)
    # The first keyframe later than t is where the running maximum of the times first exceeds t.
    return np.maximum.accumulate(times).searchsorted(t, side="right")


def all_running_indices(anim: AnimationData) -> dict:
    """The animation's ``running_indices`` of each kind."""
    return {
        kind: running_indices(anim.keyframes, kind, getattr(anim, table)["step"])
        for kind, (table, _) in DELTA_TABLES.items()
    }


def hermite_weights(u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weights of the end value, the start slope and the end slope (the start value is 0)."""
    u2, u3 = u * u, u * u * u
    return -2 * u3 + 3 * u2, u3 - 2 * u2 + u, u3 - u2


class Evaluator:
    """Per-keyframe sums of one animation's deltas, kept only for the entries the deltas touch."""

    def __init__(
        self, model: Model, anim: AnimationData, filename: str = "<model>", offset: int = 0, running=None
    ):
        """``filename`` and ``offset`` (of the animation's data in the file) name the animation in errors;
        ``running``: the ``running_indices`` of each kind when they are known already."""
        running = all_running_indices(anim) if running is None else running
        (sums,) = Sums.chunks(model, [anim], [running], filename, [offset])
        self._take(sums, 0)

    def _take(self, sums: Sums, i: int) -> None:
        """Animation ``i`` of ``sums``: its rows and columns of the padded tables."""
        self.model, self.anim, self.running = sums.model, sums.anims[i], sums.running[i]
        count = int(sums.counts[i])
        self.times = sums.times[i, :count]
        self.position_index, self.position_steps = sums.part("position", i, sums.position_steps)
        self.normal_index, self.normal_steps = sums.part("normal", i, sums.normal_steps)
        self.texture_index, self.frame_steps = sums.part("texture", i, sums.frame_steps)
        _, self.translate_steps = sums.part("texture", i, sums.translate_steps)
        self.visibility_index, self.visibility_sets = sums.part("visibility", i, sums.visibility_sets)
        self.node_index, self.node_hermite = sums.part("node", i, sums.node_hermite)
        self.node_linear, self.node_slope_in, self.node_slope_out = (
            sums.part("node", i, steps)[1]
            for steps in (sums.node_linear, sums.node_slope_in, sums.node_slope_out)
        )

    def columns(self, index: np.ndarray, steps: np.ndarray, wanted) -> np.ndarray:
        """``steps`` (K, U, …) spread over the ``wanted`` target indices (zero where untouched)."""
        wanted = np.asarray(wanted, np.int64)
        out = np.zeros((steps.shape[0], len(wanted)) + steps.shape[2:], steps.dtype)
        at = np.clip(np.searchsorted(index, wanted), 0, max(len(index) - 1, 0))
        hit = (at < len(index)) & (index[at] == wanted) if len(index) else np.zeros(len(wanted), bool)
        out[:, hit] = steps[:, at[hit]]
        return out

    def applied(self, times) -> np.ndarray:
        """Per time: the keyframes applied in full (``segments``' first, alone)."""
        return _applied(self.times, local_time(self.anim, times))

    def segments(self, times) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per time: keyframes applied in full, the partly applied keyframe (K for none), u and duration."""
        t = local_time(self.anim, times)
        count = len(self.times)
        following = _applied(self.times, t)
        if count <= 1:
            return following, np.full(t.shape, count, np.int64), np.zeros(t.shape), np.zeros(t.shape)
        partial = np.where((following > 0) & (following < count), following, count)
        previous = self.times[np.maximum(partial - 1, 0)]
        duration = np.where(partial < count, self.times[np.minimum(partial, count - 1)] - previous, 1.0)
        u = np.where(partial < count, (t - previous) / duration, 0.0)
        return following, partial, u, duration

    def node_floats(self, times, floats=None) -> np.ndarray:
        """(T, n) node floats at ``times``, for the float indices ``floats`` (all when None)."""
        m = self.model
        floats = np.arange(len(m.node_floats)) if floats is None else np.asarray(floats, np.int64)
        full, partial, u, duration = self.segments(np.atleast_1d(np.asarray(times, np.float64)))
        pick = [self.columns(self.node_index, a, floats) for a in (self.node_hermite, self.node_linear)]
        hermite, linear = pick
        slope_in = self.columns(self.node_index, self.node_slope_in, floats)
        slope_out = self.columns(self.node_index, self.node_slope_out, floats)
        end_weight, in_weight, out_weight = hermite_weights(u)
        return (
            m.node_floats[floats]
            + cumulative(hermite + linear)[full]
            + end_weight[:, None] * _padded(hermite)[partial]
            + u[:, None] * _padded(linear)[partial]
            + (duration * in_weight)[:, None] * _padded(slope_in)[partial]
            + (duration * out_weight)[:, None] * _padded(slope_out)[partial]
        )

    def at(self, times) -> Pose:
        times = np.atleast_1d(np.asarray(times, np.float64))
        full, partial, u, _ = self.segments(times)
        m = self.model

        def vertices(base, index, steps):
            out = np.broadcast_to(base.astype(np.float64), (len(times),) + base.shape).copy()
            out[:, index] += cumulative(steps)[full] + u[:, None, None] * _padded(steps)[partial]
            return out

        return Pose(
            vertices(m.positions, self.position_index, self.position_steps),
            vertices(m.normals, self.normal_index, self.normal_steps),
            *self.textures(times),
            self.visibility(times),
            self.node_floats(times),
        )

    def textures(self, times) -> tuple[np.ndarray, np.ndarray]:
        """``Pose.frame_offsets`` and ``Pose.translate`` at ``times`` alone (``at`` without the rest)."""
        times = np.atleast_1d(np.asarray(times, np.float64))
        full = self.applied(times)
        m = self.model
        frames, translations = self._texture_sums
        frame_offsets = np.repeat(m.texcoord_transforms["frame_offset"].astype(np.int64)[None], len(times), 0)
        frame_offsets[:, self.texture_index] += frames[full]
        translate = np.repeat(m.texcoord_transforms["translate"].astype(np.float64)[None], len(times), 0)
        translate[:, self.texture_index] += translations[full]
        return frame_offsets & 0xFF, translate

    @cached_property
    def _texture_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """``cumulative`` frame steps and translations."""
        return cumulative(self.frame_steps), cumulative(self.translate_steps)

    def visibility(self, times) -> np.ndarray:
        """``Pose.visibility`` at ``times`` alone: the last visibility set at or before each applied
        keyframe, else the model's own state."""
        times = np.atleast_1d(np.asarray(times, np.float64))
        full = self.applied(times)
        m = self.model
        visibility = np.repeat((m.visibility != 0)[None], len(times), 0)
        chosen = self._latest_sets[full]
        visibility[:, self.visibility_index] = np.where(
            chosen != 0, chosen > 0, visibility[:, self.visibility_index]
        )
        return visibility

    @cached_property
    def _latest_sets(self) -> np.ndarray:
        return latest_sets(self.visibility_sets)


class Sums:
    """Per-keyframe sums of the deltas of several animations, worked out together: (A, K, U…) tables
    padded with zeros to the most keyframes (K) and touched targets of each kind (U) of any of them.
    The targets of animation i and kind k are ``index[k][first[k][i] : first[k][i] + touched[k][i]]``
    (sorted), its columns the first ``touched[k][i]`` of the tables; ``evaluator(i)`` is its Evaluator."""

    def __init__(self, model: Model, anims: list[AnimationData], running: list[dict]):
        self.model, self.anims, self.running = model, anims, running
        n = len(anims)
        self.counts = np.array([len(anim.keyframes) for anim in anims], np.int64)
        size = int(self.counts.max(initial=0))
        keyframe_rows = np.arange(n).repeat(self.counts)
        keyframe_columns = np.arange(len(keyframe_rows)) - (self.counts.cumsum() - self.counts)[keyframe_rows]
        self.times = np.zeros((n, size))
        self.times[keyframe_rows, keyframe_columns] = np.concatenate(
            [anim.keyframes["time"] for anim in anims]
        ).astype(np.float64)
        self.index, self.first, self.touched = {}, {}, {}
        found = {kind: self._found(kind) for kind in DELTA_TABLES}

        def table(kind, shape=(), dtype=np.float64):
            return np.zeros((n, size, int(self.touched[kind].max(initial=0))) + shape, dtype)

        for kind, name in (("position", "position_steps"), ("normal", "normal_steps")):
            animation, kf, column, deltas = found[kind]
            steps = table(kind, (3,))
            np.add.at(steps, (animation, kf, column), deltas["delta"].astype(np.float64) * DELTA_UNIT)
            setattr(self, name, steps)

        animation, kf, column, deltas = found["texture"]
        self.frame_steps, self.translate_steps = table("texture", (), np.int64), table("texture", (2,))
        np.add.at(self.frame_steps, (animation, kf, column), deltas["frame_step"])
        np.add.at(self.translate_steps, (animation, kf, column), deltas["translate"].astype(np.float64))

        animation, kf, column, deltas = found["visibility"]
        self.visibility_sets = table("visibility", (), np.int8)
        # Later entries win: keep only each (keyframe, index)'s last change. Indices only grow inside a
        # keyframe (their steps are unsigned), so the cells come in order and repeats are neighbours.
        cells = np.ravel_multi_index((animation, kf, column), self.visibility_sets.shape)
        last = np.empty(len(cells), bool)
        last[-1:] = True
        last[:-1] = cells[1:] != cells[:-1]
        self.visibility_sets.ravel()[cells[last]] = deltas["value"][last]

        self.node_deltas = found["node"]  # (animation, keyframe, column, delta record)
        animation, kf, column, deltas = found["node"]
        value = deltas["value"].astype(np.float64) * DELTA_UNIT
        linear = np.abs(deltas["tangent_out"].astype(np.int64)) >= LINEAR_TANGENT
        hermite = ~linear
        self.node_hermite, self.node_linear = table("node"), table("node")
        self.node_slope_in, self.node_slope_out = table("node"), table("node")
        at = (animation[hermite], kf[hermite], column[hermite])
        np.add.at(self.node_hermite, at, value[hermite])
        np.add.at(self.node_linear, (animation[linear], kf[linear], column[linear]), value[linear])
        for slopes, key in ((self.node_slope_in, "tangent_in"), (self.node_slope_out, "tangent_out")):
            np.add.at(slopes, at, np.tan(np.radians(deltas[key][hermite].astype(np.float64))))

    @classmethod
    def chunks(
        cls,
        model: Model,
        anims: list[AnimationData],
        running: list[dict],
        filename: str,
        offsets: list[int],
        widths: tuple[int, int] = (0, 0),
    ) -> list[Sums]:
        """``Sums`` of consecutive runs of ``anims`` (each with keyframes), as many together as keep their
        padded tables, with the cells their caller adds (``widths``: per animation and per keyframe),
        within CHUNK_CELLS (one animation alone may take more); an animation beyond EVALUATION_BUDGET is a
        FormatError (``offsets``: of each one's data in ``filename``)."""
        if not anims:
            return []
        counts = np.array([len(anim.keyframes) for anim in anims], np.int64)
        touched = np.stack(
            [_together(anims, running, kind)[5] for kind in DELTA_TABLES], axis=1
        )  # (A, kinds)
        large = np.flatnonzero(counts * touched.sum(axis=1) > EVALUATION_BUDGET)
        if len(large):
            a = int(large[0])
            raise FormatError(
                filename,
                offsets[a],
                f"animation of {counts[a]} keyframes × {touched[a].sum()} targets is too large to evaluate",
            )
        out, first = [], 0
        size, touches = 0, np.zeros(touched.shape[1], np.int64)  # the padded tables of the chunk so far
        for a in range(len(anims)):
            size, touches = max(size, int(counts[a])), np.maximum(touches, touched[a])
            cells = (a + 1 - first) * ((size + 1) * (int(touches.sum()) + widths[1]) + widths[0])
            if a > first and cells > CHUNK_CELLS:
                out.append(cls(model, anims[first:a], running[first:a]))
                first, size, touches = a, int(counts[a]), touched[a]
        if first < len(anims):
            out.append(cls(model, anims[first:], running[first:]))
        return out

    def _found(self, kind: str):
        """(animation, keyframe, column, delta record) of every delta of one kind (visibility: its changes
        alone); keeps the targets of each animation (``index``, ``first``, ``touched``)."""
        animation, kf, column, deltas, targets, touched = _together(
            self.anims, self.running, kind, changes=kind == "visibility"
        )
        self.index[kind], self.touched[kind] = targets, touched
        self.first[kind] = touched.cumsum() - touched
        return animation, kf, column, deltas

    def targets(self, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(animation, target, column) of every target of ``kind`` each animation touches."""
        owner = np.arange(len(self.anims)).repeat(self.touched[kind])
        return owner, self.index[kind], np.arange(len(owner)) - self.first[kind][owner]

    def column(self, kind: str, animation: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """The columns of ``targets`` of ``kind`` (each touched by its ``animation``)."""
        owner, index, _ = self.targets(kind)
        span = int(max(index.max(initial=0), targets.max(initial=0))) + 1
        return (owner * span + index).searchsorted(animation * span + targets) - self.first[kind][animation]

    def applied(self, animation: np.ndarray, times: np.ndarray) -> np.ndarray:
        """``Evaluator.applied`` of each of ``times`` in its ``animation`` (the animations in order)."""
        loop, start, end = (
            np.array([getattr(anim, k) for anim in self.anims])[animation] for k in ("loop", "start", "end")
        )
        t = _local_time(times, start, end, loop)
        full = np.empty(len(t), np.int64)
        if not len(t):
            return full
        bounds = [0, *(np.flatnonzero(np.diff(animation)) + 1).tolist(), len(t)]
        for low, high in zip(bounds[:-1], bounds[1:], strict=True):
            a = int(animation[low])
            full[low:high] = _applied(self.times[a, : self.counts[a]], t[low:high])
        return full

    def part(self, kind: str, i: int, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Animation ``i``'s targets of ``kind`` and its (K, U…) part of ``table``."""
        first, touched = int(self.first[kind][i]), int(self.touched[kind][i])
        return self.index[kind][first : first + touched], table[i, : self.counts[i], :touched]

    def evaluator(self, i: int) -> Evaluator:
        evaluator = Evaluator.__new__(Evaluator)
        evaluator._take(self, i)
        return evaluator


def latest_sets(sets: np.ndarray) -> np.ndarray:
    """(…, K + 1, U): the last visibility set at or before each count of applied keyframes (0: none), of
    (…, K, U) visibility sets."""
    sets = np.concatenate([np.zeros_like(sets[..., :1, :]), sets], axis=-2)
    latest = np.maximum.accumulate(np.where(sets != 0, np.arange(sets.shape[-2])[:, None], 0), axis=-2)
    return np.take_along_axis(sets, latest, axis=-2)


def node_entry_rows(deltas: np.ndarray, *columns: np.ndarray) -> np.ndarray:
    """(*columns, value, tangent in, tangent out) int64 rows of node-delta entries in their order (the
    ``columns`` give each one's keyframe, float…), index-only filler entries left out."""
    moving = (deltas["value"] != 0) | (deltas["tangent_in"] != 0) | (deltas["tangent_out"] != 0)
    rows = np.stack(
        [*columns] + [deltas[k].astype(np.int64) for k in ("value", "tangent_in", "tangent_out")], axis=1
    )
    return rows[moving]


def _together(anims: list[AnimationData], running: list[dict], kind: str, changes: bool = False):
    """Every delta of one kind of all ``anims`` (``changes``: only those with a non-zero value) as
    (animation, keyframe, column, delta record), with the targets each animation touches, one animation's
    after another's (each sorted: ``np.unique`` of its running indices) and how many each touches; a
    delta's column is its target's place among its animation's."""
    table = DELTA_TABLES[kind][0]
    parts = [r[kind] for r in running]
    lengths = np.array([len(part[0]) for part in parts], np.int64)
    animation = np.arange(len(parts)).repeat(lengths)
    kf, index, entries = (np.concatenate([part[n] for part in parts]).astype(np.int64) for n in range(3))
    sizes = np.array([len(getattr(anim, table)) for anim in anims], np.int64)
    # Joined as bytes (in one byte order): concatenating record arrays compares their fields pair by pair.
    dtype = getattr(anims[0], table).dtype
    joined = np.frombuffer(
        b"".join([getattr(a, table).astype(dtype, copy=False).tobytes() for a in anims]), dtype
    )
    deltas = joined[entries + (sizes.cumsum() - sizes)[animation]]
    if changes:
        keep = deltas["value"] != 0
        animation, kf, index, deltas = animation[keep], kf[keep], index[keep], deltas[keep]
    span = int(index.max(initial=0)) + 1
    keys = animation * span + index
    ordered = np.sort(keys)
    first = np.empty(len(ordered), bool)
    first[:1] = True
    first[1:] = ordered[1:] != ordered[:-1]
    unique = ordered[first]
    owner = unique // span
    touched = np.bincount(owner, minlength=len(parts))
    column = unique.searchsorted(keys) - (touched.cumsum() - touched)[animation]
    return animation, kf, column, deltas, unique - owner * span, touched


def cumulative(steps: np.ndarray, axis: int = 0) -> np.ndarray:
    """Sum of the first n keyframes' steps for n = 0..K (the keyframes along ``axis``)."""
    shape = list(steps.shape)
    shape[axis] = 1
    return np.concatenate([np.zeros(shape, steps.dtype), np.cumsum(steps, axis=axis)], axis=axis)


def _padded(steps: np.ndarray) -> np.ndarray:
    """Steps with a zero row at K, for 'no partly applied keyframe'."""
    return np.concatenate([steps, np.zeros((1,) + steps.shape[1:], steps.dtype)])


# -- transforms ------------------------------------------------------------------------


def _translation(v: np.ndarray) -> np.ndarray:
    m = np.broadcast_to(np.eye(4), v.shape[:-1] + (4, 4)).copy()
    m[..., :3, 3] = v
    return m


def _scaling(v: np.ndarray) -> np.ndarray:
    m = np.zeros(v.shape[:-1] + (4, 4))
    m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], m[..., 3, 3] = v[..., 0], v[..., 1], v[..., 2], 1.0
    return m


def euler_zyx(degrees: np.ndarray) -> np.ndarray:
    """(…, 4, 4) Rz · Ry · Rx of (…, 3) angles in degrees (X applied first)."""
    degrees = np.asarray(degrees, np.float64)
    m = np.zeros((degrees[..., 0].size, 4, 4))
    m[:, :3, :3] = euler_to_matrix(np.radians(degrees).reshape(-1, 3))
    m[:, 3, 3] = 1.0
    return m.reshape(degrees.shape[:-1] + (4, 4))


def node_matrix(node: np.ndarray, parent_scale: np.ndarray | None = None) -> np.ndarray:
    """(…, 4, 4) local matrix of (…, 24) node floats; ``parent_scale`` (…, 3) when compensated.

    T(t) · [S(1/parent scale)] · T(rc + rt) · R(B) · R(2A) · T(−rc) · T(sc + st) · S(s) · T(−sc)
    """
    node = np.asarray(node, np.float64)
    t, s, a, b = node[..., 0:3], node[..., 3:6], node[..., 6:9], node[..., 9:12]
    rc, sc, rt, st = node[..., 12:15], node[..., 15:18], node[..., 18:21], node[..., 21:24]
    m = _translation(t)
    if parent_scale is not None:
        with np.errstate(divide="ignore"):
            m = m @ _scaling(1.0 / np.asarray(parent_scale, np.float64))
    m = m @ _translation(rc + rt) @ euler_zyx(b) @ euler_zyx(2 * a) @ _translation(-rc)
    return m @ _translation(sc + st) @ _scaling(s) @ _translation(-sc)


def local_matrices(model: Model, node_floats: np.ndarray, parents: np.ndarray | None = None) -> np.ndarray:
    """(…, G, 4, 4) parent-relative matrices of every group from (…, F) node floats."""
    groups = model.groups
    parents = group_parents(groups) if parents is None else parents
    index = groups["node"].astype(np.int64)[:, None] + np.arange(NODE_FLOATS)
    nodes = np.asarray(node_floats, np.float64)[..., index]  # (…, G, 24)
    local = node_matrix(nodes)
    compensated = (groups["compensate"] != 0) & (parents >= 0)
    if compensated.any():
        parent_scale = nodes[..., parents[compensated], 3:6]
        local[..., compensated, :, :] = node_matrix(nodes[..., compensated, :], parent_scale)
    return local


def world_matrices(model: Model, node_floats: np.ndarray, parents: np.ndarray | None = None) -> np.ndarray:
    """(…, G, 4, 4) model-space matrices: parent world · local, down the group tree."""
    parents = group_parents(model.groups) if parents is None else parents
    return world_from_local(local_matrices(model, node_floats, parents), parents)


def texcoord_matrix(translate, scale, rotate_degrees) -> np.ndarray:
    """(…, 3, 3) texture-coordinate matrix T(.5,.5) · R(−rot) · T(−.5,−.5) · T(translate) · S(scale)."""
    translate, scale = np.asarray(translate, np.float64), np.asarray(scale, np.float64)
    angle = -np.radians(np.asarray(rotate_degrees, np.float64))
    c, s = np.cos(angle), np.sin(angle)
    rotation = np.zeros(c.shape + (3, 3))
    rotation[..., 0, 0], rotation[..., 0, 1], rotation[..., 1, 0], rotation[..., 1, 1] = c, -s, s, c
    rotation[..., 2, 2] = 1.0

    def move(x, y):
        m = np.broadcast_to(np.eye(3), np.shape(x) + (3, 3)).copy()
        m[..., 0, 2], m[..., 1, 2] = x, y
        return m

    size = np.zeros(scale.shape[:-1] + (3, 3))
    size[..., 0, 0], size[..., 1, 1], size[..., 2, 2] = scale[..., 0], scale[..., 1], 1.0
    return move(0.5, 0.5) @ rotation @ move(-0.5, -0.5) @ move(translate[..., 0], translate[..., 1]) @ size
