"""RARC: the GameCube's (and Galaxy's) archive, big-endian 'RARC' or little-endian 'CRAR'.

A 0x20-byte header, an info block at 0x20 (offsets inside it are relative to 0x20), the nodes
(directories, 16 bytes each), the entries (20 bytes each: files, subdirectories, '.' and
'..'), the string table and the data area. Every field is kept as read, and the bytes of the
info region that no table covers, so that ``write(read(b)) == b``; replacing a member moves
the data after it and updates offsets and sizes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..binary import Reader
from ..errors import FormatError
from . import compression
from .layout import DataLayout, Member, normalise, read_layout, unpack_member, write_layout

MAGICS = {b"RARC": ">", b"CRAR": "<"}
HEADER_SIZE = 0x20
INFO_SIZE = 0x20
NODE_SIZE = 16
ENTRY_SIZE = 20
NO_NODE = 0xFFFFFFFF  # the root's '..'

FILE = 0x01
DIRECTORY = 0x02
COMPRESSED = 0x04
LOAD_TO_MRAM = 0x10
LOAD_TO_ARAM = 0x20
YAZ0 = 0x80  # with COMPRESSED: Yaz0, else Yay0


@dataclass
class Node:
    """A directory."""

    type: bytes  # 4 bytes: 'ROOT', or the name's first four letters upper-cased, space-padded
    name_offset: int
    name_hash: int
    entry_count: int
    first_entry: int
    name: str


@dataclass
class Entry:
    """A file, a subdirectory, '.' or '..' of a node."""

    file_id: int  # 0xFFFF for directories
    name_hash: int
    flags: int
    name_offset: int
    data_offset: int  # file: relative to the data area; directory: node index (NO_NODE)
    size: int  # file: stored bytes; directory: 16
    reserved: int
    name: str
    stored: bytes | None = None  # a file's bytes as the archive holds them (compressed or not)

    @property
    def is_directory(self) -> bool:
        return bool(self.flags & DIRECTORY)


@dataclass
class RARC:
    endian: str  # '>' for 'RARC', '<' for 'CRAR'
    file_size: int
    header_size: int
    data_offset: int  # relative to 0x20
    data_size: int
    mram_size: int
    aram_size: int
    reserved: int
    node_offset: int  # relative to 0x20, like the three below
    entry_offset: int
    string_size: int
    string_offset: int
    next_file_id: int
    ids_synced: int  # 1: a file's id is its entry index
    info_rest: bytes  # the 5 bytes closing the info block
    nodes: list[Node]
    entries: list[Entry]
    info_region: bytes  # 0x20 … data area: the tables and every byte between them
    layout: DataLayout  # of the file entries, in entry order
    filename: str = "<bytes>"
    # Compression around the archive, outermost first: (magic, the 8 header bytes after the size).
    wrapping: list[tuple[bytes, bytes]] = field(default_factory=list)
    packed: tuple[bytes, bytes] | None = None  # a compressed file as read, and its content

    # -- the tree ------------------------------------------------------------------------------

    def walk(self) -> Iterator[tuple[str, int, Entry | None]]:
        """(path, node index, None) per directory and (path, node index, entry) per file, depth first."""
        seen = {0}
        yield "", 0, None
        stack = [("", 0, iter(self._entries(0)))]
        while stack:
            prefix, node_index, entries = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
            elif not entry.is_directory:
                yield f"{prefix}{entry.name}", node_index, entry
            elif entry.name not in (".", "..") and entry.data_offset not in seen:
                seen.add(entry.data_offset)
                path = f"{prefix}{entry.name}"
                yield path, entry.data_offset, None
                stack.append((path + "/", entry.data_offset, iter(self._entries(entry.data_offset))))

    def _entries(self, node_index: int) -> list[Entry]:
        node = self.nodes[node_index]
        return self.entries[node.first_entry : node.first_entry + node.entry_count]

    def files(self) -> list[tuple[str, Entry]]:
        return [(path, entry) for path, _, entry in self.walk() if entry is not None]

    def directories(self) -> list[str]:
        """Every directory's path ("" for the root), in tree order."""
        return [path for path, _, entry in self.walk() if entry is None]

    def members(self) -> Iterator[Member]:
        for path, entry in self.files():
            yield Member(path, unpack_member(entry.stored, self.filename, path), entry.flags)

    def find(self, path: str) -> Member | None:
        """The member at ``path`` (case-insensitive), or None."""
        key = normalise(path)
        for member_path, entry in self.files():
            if normalise(member_path) == key:
                return Member(
                    member_path, unpack_member(entry.stored, self.filename, member_path), entry.flags
                )
        return None

    def replace(self, path: str, data: bytes) -> None:
        """Give the member at ``path`` new bytes, compressed again when the archive compressed it."""
        key = normalise(path)
        for member_path, entry in self.files():
            if normalise(member_path) == key:
                if entry.flags & COMPRESSED:
                    magic = compression.YAZ0 if entry.flags & YAZ0 else compression.YAY0
                    reserved = entry.stored[8:16] if entry.stored[:4] == compression.YAZ0 else bytes(8)
                    data = compression.compress(data, magic, reserved.ljust(8, b"\0"))
                entry.stored = bytes(data)
                return
        raise KeyError(f"{self.filename} has no member {path!r}")


