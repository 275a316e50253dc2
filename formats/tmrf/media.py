"""The TMRF container ("TDPMedia"): string pool, resource tree, table of contents and hints.

    read(data, filename) -> MediaFile      write(MediaFile) -> bytes

Big-endian, packed. Each resource is {ident type, u32 size, u32 offset of the
first subresource (0 = none)}, its data, then its subresources. The model keeps
the string pool and definitions verbatim (strings may share pool bytes, and
unreferenced ones stay), resources as a tree in file order, and anything the
reader does not understand as bytes, so that ``write(read(b)) == b``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Reader, Writer
from ..errors import FormatError
from .resources import (
    CONTENT_TYPES,
    HINTED_TYPES,
    HINTS,
    SHADER_TYPES,
    TABLE_OF_CONTENTS,
    TEXTURE,
    TRIANGLE_MESH,
    TYPE_SYNONYMS,
    Hints,
    Opaque,
    TableOfContents,
    TrackAnimation,
)

MAGIC = b"TDPMedia"
VERSION = 1
HEADER_SIZE = 12  # resource header: type, size, first subresource offset
MAX_DEPTH = 64  # nesting deeper than this is treated as hostile
STRING_SPAN_DTYPE = np.dtype([("length", ">u4"), ("offset", ">u4")])
ENCODING = "latin-1"  # every byte is one character, so any name reads and writes back unchanged


@dataclass(eq=False)
class StringTable:
    """The pool bytes and the (length, offset) of each string, as stored.

    Decision 14: shared pool bytes stay shared and unreferenced strings stay.
    """

    pool: bytes = b""
    spans: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.uint32))
    _indexed: tuple = field(default=(None, None, {}), repr=False)  # (spans, pool, index) of ``_index``

    def __len__(self) -> int:
        return len(self.spans)

    def text(self, ident: int) -> str:
        """The string with 0-based index ``ident``."""
        length, offset = (int(v) for v in self.spans[ident])
        return self.pool[offset : offset + length].decode(ENCODING)

    def name(self, ref: int) -> str | None:
        """The string of a 1-based reference; None for 0 (no value)."""
        return None if ref == 0 else self.text(ref - 1)

    def type_name(self, ident: int) -> str:
        """A resource type's name, synonyms resolved."""
        name = self.text(ident)
        return TYPE_SYNONYMS.get(name, name)

    def texts(self) -> list[str]:
        return [self.text(i) for i in range(len(self))]

    def ident(self, text: str) -> int:
        """The 0-based index of ``text``: the first string equal to it, else a new one.

        A new string reuses pool bytes that already spell it, else extends the pool.
        """
        raw = text.encode(ENCODING)
        index = self._index()
        if raw in index:
            return index[raw]
        offset = self.pool.find(raw) if raw else 0
        if offset < 0:
            offset = len(self.pool)
            self.pool += raw
        self.spans = np.concatenate([self.spans, np.array([[len(raw), offset]], np.uint32)])
        index[raw] = len(self) - 1
        self._indexed = (self.spans, self.pool, index)
        return len(self) - 1

    def _index(self) -> dict[bytes, int]:
        """Each string's bytes → its first index, made again when the table changed other than by
        ``ident`` (looking each name up by a scan made writing a file quadratic in its names)."""
        spans, pool, index = self._indexed
        if spans is not self.spans or pool is not self.pool:
            index = {}
            for i, (length, offset) in enumerate(np.asarray(self.spans, np.int64).tolist()):
                index.setdefault(self.pool[offset : offset + length], i)
            self._indexed = (self.spans, self.pool, index)
        return index

    def ref(self, text: str | None) -> int:
        """The 1-based reference of ``text`` (0 for None), adding the string when needed."""
        return 0 if text is None else self.ident(text) + 1


@dataclass(eq=False)
class Resource:
    type: int  # ident of the type name
    content: object  # a class of resources.py, or Opaque
    children: list[Resource] = field(default_factory=list)
    tail: bytes = b""  # bytes after the content that its type does not define, kept verbatim


