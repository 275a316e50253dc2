"""Equal and nearly equal rows of numeric arrays, found with numpy: vertex pools deduplicated and
looked up (positions, normals, texture coordinates, colours, skins) without sorting rows.

``unique_rows(rows)`` gives each row an id (equal rows, equal ids; ids in order of first
appearance) by hashing each row's bit pattern to 64 bits and checking every row against its
group's first, so the result is exact. ``match_rows(existing, wanted, tolerance)`` finds, for
each wanted row, an existing row equal to it (exactly, or within a tolerance per component).
"""

from __future__ import annotations

import numpy as np


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: every input bit reaches every output bit (uint64, wrapping)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Equal rows found fast: (id of each row, first row of each id), ids in order of first
    appearance. Rows are hashed to one uint64 (their bit patterns mixed), then checked against
    their group's first row; only a hash collision falls back to numpy's row sort."""
    rows = np.ascontiguousarray(rows)
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if rows.dtype.kind == "f":
        rows = rows.astype(np.float64) + 0.0  # one bit pattern for 0 and -0
    bits = rows.reshape(len(rows), -1).view(np.uint8).reshape(len(rows), -1)
    words = np.zeros((len(rows), -(-bits.shape[1] // 8) * 8), np.uint8)
    words[:, : bits.shape[1]] = bits
    words = words.view(np.uint64)
    hashed = np.zeros(len(rows), np.uint64)
    for column in words.T:
        hashed = _mix(hashed ^ _mix(column))
    _, first, inverse = np.unique(hashed, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not (words == words[first[inverse]]).all():  # a collision
        _, first, inverse = np.unique(words, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse], first[order]


def match_rows(existing: np.ndarray, wanted: np.ndarray, tolerance: float) -> np.ndarray:
    """For each wanted row, an existing row equal to it within ``tolerance`` per component
    (exactly when 0), -1 where there is none."""
    found = np.full(len(wanted), -1, np.int64)
    if not len(existing) or not len(wanted):
        return found
    ids, first = unique_rows(np.concatenate([existing, wanted]))
    first_of_wanted = first[ids[len(existing) :]]
    found = np.where(first_of_wanted < len(existing), first_of_wanted, -1)
    if tolerance == 0 or (found >= 0).all():
        return found
    rest = np.flatnonzero(found < 0)
    found[rest] = _within(existing, wanted[rest], tolerance)
    return found


def _cell_keys(cells: np.ndarray) -> np.ndarray:
    hashed = np.zeros(len(cells), np.uint64)
    for column in cells.astype(np.int64).T:
        hashed = _mix(hashed ^ _mix(column.view(np.uint64)))
    return hashed


def _within(existing: np.ndarray, wanted: np.ndarray, tolerance: float) -> np.ndarray:
    """``match_rows`` for rows no existing row equals exactly: a grid of cells twice the tolerance
    wide; each wanted row looks at every existing row in the 2^components cells its tolerance box
    touches."""
    found = np.full(len(wanted), -1, np.int64)
    _, representative = unique_rows(existing)  # equal rows are looked at once (the first of them)
    existing = existing[representative]
    cell = 2 * tolerance
    keys = _cell_keys(np.floor(existing / cell))
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    low, high = np.floor((wanted - tolerance) / cell), np.floor((wanted + tolerance) / cell)
    components = wanted.shape[1]
    for corner in range(1 << components):
        pick = np.array([(corner >> c) & 1 for c in range(components)], bool)
        todo = np.flatnonzero(found < 0)
        wanted_keys = _cell_keys(np.where(pick, high[todo], low[todo]))
        first = np.searchsorted(sorted_keys, wanted_keys, "left")
        end = np.searchsorted(sorted_keys, wanted_keys, "right")
        for step in range(int((end - first).max(initial=0))):  # every existing row of the cell
            at = first + step
            rows = order[np.minimum(at, len(order) - 1)]
            close = (at < end) & (np.abs(existing[rows] - wanted[todo]) <= tolerance).all(axis=1)
            found[todo] = np.where((found[todo] < 0) & close, representative[rows], found[todo])
    return found