def read(data: bytes, filename: str = "<bytes>") -> RARC:
    endian = MAGICS.get(bytes(data[:4]))
    if endian is None:
        raise FormatError(filename, 0, f"expected 'RARC' or 'CRAR', found {bytes(data[:4])!r}")
    r = Reader(data, endian, filename, 4)
    file_size, header_size, data_offset, data_size, mram_size, aram_size, reserved = r.unpack(
        "7I", "RARC header"
    )
    data_start = HEADER_SIZE + data_offset
    if data_start > len(data):
        raise r.error(f"data area at {data_start} starts past the end of the file ({len(data)} bytes)", 12)
    # The info block and the tables lie before the data area.
    tables = Reader(data, endian, filename, HEADER_SIZE, data_start)
    node_count, node_offset, entry_count, entry_offset, string_size, string_offset = tables.unpack(
        "6I", "info block"
    )
    next_file_id, ids_synced = tables.unpack("HB", "info block")
    info_rest = tables.bytes(5, "info block")
    strings = tables.sub(HEADER_SIZE + string_offset, string_size, "string table")
    r = tables

    def name(offset: int, where: int) -> str:
        if offset >= string_size:
            raise FormatError(
                filename, where, f"name offset {offset} is outside the string table ({string_size} bytes)"
            )
        return strings.seek(HEADER_SIZE + string_offset + offset).zstring("name")

    r.seek(HEADER_SIZE + node_offset, "nodes")
    r.check_count(node_count, NODE_SIZE, "node")
    if node_count == 0:
        raise r.error("archive has no root node", HEADER_SIZE)
    nodes = []
    for index in range(node_count):
        where = r.pos
        kind = r.bytes(4, "node type")
        fields = r.unpack("IHHI", "node")
        nodes.append(Node(kind, fields[0], fields[1], fields[2], fields[3], name(fields[0], where + 4)))
        if fields[3] + fields[2] > entry_count:
            raise FormatError(
                filename, where, f"node {index} lists entries past the {entry_count} the archive has"
            )
    r.seek(HEADER_SIZE + entry_offset, "entries")
    r.check_count(entry_count, ENTRY_SIZE, "entry")
    entries = []
    for _ in range(entry_count):
        where = r.pos
        file_id, name_hash, packed, offset, size, entry_reserved = r.unpack("HHIIII", "entry")
        flags, name_offset = packed >> 24, packed & 0xFFFFFF
        entry = Entry(
            file_id, name_hash, flags, name_offset, offset, size, entry_reserved, name(name_offset, where + 4)
        )
        if entry.is_directory and entry.name not in (".", "..") and offset >= node_count:
            raise FormatError(
                filename, where + 8, f"directory {entry.name} names node {offset} of {node_count}"
            )
        entries.append(entry)
    archive = RARC(
        endian,
        file_size,
        header_size,
        data_offset,
        data_size,
        mram_size,
        aram_size,
        reserved,
        node_offset,
        entry_offset,
        string_size,
        string_offset,
        next_file_id,
        ids_synced,
        info_rest,
        nodes,
        entries,
        bytes(data[HEADER_SIZE:data_start]),
        DataLayout([], {}, [], b"", {}),
        filename,
    )
    files = [entry for entry in entries if not entry.is_directory]
    paths = {id(entry): path for path, entry in archive.files()}
    spans = [(data_start + entry.data_offset, entry.size) for entry in files]
    archive.layout = read_layout(
        data, data_start, len(data), spans, filename, [paths.get(id(e), e.name) for e in files]
    )
    for entry, (offset, size) in zip(files, spans, strict=True):
        entry.stored = bytes(data[offset : offset + size])
    return archive


def write(archive: RARC) -> bytes:
    """The archive's bytes: the same as read for an unedited archive; offsets and sizes follow edits."""
    e = archive.endian
    files = [entry for entry in archive.entries if not entry.is_directory]
    stored = [entry.stored for entry in files]
    data_start = HEADER_SIZE + archive.data_offset
    area, offsets = write_layout(archive.layout, stored, data_start)
    placed = {
        id(entry): (offset - data_start, len(data))
        for entry, offset, data in zip(files, offsets, stored, strict=True)
    }
    growth = {LOAD_TO_MRAM: 0, LOAD_TO_ARAM: 0}
    for entry, old_size in zip(files, archive.layout.sizes, strict=True):
        for flag in growth:
            if entry.flags & flag:
                growth[flag] += len(entry.stored) - old_size
    old_area = len(archive.layout.leading) + sum(
        archive.layout.sizes[i] + len(archive.layout.padding[i]) for i in archive.layout.order
    )
    region = bytearray(archive.info_region)
    struct.pack_into(
        e + "6IHB",
        region,
        0,
        len(archive.nodes),
        archive.node_offset,
        len(archive.entries),
        archive.entry_offset,
        archive.string_size,
        archive.string_offset,
        archive.next_file_id,
        archive.ids_synced,
    )
    region[0x1B:INFO_SIZE] = archive.info_rest
    for index, node in enumerate(archive.nodes):
        at = archive.node_offset + index * NODE_SIZE
        region[at : at + 4] = node.type
        struct.pack_into(
            e + "IHHI", region, at + 4, node.name_offset, node.name_hash, node.entry_count, node.first_entry
        )
    for index, entry in enumerate(archive.entries):
        at = archive.entry_offset + index * ENTRY_SIZE
        offset, size = placed.get(id(entry), (entry.data_offset, entry.size))
        struct.pack_into(
            e + "HHIIII",
            region,
            at,
            entry.file_id,
            entry.name_hash,
            entry.flags << 24 | entry.name_offset,
            offset,
            size,
            entry.reserved,
        )
    header = (b"RARC" if e == ">" else b"CRAR") + struct.pack(
        e + "7I",
        archive.file_size + len(area) - old_area,
        archive.header_size,
        archive.data_offset,
        archive.data_size + len(area) - old_area,
        archive.mram_size + growth[LOAD_TO_MRAM],
        archive.aram_size + growth[LOAD_TO_ARAM],
        archive.reserved,
    )
    return header + bytes(region) + area