@dataclass(eq=False)
class MediaFile:
    strings: StringTable = field(default_factory=StringTable)
    resources: list[Resource] = field(default_factory=list)  # top level, file order
    version: int = VERSION
    warnings: list[str] = field(default_factory=list)

    def type_name(self, resource: Resource) -> str:
        return self.strings.type_name(resource.type)

    def walk(self) -> list[Resource]:
        """Every resource in file order (a parent before its subresources)."""
        out: list[Resource] = []
        stack = list(reversed(self.resources))
        while stack:
            resource = stack.pop()
            out.append(resource)
            stack.extend(reversed(resource.children))
        return out

    def tocs(self) -> list[TableOfContents]:
        return [r.content for r in self.walk() if isinstance(r.content, TableOfContents)]

    def names(self) -> dict[int, tuple[str | None, str | None]]:
        """Resource index (file order) → (name, DTL name) from the table of contents.

        Decision 7: a resource's name is its TOC entry's name; the first entry wins.
        """
        out: dict[int, tuple[str | None, str | None]] = {}
        for toc in self.tocs():
            for name, dtl, index in zip(toc.names, toc.dtls, toc.resources, strict=True):
                out.setdefault(int(index), (self.strings.name(int(name)), self.strings.name(int(dtl))))
        return out

    def find(self, name: str, type_name: str | None = None) -> Resource | None:
        """The first resource the TOC gives this name (and type)."""
        resources = self.walk()
        for index, (resource_name, _) in sorted(self.names().items()):
            resource = resources[index]
            if resource_name == name and (type_name is None or self.type_name(resource) == type_name):
                return resource
        return None


# -- reading -------------------------------------------------------------------


@dataclass
class _Node:
    header: int  # file offset of the resource header
    type: int
    data_end: int  # end of the data (start of the first subresource)
    end: int  # end of the resource with its subresources
    children: list[_Node]


def _read_tree(r: Reader, start: int, end: int, string_count: int, depth: int, what: str) -> list[_Node]:
    """Resources one after another from ``start`` until ``end``."""
    if depth > MAX_DEPTH:
        raise r.error(f"resources nested deeper than {MAX_DEPTH} levels", start)
    nodes = []
    pos = start
    while pos < end:
        r.seek(pos, "resource")
        header = Reader(r.data, ">", r.filename, pos, end)
        type_ident, size, sub_offset = header.unpack("3I", f"resource header in {what}")
        if type_ident >= string_count:
            raise r.error(f"resource type {type_ident} is not one of the {string_count} strings", pos)
        body_end = pos + HEADER_SIZE + size
        if body_end > end:
            raise r.error(f"resource of {size} bytes runs past the end of {what} at {end}", pos)
        # Decision 1: size covers data and subresources; the subresource offset
        # counts from the first byte of the resource header.
        if sub_offset == 0:
            data_end, children = body_end, []
        elif HEADER_SIZE <= sub_offset < HEADER_SIZE + size:
            data_end = pos + sub_offset
            children = _read_tree(r, data_end, body_end, string_count, depth + 1, f"the resource at {pos}")
        else:
            raise r.error(
                f"first subresource offset {sub_offset} is outside the resource's {size} bytes of data",
                pos + 8,
            )
        nodes.append(_Node(pos, type_ident, data_end, body_end, children))
        pos = body_end
    return nodes


def _count_owner(type_name: str, parents: list[tuple[str, object]]) -> object:
    """The content that gives a subresource its place and counts (decision 2): None for types
    that need no owner, False when the resource is not where the spec places it."""
    _, parent_types = CONTENT_TYPES[type_name]
    if parent_types is None:
        return None
    if not parents or parents[-1][0] not in parent_types:
        return False
    if parents[-1][0] == TEXTURE:
        # Texture subresources take the vertex count of the mesh above the texture.
        return parents[-2][1] if len(parents) > 1 and parents[-2][0] == TRIANGLE_MESH else False
    return parents[-1][1]


