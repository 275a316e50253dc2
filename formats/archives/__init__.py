"""GameCube and Wii archives and compression: Yaz0, Yay0, RARC, U8 (pure Python + numpy).

Everything dispatches on the magic, never on the extension (.szs, .arc, .carc, .szp, or any
name for a compressed file). The entry points for the rest of the add-on:

``unwrap(data, filename) -> bytes``
    Strips Yaz0/Yay0 compression, repeatedly; other data comes back unchanged.
``header(data, filename, size) -> bytes``
    The first ``size`` bytes of what ``unwrap`` would give, decompressing only that much: how
    detection looks inside a compressed file (``formats.registry.family_for``).
``is_archive(data) -> bool``
    A RARC ('RARC' or 'CRAR') or U8 archive, compressed or not (looks at a prefix only).
``read_archive(data, filename) -> Archive``
    A ``rarc.RARC`` or ``u8.U8`` (unwrapped first; ``wrapping`` remembers the compression).
    Both have ``members()``: named tuples ``Member(path, data, flags)`` (path inside the
    archive without the root directory, data decompressed when the archive stores the member
    compressed, flags 0 in U8); ``find(path)`` (case-insensitive, ``None`` when absent);
    ``directories()``; ``replace(path, data)`` (compressed again if the member was).
``write_archive(archive) -> bytes``
    The archive's bytes, compressed again the way it was read: ``write_archive(read_archive(b))``
    gives ``b``, compressed or not (an unchanged compressed archive keeps the bytes it was read
    from; an edited one is compressed by the add-on's encoder, within a few percent of the size
    of Nintendo's).
``writeback.replace_members(data, filename, {path: bytes})``
    The archive file with members replaced, everything else kept (what an export into an
    archive writes).

Errors are ``FormatError`` naming the file (``archive/member/path`` inside a member), the
offset and the problem. Importing a model from an archive: ``read_archive``, then the
members whose content is a model (``formats.registry.family_for(member.path, member.data)``,
not the name), and their animations from the bck/, btk/, brk/, btp/, bpk/ folders of the same
archive. Loaders of single files should pass their bytes through ``unwrap`` first: detection
already sees through Yaz0/Yay0.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FormatError
from . import compression, rarc, u8
from .layout import Member

__all__ = [
    "Archive",
    "Member",
    "header",
    "is_archive",
    "is_compressed",
    "read_archive",
    "unwrap",
    "write_archive",
]

MAX_WRAPPING = 4  # Yaz0 inside Yaz0 happens; deeper nesting is a bad file
ARCHIVE_MAGICS = (*rarc.MAGICS, u8.MAGIC)

Archive = rarc.RARC | u8.U8
is_compressed = compression.is_compressed


@dataclass
class Unwrapped:
    data: bytes
    wrapping: list[tuple[bytes, bytes]]  # outermost first: (magic, the 8 bytes after the size)


def _unwrap(data: bytes, filename: str, limit: int | None = None) -> Unwrapped:
    wrapping = []
    while compression.is_compressed(data):
        if len(wrapping) == MAX_WRAPPING:
            raise FormatError(filename, 0, f"compressed more than {MAX_WRAPPING} times over")
        wrapping.append((bytes(data[:4]), bytes(data[8:16])))
        data = compression.decompress(data, filename, limit)
    return Unwrapped(bytes(data), wrapping)


def unwrap(data: bytes, filename: str = "<bytes>") -> bytes:
    """``data`` without its Yaz0/Yay0 layers (unchanged when not compressed)."""
    return _unwrap(data, filename).data


def header(data: bytes, filename: str = "<bytes>", size: int = 4096) -> bytes:
    """At most the first ``size`` bytes of ``unwrap(data)``, decompressing no more than that.

    ``data`` may itself be only the start of a file: a stream cut short gives what it holds.
    """
    return _unwrap(data, filename, size).data[:size]


def is_archive(data: bytes) -> bool:
    try:
        start = header(data, "<header>", 16)
    except FormatError:
        return False
    return start[:4] in ARCHIVE_MAGICS


def read_archive(data: bytes, filename: str = "<bytes>") -> Archive:
    unwrapped = _unwrap(data, filename)
    magic = unwrapped.data[:4]
    if magic in rarc.MAGICS:
        archive = rarc.read(unwrapped.data, filename)
    elif magic == u8.MAGIC:
        archive = u8.read(unwrapped.data, filename)
    else:
        raise FormatError(filename, 0, f"not a RARC or U8 archive (starts with {magic!r})")
    archive.wrapping = unwrapped.wrapping
    if unwrapped.wrapping:
        archive.packed = (bytes(data), unwrapped.data)
    return archive


def write_archive(archive: Archive) -> bytes:
    data = rarc.write(archive) if isinstance(archive, rarc.RARC) else u8.write(archive)
    if archive.packed is not None and data == archive.packed[1]:
        return archive.packed[0]  # unchanged: the compressed bytes as read, not compressed again
    for magic, rest in reversed(archive.wrapping):
        data = compression.compress(data, magic, rest)
    return data
