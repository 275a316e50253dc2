"""Seeded mutations of a file's bytes: the damage and the hostile values a reader must survive.

``make_input(seeds, run_seed, target, index)`` is a pure function of its arguments, so any
input of a campaign can be made again from its number, whatever worker ran it and in what order.
"""

from __future__ import annotations

import random
import struct

import numpy as np

INTERESTING_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF)
INTERESTING_WORDS = {
    2: (0x0000, 0x0001, 0x7FFF, 0x8000, 0xFFFF),
    4: (0x00000000, 0x00000001, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF),
}
SPECIAL_FLOATS = (float("nan"), float("inf"), float("-inf"), 3.0e38, -0.0, 1.0e-45)
WORD_FORMATS = {2: "H", 4: "I"}
HEADER_BYTES = 256  # headers and tables sit near the start: aim a share of the mutations there


def _position(buf: bytearray, rng: random.Random, width: int = 1) -> int:
    """Where to change ``width`` bytes: aligned to the width mostly, near the start often."""
    span = len(buf) - width + 1
    if rng.random() < 0.3:
        span = min(span, HEADER_BYTES)
    position = rng.randrange(span)
    return position - position % width if rng.random() < 0.75 else position


def _endian(rng: random.Random) -> str:
    return rng.choice("<>")


def _field_positions(buf: bytearray, width: int, endian: str) -> np.ndarray:
    """Aligned positions whose value could be a count, size or offset into this file."""
    usable = len(buf) - len(buf) % width
    values = np.frombuffer(bytes(buf[:usable]), f"{endian}u{width}")
    return np.flatnonzero((values > 0) & (values <= len(buf))) * width


def _word_position(buf: bytearray, rng: random.Random, width: int, endian: str) -> int:
    """A position of a value that looks like a count or offset half of the time, else any position."""
    if rng.random() < 0.5:
        candidates = _field_positions(buf, width, endian)
        if len(candidates):
            return int(candidates[rng.randrange(len(candidates))])
    return _position(buf, rng, width)


def flip_bit(buf: bytearray, rng: random.Random) -> None:
    if buf:
        buf[_position(buf, rng)] ^= 1 << rng.randrange(8)


def set_byte(buf: bytearray, rng: random.Random) -> None:
    if buf:
        buf[_position(buf, rng)] = rng.choice(INTERESTING_BYTES)


def set_word(buf: bytearray, rng: random.Random) -> None:
    width = rng.choice((2, 4))
    if len(buf) >= width:
        endian = _endian(rng)
        value = rng.choice(INTERESTING_WORDS[width])
        struct.pack_into(endian + WORD_FORMATS[width], buf, _word_position(buf, rng, width, endian), value)


def set_float(buf: bytearray, rng: random.Random) -> None:
    if len(buf) >= 4:
        struct.pack_into(_endian(rng) + "f", buf, _position(buf, rng, 4), rng.choice(SPECIAL_FLOATS))


def set_size(buf: bytearray, rng: random.Random) -> None:
    """A count, size or offset just inside, at or just past the end of the file."""
    width = rng.choice((2, 4))
    if len(buf) >= width:
        endian = _endian(rng)
        size = len(buf) + rng.choice((-8, -4, -1, 0, 1, 4, len(buf)))
        value = max(size, 0) % (1 << (8 * width))
        struct.pack_into(endian + WORD_FORMATS[width], buf, _word_position(buf, rng, width, endian), value)


def nudge_word(buf: bytearray, rng: random.Random) -> None:
    """Off by one (or a few) in a count or offset: the classic miscount."""
    width = rng.choice((2, 4))
    if len(buf) >= width:
        endian = _endian(rng)
        fmt = endian + WORD_FORMATS[width]
        position = _word_position(buf, rng, width, endian)
        (value,) = struct.unpack_from(fmt, buf, position)
        delta = rng.choice((-16, -4, -1, 1, 4, 16))
        struct.pack_into(fmt, buf, position, (value + delta) % (1 << (8 * width)))


def truncate(buf: bytearray, rng: random.Random) -> None:
    if buf:
        del buf[rng.randrange(len(buf)) :]


def insert(buf: bytearray, rng: random.Random) -> None:
    size = rng.choice((1, 2, 4, 8, 16, 64))
    filler = rng.choice((bytes([rng.randrange(256)]) * size, rng.randbytes(size)))
    at = _position(buf, rng) if buf else 0
    buf[at:at] = filler


def delete(buf: bytearray, rng: random.Random) -> None:
    if buf:
        at = _position(buf, rng)
        del buf[at : at + rng.choice((1, 2, 4, 8, 16, 64))]


def duplicate_chunk(buf: bytearray, rng: random.Random) -> None:
    """A copy of one stretch of the file inserted at, or written over, another place."""
    if len(buf) >= 2:
        start = _position(buf, rng)
        chunk = bytes(buf[start : start + rng.choice((4, 8, 16, 32, 128, 512))])
        at = _position(buf, rng)
        if rng.random() < 0.5:
            buf[at:at] = chunk
        else:
            buf[at : at + len(chunk)] = chunk


MUTATIONS = (
    flip_bit,
    set_byte,
    set_word,
    set_float,
    set_size,
    nudge_word,
    truncate,
    insert,
    delete,
    duplicate_chunk,
)
STACK_DEPTHS = (1, 1, 1, 2, 2, 3, 4, 8)  # mostly one change, sometimes a burst


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice(STACK_DEPTHS)):
        rng.choice(MUTATIONS)(buf, rng)
    return bytes(buf)


def make_input(seeds: list[bytes], run_seed: int, target: str, index: int) -> tuple[int, bytes]:
    """Input number ``index`` of ``target`` in the campaign ``run_seed``: (seed index, bytes).

    The first inputs are the seeds themselves, unchanged: what they do is the reference."""
    if index < len(seeds):
        return index, seeds[index]
    rng = random.Random(f"{run_seed}/{target}/{index}")
    seed_index = rng.randrange(len(seeds))
    return seed_index, mutate(seeds[seed_index], rng)
