"""What RARC and U8 share: member data in a data area, the bytes between members, members.

A data area holds the members' bytes at their offsets, with padding (usually zeros up to a
32-byte boundary) between them. ``read_layout`` records where each member was and every byte
that is no member's, so that ``write_layout`` of unchanged members gives the same bytes; a
member whose size changed moves the ones after it, each kept on the archive's alignment.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import FormatError
from . import compression

ALIGN = 32


class Member(NamedTuple):
    """One file of an archive as the rest of the add-on sees it: ``for path, data, flags in …``."""

    path: str  # inside the archive, "/"-separated, without the root directory
    data: bytes  # decompressed when the archive stores the member compressed
    flags: int = 0  # the archive's flags for the member (RARC); 0 for U8


@dataclass
class DataLayout:
    """Where the members' data sat in a data area and the bytes between them."""

    order: list[int]  # member indices by original offset (members sharing data: the first one)
    shared: dict[int, int]  # member index → the member whose data it shares
    sizes: list[int]  # original stored sizes, by member index
    leading: bytes  # before the first member's data
    padding: dict[int, bytes]  # after each member in ``order``, up to the next one (or the end)


def read_layout(
    data: bytes, start: int, end: int, spans: Sequence[tuple[int, int]], filename: str, paths: Sequence[str]
) -> DataLayout:
    """The layout of members at absolute ``spans`` (offset, size) within ``data[start:end]``."""
    order: list[int] = []
    shared: dict[int, int] = {}
    padding: dict[int, bytes] = {}
    for index in sorted(range(len(spans)), key=lambda i: (spans[i][0], i)):
        offset, size = spans[index]
        if offset < start or offset + size > end:
            raise FormatError(
                filename, offset, f"data of {paths[index]} ({size} bytes) lies outside the data area"
            )
        if order:
            previous = order[-1]
            previous_offset, previous_size = spans[previous]
            if (offset, size) == (previous_offset, previous_size):
                shared[index] = previous
                continue
            if offset < previous_offset + previous_size:
                raise FormatError(
                    filename, offset, f"data of {paths[index]} overlaps that of {paths[previous]}"
                )
            padding[previous] = data[previous_offset + previous_size : offset]
        order.append(index)
    if order:
        last_offset, last_size = spans[order[-1]]
        padding[order[-1]] = data[last_offset + last_size : end]
        leading = data[start : spans[order[0]][0]]
    else:
        leading = data[start:end]
    return DataLayout(order, shared, [size for _, size in spans], leading, padding)


def write_layout(layout: DataLayout, stored: Sequence[bytes], base: int) -> tuple[bytes, list[int]]:
    """The data area for the members' ``stored`` bytes and each member's new absolute offset.

    ``base`` is the area's absolute offset (alignment is of absolute offsets). A member keeps
    its padding while that keeps the next one aligned as before; else zeros to ``ALIGN``. Members
    that shared their data keep sharing it while their bytes are the same; else the one that is
    not the first goes at the end.
    """
    area = bytearray(layout.leading)
    offsets = [0] * len(stored)
    for index in layout.order:
        offsets[index] = base + len(area)
        area += stored[index]
        kept = layout.padding[index]
        if len(stored[index]) == layout.sizes[index] or (base + len(area) + len(kept)) % ALIGN == 0:
            area += kept
        else:
            area += bytes(-(base + len(area)) % ALIGN)
    for index, owner in layout.shared.items():
        if stored[index] == stored[owner]:
            offsets[index] = offsets[owner]
        else:  # one of the two was replaced: the other keeps its bytes, in a place of its own
            area += bytes(-(base + len(area)) % ALIGN)
            offsets[index] = base + len(area)
            area += stored[index] + bytes(-len(stored[index]) % ALIGN)
    return bytes(area), offsets


def member_name(filename: str, path: str) -> str:
    """How errors inside a member name it: the archive, then the member's path."""
    return f"{filename}/{path}"


def unpack_member(stored: bytes, filename: str, path: str) -> bytes:
    """A member's bytes, decompressed when it is stored as Yaz0 or Yay0."""
    if compression.is_compressed(stored):
        return compression.decompress(stored, member_name(filename, path))
    return stored


def normalise(path: str) -> str:
    """The key a path is looked up by: case-insensitive, "/"-separated, no leading "./" or "/"."""
    parts = [part for part in path.replace("\\", "/").lower().split("/") if part not in ("", ".")]
    return "/".join(parts)
