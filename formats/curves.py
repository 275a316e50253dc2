"""Key sampling and the parent-relative ⇄ pose-space maps of bone channels (numpy only, no bpy).

A Blender pose bone's basis is ``rest_local⁻¹ @ key_local``, seen through
the bone display rotation ``C`` (see ``Skeleton.bone_display``):
``basis = Cᵀ @ rest_local⁻¹ @ key_local @ C``. For a rest without scale this
splits into independent affine maps per channel:

- location: ``loc' = Cᵀ R₀ᵀ (loc − t₀)``
- quaternion: ``q' = c⁻¹ q₀⁻¹ q c`` (linear in q: a 4×4 orthogonal matrix)
- scale: ``s' = |Cᵀ| s`` (C is a signed axis permutation)

A rest scale the edit bones cannot hold (``armature.rest_scales``: k per axis of
the bone, a uniform k_p of its parent) enters the basis as
``rest_local⁻¹ @ k_p @ key_local @ diag(k)⁻¹``: location × k_p, scale × k_p / k.
- euler: unchanged when ``R₀`` and ``C`` are identities; otherwise no
  per-channel map exists and the channel is baked.

An affine map carries LINEAR and CONSTANT keys exactly, and Bézier keys
exactly when it only permutes and scales components or when the handles
of all components share their frames.
"""

from __future__ import annotations

from functools import cached_property, lru_cache

import numpy as np

from .scene import quat_multiply


def quat_left(p: np.ndarray) -> np.ndarray:
    """(…, 4, 4) matrices of q ↦ p·q for (…, 4) quaternions p."""
    w, x, y, z = np.moveaxis(np.asarray(p, np.float64), -1, 0)
    return np.stack([w, -x, -y, -z, x, w, -z, y, y, z, w, -x, z, -y, x, w], -1).reshape(w.shape + (4, 4))


def quat_right(p: np.ndarray) -> np.ndarray:
    """(…, 4, 4) matrices of q ↦ q·p for (…, 4) quaternions p."""
    w, x, y, z = np.moveaxis(np.asarray(p, np.float64), -1, 0)
    return np.stack([w, -x, -y, -z, x, w, z, -y, y, -z, w, x, z, y, -x, w], -1).reshape(w.shape + (4, 4))


def quat_conjugate(q: np.ndarray) -> np.ndarray:
    return np.asarray(q, dtype=np.float64) * np.array([1.0, -1.0, -1.0, -1.0])


class BoneMaps:
    """The affine maps (A, b) from a bone's parent-relative channels to its pose basis, and back.

    Made for a whole skeleton at once (``many``): each bone's maps are views into the skeleton's arrays.
    """

    def __init__(self, rest_rotation, rest_translation, rest_scale, display, maps, inverses, permutations):
        self.rest_rotation = rest_rotation  # (3, 3)
        self.rest_translation = rest_translation  # (3,) the channels' rest values
        self.rest_scale = rest_scale  # (3,)
        self.display = display  # (3, 3)
        self.maps: dict[str, tuple[np.ndarray, np.ndarray]] = maps
        self.inverses: dict[str, tuple[np.ndarray, np.ndarray]] = inverses  # pose basis → channels
        self.permutations: dict[str, np.ndarray | None] = permutations  # ``scaled_permutation`` of each map

    @classmethod
    def many(
        cls,
        rest_local: np.ndarray,
        display: np.ndarray,
        rest_quats: np.ndarray,
        display_quat: np.ndarray,
        scales: np.ndarray,
        parent_scales: np.ndarray,
    ) -> list[BoneMaps]:
        """The maps of every bone of a skeleton, computed together.

        ``rest_local`` (N, 4, 4) is the rotation-only local rest of the edit bones, ``rest_quats``
        (N, 4) and ``display_quat`` the quaternions of the rotations; ``scales`` (N, 3) and
        ``parent_scales`` (N,) are the rest scale of each bone and of its parent that edit bones cannot
        hold (``armature.rest_scales``): the basis takes the channel translation × parent scale and the
        channel scale × parent scale / scale.
        """
        count = len(rest_local)
        parent_scales = np.asarray(parent_scales, np.float64)
        rot = rest_local[:, :3, :3]
        rest_translation = rest_local[:, :3, 3] / parent_scales[:, None]
        rest_scale = np.asarray(scales, np.float64) / parent_scales[:, None]
        shown = display[:3, :3]
        a_loc = shown.T @ np.swapaxes(rot, 1, 2) * parent_scales[:, None, None]
        c = display_quat
        a_quat = quat_left(quat_multiply(quat_conjugate(c), quat_conjugate(rest_quats))) @ quat_right(c)
        affine = {
            "location": (a_loc, -a_loc @ rest_translation[:, :, None]),
            "rotation_quaternion": (a_quat, np.zeros((count, 4, 1))),
            "scale": (np.abs(shown.T) / rest_scale[:, None, :], np.zeros((count, 3, 1))),
        }
        eye = np.eye(3)
        plain = np.isclose(rot, eye, atol=1e-6).all(axis=(1, 2)) & np.allclose(shown, eye, atol=1e-6)
        if plain.any():
            affine["rotation_euler"] = (np.broadcast_to(eye, (count, 3, 3)), np.zeros((count, 3, 1)))
        inverses, permutations = {}, {}
        for path, (a, b) in affine.items():
            a_inv = np.linalg.inv(a)
            inverses[path] = (a_inv, (-a_inv @ b)[..., 0])
            affine[path] = (a, b[..., 0])
            permutations[path] = scaled_permutations(a)
        return [
            cls(
                rot[i],
                rest_translation[i],
                rest_scale[i],
                shown,
                {p: (a[i], b[i]) for p, (a, b) in affine.items() if p != "rotation_euler" or plain[i]},
                {p: (a[i], b[i]) for p, (a, b) in inverses.items() if p != "rotation_euler" or plain[i]},
                {p: s[i] for p, s in permutations.items() if p != "rotation_euler" or plain[i]},
            )
            for i in range(count)
        ]

    @cached_property
    def rest_values(self) -> dict[str, np.ndarray]:
        """The parent-relative values of the bone at rest, by path of the per-component channels."""
        return {
            "location": self.rest_translation,
            "rotation_euler": matrix_to_euler(self.rest_rotation[None])[0],
            "scale": self.rest_scale,
        }

    def basis_rotation(self, rotations: np.ndarray) -> np.ndarray:
        """(K, 3, 3) parent-relative rotations → pose-basis rotations, ``Cᵀ R₀ᵀ M C``.

        Each product of all K at once as one (3K, 3) @ (3, 3) (a stack of K 3×3 products costs a
        call into BLAS per matrix); Mᵀ (Cᵀ R₀ᵀ)ᵀ is (Cᵀ R₀ᵀ M)ᵀ."""
        left = self.display.T @ self.rest_rotation.T
        turned = (np.swapaxes(rotations, 1, 2).reshape(-1, 3) @ left.T).reshape(-1, 3, 3)
        return (np.swapaxes(turned, 1, 2).reshape(-1, 3) @ self.display).reshape(-1, 3, 3)

    def relative_rotation(self, basis: np.ndarray) -> np.ndarray:
        """(K, 3, 3) pose-basis rotations → parent-relative rotations."""
        return self.rest_rotation @ self.display @ basis @ self.display.T


