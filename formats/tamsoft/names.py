"""Bone names: the engine stores only a 32-bit hash of each name.

The hash is the reflected CRC-32 (standard polynomial and table) started from
the name's length instead of 0xFFFFFFFF and without the final XOR. Models keep
the hash; a user may supply a names file (one name per line) whose names are
hashed and matched, the others get a readable fallback ``bone_<hash hex>``.
"""

from __future__ import annotations

import re
import zlib

FALLBACK = re.compile(r"^bone_([0-9a-f]{8})$")


def name_hash(name: str) -> int:
    raw = name.encode("utf-8")
    # zlib's CRC-32 inverts the start value and the result; undo both.
    return zlib.crc32(raw, len(raw) ^ 0xFFFFFFFF) ^ 0xFFFFFFFF


def fallback_name(hash_value: int) -> str:
    return f"bone_{hash_value:08x}"


def hash_for(name: str) -> int:
    """The hash a bone called ``name`` gets; a fallback name spells its own hash."""
    match = FALLBACK.match(name)
    return int(match.group(1), 16) if match else name_hash(name)


def parse_names(text: str) -> list[str]:
    """Names of a names file: one per line, blank lines and ``#`` comments skipped."""
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def lookup(names: list[str]) -> dict[int, str]:
    """Hash → name for the given candidates (the first name wins on a collision)."""
    table: dict[int, str] = {}
    for name in names:
        table.setdefault(name_hash(name), name)
    return table
