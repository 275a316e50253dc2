"""BMD/BDL models (``J3D2bmd3`` / ``J3D2bdl4``): every section read into tables, written back
byte for byte.

Sections, in the file's order: INF1 (flags, counts, scene graph), VTX1 (vertex formats and
arrays), EVP1 (envelopes and inverse binds), DRW1 (draw matrices), JNT1 (joints), SHP1 (shapes,
packets, display lists), MAT3 and TEX1 (``mat3.py``, ``tex1.py``), MDL3 in a BDL (kept as it
is, like any other section). Inside a section, each table is parsed into a numpy array (or kept
as bytes where its length is known only from its users: vertex arrays, descriptor lists,
display lists), and the bytes between a table's content and the next table (the padding text)
are kept with it in the section's ``Layout``, so an unedited model writes the same bytes. Every
offset is checked against its section and every count against the bytes it needs before
anything is allocated. Geometry decoding is ``model_geometry.py``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from ..binary import Reader
from ..errors import FormatError
from .container import (
    MODEL_MAGIC,
    SECTION_ALIGN,
    Framing,
    RawSection,
    aligned_padding,
    read_container,
    read_names,
    write_container,
    write_names,
)
from .mat3 import MAT3, read_mat3, write_mat3
from .tex1 import TEX1, read_tex1, write_tex1

KINDS = (b"bmd3", b"bdl4", b"bmd2")
DEFAULT_TAG = b"SVR3" + b"\xff" * 12

# -- a section's tables ------------------------------------------------------------------


@dataclass
class Layout:
    """Where a section's tables sit: their file order and the bytes after each (padding)."""

    order: list[str] = field(default_factory=list)  # present tables in file order; empty: the writer's order
    tails: dict[str, bytes] = field(default_factory=dict)  # bytes after a table up to the next (or the end)
    head: bytes = b""  # bytes between the header and the first table (or the end, without tables)
    starts: dict[str, int] = field(default_factory=dict, compare=False)  # section-relative, as read
    sizes: dict[str, int] = field(default_factory=dict, compare=False)  # bytes of each table, as read

    def alignment(self, name: str) -> int:
        """The boundary a table started on as read (a power of two, at most 32; 4 when unknown)."""
        start = self.starts.get(name)
        return 4 if start is None else min(start & -start if start else 32, 32)


def _spans(r: Reader, base: int, size: int, header: int, offsets: dict[str, int], tag: str):
    """(start, end) of every present table (offset ≠ 0), section-relative, in file order."""
    present = sorted((offset, i, name) for i, (name, offset) in enumerate(offsets.items()) if offset)
    spans: dict[str, tuple[int, int]] = {}
    for k, (start, _, name) in enumerate(present):
        if not header <= start <= size:
            raise r.error(f"{tag} {name} offset {start} is outside the section ({size} bytes)", base + 8)
        end = present[k + 1][0] if k + 1 < len(present) else size
        spans[name] = (start, end)
    return spans, [name for _, _, name in present]


class _Tables:
    """Reads the tables of one section: each from its span, the rest of the span kept as its tail."""

    def __init__(self, r: Reader, base: int, size: int, header: int, offsets: dict[str, int], tag: str):
        self.r, self.base, self.size, self.tag = r, base, size, tag
        self.spans, order = _spans(r, base, size, header, offsets, tag)
        first = self.spans[order[0]][0] if order else size
        starts = {name: span[0] for name, span in self.spans.items()}
        self.layout = Layout(order, {}, r.data[base + header : base + first], starts)

    def has(self, name: str) -> bool:
        return name in self.spans

    def reader(self, name: str) -> Reader:
        start, end = self.spans[name]
        return self.r.sub(self.base + start, end - start, f"{self.tag} {name}")

    def offset(self, name: str) -> int:
        return self.base + self.spans[name][0]

    def done(self, name: str, used: int) -> None:
        start, end = self.spans[name]
        if used > end - start:
            raise self.r.error(
                f"{self.tag} {name} needs {used} bytes but the next table starts after {end - start}",
                self.base + start,
            )
        self.layout.sizes[name] = used
        self.layout.tails[name] = self.r.data[self.base + start + used : self.base + end]

    def array(self, name: str, dtype, count: int, limit: int | None = None) -> np.ndarray:
        if not self.has(name):
            if count:
                raise self.r.error(f"{self.tag} expected a {name} table for {count} entries", self.base + 8)
            return np.zeros(0, dtype)
        out = self.reader(name).array(dtype, count, f"{self.tag} {name}", limit)
        self.done(name, out.nbytes)
        return out

    def raw(self, name: str) -> bytes:
        """A table whose length only its users know: all of its span."""
        if not self.has(name):
            return b""
        start, end = self.spans[name]
        self.layout.tails[name] = b""
        self.layout.sizes[name] = end - start
        return self.r.data[self.base + start : self.base + end]

    def names(self, name: str, count: int) -> list[str]:
        if not self.has(name):
            return []
        names, used = read_names(self.r, self.offset(name), f"{self.tag} name table")
        if len(names) != count:
            raise self.r.error(
                f"{self.tag} name table expected {count} names, found {len(names)}", self.offset(name)
            )
        self.done(name, used)
        return names


