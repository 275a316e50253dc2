"""What a BMD/BDL model's tables mean: vertex arrays, the joint tree and its rest matrices, draw
matrices and skin weights, and each shape's display lists expanded to triangles (numpy).

- VTX1 arrays: every component type (u8, s8, u16, s16, f32) with its fixed-point shift, every
  component count, and the six colour formats (RGB565, RGB8, RGBX8, RGBA4, RGBA6, RGBA8).
- Joints: the INF1 scene graph gives parents, each shape's material and the draw order; world
  rest matrices follow the model's scaling rule (basic, SoftImage, Maya segment scale
  compensation), local = T · Rz · Ry · Rx · S.
- Draw matrices (DRW1): rigid → the joint's world matrix; weighted → Σ weight · W · inverse bind
  of the envelope (EVP1). Rigid vertices are stored joint-local, envelope vertices in model
  space; ``D · p`` places both in the bind pose.
- Shapes (SHP1): packets load up to ten matrix slots (0xFFFF keeps what the previous packet of
  the shape loaded); PNMTXIDX / 3 picks the slot of a vertex (slot 0 without it). Primitives
  (quads, triangles, strips, fans; lines and points draw no faces) become triangles in GX order
  (clockwise seen from the front).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..curves import euler_to_matrix
from ..errors import FormatError
from .model import (
    ARRAY_ATTRIBUTES,
    NODE_CLOSE,
    NODE_END,
    NODE_JOINT,
    NODE_MATERIAL,
    NODE_OPEN,
    NODE_SHAPE,
    RIGID,
    Model,
)

POS, NRM, CLR0, CLR1, NBT = 9, 10, 11, 12, 25
TEX = tuple(range(13, 21))
PNMTXIDX = 0
ATTRIBUTE_NAMES = {0: "PNMTXIDX", 9: "POS", 10: "NRM", 11: "CLR0", 12: "CLR1", 25: "NBT"}
ATTRIBUTE_NAMES.update({1 + i: f"TEX{i}MTXIDX" for i in range(8)})
ATTRIBUTE_NAMES.update({13 + i: f"TEX{i}" for i in range(8)})
COMPONENT_TYPES = ("u1", "i1", ">u2", ">i2", ">f4")
COLOR_SIZES = (2, 3, 4, 2, 3, 4)  # RGB565, RGB8, RGBX8, RGBA4, RGBA6, RGBA8
COLOR_FORMATS = ("RGB565", "RGB8", "RGBX8", "RGBA4", "RGBA6", "RGBA8")
INDEX_NONE, INDEX_DIRECT, INDEX_U8, INDEX_U16 = 0, 1, 2, 3
QUADS, QUADS2, TRIANGLES, STRIP, FAN, LINES, LINE_STRIP, POINTS = (
    0x80,
    0x88,
    0x90,
    0x98,
    0xA0,
    0xA8,
    0xB0,
    0xB8,
)
PRIMITIVES = {QUADS, QUADS2, TRIANGLES, STRIP, FAN, LINES, LINE_STRIP, POINTS}
ANGLE = np.pi / 32768.0  # radians per raw rotation step
BASIC, SOFTIMAGE, MAYA = 0, 1, 2
MAX_INFLUENCES = 16


def _components(attribute: int, count: int) -> int:
    if attribute == POS:
        return 3 if count else 2
    if attribute in (NRM, NBT):
        return 3 if count == 0 and attribute == NRM else 9
    if attribute in TEX:
        return 2 if count else 1
    raise ValueError(attribute)


def decode_array(model: Model, attribute: int, filename: str = "<bytes>") -> np.ndarray | None:
    """A VTX1 array as float32 (N, components), colours as uint8 (N, 4) RGBA; None when absent.

    N is every whole entry the stored bytes hold (alignment padding included: indices say which
    are used). Normals use the hardware's fixed point (14 bits for 16-bit, 6 for 8-bit values).
    """
    vtx1 = model.vtx1
    data = vtx1.arrays.get(attribute)
    entry = vtx1.format(attribute)
    if data is None or entry is None:
        return None
    count, kind, shift = int(entry["count"]), int(entry["type"]), int(entry["shift"])
    at = model.offsets.get(type(vtx1), 0)
    if attribute in (CLR0, CLR1):
        if kind >= len(COLOR_SIZES):
            raise FormatError(filename, at, f"VTX1 {ATTRIBUTE_NAMES[attribute]} has colour format {kind}")
        return decode_colors(data, kind)
    if kind >= len(COMPONENT_TYPES):
        raise FormatError(filename, at, f"VTX1 {ATTRIBUTE_NAMES[attribute]} has component type {kind}")
    dtype = np.dtype(COMPONENT_TYPES[kind])
    components = _components(attribute, count)
    rows = len(data) // (dtype.itemsize * components)
    values = np.frombuffer(data, dtype, rows * components).reshape(rows, components).astype(np.float32)
    shift = stored_shift(attribute, kind, shift)
    if shift:
        values *= np.float32(2.0**-shift)
    return values


def decode_colors(data: bytes, kind: int) -> np.ndarray:
    """(N, 4) uint8 RGBA from one of the six GX vertex colour formats."""
    size = COLOR_SIZES[kind]
    raw = np.frombuffer(data, np.uint8, len(data) // size * size).reshape(-1, size).astype(np.uint32)
    out = np.full((len(raw), 4), 255, np.uint32)
    if kind in (1, 2, 5):  # RGB8, RGBX8, RGBA8
        out[:, :3] = raw[:, :3]
        if kind == 5:
            out[:, 3] = raw[:, 3]
    elif kind == 0:  # RGB565
        v = raw[:, 0] << 8 | raw[:, 1]
        out[:, 0] = (v >> 11 & 31) * 255 // 31
        out[:, 1] = (v >> 5 & 63) * 255 // 63
        out[:, 2] = (v & 31) * 255 // 31
    elif kind == 3:  # RGBA4
        v = raw[:, 0] << 8 | raw[:, 1]
        out[:, :] = np.stack([v >> 12, v >> 8, v >> 4, v], axis=1) & 15
        out *= 17
    else:  # RGBA6: 24 bits
        v = raw[:, 0] << 16 | raw[:, 1] << 8 | raw[:, 2]
        out[:, :] = (np.stack([v >> 18, v >> 12, v >> 6, v], axis=1) & 63) * 255 // 63
    return out.astype(np.uint8)


def stored_shift(attribute: int, kind: int, shift: int) -> int:
    """The fixed-point shift the hardware applies (normals: 6 or 14 whatever the file says)."""
    if kind >= 4:
        return 0
    if attribute in (NRM, NBT):
        return 6 if np.dtype(COMPONENT_TYPES[kind]).itemsize == 1 else 14
    return shift


def encode_array(values: np.ndarray, attribute: int, kind: int, shift: int) -> np.ndarray | None:
    """Float values (N, components) as stored (the inverse of ``decode_array``): an (N, components)
    array of the component type, or None when a value does not fit it. Normals use the file's
    shift, as the game's tools wrote them (their length does not matter: readers normalise)."""
    dtype = np.dtype(COMPONENT_TYPES[kind])
    values = np.asarray(values, np.float64)
    if kind == 4:
        return values.astype(dtype)
    raw = np.rint(values * 2.0**shift)
    info = np.iinfo(dtype)
    if attribute in (NRM, NBT):  # files scale unit normals by their own shift (15 is common): clip ±1
        raw = np.clip(raw, info.min, info.max)
    if len(raw) and (raw.min() < info.min or raw.max() > info.max or not np.isfinite(raw).all()):
        return None
    return raw.astype(dtype)