def scaled_permutations(a: np.ndarray) -> list[np.ndarray | None]:
    """``scaled_permutation`` of each of the (N, C, C) matrices ``a``."""
    size = np.abs(a)
    nonzero = size > 1e-9 * size.max(axis=2, keepdims=True)
    source = np.argmax(nonzero, axis=2)
    ordered = np.sort(source, axis=1)
    exact = (nonzero.sum(axis=2) == 1).all(axis=1) & (np.diff(ordered, axis=1) != 0).all(axis=1)
    return [s if ok else None for s, ok in zip(source, exact, strict=True)]


def scaled_permutation(a: np.ndarray) -> np.ndarray | None:
    """Source component of each output component when ``a`` only permutes and scales, else None."""
    a = np.asarray(a, np.float64)
    return _scaled_permutation(a.tobytes(), a.shape)


@lru_cache(maxsize=4096)
def _scaled_permutation(data: bytes, shape: tuple) -> np.ndarray | None:
    """``scaled_permutation`` of a matrix by its bytes: a skeleton's few maps come back for every key set."""
    source = scaled_permutations(np.frombuffer(data).reshape((1,) + shape))[0]
    if source is not None:
        source.flags.writeable = False  # shared by every caller
    return source


def map_keys(values, handles_left, handles_right, interpolation, a, b):
    """Apply ``v ↦ a v + b`` to keys and handles; None when Bézier handles cannot follow exactly."""
    new_values = values @ a.T + b
    if interpolation != "BEZIER" or handles_left is None or handles_right is None:
        return new_values, None, None
    source = scaled_permutation(a)
    out = []
    for handles in (handles_left, handles_right):
        if source is not None:
            mapped = handles[:, source, :].copy()
            mapped[..., 1] = mapped[..., 1] * a[np.arange(len(source)), source] + b
        elif _close(handles[..., 0], handles[:, :1, 0]):
            mapped = handles.copy()
            mapped[..., 1] = handles[..., 1] @ a.T + b
        else:
            return None
        out.append(mapped)
    return new_values, out[0], out[1]


def _close(x: np.ndarray, y: np.ndarray) -> bool:
    """``np.allclose(x, y, atol=0)`` (relative 1e-5) without its general cost."""
    return bool(np.all((x == y) | (np.abs(x - y) <= 1e-5 * np.abs(y))))


def continuity_signs(quats: np.ndarray, curve: np.ndarray | None = None) -> np.ndarray:
    """±1 per key so that each quaternion lies in the hemisphere of the previous one. ``curve``: the
    curve of each key (ascending) when the keys of many curves follow each other; each starts at +1."""
    dots = np.einsum("ij,ij->i", quats[1:], quats[:-1])
    signs = np.concatenate([[1.0], np.cumprod(np.where(dots < 0, -1.0, 1.0))])
    if curve is not None:
        signs *= signs[np.searchsorted(curve, curve)]
    return signs


# How far a per-component quaternion curve may leave the slerp before whole frames get slerp keys,
# and how far such a key may be from the slerp on export and still be taken off.
SLERP_TOLERANCE = 1e-6
SLERP_KEY_TOLERANCE = 1e-5
SLERP_BUDGET = 1 << 14  # frames slerp_keys may add to one channel (keys far apart: every n-th frame)