class _Assembler:
    """Lays a section out again: header, then the tables in order, each followed by its tail."""

    def __init__(
        self, header: int, layout: Layout, names: tuple[str, ...], boundaries: dict[str, int] | None = None
    ):
        """``boundaries``: tables the hardware needs on a wider boundary than 4 (display lists: 32)."""
        self.header, self.layout = header, layout
        self.boundaries = boundaries or {}
        self.body = bytearray(header) + layout.head
        self.offsets = dict.fromkeys(names, 0)
        self.order = layout.order or list(names)

    def put(self, tables: dict[str, bytes | None]) -> None:
        """Tables in the layout's order; a new section leaves out its empty tables (offset 0).

        A table keeps the bytes that followed it only where it starts and ends as it was read;
        an edited one is padded to the boundary the next table started on.
        """
        present = [name for name in self.order if self._present(tables.get(name))]
        for k, name in enumerate(present):
            data = tables[name]
            start = len(self.body)
            self.offsets[name] = start
            self.body += data
            tail = self.layout.tails.get(name)
            kept = self.layout.starts.get(name, start) == start and self.layout.sizes.get(
                name, len(data)
            ) == len(data)
            if tail is None or not kept:
                following = present[k + 1] if k + 1 < len(present) else ""
                boundary = (
                    max(self.layout.alignment(following), self.boundaries.get(following, 4))
                    if following
                    else 4
                )
                tail = aligned_padding(len(self.body), boundary)
            self.body += tail

    def _present(self, data: bytes | None) -> bool:
        return data is not None and (bool(data) or bool(self.layout.order))

    def finish(self, magic: bytes, fields: bytes) -> bytes:
        self.body += aligned_padding(len(self.body), SECTION_ALIGN)
        self.body[: self.header] = magic + len(self.body).to_bytes(4, "big") + fields
        return bytes(self.body)


def _fields(fmt: str, *values) -> bytes:
    """Header fields after a section's magic and size."""
    return struct.pack(">" + fmt, *values)


def _offsets(r: Reader, names: tuple[str, ...], what: str) -> dict[str, int]:
    return dict(zip(names, r.unpack(f"{len(names)}I", what), strict=True))


# -- INF1 -------------------------------------------------------------------------------

GRAPH_DTYPE = np.dtype([("op", ">u2"), ("index", ">u2")])
NODE_END, NODE_OPEN, NODE_CLOSE, NODE_JOINT, NODE_MATERIAL, NODE_SHAPE = 0x00, 0x01, 0x02, 0x10, 0x11, 0x12
SCALING_RULES = ("basic", "SoftImage", "Maya")


@dataclass
class INF1:
    flags: int  # low nibble: the scaling rule (SCALING_RULES)
    packet_count: int  # of all SHP1 packets
    vertex_count: int  # entries of the VTX1 position array
    graph: np.ndarray  # GRAPH_DTYPE, the end node included
    marker: int = 0xFFFF
    layout: Layout = field(default_factory=Layout)

    @property
    def scaling_rule(self) -> int:
        return self.flags & 0xF


