"""U8: the Wii's archive (magic 0x55AA382D, big-endian).

A 0x20-byte header (magic, first-node offset, size of the node and string tables, data
offset, 16 reserved bytes), then 12-byte nodes: u8 type (0 file, 1 directory), u24 name
offset, and two u32: a file's absolute data offset and size, a directory's parent index and
the index one past its last descendant. Node 0 is the nameless root, whose second field is the
node count; nesting is implicit in those indices. Every field and every byte between the
tables is kept, so ``write(read(b)) == b``; ``build`` makes a new archive from paths.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ..binary import Reader
from ..errors import FormatError
from .layout import ALIGN, DataLayout, Member, normalise, read_layout, unpack_member, write_layout

MAGIC = b"\x55\xaa\x38\x2d"
HEADER_SIZE = 0x20
NODE_SIZE = 12
FILE, DIRECTORY = 0, 1
RESERVED = b"\xcc" * 16  # what the header's last 16 bytes usually hold


@dataclass
class Node:
    type: int  # FILE or DIRECTORY
    name_offset: int
    first: int  # file: absolute data offset; directory: parent index
    second: int  # file: size; directory: index one past its last descendant
    name: str
    stored: bytes | None = None  # a file's bytes


@dataclass
class U8:
    node_offset: int
    table_size: int  # nodes and strings
    data_offset: int
    reserved: bytes  # 16 bytes
    nodes: list[Node]
    table_region: bytes  # 0x20 … data offset: the nodes, the strings and the bytes around them
    layout: DataLayout  # of the file nodes, in node order
    filename: str = "<bytes>"
    # Compression around the archive, outermost first: (magic, the 8 header bytes after the size).
    wrapping: list[tuple[bytes, bytes]] = field(default_factory=list)
    packed: tuple[bytes, bytes] | None = None  # a compressed file as read, and its content

    def walk(self) -> Iterator[tuple[str, Node]]:
        """(path, node) for every node but the root, in node order; '.' directories add nothing."""
        prefixes: list[tuple[int, str]] = [(len(self.nodes), "")]  # (end, path prefix) of open directories
        for index, node in enumerate(self.nodes[1:], 1):
            while index >= prefixes[-1][0]:
                prefixes.pop()
            path = prefixes[-1][1] + node.name
            yield path, node
            if node.type == DIRECTORY:
                prefixes.append((node.second, prefixes[-1][1] if node.name == "." else path + "/"))

    def files(self) -> list[tuple[str, Node]]:
        return [(path, node) for path, node in self.walk() if node.type == FILE]

    def directories(self) -> list[str]:
        return [""] + [path for path, node in self.walk() if node.type == DIRECTORY and node.name != "."]

    def members(self) -> Iterator[Member]:
        for path, node in self.files():
            yield Member(path, unpack_member(node.stored, self.filename, path))

    def find(self, path: str) -> Member | None:
        key = normalise(path)
        for member_path, node in self.files():
            if normalise(member_path) == key:
                return Member(member_path, unpack_member(node.stored, self.filename, member_path))
        return None

    def replace(self, path: str, data: bytes) -> None:
        key = normalise(path)
        for member_path, node in self.files():
            if normalise(member_path) == key:
                node.stored = bytes(data)
                return
        raise KeyError(f"{self.filename} has no member {path!r}")


def read(data: bytes, filename: str = "<bytes>") -> U8:
    r = Reader(data, ">", filename)
    r.magic(MAGIC, "U8 magic")
    node_offset, table_size, data_offset = r.unpack("3I", "U8 header")
    reserved = r.bytes(16, "U8 header")
    table = r.sub(node_offset, table_size, "node and string tables")
    if data_offset < node_offset + table_size or data_offset > len(data):
        raise FormatError(filename, 12, f"data offset {data_offset} is inside the tables or past the end")
    r.seek(node_offset, "root node")
    root_type, _, _, count = _node(r)
    if root_type != DIRECTORY:
        raise FormatError(filename, node_offset, f"root node has type {root_type}, expected a directory")
    r.seek(node_offset, "nodes")
    r.check_count(count, NODE_SIZE, "node")
    if count * NODE_SIZE > table_size:
        raise FormatError(filename, node_offset + 8, f"{count} nodes do not fit the {table_size}-byte tables")
    strings_at = node_offset + count * NODE_SIZE
    strings = table.sub(strings_at, node_offset + table_size - strings_at, "string table")
    nodes = []
    ends = [count]  # the open directories' ends
    parents = [0]  # and their indices
    for index in range(count):
        where = r.pos
        kind, name_offset, first, second = _node(r)
        while index and index >= ends[-1]:
            ends.pop()
            parents.pop()
        if name_offset >= strings.end - strings_at:
            raise FormatError(
                filename, where, f"node {index} name offset {name_offset} is outside the strings"
            )
        name = strings.seek(strings_at + name_offset).zstring("node name")
        node = Node(kind, name_offset, first, second, name)
        if kind == DIRECTORY and index:
            if first != parents[-1]:
                raise FormatError(
                    filename, where + 4, f"directory {name} names parent {first}, not {parents[-1]}"
                )
            if not index < second <= ends[-1]:
                raise FormatError(
                    filename,
                    where + 8,
                    f"directory {name} ends at node {second}, outside {index + 1}…{ends[-1]}",
                )
            ends.append(second)
            parents.append(index)
        elif kind not in (FILE, DIRECTORY):
            raise FormatError(
                filename, where, f"node {index} has type {kind}, expected 0 (file) or 1 (directory)"
            )
        nodes.append(node)
    archive = U8(
        node_offset,
        table_size,
        data_offset,
        reserved,
        nodes,
        bytes(data[HEADER_SIZE:data_offset]),
        DataLayout([], {}, [], b"", {}),
        filename,
    )
    files = archive.files()
    archive.layout = read_layout(
        data,
        data_offset,
        len(data),
        [(node.first, node.second) for _, node in files],
        filename,
        [p for p, _ in files],
    )
    for _, node in files:
        node.stored = bytes(data[node.first : node.first + node.second])
    return archive


def _node(r: Reader) -> tuple[int, int, int, int]:
    packed, first, second = r.unpack("3I", "node")
    return packed >> 24, packed & 0xFFFFFF, first, second


def write(archive: U8) -> bytes:
    files = [node for _, node in archive.files()]
    area, offsets = write_layout(archive.layout, [node.stored for node in files], archive.data_offset)
    placed = {id(node): (offset, len(node.stored)) for node, offset in zip(files, offsets, strict=True)}
    region = bytearray(archive.table_region)
    for index, node in enumerate(archive.nodes):
        first, second = placed.get(id(node), (node.first, node.second))
        at = archive.node_offset - HEADER_SIZE + index * NODE_SIZE
        struct.pack_into(">3I", region, at, node.type << 24 | node.name_offset, first, second)
    header = MAGIC + struct.pack(">3I", archive.node_offset, archive.table_size, archive.data_offset)
    return header + archive.reserved + bytes(region) + area


def build(files: Mapping[str, bytes], top: str | None = ".") -> bytes:
    """A U8 archive holding ``files`` ("/"-separated paths), under a ``top`` directory ('.' as
    the game's archives usually have, None for none); names sorted case-insensitively."""
    tree: dict = {}
    for path, data in files.items():
        *folders, leaf = [part for part in path.split("/") if part]
        where = tree
        for folder in folders:
            where = where.setdefault(folder, {})
        where[leaf] = bytes(data)
    if top is not None:
        tree = {top: tree}
    strings = bytearray(b"\0")
    rows: list[list] = [[DIRECTORY, 0, 0, 0, None]]  # type, name offset, first, second, data

    def add(folder: dict, parent: int) -> None:
        for name in sorted(folder, key=str.lower):
            name_offset = len(strings)
            strings.extend(name.encode("ascii") + b"\0")
            if isinstance(folder[name], dict):
                index = len(rows)
                rows.append([DIRECTORY, name_offset, parent, 0, None])
                add(folder[name], index)
                rows[index][3] = len(rows)
            else:
                rows.append([FILE, name_offset, 0, len(folder[name]), folder[name]])

    add(tree, 0)
    rows[0][3] = len(rows)
    table_size = len(rows) * NODE_SIZE + len(strings)
    data_offset = -(-(HEADER_SIZE + table_size) // ALIGN) * ALIGN
    area = bytearray()
    for row in rows:
        if row[0] == FILE:
            row[2] = data_offset + len(area)
            area += row[4] + bytes(-len(row[4]) % ALIGN)
    out = bytearray(MAGIC + struct.pack(">3I", HEADER_SIZE, table_size, data_offset) + RESERVED)
    for kind, name_offset, first, second, _ in rows:
        out += struct.pack(">3I", kind << 24 | name_offset, first, second)
    out += strings
    out += bytes(data_offset - len(out))
    return bytes(out + area)