def key_segments(key_times: np.ndarray, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per frame the segment i between keys i and i + 1 (of at least two) and how far along it (0..1):
    the end keys hold outside them, and of keys sharing a time the later one holds from that time on."""
    i = np.clip(np.searchsorted(key_times, frames, side="right") - 1, 0, len(key_times) - 2)
    span = key_times[i + 1] - key_times[i]
    u = np.where(span > 0, (frames - key_times[i]) / np.where(span > 0, span, 1.0), 1.0)
    return i, np.clip(u, 0.0, 1.0)


def slerp(key_times, quats, frames) -> np.ndarray:
    """Quaternions (K, 4) keyed at ``key_times`` sampled at ``frames`` (N,) along the shortest arc
    between keys (the meaning of a LINEAR ``rotation_quaternion`` channel, and the games'), unit
    length; keys are looked up as ``key_segments`` does. Either component order works: only dot
    products and sums are used."""
    key_times, quats = np.asarray(key_times, np.float64), np.asarray(quats, np.float64)
    frames = np.asarray(frames, np.float64)
    if len(key_times) == 1:
        return np.repeat(quats / np.linalg.norm(quats, axis=1, keepdims=True), len(frames), axis=0)
    i, u = key_segments(key_times, frames)
    a, b = quats[i], quats[i + 1]
    return _arc(a, np.where((a * b).sum(axis=1, keepdims=True) < 0, -b, b), u[:, None])


def _arc(a, b, u):
    """Unit quaternions u (N, 1) of the way along the great arc from a (N, 4) to b (either length)."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    angle = np.arccos(np.clip((a * b).sum(axis=1, keepdims=True), -1.0, 1.0))
    sin = np.sin(angle)
    small = sin < 1e-6
    wa = np.where(small, 1 - u, np.sin((1 - u) * angle) / np.where(small, 1, sin))
    wb = np.where(small, u, np.sin(u * angle) / np.where(small, 1, sin))
    q = wa * a + wb * b
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def frames_between_keys(times: np.ndarray, min_gap: float) -> tuple[np.ndarray, np.ndarray]:
    """Per pair of successive keys: the first whole frame at least ``min_gap`` after the first key, and
    how many whole frames lie between the two at least that far from both (where ``slerp_keys`` may
    add keys)."""
    first = np.floor(times[:-1] + min_gap) + 1
    return first, np.maximum(np.ceil(times[1:] - min_gap) - first, 0).astype(np.int64)


def slerp_keys(times, quats, min_gap):
    """LINEAR quaternion keys (K,), (K, 4) plus the slerp at every whole frame between two keys (at least
    ``min_gap`` from both: F-curves merge closer keys) where a per-component curve would leave it.

    Past SLERP_BUDGET such frames, every n-th frame instead. F-curves interpolate each component (Blender then normalises): that agrees with the slerp at keys
    and halfway, and drifts apart elsewhere as the angle between keys grows; it is measured a quarter
    of the way. Returns (times, quats, the added frames) for ``unslerp_keys``.
    """
    times, quats = np.asarray(times, np.float64), np.asarray(quats, np.float64)
    none = np.zeros(0)
    if len(times) < 2:
        return times, quats, none
    first, counts = frames_between_keys(times, min_gap)
    segments = np.flatnonzero(counts)
    if len(segments):
        a, b = quats[segments], quats[segments + 1]
        b = np.where((a * b).sum(axis=1, keepdims=True) < 0, -b, b)
        quarter = 0.75 * a + 0.25 * b
        quarter /= np.linalg.norm(quarter, axis=1, keepdims=True)
        exact = slerp(times, quats, times[segments] + 0.25 * (times[segments + 1] - times[segments]))
        off = np.minimum(np.abs(quarter - exact).max(axis=1), np.abs(quarter + exact).max(axis=1))
        segments = segments[off > SLERP_TOLERANCE]
    if not len(segments):
        return times, quats, none
    counts = counts[segments]
    # Keys far apart get the slerp every ``step`` frames, so that one channel adds at most SLERP_BUDGET.
    step = max(int(np.ceil(counts.sum() / SLERP_BUDGET)), 1)
    counts = -(-counts // step)
    starts = np.repeat(first[segments] - step * (np.cumsum(counts) - counts), counts)
    added = starts + step * np.arange(counts.sum())
    all_times = np.concatenate([times, added])
    order = np.argsort(all_times, kind="stable")
    return all_times[order], np.concatenate([quats, slerp(times, quats, added)])[order], added


def unslerp_keys(times, quats, added):
    """The keys without the frames ``slerp_keys`` added, while those still lie on the slerp of the others
    (within ``SLERP_KEY_TOLERANCE``, either sign); once they were edited, every key as it is.

    Between keys half a turn apart both arcs are the shorter within rounding: either will do.
    """
    times, quats = np.asarray(times, np.float64), np.asarray(quats, np.float64)
    mine = np.isin(times, np.asarray(added, np.float64))
    if mine.sum() != len(added) or (~mine).sum() < 2:
        return times, quats
    key_times, keys, frames = times[~mine], quats[~mine], times[mine]
    i = np.clip(np.searchsorted(key_times, frames, side="right") - 1, 0, len(key_times) - 2)
    span = key_times[i + 1] - key_times[i]
    u = ((frames - key_times[i]) / np.where(span > 0, span, 1.0))[:, None]
    values = quats[mine] / np.linalg.norm(quats[mine], axis=1, keepdims=True)
    off = np.inf
    for expected in (_arc(keys[i], keys[i + 1], u), _arc(keys[i], -keys[i + 1], u)):
        off = np.minimum(off, np.abs(values - expected).max(axis=1))
        off = np.minimum(off, np.abs(values + expected).max(axis=1))
    if not np.all(off <= SLERP_KEY_TOLERANCE):  # NaN too: keys edited into nothing to compare
        return times, quats
    return key_times, keys


def _correct_handles(p0, p1, p2, p3):
    """Handles no longer in frames than their segment, as Blender shortens them before evaluating."""
    span = p3[..., 0] - p0[..., 0]
    return [
        np.stack(_corrected(key[..., 0], key[..., 1], handle[..., 0], handle[..., 1], span), axis=-1)
        for key, handle in ((p0, p1), (p3, p2))
    ]


def _corrected(key_x, key_y, handle_x, handle_y, span):
    """``_correct_handles`` of one handle by frame and value columns: (frames, values)."""
    delta_x, delta_y = key_x - handle_x, key_y - handle_y
    length = np.abs(delta_x)
    longer = length > span
    if not longer.any():  # the common case, without the factor of 1
        return key_x - delta_x, key_y - delta_y
    fac = np.where(longer, span / np.where(length > 0, length, 1.0), 1.0)
    return key_x - fac * delta_x, key_y - fac * delta_y


def _first_crossing(x0, x1, x2, x3, target):
    """The smallest t in [0, 1] where the Bézier frame curve reaches ``target`` (it may turn back)."""
    span = x3 - x0
    # Handles a third of the way along (Hermite keys, bakes): the frame is linear in t.
    third, tolerance = span / 3, 1e-9 * np.abs(span)
    even = (np.abs(x1 - x0 - third) <= tolerance) & (np.abs(x3 - x2 - third) <= tolerance)
    linear = np.clip((target - x0) / np.where(span > 0, span, 1.0), 0.0, 1.0)
    if even.all():
        return linear
    x0, x1, x2, x3, target, linear = (a.copy() for a in np.broadcast_arrays(x0, x1, x2, x3, target, linear))
    linear[~even] = _solved_crossing(x0[~even], x1[~even], x2[~even], x3[~even], target[~even])
    return linear


def _solved_crossing(x0, x1, x2, x3, target):
    """``_first_crossing`` of segments whose frame is not linear in t: bracketed on a grid, bisected."""
    grid = np.linspace(0.0, 1.0, 33)
    xs = _bezier(x0[..., None], x1[..., None], x2[..., None], x3[..., None], grid) - target[..., None]
    crossed = np.diff(np.sign(xs), axis=-1) != 0
    first = np.where(crossed.any(axis=-1), np.argmax(crossed, axis=-1), len(grid) - 2)
    lo, hi = grid[first], grid[first + 1]
    rising = np.take_along_axis(xs, first[..., None], -1)[..., 0] <= 0  # x starts the bracket below target
    for _ in range(40):  # bisection inside the bracket
        t = (lo + hi) / 2
        before = (_bezier(x0, x1, x2, x3, t) < target) == rising
        lo = np.where(before, t, lo)
        hi = np.where(before, hi, t)
    return (lo + hi) / 2


# A baked channel's Bézier keys may leave the curve they follow by this much (pose units; for a
# quaternion about 6e-4 degrees) before a key is added between two; a frame is halved at most
# BAKE_HALVINGS times (1/32 frame: wider than the keys Blender merges).
BAKE_TOLERANCE = 5e-6
BAKE_HALVINGS = 5
_SLOPE_STEP = 1e-4  # frames between the samples a one-sided slope is measured from


def bake_frames(times: np.ndarray) -> np.ndarray:
    """Every whole frame of the keyed range plus the key times themselves."""
    whole = np.arange(np.ceil(times[0]), np.floor(times[-1]) + 1)
    return np.union1d(whole, times)


def bake_keys(times, evaluate, quaternion: bool = False):
    """Bézier keys (frames, values, handles_left, handles_right) that play ``evaluate`` (frames (N,) →
    values (N, C)), a curve no per-component map carries, at every frame and between frames.

    Keys at every whole frame and key time (``bake_frames``), each handle a third of the way to its
    neighbour along the curve's slope on that side (a kink at a key stays one); then, wherever the
    Bézier segment leaves the curve by more than ``BAKE_TOLERANCE`` at a quarter, half or three
    quarters of it, a key in its middle, down to ``BAKE_HALVINGS`` halvings of a frame. Quaternions
    are compared normalised, as Blender poses them, each key in the hemisphere of the one before.
    """
    return bake_many([times], lambda _, frames: evaluate(frames), quaternion)[0]


def bake_many(times_list, evaluate, quaternion: bool = False) -> list[tuple]:
    """``bake_keys`` of many curves in one pass: ``evaluate`` (curve (N,), frames (N,)) → values (N, C)
    is given each frame with the index of its curve in ``times_list``. Rows never mix, so each curve
    gets the keys ``bake_keys`` gives it alone, without its fixed cost per call."""
    frames = [bake_frames(np.asarray(times, np.float64)) for times in times_list]
    curve = np.repeat(np.arange(len(frames)), [len(f) for f in frames])
    frames = np.concatenate(frames)
    values = evaluate(curve, frames)
    if quaternion:
        values = values * continuity_signs(values, curve)[:, None]
    left, right = _slopes(evaluate, curve, frames, values, quaternion)
    check = np.flatnonzero(curve[1:] == curve[:-1])  # segments (by their first key) not yet known to follow
    u = np.array([0.25, 0.5, 0.75])
    for _ in range(BAKE_HALVINGS):
        gaps = frames[check + 1] - frames[check]
        check = check[gaps >= 2.0 ** (1 - BAKE_HALVINGS)]  # halves no shorter than the last halving
        if not len(check):
            break
        gaps = frames[check + 1] - frames[check]
        truth = evaluate(np.repeat(curve[check], 3), (frames[check, None] + gaps[:, None] * u).reshape(-1))
        truth = truth.reshape(len(check), 3, values.shape[1])
        p0, p3 = values[check, None], values[check + 1, None]
        p1 = p0 + (right[check] * gaps[:, None] / 3)[:, None]
        p2 = p3 - (left[check + 1] * gaps[:, None] / 3)[:, None]
        played = _bezier(p0, p1, p2, p3, u[None, :, None])
        if quaternion:
            played = played / np.linalg.norm(played, axis=-1, keepdims=True)
            truth = truth * np.where(np.sum(truth * played, axis=-1, keepdims=True) < 0, -1.0, 1.0)
        split = check[np.abs(played - truth).max(axis=(1, 2)) > BAKE_TOLERANCE]
        if not len(split):
            break
        middles = (frames[split] + frames[split + 1]) / 2
        middle_values = truth[np.searchsorted(check, split), 1]  # the curve at u = 0.5, already aligned
        middle_left, middle_right = _slopes(evaluate, curve[split], middles, middle_values, quaternion)
        at = split + 1
        curve = np.insert(curve, at, curve[split])
        frames = np.insert(frames, at, middles)
        values = np.insert(values, at, middle_values, axis=0)
        left = np.insert(left, at, middle_left, axis=0)
        right = np.insert(right, at, middle_right, axis=0)
        first = split + np.arange(len(split))  # each split segment's first key, after the insertions
        check = np.concatenate([first, first + 1])
        check.sort()
    inside = curve[1:] == curve[:-1]
    gaps = np.where(inside, np.diff(frames), 1.0)
    before = np.concatenate([[1.0], gaps]) / 3
    after = np.concatenate([gaps, [1.0]]) / 3
    handles_left = np.stack(
        np.broadcast_arrays((frames - before)[:, None], values - left * before[:, None]), -1
    )
    handles_right = np.stack(
        np.broadcast_arrays((frames + after)[:, None], values + right * after[:, None]), -1
    )
    bounds = np.flatnonzero(~inside) + 1
    return list(
        zip(*(np.split(a, bounds) for a in (frames, values, handles_left, handles_right)), strict=True)
    )


def continuous_angles(evaluate, times):
    """``evaluate`` (frames → Euler angles) with each angle moved by whole turns to the side of the
    angles it had at every frame and key time before (unwrapped along them), so the curve a bake
    follows does not jump a turn between samples."""
    frames = bake_frames(np.asarray(times, np.float64))
    reference = np.unwrap(evaluate(frames), axis=0)
    turn = 2 * np.pi

    def unwrapped(at):
        angles = evaluate(at)
        near = np.stack([np.interp(at, frames, reference[:, c]) for c in range(angles.shape[1])], axis=1)
        return angles + turn * np.round((near - angles) / turn)

    return unwrapped


def _slopes(evaluate, curve, frames, values, quaternion: bool):
    """The curve's slope just before and just after each frame (second-order one-sided differences
    from samples that leave the frame itself out, so a step at a key does not count as a slope);
    ``evaluate`` and ``curve`` as in ``bake_many``."""
    h = _SLOPE_STEP
    offsets = np.array([-3, -2, -1, 1, 2, 3]) * h
    near = evaluate(np.repeat(curve, 6), (frames[:, None] + offsets).reshape(-1))
    near = near.reshape(len(frames), 6, values.shape[1])
    if quaternion:  # each sample in the hemisphere of its key
        near = near * np.where(np.sum(near * values[:, None], axis=-1, keepdims=True) < 0, -1.0, 1.0)
    # The slope at f±h from three samples on one side, moved to f along the curvature they show.
    left = (3 * near[:, 2] - 4 * near[:, 1] + near[:, 0]) / (2 * h)
    left += (near[:, 2] - 2 * near[:, 1] + near[:, 0]) / h
    right = (-3 * near[:, 3] + 4 * near[:, 4] - near[:, 5]) / (2 * h)
    right -= (near[:, 3] - 2 * near[:, 4] + near[:, 5]) / h
    return left, right


def sample(times, values, interpolation, handles_left, handles_right, frames) -> np.ndarray:
    """Evaluate keys (K,), (K, C) at ``frames`` (N,) → (N, C), constant outside the keyed range."""
    return sample_many([(times, values, interpolation, handles_left, handles_right, frames)])[0]


def sample_many(curves) -> list[np.ndarray]:
    """``sample`` of each (times, values, interpolation, handles_left, handles_right, frames) of ``curves``.

    Curves of one kind (interpolation, components) are evaluated together, their keys and frames
    concatenated: every step is per element, so each result is the one ``sample`` gives alone,
    without its fixed cost per call.
    """
    out: list = [None] * len(curves)
    kinds: dict[tuple, list] = {}
    for i, (times, values, interpolation, handles_left, handles_right, frames) in enumerate(curves):
        times = np.asarray(times, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        frames = np.asarray(frames, dtype=np.float64)
        if len(times) == 1:
            out[i] = np.repeat(values[:1], len(frames), axis=0)
            continue
        kind = "BEZIER"
        if interpolation == "CONSTANT":
            kind = "CONSTANT"
        elif interpolation == "LINEAR" or handles_left is None or handles_right is None:
            kind = "LINEAR"
        handles = (handles_left, handles_right) if kind == "BEZIER" else None
        kinds.setdefault((kind, values.shape[1:]), []).append((i, times, values, handles, frames))
    for (kind, _), group in kinds.items():
        results = _sample_kind(kind, group)
        sizes = np.cumsum([len(g[4]) for g in group])[:-1]
        for (i, *_), result in zip(group, np.split(results, sizes), strict=True):
            out[i] = result
    return out


def _sample_kind(kind: str, group: list) -> np.ndarray:
    """The frames of ``group``'s curves (index, times, values, handles, frames; two keys at least, of one
    ``kind``) sampled, concatenated: each frame looks its segment up in its own curve's keys."""
    times = np.concatenate([g[1] for g in group])
    values = np.concatenate([g[2] for g in group])
    frames = np.concatenate([g[4] for g in group])
    starts = np.cumsum([0] + [len(g[1]) for g in group])[:-1]
    counts = [len(g[4]) for g in group]
    # Per frame: the keys of its curve at or before it (the last of them, in the concatenation: start +
    # after − 1), and whether that key is at the frame itself.
    after = np.empty(len(frames), np.int64)
    for g, at in zip(group, np.cumsum([0] + counts)[:-1], strict=True):
        after[at : at + len(g[4])] = np.searchsorted(g[1], g[4], side="right")
    start = np.repeat(starts, counts)
    end = start + np.repeat([len(g[1]) for g in group], counts) - 1  # each curve's last key
    exact = (after > 0) & (times[np.clip(start + after - 1, start, end)] == frames)
    seg = np.clip(start + after - 1, start, end - 1)
    x0, x1 = times[seg], times[seg + 1]
    y0, y1 = values[seg], values[seg + 1]
    first, last = times[start], times[end]
    if kind == "CONSTANT":
        result = y0
    elif kind == "LINEAR":
        u = np.clip((frames - x0) / np.where(x1 > x0, x1 - x0, 1.0), 0.0, 1.0)[:, None]
        result = y0 + (y1 - y0) * u
    else:
        handles_left = np.concatenate([np.asarray(g[3][0], np.float64) for g in group])
        handles_right = np.concatenate([np.asarray(g[3][1], np.float64) for g in group])
        # Every frame solved, element by element (those outside the keys or on one are replaced below);
        # the frames of the keys (and targets) as (N, 1) columns of the components.
        x0, x1, span = x0[:, None], x1[:, None], (x1 - x0)[:, None]
        x_right, y_right = _corrected(x0, y0, handles_right[..., 0][seg], handles_right[..., 1][seg], span)
        x_left, y_left = _corrected(
            x1, y1, handles_left[..., 0][seg + 1], handles_left[..., 1][seg + 1], span
        )
        t = _first_crossing(x0, x_right, x_left, x1, frames[:, None])
        result = _bezier(y0, y_right, y_left, y1, t)
    # The first or last key's value outside the keyed range; on a key that key's (of two keys at one
    # frame the later: the game's step, as at any other frame).
    outside = np.flatnonzero(~((frames > first) & (frames < last)))
    if len(outside):
        result[outside] = np.where(
            (frames[outside] <= first[outside])[:, None], values[start[outside]], values[end[outside]]
        )
    if exact.any():
        result[exact] = values[(start + after - 1)[exact]]
    return result


def _bezier(a, b, c, d, t):
    s = 1 - t
    return s * s * s * a + 3 * s * s * t * b + 3 * s * t * t * c + t * t * t * d


def euler_to_matrix(e: np.ndarray) -> np.ndarray:
    """(K, 3) XYZ euler angles (radians) → (K, 3, 3), R = Rz · Ry · Rx."""
    cx, cy, cz = np.cos(e).T
    sx, sy, sz = np.sin(e).T
    m = np.empty((len(e), 3, 3))
    m[:, 0, 0] = cy * cz
    m[:, 0, 1] = sx * sy * cz - cx * sz
    m[:, 0, 2] = cx * sy * cz + sx * sz
    m[:, 1, 0] = cy * sz
    m[:, 1, 1] = sx * sy * sz + cx * cz
    m[:, 1, 2] = cx * sy * sz - sx * cz
    m[:, 2, 0] = -sy
    m[:, 2, 1] = sx * cy
    m[:, 2, 2] = cx * cy
    return m


def matrix_to_euler(m: np.ndarray) -> np.ndarray:
    """(K, 3, 3) → (K, 3) XYZ euler angles, unwrapped along K for continuity."""
    y = np.arcsin(np.clip(-m[:, 2, 0], -1.0, 1.0))
    x = np.arctan2(m[:, 2, 1], m[:, 2, 2])
    z = np.arctan2(m[:, 1, 0], m[:, 0, 0])
    return np.unwrap(np.stack([x, y, z], axis=-1), axis=0)


def split_bezier(p0, p1, p2, p3, frame):
    """A Bézier segment (points (…, 2)) cut where its frame reaches ``frame`` (de Casteljau).

    Returns (a, d, point, e, c): the first part is p0, a, d, point and the second point, e, c, p3.
    """
    p0, p1, p2, p3 = (np.asarray(p, np.float64) for p in (p0, p1, p2, p3))
    low, high = np.zeros(p0.shape[:-1]), np.ones(p0.shape[:-1])
    for _ in range(60):  # bisection: the frame curve of a segment Blender evaluates only rises
        t = (low + high) / 2
        before = _bezier(p0[..., 0], p1[..., 0], p2[..., 0], p3[..., 0], t) < frame
        low, high = np.where(before, t, low), np.where(before, high, t)
    t = t[..., None]
    a, b, c = p0 + t * (p1 - p0), p1 + t * (p2 - p1), p2 + t * (p3 - p2)
    d, e = a + t * (b - a), b + t * (c - b)
    return a, d, d + t * (e - d), e, c


def loop_keys(
    times, values, interpolation, handles_left, handles_right, start, end, min_gap, start_at_end=False
):
    """Keys (K,), (K, C) [, handles (K, C, 2)] for F-curves whose Cycles modifier repeats [start, end].

    The modifier repeats the keyed range; the game repeats end − start and clamps inside it. So keys
    outside are cut off (the segment crossing a bound split there: the curve inside stays the same),
    and keys that stop before the end (start after the start) get a key at the bound holding the last
    (first) value through a CONSTANT segment. A bound closer than ``min_gap`` to a key (F-curves merge
    such keys) is left to that key. Returns (times, values, interpolation per key, handles_left,
    handles_right, sides): ``sides`` says what changed at "start" and "end", for ``unloop_rows``.

    ``start_at_end``: the game shows the start again at the end (time wraps at end, not after it),
    where the modifier shows the last key. So the key at the end takes the start's value; a curve that
    still moves up to the end is cut ``min_gap`` before it, held from there (the nearest F-curves come
    to a step at the end).
    """
    keys = _Keys(times, values, interpolation, handles_left, handles_right)
    sides: dict = {}
    if end - start >= 2 * min_gap and len(keys.times) > 1:  # one key is the same value at every frame
        first = int(np.searchsorted(keys.times, start))  # keys before the start: [0, first)
        if first == 0 and keys.times[0] - start >= min_gap:
            keys.insert(0, start, keys.values[0], "CONSTANT")
            sides["start"] = {"held": True}
        elif first > 0:
            original = keys.rows(slice(0, first + 1))
            if first == len(keys.times):  # every key before the start: the last value holds
                keys.take(slice(-1, None))
                keys.insert(0, start, keys.values[0], interpolation)
                keys.take(slice(0, 1))
                written = 1
            elif keys.times[first] - start >= min_gap:
                value, key_left, key_right = keys.cut(first, start)
                keys.take(slice(first, None))
                keys.insert(0, start, value, interpolation, key_left, key_right)
                written = 2
            else:
                keys.take(slice(first, None))
                written = 1
            sides["start"] = {"original": original, "written": keys.rows(slice(0, written))}
        last = int(np.searchsorted(keys.times, end, side="right"))  # keys after the end: [last, K)
        if last == len(keys.times) and end - keys.times[-1] >= min_gap:
            keys.modes[-1] = "CONSTANT"
            keys.insert(last, end, keys.values[-1], interpolation)
            sides["end"] = {"held": True}
        elif last < len(keys.times):
            original = keys.rows(slice(last - 1, None))
            if end - keys.times[last - 1] >= min_gap:
                value, key_left, key_right = keys.cut(last, end)
                keys.take(slice(0, last))
                keys.insert(last, end, value, interpolation, key_left, key_right)
                written = 2
            else:
                keys.take(slice(0, last))
                written = 1
            sides["end"] = {"original": original, "written": keys.rows(slice(-written, None))}
        if start_at_end and not np.array_equal(keys.values[-1], keys.values[0]):
            _start_at_end(keys, sides, end, min_gap)
    return keys.times, keys.values, keys.modes, keys.left, keys.right, sides


def _start_at_end(keys: _Keys, sides: dict, end: float, min_gap: float) -> None:
    """The last key (at ``end``) showing the first key's value, the curve before it held (``loop_keys``);
    ``sides["end"]`` extended to the keys this touches."""
    change = sides.get("end", {})
    held = change.get("held", False)  # held from the last key already: the key at the end is new
    if not held:
        last = len(keys.times) - 1  # loop_keys leaves two keys at least
        written = len(change["written"][0]) if change else 0
        extra = max(2 - written, 0)  # the last key and the one before, whose segment is held
        before = keys.rows(slice(last + 1 - written - extra, last + 1 - written))
        original = [b + o for b, o in zip(before, change["original"], strict=True)] if change else before
        cut = end - min_gap
        if keys.modes[last - 1] != "CONSTANT" and keys.times[last - 1] <= cut - min_gap:
            value, key_left, key_right = keys.cut(last, cut)
            keys.insert(last, cut, value, "CONSTANT", key_left, key_right)
            written += 1
        else:  # already held, or no room for a key: the key before holds
            keys.modes[last - 1] = "CONSTANT"
        written += extra
    step = keys.values[0] - keys.values[-1]
    keys.values[-1] = keys.values[0]
    if keys.bezier:  # the handles go with their key
        keys.left[-1, ..., 1] += step
        keys.right[-1, ..., 1] += step
    if not held:
        sides["end"] = {"original": original, "written": keys.rows(slice(-written, None))}


class _Keys:
    """One channel's keys being cut for ``loop_keys``."""

    def __init__(self, times, values, interpolation, handles_left, handles_right):
        self.times = np.asarray(times, np.float64)
        self.values = np.array(values, np.float64)  # a copy: _start_at_end sets values in place
        self.interpolation = interpolation
        self.bezier = interpolation == "BEZIER" and handles_left is not None and handles_right is not None
        self.left = np.array(handles_left, np.float64) if self.bezier else None
        self.right = np.array(handles_right, np.float64) if self.bezier else None
        self.modes = np.full(len(self.times), interpolation, dtype="<U8")

    def rows(self, keys: slice) -> list:
        """Keys as (C, n, 6) rows (frame, value, left handle, right handle), or (C, n, 2) without handles."""
        values = self.values[keys]
        columns = [np.broadcast_to(self.times[keys, None], values.shape), values]
        if self.bezier:
            left, right = self.left[keys], self.right[keys]
            columns += [left[..., 0], left[..., 1], right[..., 0], right[..., 1]]
        return np.stack(columns, axis=-1).transpose(1, 0, 2).tolist()

    def take(self, keys: slice) -> None:
        self.times, self.values, self.modes = self.times[keys], self.values[keys], self.modes[keys]
        if self.bezier:
            self.left, self.right = self.left[keys], self.right[keys]

    def insert(self, at: int, frame: float, value, mode: str, key_left=None, key_right=None) -> None:
        """A key at index ``at``; its handles (Bézier only) a frame to each side unless given (F-curves
        move handles of no length)."""
        self.times = _inserted(self.times, at, frame)
        self.values = _inserted(self.values, at, value)
        self.modes = _inserted(self.modes, at, mode)
        if self.bezier:
            if key_left is None:
                key_left = np.empty(self.left.shape[1:])
                key_left[..., 0], key_left[..., 1] = frame - 1.0, value
            if key_right is None:
                key_right = np.empty(self.right.shape[1:])
                key_right[..., 0] = frame + 1.0
                key_right[..., 1] = np.add(value, 0.0)  # as point + (1, 0) had it: −0.0 becomes 0.0
            self.left = _inserted(self.left, at, key_left)
            self.right = _inserted(self.right, at, key_right)

    def cut(self, i: int, frame: float):
        """(value, left handle, right handle) of a key at ``frame`` on the segment from key i − 1 to key i.

        A Bézier segment is split: the handles next to the cut shrink to their part of the curve.
        """
        y0, y1 = self.values[i - 1], self.values[i]
        if self.interpolation == "CONSTANT":
            return y0, None, None
        if not self.bezier:
            return (
                y0 + (frame - self.times[i - 1]) / (self.times[i] - self.times[i - 1]) * (y1 - y0),
                None,
                None,
            )
        p0 = np.stack(np.broadcast_arrays(self.times[i - 1], y0), axis=-1)
        p3 = np.stack(np.broadcast_arrays(self.times[i], y1), axis=-1)
        p1, p2 = _correct_handles(p0, self.right[i - 1], self.left[i], p3)  # as Blender evaluates it
        a, d, point, e, c = split_bezier(p0, p1, p2, p3, frame)
        self.right[i - 1], self.left[i] = a, c
        return point[..., 1], d, e


def _inserted(array: np.ndarray, at: int, row) -> np.ndarray:
    """``np.insert(array, at, row, axis=0)`` for one row (0 ≤ at ≤ len), without its general cost."""
    out = np.empty((len(array) + 1,) + array.shape[1:], array.dtype)
    out[:at], out[at], out[at + 1 :] = array[:at], row, array[at:]
    return out


def unloop_rows(rows: np.ndarray, sides: dict, component: str) -> np.ndarray:
    """An F-curve's keys (K, 7) rows: frame, value, left, right handle, interpolation (``loop_keys``
    codes) without what ``loop_keys`` added; cut-off keys come back while the keys at the cut are unedited.

    ``component``: the F-curve's array index (as text), under which the cut keys are recorded.
    """
    for side, at in (("end", -1), ("start", 0)):  # in the reverse order of loop_keys
        change = sides.get(side)
        if change is None or not len(rows):
            continue
        if change.get("held"):
            if rows[at, 0] == np.float32(sides["frames"][0 if side == "start" else 1]):
                rows = rows[:-1] if side == "end" else rows[1:]
                if side == "end" and len(rows):
                    rows[-1, 6] = sides["interpolation"]
            continue
        written = np.array(change["written"][component], np.float64)
        original = np.array(change["original"][component], np.float64)
        width, count = written.shape[1], len(written)
        if len(rows) < count:
            continue
        mine = rows[-count:] if side == "end" else rows[:count]
        if not np.array_equal(mine[:, :width].astype(np.float32), written.astype(np.float32)):
            continue  # edited: the keys as they are now
        restored = np.zeros((len(original), 7))
        restored[:, :width] = original
        if width == 2:  # keys without handles: unused ones on the keys
            restored[:, 2:6] = np.tile(original, 2)
        restored[:, 6] = sides["interpolation"]
        rows = (
            np.concatenate([rows[:-count], restored])
            if side == "end"
            else np.concatenate([restored, rows[count:]])
        )
    return rows


def euler_order_to_matrix(e: np.ndarray, order: str) -> np.ndarray:
    """(K, 3) euler angles (radians, by axis x, y, z) applied in ``order`` (Blender's rotation modes
    'XYZ' … 'ZYX': the first axis first) → (K, 3, 3)."""
    e = np.asarray(e, np.float64)
    m = np.broadcast_to(np.eye(3), (len(e), 3, 3))
    for axis in order:
        i = "XYZ".index(axis)
        j, k = (i + 1) % 3, (i + 2) % 3
        c, s = np.cos(e[:, i]), np.sin(e[:, i])
        turn = np.zeros((len(e), 3, 3))
        turn[:, i, i] = 1
        turn[:, j, j] = turn[:, k, k] = c
        turn[:, k, j], turn[:, j, k] = s, -s
        m = turn @ m
    return m


def axis_angle_to_quat(a: np.ndarray) -> np.ndarray:
    """(K, 4) Blender axis-angles (angle, x, y, z) → (K, 4) quaternions (w, x, y, z); a zero axis is no turn."""
    a = np.asarray(a, np.float64)
    length = np.linalg.norm(a[:, 1:], axis=1)
    half = np.where(length > 0, a[:, 0], 0.0) / 2
    axis = a[:, 1:] / np.where(length > 0, length, 1.0)[:, None]
    return np.concatenate([np.cos(half)[:, None], np.sin(half)[:, None] * axis], axis=1)