def read_inf1(r: Reader, base: int, size: int) -> INF1:
    r.seek(base + 8)
    flags, marker, packets, vertices, graph_at = r.unpack("HHIII", "INF1 header")
    t = _Tables(r, base, size, 0x18, {"graph": graph_at}, "INF1")
    if not t.has("graph"):
        raise r.error("INF1 expected a scene graph", base + 0x14)
    g = t.reader("graph")
    nodes = np.frombuffer(g.data, GRAPH_DTYPE, (g.end - g.pos) // 4, g.pos)
    ends = np.flatnonzero(nodes["op"] == NODE_END)
    if not len(ends):
        raise r.error("INF1 scene graph has no end node", t.offset("graph"))
    graph = nodes[: ends[0] + 1].copy()
    t.done("graph", graph.nbytes)
    return INF1(flags, packets, vertices, graph, marker, t.layout)


def write_inf1(s: INF1) -> bytes:
    a = _Assembler(0x18, s.layout, ("graph",))
    a.put({"graph": np.asarray(s.graph, GRAPH_DTYPE).tobytes()})
    return a.finish(
        b"INF1", _fields("HHIII", s.flags, s.marker, s.packet_count, s.vertex_count, a.offsets["graph"])
    )


# -- VTX1 -------------------------------------------------------------------------------

FORMAT_DTYPE = np.dtype(
    [("attribute", ">u4"), ("count", ">u4"), ("type", ">u4"), ("shift", "u1"), ("pad", "V3")]
)
# The thirteen array slots of the header, by GX attribute id.
ARRAY_ATTRIBUTES = (9, 10, 25, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
ARRAY_NAMES = tuple(f"array{a}" for a in ARRAY_ATTRIBUTES)
ATTRIBUTE_END = 0xFF
MAX_FORMATS = 32


@dataclass
class VTX1:
    formats: np.ndarray  # FORMAT_DTYPE, the 0xFF end entry included
    arrays: dict[int, bytes]  # GX attribute → its array as stored, alignment padding included
    layout: Layout = field(default_factory=Layout)

    def format(self, attribute: int) -> np.void | None:
        found = np.flatnonzero(self.formats["attribute"] == attribute)
        return self.formats[found[0]] if len(found) else None


def read_vtx1(r: Reader, base: int, size: int) -> VTX1:
    r.seek(base + 8)
    names = ("formats", *ARRAY_NAMES)
    t = _Tables(r, base, size, 0x40, _offsets(r, names, "VTX1 offsets"), "VTX1")
    if not t.has("formats"):
        raise r.error("VTX1 expected a vertex format list", base + 8)
    f = t.reader("formats")
    available = min((f.end - f.pos) // FORMAT_DTYPE.itemsize, MAX_FORMATS)
    entries = np.frombuffer(f.data, FORMAT_DTYPE, available, f.pos)
    ends = np.flatnonzero(entries["attribute"] == ATTRIBUTE_END)
    if not len(ends):
        raise r.error("VTX1 format list has no end entry (attribute 0xFF)", t.offset("formats"))
    formats = entries[: ends[0] + 1].copy()
    t.done("formats", formats.nbytes)
    arrays = {a: t.raw(n) for a, n in zip(ARRAY_ATTRIBUTES, ARRAY_NAMES, strict=True) if t.has(n)}
    return VTX1(formats, arrays, t.layout)


def write_vtx1(s: VTX1) -> bytes:
    names = ("formats", *ARRAY_NAMES)
    a = _Assembler(0x40, s.layout, names, dict.fromkeys(ARRAY_NAMES, 32))
    tables = {"formats": np.asarray(s.formats, FORMAT_DTYPE).tobytes()}
    for attribute, data in s.arrays.items():
        # a new array is padded to 32 bytes, as the game's arrays are
        tables[f"array{attribute}"] = data if s.layout.order else data + aligned_padding(len(data), 32)
    a.put(tables)
    return a.finish(b"VTX1", _fields(f"{len(names)}I", *(a.offsets[n] for n in names)))


# -- EVP1 -------------------------------------------------------------------------------

EVP1_TABLES = ("counts", "joints", "weights", "inverse_binds")
MATRIX_SIZE = 48


@dataclass
class EVP1:
    counts: np.ndarray  # (E,) u8 influences per envelope
    joints: np.ndarray  # (Σ counts,) u16
    weights: np.ndarray  # (Σ counts,) f32
    inverse_binds: np.ndarray  # (J, 3, 4) f32, rows of the 3×4 matrix
    marker: int = 0xFFFF
    layout: Layout = field(default_factory=Layout)

    def starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.counts.astype(np.int64))[:-1]]).astype(np.int64)


