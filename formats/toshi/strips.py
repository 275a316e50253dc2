"""Triangle strips as TMD pieces store them.

A strip has no restart index: separate runs are stitched with degenerate
triangles. Triangle k of a strip is (s[k], s[k+1], s[k+2]) for even k and
(s[k+1], s[k], s[k+2]) for odd k; triangles with a repeated index are dropped.
"""

from __future__ import annotations

import numpy as np

MAX_PIECE_INDICES = 7500


def to_triangles(strip: np.ndarray, lengths=None) -> np.ndarray:
    """(F, 3) int32 triangles of a strip, degenerate ones dropped; with ``lengths``, of the strips of
    those lengths one after another (each decoded on its own, in order)."""
    s = np.asarray(strip, dtype=np.int32)
    if len(s) < 3:
        return np.zeros((0, 3), np.int32)
    a, b, c = s[:-2], s[1:-1], s[2:]
    k = np.flatnonzero((a != b) & (b != c) & (a != c))  # where each kept triangle starts
    if lengths is None:
        odd = k & 1
    else:  # odd counts from each strip's start; a triangle must end in its strip
        lengths = np.asarray(lengths, np.int64)
        ends = np.cumsum(lengths)
        strip_of = np.searchsorted(ends, k, side="right")
        inside = k + 2 < ends[strip_of]
        k, strip_of = k[inside], strip_of[inside]
        odd = (k - (ends - lengths)[strip_of]) & 1
    tris = np.empty((len(k), 3), np.int32)
    tris[:, 0] = s[k + odd]
    tris[:, 1] = s[k + 1 - odd]
    tris[:, 2] = s[k + 2]
    return tris


def canonical(triangles: np.ndarray) -> np.ndarray:
    """Each triangle rotated so its smallest index comes first (winding kept), for comparisons."""
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    shift = np.argmin(t, axis=1)
    cols = (np.arange(3)[None, :] + shift[:, None]) % 3
    return np.take_along_axis(t, cols, axis=1)


def _pair_triangles(tris: np.ndarray, rounds: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Greedy matching of triangles sharing an edge in opposite directions.

    Returns (pairs (P, 4) as strips [a, b, c, d] meaning (a, b, c) and (c, b, d),
    singles (S, 3)). Each round keeps only mutual first choices, so no triangle
    is used twice.
    """
    n = len(tris)
    free = np.ones(n, bool)
    pair_rows = []
    rng = np.random.default_rng(0)  # fixed seed: the same mesh always gives the same strip
    # rotations[r] puts corner r first: half-edge (b, c) with apex a.
    rotations = np.stack([np.roll(tris, -r, axis=1) for r in range(3)], axis=1)  # (n, 3, 3)
    for _ in range(rounds):
        idx = np.flatnonzero(free)
        if len(idx) < 2:
            break
        rot = rotations[idx].reshape(-1, 3)  # candidates: (triangle, rotation)
        owner = np.repeat(idx, 3)
        key = rot[:, 1].astype(np.int64) << 32 | rot[:, 2].astype(np.int64)
        twin = rot[:, 2].astype(np.int64) << 32 | rot[:, 1].astype(np.int64)
        order = np.argsort(key, kind="stable")
        sorted_keys = key[order]
        pos = np.searchsorted(sorted_keys, twin)
        found = (pos < len(sorted_keys)) & (sorted_keys[np.minimum(pos, len(sorted_keys) - 1)] == twin)
        partner = np.full(len(key), -1, np.int64)
        partner[found] = order[pos[found]]
        ok = found.copy()
        ok[found] = owner[partner[found]] != owner[found]
        # Every shared edge gets one random weight (the same from both sides); each
        # triangle picks its heaviest edge and pairs form where both picked the same one.
        noise = rng.random(len(key))
        weight = np.where(ok, noise + noise[np.maximum(partner, 0)], -1.0)
        best = np.argsort(weight, kind="stable")
        choice = np.full(n, -1, np.int64)  # candidate row chosen by each triangle
        best = best[weight[best] >= 0]
        choice[owner[best]] = best  # the heaviest row is written last
        first = idx[choice[idx] >= 0]
        rows = choice[first]
        other = owner[partner[rows]]
        their = choice[other]
        mutual = (their == partner[rows]) & (owner[partner[np.maximum(their, 0)]] == first) & (first < other)
        if not mutual.any():
            break
        rows, first, other = rows[mutual], first[mutual], other[mutual]
        apex = rot[partner[rows], 0]
        pair_rows.append(np.concatenate([rot[rows], apex[:, None]], axis=1))
        free[first] = False
        free[other] = False
    pairs = np.concatenate(pair_rows) if pair_rows else np.zeros((0, 4), tris.dtype)
    return pairs, tris[free]


def stripify(triangles: np.ndarray) -> np.ndarray:
    """One stitched strip (int32) whose triangles are exactly the non-degenerate input triangles.

    Edge-sharing pairs become 4-index runs, the rest 3-index runs padded to 4;
    runs are joined by repeating the last index of one and the first of the
    next, so every run starts at an even position and keeps its winding.
    """
    tris = np.asarray(triangles, dtype=np.int32).reshape(-1, 3)
    tris = tris[(tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 0] != tris[:, 2])]
    if not len(tris):
        return np.zeros(0, np.int32)
    pairs, singles = _pair_triangles(tris)
    runs = np.concatenate([pairs, np.concatenate([singles, singles[:, 2:]], axis=1)]).astype(np.int32)
    rows = np.empty((len(runs), 6), np.int32)
    rows[:, :4] = runs
    rows[:, 4] = runs[:, 3]
    rows[:-1, 5] = runs[1:, 0]
    return rows.reshape(-1)[:-2]


def split(strip: np.ndarray, limit: int = MAX_PIECE_INDICES) -> list[np.ndarray]:
    """Pieces of at most ``limit`` indices, each repeating the last two of the previous one.

    Every piece starts at an even position of the whole strip, so decoding the
    pieces one by one gives the same triangles with the same winding.
    """
    strip = np.asarray(strip)
    if limit < 4:
        raise ValueError("a strip piece needs room for at least 4 indices")
    length = limit - (limit % 2)  # even: the step between piece starts (length - 2) stays even
    if len(strip) <= limit:
        return [strip]
    starts = range(0, len(strip) - 2, length - 2)
    return [strip[s : s + length] for s in starts]