class _Parser:
    def __init__(self, data: bytes, filename: str, strings: StringTable, warnings: list[str]):
        self.data, self.filename, self.strings, self.warnings = data, filename, strings, warnings

    def resources(self, nodes: list[_Node], parents: list[tuple[str, object]]) -> list[Resource]:
        out = []
        for node in nodes:
            type_name = self.strings.type_name(node.type)
            r = Reader(self.data, ">", self.filename, node.header + HEADER_SIZE, node.data_end)
            content = self.content(type_name, r, parents, node.header)
            tail = r.bytes(r.remaining, "resource data")
            if tail:
                self.warnings.append(
                    f"{type_name} at {node.header}: {len(tail)} bytes after its data are kept as they are"
                )
            children = self.resources(node.children, [*parents, (type_name, content)])
            out.append(Resource(node.type, content, children, tail))
        return out

    def content(self, type_name: str, r: Reader, parents: list[tuple[str, object]], offset: int) -> object:
        if type_name in SHADER_TYPES:
            return Opaque.read(r, None)  # decision 4
        if type_name not in CONTENT_TYPES:
            self.warnings.append(
                f"unknown resource type {type_name!r} at {offset} is kept as bytes"
            )  # decision 5
            return Opaque.read(r, None)
        owner = _count_owner(type_name, parents)
        if owner is False:
            self.warnings.append(
                f"{type_name} at {offset} is not under the resource that gives its count; kept as bytes"
            )
            return Opaque.read(r, None)
        content = CONTENT_TYPES[type_name][0].read(r, owner)
        self.check_strings(content, r, offset)
        return content

    def check_strings(self, content: object, r: Reader, offset: int) -> None:
        """Every string (1-based) and ident (0-based) field must name a defined string."""
        count = len(self.strings)
        refs, idents = _string_fields(content)
        for what, values in refs:
            values = np.asarray(values, np.int64)
            if values.size and int(values.max()) > count:
                raise r.error(f"{what} refers to string {int(values.max())} of {count}", offset)
        for what, values in idents:
            values = np.asarray(values, np.int64)
            if values.size and int(values.max()) >= count:
                raise r.error(f"{what} refers to string index {int(values.max())} of {count}", offset)


def _string_fields(content: object) -> tuple[list[tuple[str, object]], list[tuple[str, object]]]:
    """(1-based string fields, 0-based ident fields) of a content, each as (what, values)."""
    from . import resources as res

    if isinstance(content, res.TableOfContents):
        return [("TOC name", content.names), ("TOC DTL name", content.dtls)], [("TOC type", content.types)]
    if isinstance(content, res.Hints):
        return [], [("hint type", content.types), ("hint data type", content.data_types)]
    if isinstance(content, res.Skeleton):
        return [("bone name", content.bones["name"])], []
    if isinstance(content, res.SkeletalDeform):
        return [("skeleton name", [content.skeleton]), ("bone binding", content.bindings)], []
    if isinstance(content, res.FrameAnimation):
        return [("skeleton name", [content.skeleton]), ("bone name", [b.bone for b in content.bones])], []
    if isinstance(content, res.TrackAnimation):
        names = [content.name, content.skeleton]
        return [("animation or skeleton name", names), ("bone binding", content.bindings)], []
    if isinstance(content, res.TriangleMesh):
        return [("point list name", [content.point_list])], []
    if isinstance(content, res.Texture):
        return [("texture name", [content.texture])], []
    return [], []


def _resolve_toc(model: MediaFile, headers: np.ndarray, filename: str, toc_offsets: list[int]) -> None:
    """Decision 8: turn TOC byte offsets into resource indices; each must point at a resource header."""
    for toc, toc_offset in zip(model.tocs(), toc_offsets, strict=True):
        index = np.searchsorted(headers, toc.offsets)
        found = index < len(headers)
        found[found] = headers[index[found]] == toc.offsets[found]
        if not found.all():
            bad = int(np.argmin(found))
            raise FormatError(
                filename,
                toc_offset + HEADER_SIZE + 4 + 16 * bad + 12,
                f"TOC entry {bad} points at {int(toc.offsets[bad])}, which is not a resource header",
            )
        toc.resources = index.astype(np.int64)
        toc.offsets = None