def encode_colors(rgba: np.ndarray, kind: int) -> np.ndarray:
    """(N, 4) uint8 RGBA in one of the six GX vertex colour formats: (N, bytes) uint8, the
    inverse of ``decode_colors`` for every value it gives."""
    c = np.asarray(rgba, np.uint32)
    if kind in (1, 2, 5):  # RGB8, RGBX8, RGBA8
        out = c[:, : COLOR_SIZES[kind]].copy()
        if kind == 2:
            out[:, 3] = 0xFF
        return out.astype(np.uint8)

    def bits(values: np.ndarray, n: int) -> np.ndarray:
        top = (1 << n) - 1
        return (values * top + 127) // 255

    if kind == 0:  # RGB565
        v = bits(c[:, 0], 5) << 11 | bits(c[:, 1], 6) << 5 | bits(c[:, 2], 5)
        return np.stack([v >> 8, v & 0xFF], axis=1).astype(np.uint8)
    if kind == 3:  # RGBA4
        v = bits(c[:, 0], 4) << 12 | bits(c[:, 1], 4) << 8 | bits(c[:, 2], 4) << 4 | bits(c[:, 3], 4)
        return np.stack([v >> 8, v & 0xFF], axis=1).astype(np.uint8)
    v = bits(c[:, 0], 6) << 18 | bits(c[:, 1], 6) << 12 | bits(c[:, 2], 6) << 6 | bits(c[:, 3], 6)
    return np.stack([v >> 16, v >> 8 & 0xFF, v & 0xFF], axis=1).astype(np.uint8)