def read_evp1(r: Reader, base: int, size: int) -> EVP1:
    r.seek(base + 8)
    count, marker = r.unpack("HH", "EVP1 header")
    t = _Tables(r, base, size, 0x1C, _offsets(r, EVP1_TABLES, "EVP1 offsets"), "EVP1")
    counts = t.array("counts", "u1", count)
    total = int(counts.sum(dtype=np.int64))
    joints = t.array("joints", ">u2", total)
    weights = t.array("weights", ">f4", total)
    binds = np.zeros((0, 3, 4), ">f4")
    if t.has("inverse_binds"):
        g = t.reader("inverse_binds")
        binds = g.array(">f4", ((g.end - g.pos) // MATRIX_SIZE) * 12, "EVP1 inverse binds").reshape(-1, 3, 4)
        t.done("inverse_binds", binds.nbytes)
    return EVP1(counts, joints, weights, binds, marker, t.layout)


def write_evp1(s: EVP1) -> bytes:
    a = _Assembler(0x1C, s.layout, EVP1_TABLES)
    a.put(
        {
            "counts": np.asarray(s.counts, "u1").tobytes(),
            "joints": np.asarray(s.joints, ">u2").tobytes(),
            "weights": np.asarray(s.weights, ">f4").tobytes(),
            "inverse_binds": np.asarray(s.inverse_binds, ">f4").tobytes(),
        }
    )
    fields = _fields("HH4I", len(s.counts), s.marker, *(a.offsets[n] for n in EVP1_TABLES))
    return a.finish(b"EVP1", fields)


# -- DRW1 -------------------------------------------------------------------------------

DRW1_TABLES = ("kinds", "values")
RIGID, WEIGHTED = 0, 1


@dataclass
class DRW1:
    kinds: np.ndarray  # (D,) u8: 0 rigid (value = joint), 1 weighted (value = envelope)
    values: np.ndarray  # (D,) u16
    marker: int = 0xFFFF
    layout: Layout = field(default_factory=Layout)


def read_drw1(r: Reader, base: int, size: int) -> DRW1:
    r.seek(base + 8)
    count, marker = r.unpack("HH", "DRW1 header")
    t = _Tables(r, base, size, 0x14, _offsets(r, DRW1_TABLES, "DRW1 offsets"), "DRW1")
    kinds = t.array("kinds", "u1", count)
    values = t.array("values", ">u2", count)
    return DRW1(kinds, values, marker, t.layout)


def write_drw1(s: DRW1) -> bytes:
    a = _Assembler(0x14, s.layout, DRW1_TABLES)
    a.put({"kinds": np.asarray(s.kinds, "u1").tobytes(), "values": np.asarray(s.values, ">u2").tobytes()})
    return a.finish(b"DRW1", _fields("HH2I", len(s.kinds), s.marker, *a.offsets.values()))


# -- JNT1 -------------------------------------------------------------------------------

JOINT_DTYPE = np.dtype(
    [
        ("flags", ">u2"),  # low nibble: a flag; bits 4-7: billboard mode
        ("scale_compensate", "u1"),  # 1: Maya segment scale compensation
        ("pad", "u1"),
        ("scale", ">f4", (3,)),
        ("rotation", ">i2", (3,)),  # raw × 180/32768 degrees
        ("pad2", ">u2"),
        ("translation", ">f4", (3,)),
        ("radius", ">f4"),
        ("bbox_min", ">f4", (3,)),
        ("bbox_max", ">f4", (3,)),
    ]
)
JNT1_TABLES = ("entries", "remap", "names")


@dataclass
class JNT1:
    entries: np.ndarray  # JOINT_DTYPE, one per distinct joint record
    remap: np.ndarray  # (J,) u16: joint → its record
    names: list[str]
    marker: int = 0xFFFF
    layout: Layout = field(default_factory=Layout)

    def joints(self) -> np.ndarray:
        """One record per joint (the remap applied)."""
        return self.entries[self.remap.astype(np.int64)]


def _records(t: _Tables, remap: np.ndarray, name: str, dtype) -> np.ndarray:
    return t.array(name, dtype, int(remap.max()) + 1 if len(remap) else 0)


def read_jnt1(r: Reader, base: int, size: int) -> JNT1:
    r.seek(base + 8)
    count, marker = r.unpack("HH", "JNT1 header")
    t = _Tables(r, base, size, 0x18, _offsets(r, JNT1_TABLES, "JNT1 offsets"), "JNT1")
    remap = t.array("remap", ">u2", count)
    entries = _records(t, remap, "entries", JOINT_DTYPE)
    names = t.names("names", count)
    return JNT1(entries, remap, names, marker, t.layout)


def write_jnt1(s: JNT1) -> bytes:
    a = _Assembler(0x18, s.layout, JNT1_TABLES)
    a.put(
        {
            "entries": np.asarray(s.entries, JOINT_DTYPE).tobytes(),
            "remap": np.asarray(s.remap, ">u2").tobytes(),
            "names": write_names(s.names),
        }
    )
    return a.finish(b"JNT1", _fields("HH3I", len(s.remap), s.marker, *a.offsets.values()))


# -- SHP1 -------------------------------------------------------------------------------

SHAPE_DTYPE = np.dtype(
    [
        ("matrix_type", "u1"),  # 0 single, 1 billboard, 2 Y-billboard, 3 multi
        ("pad", "u1"),
        ("packet_count", ">u2"),
        ("descriptor_offset", ">u2"),  # into the descriptor lists
        ("first_group", ">u2"),
        ("first_packet", ">u2"),
        ("pad2", ">u2"),
        ("radius", ">f4"),
        ("bbox_min", ">f4", (3,)),
        ("bbox_max", ">f4", (3,)),
    ]
)
GROUP_DTYPE = np.dtype([("current", ">u2"), ("count", ">u2"), ("first", ">u4")])
PACKET_DTYPE = np.dtype([("size", ">u4"), ("offset", ">u4")])
SHP1_TABLES = ("entries", "remap", "names", "descriptors", "slots", "lists", "groups", "packets")
DESCRIPTOR_DTYPE = np.dtype([("attribute", ">u4"), ("type", ">u4")])
MAX_SLOTS = 10


@dataclass
class SHP1:
    entries: np.ndarray  # SHAPE_DTYPE, one per distinct shape record
    remap: np.ndarray  # (S,) u16
    names: list[str]  # usually none (no name table)
    descriptors: bytes  # the attribute descriptor lists (shapes point in by byte offset)
    slots: np.ndarray  # u16 matrix slots: DRW1 indices, 0xFFFF = keep the previous packet's
    lists: bytes  # display-list data, zero padded
    groups: np.ndarray  # GROUP_DTYPE, one per packet
    packets: np.ndarray  # PACKET_DTYPE, one per packet
    marker: int = 0xFFFF
    layout: Layout = field(default_factory=Layout)

    def shapes(self) -> np.ndarray:
        return self.entries[self.remap.astype(np.int64)]

    def descriptor_list(self, shape: int, filename: str = "<bytes>", base: int = 0) -> np.ndarray:
        """The (attribute, index type) pairs of a shape, without the end entry."""
        at = int(self.shapes()[shape]["descriptor_offset"])
        count = (len(self.descriptors) - at) // DESCRIPTOR_DTYPE.itemsize
        if at > len(self.descriptors) or count <= 0:
            raise FormatError(filename, base, f"SHP1 shape {shape} descriptor list is outside its table")
        pairs = np.frombuffer(self.descriptors, DESCRIPTOR_DTYPE, count, at)
        ends = np.flatnonzero(pairs["attribute"] == ATTRIBUTE_END)
        if not len(ends):
            raise FormatError(filename, base, f"SHP1 shape {shape} descriptor list has no end entry")
        return pairs[: ends[0]]


def read_shp1(r: Reader, base: int, size: int) -> SHP1:
    r.seek(base + 8)
    count, marker = r.unpack("HH", "SHP1 header")
    t = _Tables(r, base, size, 0x2C, _offsets(r, SHP1_TABLES, "SHP1 offsets"), "SHP1")
    remap = t.array("remap", ">u2", count)
    entries = _records(t, remap, "entries", SHAPE_DTYPE)
    names = t.names("names", count)
    descriptors = t.raw("descriptors")
    span = entries["packet_count"].astype(np.int64)
    groups = t.array("groups", GROUP_DTYPE, int((entries["first_group"] + span).max(initial=0)))
    packets = t.array("packets", PACKET_DTYPE, int((entries["first_packet"] + span).max(initial=0)))
    slot_count = int((groups["first"].astype(np.int64) + groups["count"]).max(initial=0))
    slots = t.array("slots", ">u2", slot_count)
    lists = t.raw("lists")
    return SHP1(entries, remap, names, descriptors, slots, lists, groups, packets, marker, t.layout)


def write_shp1(s: SHP1) -> bytes:
    a = _Assembler(0x2C, s.layout, SHP1_TABLES, {"lists": 32})
    a.put(
        {
            "entries": np.asarray(s.entries, SHAPE_DTYPE).tobytes(),
            "remap": np.asarray(s.remap, ">u2").tobytes(),
            "names": write_names(s.names) if s.names or "names" in s.layout.order else None,
            "descriptors": s.descriptors,
            "slots": np.asarray(s.slots, ">u2").tobytes(),
            "lists": s.lists,
            "groups": np.asarray(s.groups, GROUP_DTYPE).tobytes(),
            "packets": np.asarray(s.packets, PACKET_DTYPE).tobytes(),
        }
    )
    fields = _fields("HH8I", len(s.remap), s.marker, *a.offsets.values())
    return a.finish(b"SHP1", fields)


# -- the model ----------------------------------------------------------------------------

Section = INF1 | VTX1 | EVP1 | DRW1 | JNT1 | SHP1 | MAT3 | TEX1 | RawSection
READERS = {
    b"INF1": read_inf1,
    b"VTX1": read_vtx1,
    b"EVP1": read_evp1,
    b"DRW1": read_drw1,
    b"JNT1": read_jnt1,
    b"SHP1": read_shp1,
}
WRITERS = {
    INF1: write_inf1,
    VTX1: write_vtx1,
    EVP1: write_evp1,
    DRW1: write_drw1,
    JNT1: write_jnt1,
    SHP1: write_shp1,
    MAT3: write_mat3,
    TEX1: write_tex1,
}
REQUIRED = (INF1, VTX1, EVP1, DRW1, JNT1, SHP1, MAT3, TEX1)


@dataclass
class Model:
    kind: bytes  # b"bmd3" or b"bdl4"
    sections: list[Section]  # in file order; MDL3 and unknown sections as RawSection
    framing: Framing = field(default_factory=lambda: Framing(tag=DEFAULT_TAG))
    offsets: dict[type, int] = field(default_factory=dict, compare=False)  # section → file offset, as read

    def _get(self, kind: type):
        return next(s for s in self.sections if isinstance(s, kind))

    @property
    def inf1(self) -> INF1:
        return self._get(INF1)

    @property
    def vtx1(self) -> VTX1:
        return self._get(VTX1)

    @property
    def evp1(self) -> EVP1:
        return self._get(EVP1)

    @property
    def drw1(self) -> DRW1:
        return self._get(DRW1)

    @property
    def jnt1(self) -> JNT1:
        return self._get(JNT1)

    @property
    def shp1(self) -> SHP1:
        return self._get(SHP1)

    @property
    def mat3(self) -> MAT3:
        return self._get(MAT3)

    @property
    def tex1(self) -> TEX1:
        return self._get(TEX1)

    def table_offset(self, section, table: str) -> int:
        """File offset of a table of a section as read (the section's start when unknown)."""
        base = self.offsets.get(type(section), 0)
        return base + section.layout.starts.get(table, 0)

    def raw(self, magic: bytes) -> RawSection | None:
        return next((s for s in self.sections if isinstance(s, RawSection) and s.magic == magic), None)


def read(data: bytes, filename: str = "<bytes>") -> Model:
    container = read_container(data, filename, MODEL_MAGIC, KINDS)
    r = Reader(data, ">", filename)
    sections: list[Section] = []
    offsets: dict[type, int] = {}
    for raw in container.sections:
        base, size = raw.offset, len(raw.data)
        sub = Reader(data, ">", filename, base, base + size)
        if raw.magic in READERS:
            section = READERS[raw.magic](sub, base, size)
        elif raw.magic == b"MAT3":
            section = read_mat3(data, base, size, filename)
        elif raw.magic == b"TEX1":
            section = read_tex1(data, base, size, filename)
        else:
            section = raw
        if type(section) in offsets:
            raise r.error(f"a second {raw.magic.decode()} section", base)
        offsets[type(section)] = base
        sections.append(section)
    for kind in REQUIRED:
        if kind not in offsets:
            raise r.error(f"expected a {kind.__name__} section", 0x20)
    return Model(container.kind, sections, container.framing, offsets)


def write(model: Model) -> bytes:
    parts = [s.data if isinstance(s, RawSection) else WRITERS[type(s)](s) for s in model.sections]
    return write_container(MODEL_MAGIC, model.kind, parts, model.framing)
