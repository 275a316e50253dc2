"""Triangles → GX primitives for a display list.

``display_list(triangles, records)`` writes one packet's triangles (GX winding: clockwise from
the front) as primitives over the vertex records, ending with zero padding to 32 bytes.
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


def encode(primitives: list[tuple[int, np.ndarray]], records: np.ndarray) -> bytes:
    """Primitives (opcode, vertex indices into ``records``) as display-list bytes, 32-byte padded."""
    out = bytearray()
    for opcode, vertices in primitives:
        out += bytes([opcode]) + len(vertices).to_bytes(2, "big") + records[vertices].tobytes()
    out += bytes(-len(out) % 32)
    return bytes(out)


def display_list(triangles: np.ndarray, records: np.ndarray) -> bytes:
    return encode(triangle_list(triangles), records)