class Unsupported(Exception):
    """A well-formed feature the decoder does not handle: the importer leaves its part out with a warning."""


# -- the scene graph ----------------------------------------------------------------------


@dataclass
class Graph:
    parents: np.ndarray  # (J,) int32, -1 for the root
    shape_materials: np.ndarray  # (S,) int32 MAT3 material slot of each shape
    shape_joints: np.ndarray  # (S,) int32 the joint each shape hangs under
    shape_order: list[int]  # draw order


def read_graph(model: Model, filename: str = "<bytes>") -> Graph:
    joints, shapes = len(model.jnt1.remap), len(model.shp1.remap)
    materials = len(model.mat3.names)
    parents = np.full(joints, -2, np.int32)
    shape_materials = np.full(shapes, -1, np.int32)
    shape_joints = np.full(shapes, -1, np.int32)
    order: list[int] = []
    stack: list[tuple[int, int]] = []
    joint = material = -1
    base = model.offsets.get(type(model.inf1), 0) + 0x18
    for k, (op, index) in enumerate(model.inf1.graph.tolist()):
        at = base + 4 * k
        if op == NODE_OPEN:
            stack.append((joint, material))
        elif op == NODE_CLOSE:
            if not stack:
                raise FormatError(filename, at, "INF1 scene graph closes a level it never opened")
            joint, material = stack.pop()
        elif op == NODE_JOINT:
            if index >= joints or parents[index] != -2:
                raise FormatError(
                    filename, at, f"INF1 joint node {index}: not one of {joints} joints or seen twice"
                )
            parents[index] = stack[-1][0] if stack else -1
            joint = index
        elif op == NODE_MATERIAL:
            if index >= materials:
                raise FormatError(filename, at, f"INF1 material node {index}: the model has {materials}")
            material = index
        elif op == NODE_SHAPE:
            if index >= shapes or shape_materials[index] != -1 or material < 0:
                raise FormatError(
                    filename, at, f"INF1 shape node {index}: unknown, repeated or without a material"
                )
            shape_materials[index], shape_joints[index] = material, joint
            order.append(index)
        elif op != NODE_END:
            raise FormatError(filename, at, f"INF1 scene graph node type 0x{op:02X} is unknown")
    if (parents == -2).any() or len(order) != shapes:
        raise FormatError(filename, base, "INF1 scene graph leaves joints or shapes out")
    late = np.flatnonzero(parents >= np.arange(joints))
    if len(late):
        raise FormatError(filename, base, f"INF1 joint {int(late[0])} comes before its parent")
    return Graph(parents, shape_materials, shape_joints, order)


