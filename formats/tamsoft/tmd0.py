"""Tamsoft "tmd0" models, version 0x0100, in either byte order.

Layout (all offsets relative to the magic; the u16 at +12 is the header size
0x28 in the file's byte order, which tells little-endian PC/Vita files from
big-endian PS3/360 ones):

- Header, 0xA0 bytes: magic, u16 0, u16 vertex flags, u16 unknown, u16 version,
  u16 header size, i16 frame count, bounding box (min xyz, max xyz), then
  (offset, count) for the draw list, operations, an unknown table, rigs,
  materials, polygroups and faces, (count, offset) for vertices, seven
  attribute pointers (normal, uv0, uv1, uv2, colour, weights, bone ids),
  (offset, count) for bones, hierarchy and textures, and a u32 terminator.
- Draw list: 32-byte entries (box, first operation, operation count, type).
  Operations are (value, type) byte pairs: 0x20 material, 0x40 rig, 0x30 draw
  polygroup, 0x10 end of batch.
- Rigs: bone palettes (count, 32 skeleton bone indices). Materials: 200 bytes
  (slot count, five texture slots, a tail kept verbatim). Polygroups: triangle
  count, unknown u16, first triangle. Faces: u16 triangles.
- Vertices: flag 0x40 set → one interleaved record per vertex and the
  attribute pointers point into the last vertex; clear → 12-byte positions and
  one stream per attribute at its pointer.
- Bones: 4×4 f32 inverse bind matrices (row-vector layout, translation in
  floats 12..14). Hierarchy: name hash, parent-relative head, parent, unknown
  u16, name offset. Textures: index, u32, u16, width, height, flags.

The reader records where each table was and the bytes between tables
(``Layout``), so an unmodified model is written back byte for byte; when a
table changes size the writer lays the file out afresh (tables in header
order, 16-byte aligned, the unknown table last).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Reader, Writer, with_endian
from ..errors import FormatError

MAGICS = (b"tmd0", b"0dmt")  # as written by little- and big-endian tools of the engine
VERSION = 0x0100
HEADER_FIELD_SIZE = 0x28
HEADER_SIZE = 0xA0
ALIGN = 16
MAX_PALETTE = 32
MATERIAL_SLOTS = 5
UNSUPPORTED_VERSIONS = {
    0x0201: "64-bit offsets",
    0x0209: "compressed TMD2 variant",
}

# Vertex flags (u16 at +6).
POSITION = 0x0001
NORMAL = 0x0002
UV0, UV1, UV2 = 0x0004, 0x0008, 0x0010
COLOUR = 0x0020
INTERLEAVED = 0x0040
SKIN = 0x0800
ATTRIBUTE_FLAGS = NORMAL | UV0 | UV1 | UV2 | COLOUR | SKIN

# Operation types.
OP_END = 0x10
OP_MATERIAL = 0x20
OP_DRAW = 0x30
OP_RIG = 0x40

# Attribute → (record dtype, flag, index of its pointer in the header), in interleaved order.
ATTRIBUTES: dict[str, tuple[tuple, int, int]] = {
    "weights": (("u1", (4,)), SKIN, 5),
    "bone_ids": (("u1", (4,)), SKIN, 6),
    "normal": (("u1", (4,)), NORMAL, 0),
    "colour": (("u1", (4,)), COLOUR, 4),
    "uv0": (("<i2", (2,)), UV0, 1),
    "uv1": (("<i2", (2,)), UV1, 2),
    "uv2": (("<i2", (2,)), UV2, 3),
}
POINTER_COUNT = 7

BVH_DTYPE = np.dtype([("bounds", "<f4", (6,)), ("first", "<u4"), ("count", "<u2"), ("type", "<u2")])
OPERATION_DTYPE = np.dtype([("value", "u1"), ("type", "u1")])
RIG_DTYPE = np.dtype([("count", "<i4"), ("bones", "<i4", (MAX_PALETTE,))])
SLOT_DTYPE = np.dtype([("type", "<u4"), ("texture", "<i4"), ("params", "<f4", (4,))])
MATERIAL_DTYPE = np.dtype([("slot_count", "<u4"), ("slots", SLOT_DTYPE, (MATERIAL_SLOTS,)), ("tail", "V76")])
POLYGROUP_DTYPE = np.dtype([("count", "<u2"), ("unknown", "<u2"), ("first", "<u4")])
FACE_DTYPE = np.dtype(("<u2", (3,)))
BONE_DTYPE = np.dtype(("<f4", (4, 4)))
HIERARCHY_DTYPE = np.dtype(
    [
        ("hash", "<u4"),
        ("position", "<f4", (3,)),
        ("parent", "<i4"),
        ("unknown", "<u2"),
        ("name_offset", "<u2"),
    ]
)
TEXTURE_DTYPE = np.dtype(
    [
        ("index", "<u4"),
        ("unknown", "<u4"),
        ("one", "<u2"),
        ("width", "<u2"),
        ("height", "<u2"),
        ("flags", "<u2"),
    ]
)
assert BVH_DTYPE.itemsize == 32 and RIG_DTYPE.itemsize == 132 and MATERIAL_DTYPE.itemsize == 200
assert POLYGROUP_DTYPE.itemsize == 8 and HIERARCHY_DTYPE.itemsize == 24 and TEXTURE_DTYPE.itemsize == 16

# Header tables in the order of their header fields (vertices are special: count first).
TABLES: dict[str, np.dtype | None] = {
    "draw_list": BVH_DTYPE,
    "operations": OPERATION_DTYPE,
    "unknown": None,  # record size unknown: its bytes run to the next table
    "rigs": RIG_DTYPE,
    "materials": MATERIAL_DTYPE,
    "polygroups": POLYGROUP_DTYPE,
    "faces": FACE_DTYPE,
    "vertices": None,
    "bones": BONE_DTYPE,
    "hierarchy": HIERARCHY_DTYPE,
    "textures": TEXTURE_DTYPE,
}


def vertex_dtype(flags: int) -> np.dtype:
    """The interleaved vertex record for ``flags`` (position first, then the present attributes)."""
    fields = [("position", "<f4", (3,))]
    fields += [(name, *spec) for name, (spec, flag, _) in ATTRIBUTES.items() if flags & flag]
    return np.dtype(fields)


@dataclass
class Layout:
    """Where the tables of a file were, so that an unmodified model is written back as it was."""

    size: int
    tables: dict[str, tuple[int, int]]  # table or "stream_<attribute>" → (offset, byte size)
    pointers: tuple[int, ...]  # the seven attribute pointers as stored
    gaps: list[tuple[int, bytes]]  # bytes outside the header and the tables
    base: int = field(default=0, compare=False)  # where the model starts in its file (a CAT payload's offset)

    def place(self, table: str, index: int = 0, size: int = 0) -> int:
        """File offset of record ``index`` (``size`` bytes each) of ``table``."""
        return self.base + self.tables[table][0] + index * size


@dataclass
class TMD0:
    endian: str = "<"
    magic: bytes = b"tmd0"
    reserved: int = 0  # u16 at +4
    flags: int = POSITION | INTERLEAVED
    unknown: int = 0x20  # u16 at +8
    frame_count: int = 0
    bounds: np.ndarray = field(default_factory=lambda: np.zeros(6, np.float32))  # min xyz, max xyz
    draw_list: np.ndarray = field(default_factory=lambda: np.zeros(0, BVH_DTYPE))
    operations: np.ndarray = field(default_factory=lambda: np.zeros(0, OPERATION_DTYPE))
    unknown_count: int = 0
    unknown_block: bytes = b""
    rigs: np.ndarray = field(default_factory=lambda: np.zeros(0, RIG_DTYPE))
    materials: np.ndarray = field(default_factory=lambda: np.zeros(0, MATERIAL_DTYPE))
    polygroups: np.ndarray = field(default_factory=lambda: np.zeros(0, POLYGROUP_DTYPE))
    faces: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.uint16))
    vertices: np.ndarray = field(default_factory=lambda: np.zeros(0, vertex_dtype(POSITION)))
    bones: np.ndarray = field(default_factory=lambda: np.zeros((0, 4, 4), np.float32))  # as stored
    hierarchy: np.ndarray = field(default_factory=lambda: np.zeros(0, HIERARCHY_DTYPE))
    textures: np.ndarray = field(default_factory=lambda: np.zeros(0, TEXTURE_DTYPE))
    terminator: int = 0
    layout: Layout | None = None

    @property
    def interleaved(self) -> bool:
        return bool(self.flags & INTERLEAVED)

    @property
    def inverse_binds(self) -> np.ndarray:
        """(B, 4, 4) inverse bind matrices in column-vector form (translation in [:3, 3])."""
        return self.bones.astype(np.float64).transpose(0, 2, 1)

    def __eq__(self, other) -> bool:
        if not isinstance(other, TMD0):
            return NotImplemented
        return all(_same(getattr(self, name), getattr(other, name)) for name in self.__dataclass_fields__)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return a == b


# -- reading --------------------------------------------------------------------


def detect_endian(data: bytes, filename: str = "<bytes>") -> str:
    """The byte order told by the header-size field at +12."""
    if len(data) < 14:
        raise FormatError(filename, len(data), "expected a tmd0 header (14 bytes at least)")
    if data[:4] not in MAGICS:
        raise FormatError(filename, 0, f"expected the magic b'tmd0', found {data[:4]!r}")
    for endian in ("<", ">"):
        if int.from_bytes(data[12:14], "little" if endian == "<" else "big") == HEADER_FIELD_SIZE:
            return endian
    raise FormatError(
        filename, 12, f"expected the header size 0x28 in either byte order, found {data[12:14].hex()}"
    )


def check_version(version: int, filename: str) -> None:
    if version == VERSION:
        return
    known = UNSUPPORTED_VERSIONS.get(version)
    detail = f" ({known})" if known else ""
    raise FormatError(filename, 10, f"tmd0 version 0x{version:04X}{detail} is not supported; only 0x0100 is")


def read(data: bytes, filename: str = "<bytes>", base: int = 0) -> TMD0:
    """The model in ``data``; ``base``: where ``data`` starts in ``filename`` (a payload of a CAT), so
    that the offsets of errors and of ``Layout.place`` count from the start of that file."""
    try:
        model = _read(bytes(data), filename)
    except FormatError as e:
        if not base:
            raise
        raise FormatError(filename, base + e.offset, e.problem) from e
    model.layout.base = base
    return model


def _read(data: bytes, filename: str) -> TMD0:
    endian = detect_endian(data, filename)
    r = Reader(data, endian, filename, 4)
    reserved, flags, unknown, version, _header_size, frame_count = r.unpack("5Hh", "header fields")
    check_version(version, filename)
    r.need(HEADER_SIZE - r.pos, "the rest of the 160-byte header")
    bounds = r.array("<f4", 6, "bounding box")
    places: dict[str, tuple[int, int]] = {}  # table → (offset, count)
    for name in ("draw_list", "operations", "unknown", "rigs", "materials", "polygroups", "faces"):
        places[name] = r.unpack("2I", f"{name} range")
    vertex_count, vertex_offset = r.unpack("2I", "vertex range")
    places["vertices"] = (vertex_offset, vertex_count)
    pointers = r.unpack(f"{POINTER_COUNT}I", "attribute pointers")
    for name in ("bones", "hierarchy", "textures"):
        places[name] = r.unpack("2I", f"{name} range")
    (terminator,) = r.unpack("I", "header terminator")

    model = TMD0(endian, data[:4], reserved, flags, unknown, frame_count, bounds)
    model.terminator = terminator
    spans: dict[str, tuple[int, int]] = {}  # table → (offset, byte size) of what was read

    def table(name: str, what: str) -> np.ndarray:
        offset, count = places[name]
        dtype = TABLES[name]
        if count == 0:
            return np.zeros(0, dtype)
        out = r.seek(offset, what).array(dtype, count, what)
        spans[name] = (offset, count * dtype.itemsize)
        return out

    model.draw_list = table("draw_list", "draw list entries")
    model.operations = table("operations", "operations")
    model.rigs = table("rigs", "rigs")
    model.materials = table("materials", "materials")
    model.polygroups = table("polygroups", "polygroups")
    model.faces = table("faces", "faces").reshape(-1, 3)
    model.bones = table("bones", "bone matrices").reshape(-1, 4, 4)
    model.hierarchy = table("hierarchy", "bone hierarchy")
    model.textures = table("textures", "textures")
    model.vertices = _read_vertices(r, flags, vertex_offset, vertex_count, pointers, spans)

    unknown_offset, model.unknown_count = places["unknown"]
    if model.unknown_count:
        # Its record size is unknown: keep everything up to the next table.
        if unknown_offset < HEADER_SIZE or unknown_offset > len(data):
            raise r.error("unknown table starts outside the file", unknown_offset)
        end = min([o for o, s in spans.values() if o >= unknown_offset and s] + [len(data)])
        model.unknown_block = data[unknown_offset:end]
        spans["unknown"] = (unknown_offset, end - unknown_offset)

    model.layout = _layout(data, filename, places, pointers, spans)
    _validate(model, filename, {name: offset for name, (offset, _) in model.layout.tables.items()})
    return model


def _read_vertices(r: Reader, flags: int, offset: int, count: int, pointers, spans) -> np.ndarray:
    dtype = vertex_dtype(flags)
    if count == 0:
        return np.zeros(0, dtype)
    if flags & INTERLEAVED:
        out = r.seek(offset, "vertices").array(dtype, count, "vertices")
        spans["vertices"] = (offset, count * dtype.itemsize)
        return out
    positions = r.seek(offset, "vertex positions").array(("<f4", (3,)), count, "vertex positions")
    out = np.zeros(count, dtype)  # after the positions: their count is checked against the file
    out["position"] = positions
    spans["vertices"] = (offset, count * 12)
    for name in dtype.names[1:]:
        spec, _, index = ATTRIBUTES[name]
        stream = r.seek(pointers[index], f"{name} stream").array(spec, count, f"{name} stream")
        out[name] = stream
        spans[f"stream_{name}"] = (pointers[index], stream.nbytes)
    return out


def _layout(data: bytes, filename: str, places, pointers, spans) -> Layout:
    used = sorted((offset, offset + size, name) for name, (offset, size) in spans.items())
    gaps = []
    cursor, previous = HEADER_SIZE, "the header"
    for start, end, name in used:
        if start < cursor:
            raise FormatError(filename, start, f"{name} overlaps {previous}")
        if start > cursor:
            gaps.append((cursor, data[cursor:start]))
        cursor, previous = end, name
    if cursor < len(data):
        gaps.append((cursor, data[cursor:]))
    tables = {name: (places[name][0], 0) for name in TABLES}
    tables.update(spans)
    return Layout(len(data), tables, tuple(pointers), gaps)


def _validate(model: TMD0, filename: str, offsets: dict[str, int]) -> None:
    """Cross-references between tables: every index points at something that exists."""

    def fail(table: str, message: str) -> FormatError:
        return FormatError(filename, offsets[table], message)

    vertex_count, face_count = len(model.vertices), len(model.faces)
    if face_count and int(model.faces.max()) >= vertex_count:
        raise fail("faces", f"a face uses vertex {int(model.faces.max())} of {vertex_count}")
    groups = model.polygroups
    if len(groups) and int((groups["first"].astype(np.int64) + groups["count"]).max()) > face_count:
        raise fail("polygroups", f"a polygroup runs past the {face_count} faces")
    counts = model.rigs["count"]
    if len(counts) and (counts.min() < 0 or counts.max() > MAX_PALETTE):
        raise fail("rigs", f"a rig has a bone count outside 0..{MAX_PALETTE}")
    used = np.arange(MAX_PALETTE) < counts[:, None]
    palette = model.rigs["bones"][used]
    if len(palette) and (palette.min() < 0 or palette.max() >= len(model.bones)):
        raise fail("rigs", f"a rig uses a bone outside the {len(model.bones)} bones")
    slot_counts = model.materials["slot_count"]
    if len(slot_counts) and slot_counts.max() > MATERIAL_SLOTS:
        raise fail(
            "materials", f"a material has {int(slot_counts.max())} texture slots (at most {MATERIAL_SLOTS})"
        )
    textures = model.materials["slots"]["texture"][np.arange(MATERIAL_SLOTS) < slot_counts[:, None]]
    if len(textures) and (textures.min() < -1 or textures.max() >= len(model.textures)):
        raise fail("materials", f"a material uses a texture outside the {len(model.textures)} textures")
    if len(model.draw_list) and int(model.draw_list["first"].max()) > len(model.operations):
        raise fail("draw_list", f"a draw list entry starts past the {len(model.operations)} operations")
    ops = model.operations
    for kind, limit, what in (
        (OP_MATERIAL, len(model.materials), "material"),
        (OP_DRAW, len(model.polygroups), "polygroup"),
        (OP_RIG, len(model.rigs), "rig"),
    ):
        values = ops["value"][ops["type"] == kind]
        if len(values) and int(values.max()) >= limit:
            raise fail("operations", f"an operation selects {what} {int(values.max())} of {limit}")
    parents = model.hierarchy["parent"]
    bad = (parents < -1) | (parents >= np.arange(len(parents)))
    if bad.any():
        i = int(np.argmax(bad))
        raise fail("hierarchy", f"bone {i} has parent {int(parents[i])}, which does not precede it")


# -- writing --------------------------------------------------------------------


def _tables(model: TMD0) -> dict[str, bytes]:
    """Each table's bytes in the model's byte order (streams only for separate vertex layouts)."""
    e = model.endian

    def pack(values: np.ndarray, dtype: np.dtype) -> bytes:
        base = dtype.subdtype[0] if dtype.subdtype else dtype  # plain arrays carry the shape themselves
        return np.ascontiguousarray(values, dtype=with_endian(base, e)).tobytes()

    dtype = vertex_dtype(model.flags)
    vertices = np.asarray(model.vertices)
    if vertices.dtype.names != dtype.names:
        raise ValueError(f"vertex fields {vertices.dtype.names} do not match flags 0x{model.flags:04X}")
    out = {
        "draw_list": pack(model.draw_list, BVH_DTYPE),
        "operations": pack(model.operations, OPERATION_DTYPE),
        "unknown": bytes(model.unknown_block),
        "rigs": pack(model.rigs, RIG_DTYPE),
        "materials": pack(model.materials, MATERIAL_DTYPE),
        "polygroups": pack(model.polygroups, POLYGROUP_DTYPE),
        "faces": pack(np.asarray(model.faces).reshape(-1, 3), FACE_DTYPE),
    }
    if model.interleaved:
        out["vertices"] = pack(vertices.astype(dtype), dtype)
    else:
        out["vertices"] = pack(vertices["position"], np.dtype(("<f4", (3,))))
        for name in dtype.names[1:]:
            out[f"stream_{name}"] = pack(vertices[name], np.dtype(ATTRIBUTES[name][0]))
    out["bones"] = pack(model.bones, BONE_DTYPE)
    out["hierarchy"] = pack(model.hierarchy, HIERARCHY_DTYPE)
    out["textures"] = pack(model.textures, TEXTURE_DTYPE)
    # Last in a fresh layout: the reader takes its bytes up to the next table or the end of the file.
    out["unknown"] = out.pop("unknown")
    return out


def _fits(layout: Layout | None, tables: dict[str, bytes]) -> bool:
    if layout is None:
        return False
    kept = {name for name, (_, size) in layout.tables.items() if size}
    given = {name for name, blob in tables.items() if blob}
    return kept == given and all(layout.tables[name][1] == len(tables[name]) for name in given)


def write(model: TMD0) -> bytes:
    tables = _tables(model)
    layout = model.layout
    if _fits(layout, tables):
        buf = bytearray(layout.size)
        for offset, gap in layout.gaps:
            buf[offset : offset + len(gap)] = gap
        offsets = {name: offset for name, (offset, _) in layout.tables.items()}
        pointers = layout.pointers
    else:
        buf = bytearray(HEADER_SIZE)
        offsets = {}
        for name, blob in tables.items():
            buf += bytes(-len(buf) % ALIGN)
            offsets[name] = len(buf) if blob else 0
            buf += blob
        pointers = _pointers(model, offsets)
    for name, blob in tables.items():
        buf[offsets[name] : offsets[name] + len(blob)] = blob
    buf[:HEADER_SIZE] = _header(model, offsets, pointers)
    return bytes(buf)


def _pointers(model: TMD0, offsets: dict[str, int]) -> tuple[int, ...]:
    pointers = [0] * POINTER_COUNT
    dtype = vertex_dtype(model.flags)
    count = len(model.vertices)
    for name in dtype.names[1:]:
        index = ATTRIBUTES[name][2]
        if not model.interleaved:
            pointers[index] = offsets[f"stream_{name}"]
        elif count:
            # The engine leaves each pointer at the attribute of the last vertex.
            pointers[index] = offsets["vertices"] + (count - 1) * dtype.itemsize + dtype.fields[name][1]
    return tuple(pointers)


def _header(model: TMD0, offsets: dict[str, int], pointers) -> bytes:
    w = Writer(model.endian)
    w.bytes(model.magic)
    w.pack("5Hh", model.reserved, model.flags, model.unknown, VERSION, HEADER_FIELD_SIZE, model.frame_count)
    w.array(np.asarray(model.bounds, np.float32), "<f4")
    counts = {
        "draw_list": len(model.draw_list),
        "operations": len(model.operations),
        "unknown": model.unknown_count,
        "rigs": len(model.rigs),
        "materials": len(model.materials),
        "polygroups": len(model.polygroups),
        "faces": len(model.faces),
        "bones": len(model.bones),
        "hierarchy": len(model.hierarchy),
        "textures": len(model.textures),
    }
    for name in ("draw_list", "operations", "unknown", "rigs", "materials", "polygroups", "faces"):
        w.pack("2I", offsets.get(name, 0), counts[name])
    w.pack("2I", len(model.vertices), offsets.get("vertices", 0))
    w.pack(f"{POINTER_COUNT}I", *pointers)
    for name in ("bones", "hierarchy", "textures"):
        w.pack("2I", offsets.get(name, 0), counts[name])
    w.u32(model.terminator)
    return w.getvalue()
