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
precomputed once per animation.
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
    t = np.maximum(np.asarray(times, np.float64), anim.start)
    period = anim.end - anim.start
    if anim.loop and period > 0:
        t = np.where(t >= anim.end, anim.start + np.mod(t - anim.start, period), t)
    return t


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
        self.model, self.anim = model, anim
        keys = anim.keyframes
        self.times = keys["time"].astype(np.float64)
        count = len(keys)
        if running is None:
            running = {
                kind: running_indices(keys, kind, getattr(anim, table)["step"])
                for kind, (table, _) in DELTA_TABLES.items()
            }
        self.running = running  # ``running_indices`` of each kind
        # The targets each kind touches, and each delta's column among them.
        found = {kind: _targets(index) for kind, (_, index, _) in running.items()}
        touched = sum(len(targets) for targets, _ in found.values())
        if count * touched > EVALUATION_BUDGET:
            raise FormatError(
                filename,
                offset,
                f"animation of {count} keyframes × {touched} targets is too large to evaluate",
            )

        self.position_index, self.position_steps = _vertex_deltas(
            count, running["position"], found["position"], anim.position_deltas
        )
        self.normal_index, self.normal_steps = _vertex_deltas(
            count, running["normal"], found["normal"], anim.normal_deltas
        )

        kf, _, entries = running["texture"]
        self.texture_index, column = found["texture"]
        self.frame_steps = np.zeros((count, len(self.texture_index)), np.int64)
        self.translate_steps = np.zeros((count, len(self.texture_index), 2))
        np.add.at(self.frame_steps, (kf, column), anim.texture_deltas["frame_step"][entries])
        translate = anim.texture_deltas["translate"][entries].astype(np.float64)
        np.add.at(self.translate_steps, (kf, column), translate)

        kf, index, entries = running["visibility"]
        value = anim.visibility_deltas["value"][entries]
        changes = value != 0
        kf, index, value = kf[changes], index[changes], value[changes]
        self.visibility_index, column = _targets(index)
        self.visibility_sets = np.zeros((count, len(self.visibility_index)), np.int8)
        # Later entries win: keep only each (keyframe, index)'s last change. Indices only grow inside a
        # keyframe (their steps are unsigned), so the cells come in order and repeats are neighbours.
        cells = kf * len(self.visibility_index) + column
        last = np.empty(len(cells), bool)
        last[-1:] = True
        last[:-1] = cells[1:] != cells[:-1]
        self.visibility_sets.ravel()[cells[last]] = value[last]

        kf, _, entries = running["node"]
        self.node_index, column = found["node"]
        deltas = anim.node_deltas[entries]
        value = deltas["value"].astype(np.float64) * DELTA_UNIT
        linear = np.abs(deltas["tangent_out"].astype(np.int64)) >= LINEAR_TANGENT
        hermite = ~linear
        shape = (count, len(self.node_index))
        self.node_hermite, self.node_linear = np.zeros(shape), np.zeros(shape)
        self.node_slope_in, self.node_slope_out = np.zeros(shape), np.zeros(shape)
        np.add.at(self.node_hermite, (kf[hermite], column[hermite]), value[hermite])
        np.add.at(self.node_linear, (kf[linear], column[linear]), value[linear])
        for slopes, key in ((self.node_slope_in, "tangent_in"), (self.node_slope_out, "tangent_out")):
            degrees = deltas[key][hermite].astype(np.float64)
            np.add.at(slopes, (kf[hermite], column[hermite]), np.tan(np.radians(degrees)))

    @cached_property
    def node_entries(self) -> np.ndarray:
        """``node_entry_rows`` of the animation."""
        return node_entry_rows(self.anim, self.running["node"])

    def columns(self, index: np.ndarray, steps: np.ndarray, wanted) -> np.ndarray:
        """``steps`` (K, U, …) spread over the ``wanted`` target indices (zero where untouched)."""
        wanted = np.asarray(wanted, np.int64)
        out = np.zeros((steps.shape[0], len(wanted)) + steps.shape[2:], steps.dtype)
        at = np.clip(np.searchsorted(index, wanted), 0, max(len(index) - 1, 0))
        hit = (at < len(index)) & (index[at] == wanted) if len(index) else np.zeros(len(wanted), bool)
        out[:, hit] = steps[:, at[hit]]
        return out

    @cached_property
    def _latest_times(self) -> np.ndarray:
        """The running maximum of the keyframe times."""
        return np.maximum.accumulate(self.times)

    def applied(self, times) -> np.ndarray:
        """Per time: the keyframes applied in full (``segments``' first, alone)."""
        return self._applied(local_time(self.anim, times))

    def _applied(self, t: np.ndarray) -> np.ndarray:
        count = len(self.times)
        if count <= 1:
            return np.full(t.shape, count, np.int64)
        # The first keyframe later than t is where the running maximum of the times first exceeds t.
        return self._latest_times.searchsorted(t, side="right")

    def segments(self, times) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per time: keyframes applied in full, the partly applied keyframe (K for none), u and duration."""
        t = local_time(self.anim, times)
        count = len(self.times)
        following = self._applied(t)
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
            + _cumulative(hermite + linear)[full]
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
            out[:, index] += _cumulative(steps)[full] + u[:, None, None] * _padded(steps)[partial]
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
        """``_cumulative`` frame steps and translations."""
        return _cumulative(self.frame_steps), _cumulative(self.translate_steps)

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
        """(K + 1, touched): the last visibility set at or before each count of applied keyframes (0: none)."""
        sets = np.concatenate([np.zeros((1, len(self.visibility_index)), np.int8), self.visibility_sets])
        latest = np.maximum.accumulate(np.where(sets != 0, np.arange(len(sets))[:, None], 0), axis=0)
        return sets[latest, np.arange(len(self.visibility_index))]


def node_entry_rows(anim: AnimationData, running) -> np.ndarray:
    """(keyframe, float, value, tangent in, tangent out) int64 rows of the node-delta entries in file
    order, index-only filler entries left out; ``running``: the node kind's ``running_indices``."""
    kf, index, entries = running
    deltas = anim.node_deltas[entries]
    moving = (deltas["value"] != 0) | (deltas["tangent_in"] != 0) | (deltas["tangent_out"] != 0)
    rows = np.stack(
        [kf, index] + [deltas[k].astype(np.int64) for k in ("value", "tangent_in", "tangent_out")], axis=1
    )
    return rows[moving]


def _targets(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(index, return_inverse=True)``: the targets a kind touches, and each delta's column
    among them (in fewer calls: the arrays are small, the animations many)."""
    ordered = np.sort(index)
    first = np.empty(len(ordered), bool)
    first[:1] = True
    first[1:] = ordered[1:] != ordered[:-1]
    targets = ordered[first]
    return targets, targets.searchsorted(index)


def _vertex_deltas(count: int, running, found, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The vertices a kind's deltas touch and their (K, touched, 3) sums per keyframe; ``running``:
    the kind's ``running_indices``, ``found``: the vertices it touches and each delta's column among them."""
    kf, _, entries = running
    touched, column = found
    out = np.zeros((count, len(touched), 3))
    np.add.at(out, (kf, column), deltas["delta"][entries].astype(np.float64) * DELTA_UNIT)
    return touched, out


def _cumulative(steps: np.ndarray) -> np.ndarray:
    """Sum of the first n keyframes' steps for n = 0..K."""
    return np.concatenate([np.zeros((1,) + steps.shape[1:], steps.dtype), np.cumsum(steps, axis=0)])


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