# -- joints and draw matrices ------------------------------------------------------------------


def joint_locals(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per joint: scale (J, 3), rotation matrix (J, 3, 3) and translation (J, 3), float64."""
    joints = model.jnt1.joints()
    scale = joints["scale"].astype(np.float64)
    rotation = euler_to_matrix(joints["rotation"].astype(np.float64) * ANGLE)
    return scale, rotation, joints["translation"].astype(np.float64)


def world_matrices(model: Model, parents: np.ndarray) -> np.ndarray:
    """(J, 4, 4) model-space rest matrices by the model's scaling rule."""
    scale, rotation, translation = joint_locals(model)
    rule = model.inf1.scaling_rule
    compensate = model.jnt1.joints()["scale_compensate"] == 1
    count = len(parents)
    world = np.tile(np.eye(4), (count, 1, 1))
    unscaled = np.tile(np.eye(4), (count, 1, 1))
    accumulated = np.ones((count, 3))
    for i in range(count):  # parents come first (read_graph checks)
        p = int(parents[i])
        if rule == SOFTIMAGE:
            parent_u = unscaled[p] if p >= 0 else np.eye(4)
            parent_a = accumulated[p] if p >= 0 else np.ones(3)
            local = np.eye(4)
            local[:3, :3] = rotation[i]
            local[:3, 3] = translation[i] * parent_a
            unscaled[i] = parent_u @ local
            accumulated[i] = parent_a * scale[i]
            world[i] = unscaled[i]
            world[i][:3, :3] = unscaled[i][:3, :3] * accumulated[i]
            continue
        local = np.eye(4)
        local[:3, :3] = rotation[i] * scale[i]
        local[:3, 3] = translation[i]
        if rule == MAYA and compensate[i] and p >= 0:
            local[:3, :3] /= scale[p][:, None]
        world[i] = (world[p] if p >= 0 else np.eye(4)) @ local
    return world


def inverse_binds(model: Model) -> np.ndarray:
    """(B, 4, 4) EVP1 inverse bind matrices."""
    binds = model.evp1.inverse_binds.astype(np.float64)
    out = np.tile(np.eye(4), (len(binds), 1, 1))
    out[:, :3, :] = binds
    return out


@dataclass
class Skin:
    joints: np.ndarray  # (D, K) int32 per draw matrix
    weights: np.ndarray  # (D, K) float32, rows sum to 1
    matrices: np.ndarray  # (D, 4, 4) bind-pose draw matrices


def draw_skin(model: Model, world: np.ndarray, filename: str = "<bytes>") -> Skin:
    """Joints, weights and bind-pose matrix of every DRW1 draw matrix."""
    drw1, evp1 = model.drw1, model.evp1
    at = model.offsets.get(type(drw1), 0)
    joints_count = len(world)
    starts = evp1.starts()
    envelope_joints = evp1.joints.astype(np.int64)
    if len(envelope_joints) and envelope_joints.max() >= joints_count:
        raise FormatError(
            filename, model.offsets.get(type(evp1), 0), "EVP1 envelope names a joint past JNT1's"
        )
    if len(envelope_joints) and envelope_joints.max() >= len(evp1.inverse_binds):
        raise FormatError(
            filename, model.offsets.get(type(evp1), 0), "EVP1 envelope joint has no inverse bind"
        )
    widths = np.where(drw1.kinds == RIGID, 1, 0).astype(np.int64)
    values = drw1.values.astype(np.int64)
    rigid = drw1.kinds == RIGID
    if (values[rigid] >= joints_count).any():
        raise FormatError(filename, at, "DRW1 rigid matrix names a joint past JNT1's")
    if (values[~rigid] >= len(evp1.counts)).any():
        raise FormatError(filename, at, "DRW1 weighted matrix names an envelope past EVP1's")
    widths[~rigid] = evp1.counts[values[~rigid]]
    k = max(int(widths.max(initial=1)), 1)
    if k > MAX_INFLUENCES:
        raise FormatError(filename, at, f"an envelope with {k} influences (at most {MAX_INFLUENCES})")
    count = len(drw1.kinds)
    joints = np.zeros((count, k), np.int32)
    weights = np.zeros((count, k), np.float32)
    joints[rigid, 0] = values[rigid]
    weights[rigid, 0] = 1.0
    binds = inverse_binds(model)
    matrices = np.zeros((count, 4, 4))
    matrices[rigid] = world[values[rigid]]
    weighted = np.flatnonzero(~rigid)
    envelope = values[weighted]
    present = np.arange(k) < evp1.counts[envelope][:, None]  # (W, k): the envelope's influences
    entry = np.where(present, np.asarray(starts, np.int64)[envelope][:, None] + np.arange(k), 0)
    joints[weighted] = np.where(present, envelope_joints[entry] if len(envelope_joints) else 0, 0)
    weights[weighted] = np.where(present, evp1.weights[entry] if len(envelope_joints) else 0, 0)
    # Each influence's world @ inverse bind, summed by weight in influence order.
    products = world[envelope_joints] @ binds[envelope_joints]
    blended = np.zeros((len(weighted), 4, 4))
    for i in range(k):
        rows = present[:, i]
        blended[rows] += (
            evp1.weights[entry[rows, i]].astype(np.float64)[:, None, None] * products[entry[rows, i]]
        )
    matrices[weighted] = blended
    return Skin(joints, weights, matrices)


# -- shapes -------------------------------------------------------------------------------


@dataclass
class ShapeGeometry:
    """One shape's vertices as the display lists send them, and its triangles (GX winding)."""

    indices: dict[int, np.ndarray]  # attribute → (N,) int64 array index per vertex sent
    draw: np.ndarray  # (N,) int64 DRW1 index per vertex sent
    triangles: np.ndarray  # (T, 3) int64 into the vertices sent, clockwise from the front
    primitives: dict[int, int] = field(default_factory=dict)  # primitive opcode → count
    packets: int = 0


def expand(kinds: np.ndarray, counts: np.ndarray, firsts: np.ndarray) -> np.ndarray:
    """Triangles (GX order, clockwise from the front) of primitives of the given opcodes, vertex
    counts and first vertex indices, in primitive order (numpy, no loop over primitives)."""
    kinds, counts, firsts = (np.asarray(x, np.int64).reshape(-1) for x in (kinds, counts, firsts))
    if (
        len(kinds)
        and (kinds == TRIANGLES).all()
        and not (counts % 3).any()
        and np.array_equal(firsts[1:], firsts[:-1] + counts[:-1])
    ):  # whole triangle lists one after another: every vertex sent, in order
        return np.arange(firsts[0], firsts[0] + counts.sum()).reshape(-1, 3)
    quads = (kinds == QUADS) | (kinds == QUADS2)
    chained = (kinds == STRIP) | (kinds == FAN)
    per = np.where(kinds == TRIANGLES, counts // 3, 0) + np.where(quads, counts // 4 * 2, 0)
    per = per + np.where(chained, np.maximum(counts - 2, 0), 0)
    primitive = np.repeat(np.arange(len(kinds)), per)
    t = np.arange(len(primitive)) - np.repeat(np.cumsum(per) - per, per)  # triangle within its primitive
    first = firsts[primitive][:, None]
    odd = (t % 2)[:, None]
    patterns = (  # each kind's corners, made only when some primitive is of that kind
        (kinds == TRIANGLES, lambda: 3 * t[:, None] + [0, 1, 2]),
        (quads, lambda: 4 * (t // 2)[:, None] + np.where(odd, [0, 2, 3], [0, 1, 2])),
        (kinds == STRIP, lambda: t[:, None] + np.hstack([0 * odd, 1 + odd, 2 - odd])),
        (kinds == FAN, lambda: np.hstack([0 * odd, t[:, None] + 1, t[:, None] + 2])),
    )
    present = [(is_kind, local) for is_kind, local in patterns if is_kind[per > 0].any()]
    if len(present) == 1:  # one kind (strips, as most models send): its corners as they are
        return present[0][1]() + first
    corners = np.zeros((len(t), 3), np.int64)
    for is_kind, local in present:
        selected = is_kind[primitive]
        corners[selected] = local()[selected]
    return corners + first


def _pattern(kind: int, n: int) -> np.ndarray:
    """Triangles (GX order) of one primitive of ``n`` vertices, as indices into it."""
    return expand([kind], [n], [0])


def decode_shape(model: Model, shape: int, filename: str = "<bytes>") -> ShapeGeometry:
    shp1 = model.shp1
    base = model.offsets.get(type(shp1), 0)
    entry = shp1.shapes()[shape]
    lists_at = model.table_offset(shp1, "lists")
    base = model.table_offset(shp1, "descriptors") + int(entry["descriptor_offset"])
    descriptors = shp1.descriptor_list(shape, filename, base)
    fields, formats = [], []
    for attribute, kind in descriptors.tolist():
        if kind == INDEX_NONE:
            continue
        if fields and attribute <= fields[-1]:
            raise FormatError(filename, base, f"SHP1 shape {shape}: attributes out of order or repeated")
        name = ATTRIBUTE_NAMES.get(attribute)
        if name is None or kind > INDEX_U16:
            raise FormatError(
                filename, base, f"SHP1 shape {shape}: attribute {attribute} with index type {kind}"
            )
        if kind == INDEX_DIRECT:
            if attribute > 8:
                raise Unsupported(f"shape {shape} sends its {name} values in the display list (direct data)")
            formats.append("u1")
        else:
            formats.append("u1" if kind == INDEX_U8 else ">u2")
        fields.append(attribute)
    dtype = np.dtype({"names": [f"a{a}" for a in fields], "formats": formats})
    stride = dtype.itemsize
    lists = shp1.lists
    # The walk finds where each primitive's vertices are (a command's length is in the command, so
    # it goes one command at a time); the vertices are then read and checked in one numpy pass.
    slots = [-1] * 10
    packet_slots, packet_starts = [], []
    kinds, counts, starts, packets = [], [], [], []  # per primitive of the packets read whole
    primitives: dict[int, int] = {}
    broken = None  # the walk's error: raised after the checks of the packets before it
    first_group, first_packet = int(entry["first_group"]), int(entry["first_packet"])
    # The shape's packets as plain ints (a numpy record's fields are slow to read one by one).
    groups = shp1.groups[first_group : first_group + int(entry["packet_count"])]
    packet_table = shp1.packets[first_packet : first_packet + int(entry["packet_count"])]
    for p, (first, count, start, size) in enumerate(
        zip(
            groups["first"].tolist(),
            groups["count"].tolist(),
            packet_table["offset"].tolist(),
            packet_table["size"].tolist(),
            strict=True,
        )
    ):
        if count > 10:
            broken = FormatError(
                filename,
                model.table_offset(shp1, "groups") + 8 * (first_group + p),
                f"SHP1 shape {shape} packet {p} loads {count} matrix slots (at most 10)",
            )
            break
        for k, loaded in enumerate(shp1.slots[first : first + count].tolist()):
            if loaded != 0xFFFF:  # 0xFFFF keeps what the slot held
                slots[k] = loaded
        if start + size > len(lists):
            broken = FormatError(
                filename,
                model.table_offset(shp1, "packets") + 8 * (first_packet + p),
                f"SHP1 shape {shape} packet {p} display list runs past its data",
            )
            break
        pos, end = start, start + size
        found = []  # (kind, vertex count, first vertex's byte)
        while pos < end:
            command = lists[pos]
            if command == 0:
                break
            kind = command & 0xF8
            if kind not in PRIMITIVES or pos + 3 > end:
                broken = FormatError(
                    filename, lists_at + pos, f"SHP1 shape {shape}: display-list command 0x{command:02X}"
                )
                break
            n = int.from_bytes(lists[pos + 1 : pos + 3], "big")
            pos += 3
            if pos + n * stride > end:
                broken = FormatError(
                    filename,
                    lists_at + pos - 2,
                    f"SHP1 shape {shape}: a primitive of {n} vertices runs past its display list",
                )
                break
            found.append((kind, n, pos))
            primitives[kind] = primitives.get(kind, 0) + 1
            pos += n * stride
        if broken is not None:
            break
        for kind, n, at in found:
            kinds.append(kind)
            counts.append(n)
            starts.append(at)
            packets.append(len(packet_starts))
        packet_slots.append(list(slots))
        packet_starts.append(start)
    counts = np.asarray(counts, np.int64)
    firsts = np.cumsum(counts) - counts  # each primitive's first vertex among those sent
    sent = int(counts.sum())
    record_at = np.arange(sent, dtype=np.int64)
    record_at *= stride
    record_at += np.repeat(np.asarray(starts, np.int64) - firsts * stride, counts)
    if stride and sent:
        # Each record from a view of every ``stride`` bytes the lists hold as one opaque item (no per-byte
        # index: gathered whole, several times faster than as rows of bytes), then read as its fields.
        records = np.ndarray((len(lists) - stride + 1,), np.dtype((np.void, stride)), lists, 0, (1,))
        block = records[record_at].view(dtype)
    else:
        block = np.zeros(sent, dtype)
    packet_of = np.repeat(np.asarray(packets, np.int64), counts)
    slot = block[f"a{PNMTXIDX}"] // 3 if PNMTXIDX in fields else np.zeros(sent, np.uint8)
    table = np.asarray(packet_slots, np.int64).reshape(-1)  # ten slots per packet
    entry_of = packet_of * 10
    entry_of += np.minimum(slot, 9)
    draw = np.take(table, entry_of)
    if sent and (slot.max() >= 10 or draw.min() < 0):
        # The first packet with a wrong vertex; a slot past 9 is checked before an empty one.
        wrong = (slot >= 10) | (draw < 0)
        p = packet_of[np.argmax(wrong)]
        problem = (
            "a vertex uses matrix slot past 9"
            if (slot[packet_of == p] >= 10).any()
            else "a vertex uses a matrix slot nothing loaded"
        )
        raise FormatError(filename, lists_at + packet_starts[p], f"SHP1 shape {shape}: {problem}")
    if broken is not None:
        raise broken
    if len(draw) and draw.max() >= len(model.drw1.kinds):
        raise FormatError(
            filename,
            model.table_offset(shp1, "slots"),
            f"SHP1 shape {shape}: a matrix slot names a draw matrix past DRW1's ({len(model.drw1.kinds)})",
        )
    indices = {a: block[f"a{a}"].astype(np.int64) for a in fields if a >= POS}
    tris = expand(kinds, counts, firsts)
    return ShapeGeometry(
        indices, draw, tris.astype(np.int64, copy=False), primitives, int(entry["packet_count"])
    )


def arrays(model: Model, filename: str = "<bytes>") -> dict[int, np.ndarray]:
    """Every present VTX1 array, decoded."""
    out = {}
    for attribute in ARRAY_ATTRIBUTES:
        values = decode_array(model, attribute, filename)
        if values is not None:
            out[attribute] = values
    return out


def check_indices(
    geometry: ShapeGeometry, decoded: dict[int, np.ndarray], shape: int, filename: str, at: int
) -> None:
    for attribute, index in geometry.indices.items():
        source = NRM if attribute == NBT else attribute
        values = decoded.get(source)
        size = 0 if values is None else len(values)
        if len(index) and index.max() >= size:
            raise FormatError(
                filename,
                at,
                f"SHP1 shape {shape}: {ATTRIBUTE_NAMES[attribute]} index {int(index.max())} is past its array ({size})",
            )