def read(data: bytes, filename: str = "<bytes>") -> MediaFile:
    r = Reader(data, ">", filename)
    r.magic(MAGIC, "TMRF magic")
    version, pool_size, string_count = r.unpack("3I", "file header")
    warnings = [] if version == VERSION else [f"version {version}; this reader knows version {VERSION}"]
    pool = r.bytes(pool_size, "string pool")
    pool_start = r.pos - pool_size
    spans = r.array(STRING_SPAN_DTYPE, string_count, "string definitions")
    ends = spans["offset"].astype(np.int64) + spans["length"]
    if len(spans) and int(ends.max()) > pool_size:
        bad = int(np.argmax(ends > pool_size))
        raise r.error(
            f"string {bad} ({int(spans['length'][bad])} bytes at {int(spans['offset'][bad])}) "
            f"runs past the {pool_size}-byte pool",
            pool_start + pool_size + 8 * bad,
        )
    strings = StringTable(pool, np.stack([spans["length"], spans["offset"]], axis=-1).astype(np.uint32))
    resources_start = r.pos
    tree = _read_tree(r, resources_start, len(data), string_count, 0, "the file")
    if not tree or strings.type_name(tree[0].type) != TABLE_OF_CONTENTS:
        # The spec: "The table of contents is the first resource in any TMRF file."
        raise r.error("expected the table of contents as the first resource", resources_start)
    model = MediaFile(strings, [], version, warnings)
    model.resources = _Parser(data, filename, strings, warnings).resources(tree, [])

    nodes: list[_Node] = []
    stack = list(reversed(tree))
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(reversed(node.children))
    resources = model.walk()
    toc_offsets = [
        n.header for n, res in zip(nodes, resources, strict=True) if isinstance(res.content, TableOfContents)
    ]
    _resolve_toc(model, np.array([n.header for n in nodes], np.int64), filename, toc_offsets)
    _check_bindings(model, nodes, filename)
    _check_key_times(model)
    _check_hints(model)
    return model


def _check_bindings(model: MediaFile, nodes: list[_Node], filename: str) -> None:
    """By-name references (decision 7): mesh vertices must pick points that exist."""
    from .resources import POINTS, TriangleMesh

    for node, resource in zip(nodes, model.walk(), strict=True):
        content = resource.content
        if not isinstance(content, TriangleMesh) or not len(content.vertex_points):
            continue
        name = model.strings.name(content.point_list)
        points = model.find(name, POINTS) if name is not None else None
        if points is None:
            model.warnings.append(f"triangle mesh at {node.header}: no point list named {name!r}")
        elif int(content.vertex_points.max()) >= len(points.content.points):
            raise FormatError(
                filename,
                node.header + HEADER_SIZE + 12,
                f"a vertex uses point {int(content.vertex_points.max())} of the "
                f"{len(points.content.points)} in point list {name!r}",
            )


def _check_key_times(model: MediaFile) -> None:
    """The spec: each key of a track must be after the previous one."""
    for resource in model.walk():
        content = resource.content
        if isinstance(content, TrackAnimation):
            for j, track in enumerate(content.tracks):
                if len(track) > 1 and not (np.diff(track["time"]) > 0).all():
                    model.warnings.append(
                        f"track {j} of animation {model.strings.name(content.name)!r}: keys out of order"
                    )


# -- hints -----------------------------------------------------------------------


