"""Triangles → GX primitives: triangle strips where triangles share edges, one triangle list for
the rest.

GX strips alternate winding: triangle k of a strip is (v[k], v[k+1], v[k+2]) for even k and
(v[k], v[k+2], v[k+1]) for odd k, each clockwise from the front as the triangles are given. So
the triangle after (…, p, q) is the one holding the directed edge q → p (the next one is odd) or
p → q (even): a lookup of directed edges (numpy, sorted keys) finds it, and the walk follows the
mesh greedily: forward from a start triangle, then backward by an even number of triangles (the
start keeps its parity, so its winding). Starts are taken in order of fewest neighbours first
(the classic choice: strips begin at borders and leave no islands), each tried with its three
rotations, the longest strip kept. Strips of one triangle go into a single triangle list. A
primitive holds at most 0xFFFF vertices (a longer strip is cut at an even triangle, the two
shared vertices sent again).

``display_list(triangles, records)`` writes one packet as display-list bytes; ``strip`` returns
the primitives (opcode, vertex indices) for measuring.
"""

from __future__ import annotations

import numpy as np

TRIANGLES, STRIP = 0x90, 0x98
MAX_VERTICES = 0xFFFF  # a primitive's u16 vertex count


def triangle_list(triangles: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """The triangles as lists of at most ``MAX_VERTICES`` vertices."""
    flat = np.asarray(triangles, np.int64).reshape(-1)
    step = MAX_VERTICES - MAX_VERTICES % 3
    return [(TRIANGLES, flat[at : at + step]) for at in range(0, len(flat), step)]


class _Edges:
    """Directed edge (u → w) → a triangle holding it (and where in the triangle)."""

    def __init__(self, triangles: np.ndarray):
        self.span = int(triangles.max(initial=0)) + 1
        starts = triangles.reshape(-1)
        ends = np.roll(triangles, -1, axis=1).reshape(-1)
        keys = starts * self.span + ends
        self.order = np.argsort(keys, kind="stable")
        self.keys = keys[self.order]
        self.lookup = dict(zip(self.keys.tolist(), self.order.tolist(), strict=False))
        # neighbours across each edge (w → u), for the start order
        reverse = ends * self.span + starts
        at = np.searchsorted(self.keys, reverse)
        found = (at < len(self.keys)) & (self.keys[np.minimum(at, len(self.keys) - 1)] == reverse)
        self.degree = found.reshape(-1, 3).sum(axis=1)

    def across(self, u: int, w: int) -> int:
        """A corner id (3·triangle + corner) whose edge is u → w, -1 when none."""
        return self.lookup.get(u * self.span + w, -1)


def _walk(
    start: int, rotation: int, triangles: list, edges: _Edges, used: bytearray
) -> tuple[list[int], list[int]]:
    """The strip through ``start`` (its corners rotated by ``rotation``): walked forward, then
    backward by an even number of triangles (so ``start`` keeps an even place and its winding);
    its vertices and triangles. Triangles taken are marked 2 in ``used``."""
    a, b, c = triangles[start][rotation:] + triangles[start][:rotation]
    strip, taken = [a, b, c], [start]
    used[start] = 2
    while True:
        p, q = strip[-2], strip[-1]
        odd = len(strip) % 2 == 1  # the next triangle's index in the strip is len - 2
        corner = edges.across(q, p) if odd else edges.across(p, q)
        t = corner // 3
        if corner < 0 or used[t]:
            break
        strip.append(triangles[t][(corner % 3 + 2) % 3])  # the vertex off the shared edge
        taken.append(t)
        used[t] = 2
    before: list[int] = []
    prefix: list[int] = []
    while True:
        if len(prefix) >= 2:  # the first two vertices of prefix reversed + strip
            p, q = prefix[-1], prefix[-2]
        else:
            p, q = (prefix[0], strip[0]) if prefix else (strip[0], strip[1])
        odd = len(prefix) % 2 == 0  # the triangle before has index -(len + 1)
        corner = edges.across(q, p) if odd else edges.across(p, q)
        t = corner // 3
        if corner < 0 or used[t]:
            break
        prefix.append(triangles[t][(corner % 3 + 2) % 3])
        before.append(t)
        used[t] = 2
    if len(before) % 2:  # an odd number before would flip the strip's winding: leave the farthest out
        used[before.pop()] = 0
        prefix.pop()
    return prefix[::-1] + strip, before + taken


def strip(triangles: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Primitives (opcode, vertex indices) drawing ``triangles`` (clockwise from the front)."""
    triangles = np.asarray(triangles, np.int64).reshape(-1, 3)
    if not len(triangles):
        return []
    edges = _Edges(triangles)
    listed = triangles.tolist()
    used = bytearray(len(listed))
    strips: list[list[int]] = []
    singles: list[int] = []
    for start in np.argsort(edges.degree, kind="stable").tolist():
        if used[start]:
            continue
        best, best_taken = [], []
        for rotation in range(3):
            vertices, taken = _walk(start, rotation, listed, edges, used)
            for t in taken:
                used[t] = 0
            if len(vertices) > len(best):
                best, best_taken = vertices, taken
        for t in best_taken:
            used[t] = 1
        if len(best) == 3:
            singles.append(start)
        else:
            strips.append(best)
    out: list[tuple[int, np.ndarray]] = []
    for vertices in strips:
        step = MAX_VERTICES - 1  # even: every piece starts on an even triangle
        for at in range(0, len(vertices) - 2, step - 2):
            out.append((STRIP, np.array(vertices[at : at + step], np.int64)))
    if singles:
        out += triangle_list(triangles[singles])
    return out


def encode(primitives: list[tuple[int, np.ndarray]], records: np.ndarray) -> bytes:
    """Primitives (opcode, vertex indices into ``records``) as display-list bytes, 32-byte padded."""
    out = bytearray()
    for opcode, vertices in primitives:
        out += bytes([opcode]) + len(vertices).to_bytes(2, "big") + records[vertices].tobytes()
    out += bytes(-len(out) % 32)
    return bytes(out)


def display_list(triangles: np.ndarray, records: np.ndarray) -> bytes:
    return encode(strip(triangles), records)
