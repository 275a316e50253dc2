"""BLA and BLK: cluster (shape deformer) weight animations, one weight per cluster of the model.

- BLA (``J3D1bla1``, section CLF1): a weight at every frame; table entries ``u16 frame count,
  u16 first index`` (the game reads frame ``round(f)`` clamped to ``count − 1``).
- BLK (``J3D1blk1``, section CLK1): keyframed weights; table entries are BCK-style tracks
  ``u16 count, u16 first, u16 tangent mode`` (count 0: weight 1).

Both sections: loop mode, a byte the game ignores, length, a ``u16`` the game does not read
(kept; new files hold the cluster count), ``u16`` weight count, the offsets of the table and of
the f32 weight bank. The header gives no cluster count (the game takes the model's): the table
ends where the padding before the next block begins (``_table_length``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Writer
from .bca import FULL_DTYPE, check_full_tracks
from .container import (
    ANIMATION_MAGIC,
    TRACK_DTYPE,
    Framing,
    SectionBuilder,
    block_reader,
    check_tracks,
    padding,
    read_animation,
    read_gaps,
    write_container,
)

HEADER_SIZE = 0x18
KINDS = {b"bla1": (b"CLF1", FULL_DTYPE), b"blk1": (b"CLK1", TRACK_DTYPE)}


@dataclass
class Cluster:
    kind: bytes  # b"bla1" (a weight per frame) or b"blk1" (keys)
    loop_mode: int
    length: int
    tracks: np.ndarray  # (clusters,) FULL_DTYPE for BLA, TRACK_DTYPE for BLK
    weights: np.ndarray  # float32 bank
    unused: int = 0xFF
    word: int | None = None  # the u16 at +0x0C as read; None writes the cluster count
    gaps: list[bytes] | None = None
    framing: Framing = field(default_factory=Framing)

    @property
    def keyed(self) -> bool:
        return self.kind == b"blk1"


def _table_length(section: bytes, start: int, end: int, size: int, word: int) -> int:
    """Entries of ``size`` bytes from ``start`` up to ``end``, the rest being padding (the text, or
    zeros). Blocks are aligned to at most 32 bytes, so only the last few counts qualify: the header
    ``word`` when it does (it often is the count), else the fewest (padding may look like entries,
    a real entry is seldom padding); all that fit when none does."""
    most = max(end - start, 0) // size

    def padded(count: int) -> bool:
        rest = section[start + count * size : end]
        return rest == padding(len(rest)) or not any(rest)

    counts = range(max(most - 32 // size - 1, 0), most + 1)
    if word in counts and padded(word):
        return word
    return next((count for count in counts if padded(count)), most)


def read_kind(data: bytes, filename: str, kind: bytes) -> Cluster:
    tag, dtype = KINDS[kind]
    container, section, r = read_animation(data, filename, kind, tag)
    base = section.offset
    name = tag.decode()
    loop_mode, unused, length, word, count = r.unpack("BBhHH", f"{name} header")
    offsets = r.unpack("II", f"{name} block offsets")
    end = offsets[1] if offsets[1] >= offsets[0] else len(section.data)
    clusters = _table_length(section.data, offsets[0], end, dtype.itemsize, word)
    blocks = list(zip(offsets, (clusters * dtype.itemsize, count * 4), strict=True))
    tracks = block_reader(r, base, offsets[0], blocks[0][1], f"{name} table").array(dtype, clusters)
    weights = block_reader(r, base, offsets[1], count * 4, f"{name} weights").array(">f4", count)
    check = check_tracks if kind == b"blk1" else check_full_tracks
    check(r, tracks, count, f"{name} weight", base + offsets[0])
    return Cluster(
        kind,
        loop_mode,
        length,
        tracks,
        weights,
        unused=unused,
        word=word,
        gaps=read_gaps(section.data, HEADER_SIZE, blocks, [32, 32]),
        framing=container.framing,
    )


def write(cluster: Cluster) -> bytes:
    tag, dtype = KINDS[cluster.kind]
    tracks = np.ascontiguousarray(cluster.tracks, dtype)
    builder = SectionBuilder(tag, HEADER_SIZE, cluster.gaps)
    offsets = (
        builder.block(tracks.tobytes(), 32),
        builder.block(np.asarray(cluster.weights, ">f4").tobytes(), 32),
    )
    word = len(tracks) if cluster.word is None else cluster.word
    header = Writer(">")
    header.pack("BBhHH", cluster.loop_mode, cluster.unused, cluster.length, word, len(cluster.weights))
    header.pack("II", *offsets)
    return write_container(
        ANIMATION_MAGIC, cluster.kind, [builder.finish(header.getvalue())], cluster.framing
    )


class _Kind:
    """One of the two file kinds as a reader/writer pair (``files.READERS`` takes modules like this)."""

    def __init__(self, kind: bytes):
        self.kind = kind

    def read(self, data: bytes, filename: str = "<bytes>") -> Cluster:
        return read_kind(data, filename, self.kind)

    @staticmethod
    def write(cluster: Cluster) -> bytes:
        return write(cluster)


bla = _Kind(b"bla1")
blk = _Kind(b"blk1")