def computed_hints(model: MediaFile) -> dict[int, dict[tuple[str, str], int]]:
    """For each Hints resource (file-order index): (resource type, data type) → total.

    A resource adds to the hints of the DTL its TOC entry binds it to (decision 7:
    the DTL is named by its own TOC entry).
    """
    resources = model.walk()
    names = model.names()
    dtl_index = {
        names[i][0]: i for i, res in enumerate(resources) if isinstance(res.content, Hints) and i in names
    }
    totals: dict[int, dict[tuple[str, str], int]] = {
        i: {} for i, res in enumerate(resources) if isinstance(res.content, Hints)
    }
    for i, resource in enumerate(resources):
        type_name = model.type_name(resource)
        dtl = names.get(i, (None, None))[1]
        if type_name not in HINTED_TYPES or isinstance(resource.content, Opaque) or dtl not in dtl_index:
            continue
        bucket = totals[dtl_index[dtl]]
        for data_type, count in resource.content.hint_counts():
            bucket[(type_name, data_type)] = bucket.get((type_name, data_type), 0) + count
    return totals


def _check_hints(model: MediaFile) -> None:
    resources = model.walk()
    for index, expected in computed_hints(model).items():
        hints = resources[index].content
        seen = set()
        for type_ident, data_ident, count in zip(hints.types, hints.data_types, hints.counts, strict=True):
            key = (model.strings.text(int(type_ident)), model.strings.text(int(data_ident)))
            key = (TYPE_SYNONYMS.get(key[0], key[0]), key[1])
            seen.add(key)
            if key[1] not in HINTED_TYPES.get(key[0], ()):
                # Decision 9: a hint for data this reader does not know cannot be checked.
                model.warnings.append(f"hint {key[0]}/{key[1]} = {int(count)} cannot be checked")
            elif int(count) != expected.get(key, 0):
                model.warnings.append(
                    f"hint {key[0]}/{key[1]} says {int(count)} but the bound resources hold {expected.get(key, 0)}"
                )
        for key, count in expected.items():
            if key not in seen and count:
                model.warnings.append(f"no hint for {key[0]}/{key[1]} (the bound resources hold {count})")


def refresh_hints(model: MediaFile, skip: frozenset[int] | set[int] = frozenset()) -> None:
    """Set every Hints resource (except those whose file-order index is in ``skip``) to the
    totals of its bound resources.

    Existing entries keep their order (unknown ones their count); missing ones
    are appended in file order, with the data types in the spec's order.
    """
    resources = model.walk()
    strings = model.strings
    for index, expected in computed_hints(model).items():
        if index in skip:
            continue
        hints = resources[index].content
        types, data_types, counts = list(hints.types), list(hints.data_types), list(hints.counts)
        position = {}
        for i, (t, d) in enumerate(zip(types, data_types, strict=True)):
            key = (strings.text(int(t)), strings.text(int(d)))
            position.setdefault((TYPE_SYNONYMS.get(key[0], key[0]), key[1]), i)
        for key, i in position.items():
            if key[1] in HINTED_TYPES.get(key[0], ()):
                counts[i] = expected.get(key, 0)
        for key, count in expected.items():
            if key not in position:
                types.append(strings.ident(key[0]))
                data_types.append(strings.ident(key[1]))
                counts.append(count)
        hints.types = np.array(types, np.uint32)
        hints.data_types = np.array(data_types, np.uint32)
        hints.counts = np.array(counts, np.uint32)


# -- writing ---------------------------------------------------------------------


def write(model: MediaFile) -> bytes:
    return _write(model)[0]


def resource_spans(model: MediaFile) -> list[tuple[int, int]]:
    """(header offset, size) of every resource in file order, as ``write`` lays them out."""
    data, headers = _write(model)
    return [(h, int.from_bytes(data[h + 4 : h + 8], "big")) for h in headers]


