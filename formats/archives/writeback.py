"""An archive file with some members replaced: what exporting into an archive writes.

``replace_members(data, filename, {member path: new bytes})`` reads the archive (RARC or U8,
Yaz0/Yay0-compressed or not), gives the named members their new bytes and writes it back with
every other member's bytes, order and the archive's layout unchanged, compressed again the way
the file was. Members whose new bytes equal their old ones are left as they were, so an archive
with nothing changed comes back as the very bytes it was read from, compressed or not.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import ExportError
from . import read_archive, write_archive


def replace_members(data: bytes, filename: str, replacements: Mapping[str, bytes]) -> bytes:
    """``data`` (an archive file named ``filename``) with the members of ``replacements`` replaced.

    Raises FormatError when the archive is damaged and ExportError naming the archive when a
    member is not in it.
    """
    archive = read_archive(data, filename)
    for path, new in replacements.items():
        member = archive.find(path)
        if member is None:
            kind = path.rpartition(".")[2].lower()
            alike = [m.path for m in archive.members() if m.path.lower().endswith(f".{kind}")]
            listed = ", ".join(alike[:12]) + (", …" if len(alike) > 12 else "") if alike else "none"
            raise ExportError(f"{filename} has no member {path!r} (its .{kind} members: {listed})")
        if member.data != new:
            archive.replace(member.path, new)
    return write_archive(archive)
