"""Readable summaries of archives: the tree, each member's size and what it is."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from . import ARCHIVE_MAGICS, header, rarc, read_archive


def detect(data: bytes, name: str) -> bool:
    return header(data, name, 4)[:4] in ARCHIVE_MAGICS


def summarize(data: bytes, name: str, kind_of: Callable[[bytes, str], str] = lambda data, name: "") -> str:
    """The archive's tree; ``kind_of(member bytes, member name)`` says what each member is."""
    archive = read_archive(data, name)
    if isinstance(archive, rarc.RARC):
        order = "big-endian" if archive.endian == ">" else "little-endian"
        title = f"RARC archive ({order}), root {archive.nodes[0].name!r}"
    else:
        title = "U8 archive"
    wrapping = "".join(f" in {magic.decode()}" for magic, _ in archive.wrapping)
    directories = archive.directories()
    lines = [f"{name}: {title}{wrapping}, {len(directories)} directories, {len(archive.files())} files"]
    kinds: Counter[str] = Counter()
    listed = {""}
    for member in archive.members():
        folder, _, leaf = member.path.rpartition("/")
        parts = folder.split("/") if folder else []
        for depth in range(len(parts)):
            path = "/".join(parts[: depth + 1])
            if path not in listed:
                listed.add(path)
                lines.append(f"  {'  ' * depth}{parts[depth]}/")
        kind = kind_of(member.data, leaf)
        kinds[kind] += 1
        flags = f", flags 0x{member.flags:02X}" if member.flags else ""
        lines.append(f"  {'  ' * len(parts)}{leaf}  {len(member.data)} bytes{flags}  {kind}".rstrip())
    lines += [f"  {path}/ (empty)" for path in directories if path not in listed]
    lines.append("  members: " + ", ".join(f"{count} × {kind or '?'}" for kind, count in kinds.most_common()))
    return "\n".join(lines)