def _write(model: MediaFile) -> tuple[bytes, list[int]]:
    w = Writer(">")
    w.bytes(MAGIC)
    w.pack("3I", model.version, len(model.strings.pool), len(model.strings))
    w.bytes(model.strings.pool)
    w.array(np.asarray(model.strings.spans, np.uint32).reshape(-1, 2), ">u4")
    headers: list[int] = []
    toc_data: list[tuple[int, TableOfContents]] = []

    def put(resource: Resource) -> None:
        start = w.pos
        headers.append(start)
        w.pack("3I", resource.type, 0, 0)
        if isinstance(resource.content, TableOfContents):
            toc_data.append((w.pos, resource.content))
        resource.content.write(w)
        w.bytes(resource.tail)
        sub_offset = w.pos - start if resource.children else 0
        for child in resource.children:
            put(child)
        w.pack_at(start + 4, "2I", w.pos - start - HEADER_SIZE, sub_offset)

    _check_depth(model)
    for resource in model.resources:
        put(resource)
    header_offsets = np.array(headers, np.int64)
    for position, toc in toc_data:
        if len(toc.resources) and (toc.resources.min() < 0 or toc.resources.max() >= len(headers)):
            raise ValueError("a TOC entry names a resource the file does not have")
        patch = Writer(">")
        toc.write(patch, header_offsets)
        w.buf[position : position + len(patch)] = patch.buf
    return w.getvalue(), headers


def _check_depth(model: MediaFile) -> None:
    """Writing recurses once per nesting level; refuse models the reader would refuse."""
    stack = [(r, 0) for r in model.resources]
    while stack:
        resource, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f"resources nested deeper than {MAX_DEPTH} levels")
        stack.extend((c, depth + 1) for c in resource.children)


# -- building --------------------------------------------------------------------


class Builder:
    """Builds a file: from scratch (the TOC first, then a Hints resource), or on top of one.

    ``finish`` fills the TOC: the kept ``entries`` (name ref, DTL ref, type, resource)
    first, then every added resource except the TOC, in file order (decision 8),
    bound to the DTL; then it computes the hints.
    """

    def __init__(self, dtl: str | None = "Hints", strings: StringTable | None = None, version: int = VERSION):
        self.model = MediaFile(strings if strings is not None else StringTable(), [], version)
        self.dtl = dtl
        self.labels: dict[int, str | None] = {}
        self.entries: list[tuple[int, int, int, Resource]] = []
        self.toc: Resource | None = self.add(TABLE_OF_CONTENTS, TableOfContents())
        if dtl is not None:
            self.add(HINTS, Hints(), dtl)

    @classmethod
    def around(
        cls,
        model: MediaFile,
        toc: Resource | None,
        dtl: str | None,
        entries: list[tuple[int, int, int, Resource]],
    ) -> Builder:
        """Add to ``model``, whose table of contents ``toc`` keeps ``entries``."""
        builder = cls.__new__(cls)
        builder.model, builder.dtl, builder.toc, builder.entries, builder.labels = (
            model,
            dtl,
            toc,
            entries,
            {},
        )
        return builder

    def add(
        self, type_name: str, content: object, name: str | None = None, parent: Resource | None = None
    ) -> Resource:
        """Append a resource to the top level, or as the last subresource of ``parent``."""
        resource = Resource(self.model.strings.ident(type_name), content)
        (parent.children if parent is not None else self.model.resources).append(resource)
        self.labels[id(resource)] = name
        return resource

    def finish(self, hints: bool = True) -> MediaFile:
        strings = self.model.strings
        resources = self.model.walk()
        if self.toc is not None:
            dtl_ref = strings.ref(self.dtl)
            entries = list(self.entries) + [
                (strings.ref(self.labels[id(r)]), 0 if isinstance(r.content, Hints) else dtl_ref, r.type, r)
                for r in resources
                if id(r) in self.labels and r is not self.toc
            ]
            index = {id(r): i for i, r in enumerate(resources)}
            toc = self.toc.content
            toc.names = np.array([e[0] for e in entries], np.uint32)
            toc.dtls = np.array([e[1] for e in entries], np.uint32)
            toc.types = np.array([e[2] for e in entries], np.uint32)
            toc.resources = np.array([index[id(e[3])] for e in entries], np.int64)
        if hints:
            refresh_hints(self.model)
        return self.model
