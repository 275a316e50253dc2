"""TMD models ("TMDL"): skeleton nodes, animations and LOD meshes.

Layout (absolute offsets, little-endian):

- Header (124 bytes without, 128 with the auxiliary node block): magic, bytes
  remaining, the 16-byte name field of the paired keyframe library, the scene
  block size S (the LOD block starts at 60 + S, S is repeated at 60), the salt
  of the "encrypted" addresses, unknown words, node and animation counts and
  two or three addresses. An address is stored as ``offset - 60 + salt``.
- Scene blocks at those addresses: optional aux block (one int32 per node),
  nodes (176 bytes each, parents first), the animation table (one address per
  animation), animations (name, three words, duration, one channel address per
  node) and channels (flags, keys of time + TKL position index + TKL rotation
  index). Animations may share channels.
- The LOD block: per LOD its meshes, per mesh its pieces (bone palette,
  40-byte vertices, int16 triangle strips indexing the mesh's vertices).

The reader records the order of the scene blocks and any bytes between them,
so an unmodified model is written back byte for byte; a model built from
scratch gets the canonical order (aux, nodes, table, animations, channels, LOD).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Reader, Writer

MAGIC = b"TMDL"
ADDRESS_BIAS = 60
NO_AUX_ADDRESS = 0x7C  # decrypted aux address meaning "no aux block"
HEADER_SIZE_NO_AUX = 0x7C
HEADER_SIZE_AUX = 0x80
# Bytes that follow a short TKL name in shipped headers; some tools insist on them.
TKL_NAME_LEFTOVER = bytes.fromhex("4958230088000000")

NODE_DTYPE = np.dtype(
    [
        ("rotation", "<f4", (4,)),  # local rest rotation, x y z w
        ("bind", "<f4", (16,)),  # world bind matrix, column-major
        ("inverse_bind", "<f4", (16,)),
        ("name_length", "u1"),
        ("name", "S15"),
        ("parent", "<i2"),
        ("flags", "<u2"),  # 1: nothing is skinned to this node or below it
        ("translation", "<f4", (3,)),  # local rest translation
    ]
)
KEY_DTYPE = np.dtype([("time", "<f4"), ("position", "<u2"), ("rotation", "<u2")])
VERTEX_DTYPE = np.dtype(
    [
        ("position", "<f4", (3,)),
        ("normal", "<f4", (3,)),
        ("weights", "u1", (4,)),  # weight = byte / 255
        ("bones", "u1", (4,)),  # palette index = byte / 3
        ("uv", "<f4", (2,)),  # V stored negated
    ]
)
PIECE_HEADER_SIZE = 40  # four counts, bounding box centre and half-extent
assert NODE_DTYPE.itemsize == 0xB0 and KEY_DTYPE.itemsize == 8 and VERTEX_DTYPE.itemsize == 40

# Channel flags: which TKL tables the keys use.
CHANNEL_ROTATION = 0
CHANNEL_TRANSLATION_ROTATION = 1
CHANNEL_UNUSED = 2
CHANNEL_TRANSLATION = 3


def decode_name(length: int, raw: bytes) -> str:
    """A length-prefixed name in a fixed field; the text stops at the length or the first NUL."""
    return raw[:length].split(b"\0", 1)[0].decode("ascii", errors="replace")


def encode_name(name: str, size: int = 15, what: str = "name") -> tuple[int, bytes]:
    """(length byte, NUL-padded field) for a name; ValueError when it does not fit."""
    raw = name.encode("ascii", errors="replace")
    if len(raw) > size:
        raise ValueError(f"{what} {name!r} is longer than {size} bytes")
    return len(raw), raw.ljust(size, b"\0")


def tkl_name_field(name: str) -> bytes:
    """The 16-byte header field naming the keyframe library, as the game's files fill it.

    Names of up to 7 bytes are NUL-padded to 8 and followed by the leftover bytes
    of shipped files, which keeps them readable by tools that check those bytes.
    """
    raw = name.encode("ascii", errors="replace")
    if len(raw) > 15:
        raise ValueError(f"keyframe library name {name!r} is longer than 15 bytes")
    if len(raw) <= 7:
        return raw.ljust(8, b"\0") + TKL_NAME_LEFTOVER
    return raw.ljust(16, b"\0")


@dataclass
class Channel:
    flags: int  # CHANNEL_*
    keys: np.ndarray  # KEY_DTYPE: time in seconds, TKL position and rotation indices


@dataclass
class Animation:
    name_length: int
    name_field: bytes  # 15 bytes
    a: int  # small flag words, kept
    b: int
    c: int  # usually the node count
    duration: float  # seconds
    channels: np.ndarray  # (node count,) int32 indices into TMD.channels

    @property
    def name(self) -> str:
        return decode_name(self.name_length, self.name_field)


@dataclass
class Piece:
    vertices_required: int
    bbox_centre: np.ndarray  # (3,) float32
    bbox_half_extent: np.ndarray  # (3,) float32
    palette: np.ndarray  # (P,) uint32 node indices
    vertices: np.ndarray  # VERTEX_DTYPE
    strip: np.ndarray  # (I,) int16 indices into the mesh's concatenated vertices
    offset: int = field(default=0, compare=False)  # of the piece header in the file read (0: built)

    def vertex_offset(self, index: int) -> int:
        """File offset of vertex ``index`` of this piece (the header, palette and vertices follow each other)."""
        return self.offset + PIECE_HEADER_SIZE + 4 * len(self.palette) + VERTEX_DTYPE.itemsize * index

    def strip_offset(self, index: int) -> int:
        """File offset of strip index ``index`` (after the vertices)."""
        return self.vertex_offset(len(self.vertices)) + 2 * index


@dataclass
class Mesh:
    total_indices: int  # as stored (normally the sum over the pieces)
    total_vertices: int
    material_field: bytes  # 32 bytes, NUL-terminated name
    pieces: list[Piece] = field(default_factory=list)

    @property
    def material(self) -> str:
        return self.material_field.split(b"\0", 1)[0].decode("ascii", errors="replace")


@dataclass
class LOD:
    unknown: bytes  # 4 bytes
    sphere: np.ndarray  # (4,) float32
    meshes: list[Mesh] = field(default_factory=list)


@dataclass
class TMD:
    tkl_field: bytes  # 16 bytes: keyframe library name, NUL, leftover bytes
    salt: int
    unknown: tuple[int, int]  # u32 words at 36 and 40
    nodes: np.ndarray  # NODE_DTYPE
    aux: np.ndarray | None  # (node count,) int32, None when the file has no aux block
    animations: list[Animation]
    channels: list[Channel]
    lod_value: bytes  # 4 bytes after the LOD count
    lods: list[LOD]
    node_flags: int = 0  # u16 bitfields beside the counts
    animation_flags: int = 0
    reserved: bytes = bytes(4)  # after the magic
    header_padding: bytes = bytes(16)  # 44..59
    scene_padding: bytes = bytes(44)  # 72..115
    # Order of the scene blocks with the bytes found before each, and bytes after the last block.
    layout: list[tuple[str, int, bytes]] = field(default_factory=list)
    trailer: bytes = b""

    @property
    def tkl_name(self) -> str:
        return self.tkl_field.split(b"\0", 1)[0].decode("ascii", errors="replace")

    def node_names(self) -> list[str]:
        return [
            decode_name(int(n), bytes(raw))
            for n, raw in zip(self.nodes["name_length"], self.nodes["name"], strict=True)
        ]

    def material_names(self) -> list[str]:
        return list(dict.fromkeys(mesh.material for lod in self.lods for mesh in lod.meshes))


def matrices(flat: np.ndarray) -> np.ndarray:
    """(N, 16) column-major floats → (N, 4, 4) float64 column-vector matrices."""
    return np.asarray(flat, dtype=np.float64).reshape(-1, 4, 4).transpose(0, 2, 1)


def flatten(m: np.ndarray) -> np.ndarray:
    """Inverse of ``matrices``: (N, 4, 4) → (N, 16) float32 column-major."""
    return np.ascontiguousarray(np.asarray(m).transpose(0, 2, 1)).reshape(-1, 16).astype(np.float32)


# -- reading ------------------------------------------------------------------


class _Parser:
    def __init__(self, data: bytes, filename: str):
        self.r = Reader(data, "<", filename)
        self.blocks: list[tuple[int, int, str, int]] = []  # start, end, kind, index

    def decrypt(self, stored: int, salt: int, what: str, offset: int) -> int:
        address = (stored + ADDRESS_BIAS - salt) & 0xFFFFFFFF
        if address > len(self.r):
            raise self.r.error(
                f"{what} address 0x{address:X} lies outside the file ({len(self.r)} bytes)", offset
            )
        return address

    def block(self, kind: str, index: int, start: int, size: int) -> Reader:
        sub = self.r.sub(start, size, f"{kind} block")
        self.blocks.append((start, start + size, kind, index))
        return sub

    def animations(
        self, table_at: int, count: int, salt: int, node_count: int
    ) -> tuple[list[Animation], list[Channel]]:
        """The animations of the table at ``table_at`` and the channels they use (shared ones once)."""
        table = self.block("table", 0, table_at, 4 * count).array("<u4", count, "animation addresses")
        channels: list[Channel] = []
        channel_ids: dict[int, int] = {}  # address → index in ``channels``
        animations = []
        for i, stored in enumerate(table.tolist()):
            at = self.decrypt(stored, salt, f"animation {i}", table_at + 4 * i)
            a = self.block("animation", i, at, 32 + 4 * node_count)
            name_length = a.u8("animation name length")
            name_field = a.bytes(15, "animation name")
            word_a, word_b, word_c, duration = a.unpack("3If", "animation words")
            addresses = a.array("<u4", node_count, "channel addresses")
            ids = np.empty(node_count, np.int32)
            for node, stored_channel in enumerate(addresses.tolist()):
                channel_at = self.decrypt(
                    stored_channel, salt, f"animation {i} channel {node}", a.pos - 4 * (node_count - node)
                )
                if channel_at not in channel_ids:
                    channel_ids[channel_at] = len(channels)
                    channels.append(self.channel(channel_at, len(channels)))
                ids[node] = channel_ids[channel_at]
            animations.append(Animation(name_length, name_field, word_a, word_b, word_c, duration, ids))
        return animations, channels

    def channel(self, at: int, index: int) -> Channel:
        flags, key_count = self.r.sub(at, 4, "channel header").unpack("2H", "channel header")
        c = self.block("channel", index, at, 4 + 8 * key_count)
        c.pos += 4
        return Channel(flags, c.array(KEY_DTYPE, key_count, "keys"))

    def layout(self, header_end: int) -> tuple[list[tuple[str, int, bytes]], bytes]:
        """Block order and the bytes between blocks; overlapping blocks are rejected."""
        data = self.r.data
        order = sorted(self.blocks, key=lambda b: (b[0], b[1]))
        layout = []
        pos = header_end
        for start, end, kind, index in order:
            if start < pos:
                raise self.r.error(
                    f"{kind} block {index} overlaps the previous block (which ends at {pos})", start
                )
            layout.append((kind, index, data[pos:start]))
            pos = end
        return layout, data[pos:]


def read(data: bytes, filename: str = "<bytes>") -> TMD:
    p = _Parser(data, filename)
    r = p.r
    r.magic(MAGIC, "TMD magic")
    reserved = r.bytes(4, "reserved word")
    remaining = r.u32("bytes remaining")
    if remaining != len(data) - 12:
        raise r.error(f"header says {remaining + 12} bytes but the file has {len(data)}", 8)
    tkl_field = r.bytes(16, "TKL name")
    scene_size = r.u32("scene block size")
    salt = r.u32("salt")
    unknown = r.unpack("2I", "unknown words")
    header_padding = r.bytes(16, "header padding")
    scene_size_copy = r.u32("scene block size copy")
    if scene_size_copy != scene_size:
        raise r.error(f"scene block size {scene_size_copy} differs from the header's {scene_size}", 60)
    node_count, node_flags, animation_count, animation_flags = r.unpack("4H", "scene counts")
    scene_padding = r.bytes(44, "scene padding")
    aux_at = p.decrypt(r.u32("aux address"), salt, "aux node data", 116)
    if aux_at == NO_AUX_ADDRESS:
        nodes_at = aux_at
        table_at = p.decrypt(r.u32("animation table address"), salt, "animation table", 120)
    else:
        nodes_at = p.decrypt(r.u32("node data address"), salt, "node data", 120)
        table_at = p.decrypt(r.u32("animation table address"), salt, "animation table", 124)
    header_end = r.pos

    aux = None
    if aux_at != NO_AUX_ADDRESS:
        aux = p.block("aux", 0, aux_at, 4 * node_count).array("<i4", node_count, "aux node values")
    nodes = p.block("nodes", 0, nodes_at, NODE_DTYPE.itemsize * node_count).array(
        NODE_DTYPE, node_count, "nodes"
    )
    parents = nodes["parent"].astype(np.int64)
    bad = np.flatnonzero((parents < -1) | (parents >= np.arange(node_count)))
    if bad.size:
        i = int(bad[0])
        raise r.error(
            f"node {i} has parent {parents[i]}: parents must precede their children",
            nodes_at + 0xB0 * i + 160,
        )

    animations, channels = p.animations(table_at, animation_count, salt, node_count)
    lod_at = ADDRESS_BIAS + scene_size
    r.seek(lod_at, "LOD block")
    lod_value, lods = _read_lods(r)
    p.blocks.append((lod_at, r.pos, "lod", 0))
    layout, trailer = p.layout(header_end)
    return TMD(
        tkl_field=tkl_field,
        salt=salt,
        unknown=unknown,
        nodes=nodes,
        aux=aux,
        animations=animations,
        channels=channels,
        lod_value=lod_value,
        lods=lods,
        node_flags=node_flags,
        animation_flags=animation_flags,
        reserved=reserved,
        header_padding=header_padding,
        scene_padding=scene_padding,
        layout=layout,
        trailer=trailer,
    )


def _read_lods(r: Reader) -> tuple[bytes, list[LOD]]:
    lod_count = r.check_count(r.u32("LOD count"), 28, "LOD")
    lod_value = r.bytes(4, "LOD value")
    lods = []
    for _ in range(lod_count):
        mesh_count = r.check_count(r.u32("mesh count"), 44, "mesh")
        unknown = r.bytes(4, "LOD unknown word")
        lod = LOD(unknown, r.array("<f4", 4, "LOD sphere"))
        for _ in range(mesh_count):
            piece_count, total_indices, total_vertices = r.unpack("3I", "mesh header")
            r.check_count(piece_count, 40, "mesh piece")
            mesh = Mesh(total_indices, total_vertices, r.bytes(32, "material name"))
            for _ in range(piece_count):
                offset = r.pos
                index_count, vertex_count, palette_size, required = r.unpack("4I", "piece header")
                centre = r.array("<f4", 3, "bbox centre")
                half = r.array("<f4", 3, "bbox half-extent")
                palette = r.array("<u4", palette_size, "bone palette")
                vertices = r.array(VERTEX_DTYPE, vertex_count, "vertices")
                strip = r.array("<i2", index_count, "strip indices")
                mesh.pieces.append(Piece(required, centre, half, palette, vertices, strip, offset))
            lod.meshes.append(mesh)
        lods.append(lod)
    return lod_value, lods


# -- writing ------------------------------------------------------------------


def canonical_layout(model: TMD) -> list[tuple[str, int, bytes]]:
    blocks = [("aux", 0)] if model.aux is not None else []
    blocks += [("nodes", 0), ("table", 0)]
    blocks += [("animation", i) for i in range(len(model.animations))]
    blocks += [("channel", i) for i in range(len(model.channels))]
    blocks.append(("lod", 0))
    return [(kind, index, b"") for kind, index in blocks]


def _layout_for(model: TMD) -> list[tuple[str, int, bytes]]:
    """The recorded layout when it still describes the model's blocks, else the canonical one."""
    wanted = canonical_layout(model)
    recorded = model.layout
    if recorded and sorted((k, i) for k, i, _ in recorded) == sorted((k, i) for k, i, _ in wanted):
        if model.aux is not None or (recorded[0][:2] == ("nodes", 0) and not recorded[0][2]):
            return recorded
    return wanted


def _check_sizes(model: TMD) -> None:
    fields = [
        ("TKL name field", model.tkl_field, 16),
        ("reserved word", model.reserved, 4),
        ("header padding", model.header_padding, 16),
        ("scene padding", model.scene_padding, 44),
        ("LOD value", model.lod_value, 4),
    ]
    fields += [(f"animation {i} name field", a.name_field, 15) for i, a in enumerate(model.animations)]
    fields += [(f"LOD {i} unknown word", lod.unknown, 4) for i, lod in enumerate(model.lods)]
    fields += [
        (f"material name of mesh {m.material!r}", m.material_field, 32)
        for lod in model.lods
        for m in lod.meshes
    ]
    for what, raw, size in fields:
        if len(raw) != size:
            raise ValueError(f"{what} must be {size} bytes, not {len(raw)}")


def write(model: TMD) -> bytes:
    _check_sizes(model)
    node_count = len(model.nodes)
    if node_count > 0xFFFF or len(model.animations) > 0xFFFF:
        raise ValueError("a TMD holds at most 65535 nodes and 65535 animations")
    if model.aux is not None and len(model.aux) != node_count:
        raise ValueError(f"aux block has {len(model.aux)} values for {node_count} nodes")
    lod_bytes = _write_lods(model)
    sizes = {
        "aux": 4 * node_count,
        "nodes": NODE_DTYPE.itemsize * node_count,
        "table": 4 * len(model.animations),
        "lod": len(lod_bytes),
    }
    header_size = HEADER_SIZE_AUX if model.aux is not None else HEADER_SIZE_NO_AUX
    layout = _layout_for(model)
    offsets: dict[tuple[str, int], int] = {}
    pos = header_size
    for kind, index, gap in layout:
        pos += len(gap)
        offsets[kind, index] = pos
        if kind == "animation":
            pos += 32 + 4 * node_count
        elif kind == "channel":
            pos += 4 + 8 * len(model.channels[index].keys)
        else:
            pos += sizes[kind]
    total = pos + len(model.trailer)

    def address(kind: str, index: int = 0) -> int:
        return (offsets[kind, index] - ADDRESS_BIAS + model.salt) & 0xFFFFFFFF

    w = Writer("<")
    w.bytes(MAGIC + model.reserved)
    w.u32(total - 12)
    w.bytes(model.tkl_field)
    scene_size = offsets["lod", 0] - ADDRESS_BIAS
    w.pack("4I", scene_size, model.salt, *model.unknown)
    w.bytes(model.header_padding)
    w.pack("I4H", scene_size, node_count, model.node_flags, len(model.animations), model.animation_flags)
    w.bytes(model.scene_padding)
    if model.aux is not None:
        w.pack("3I", address("aux"), address("nodes"), address("table"))
    else:
        w.pack("2I", (NO_AUX_ADDRESS - ADDRESS_BIAS + model.salt) & 0xFFFFFFFF, address("table"))
    for kind, index, gap in layout:
        w.bytes(gap)
        if kind == "aux":
            w.array(model.aux, "<i4")
        elif kind == "nodes":
            w.array(model.nodes, NODE_DTYPE)
        elif kind == "table":
            w.array(
                np.array([address("animation", i) for i in range(len(model.animations))], np.uint32), "<u4"
            )
        elif kind == "animation":
            anim = model.animations[index]
            if len(anim.channels) != node_count:
                raise ValueError(
                    f"animation {anim.name!r} has {len(anim.channels)} channels for {node_count} nodes"
                )
            w.u8(anim.name_length)
            w.bytes(anim.name_field)
            w.pack("3If", anim.a, anim.b, anim.c, anim.duration)
            w.array(np.array([address("channel", int(c)) for c in anim.channels], np.uint32), "<u4")
        elif kind == "channel":
            channel = model.channels[index]
            if len(channel.keys) > 0xFFFF:
                raise ValueError(f"channel {index} has {len(channel.keys)} keys (at most 65535)")
            w.pack("2H", channel.flags, len(channel.keys))
            w.array(channel.keys, KEY_DTYPE)
        else:
            w.bytes(lod_bytes)
    w.bytes(model.trailer)
    return w.getvalue()


def _write_lods(model: TMD) -> bytes:
    w = Writer("<")
    w.u32(len(model.lods))
    w.bytes(model.lod_value)
    for lod in model.lods:
        w.u32(len(lod.meshes))
        w.bytes(lod.unknown)
        w.array(lod.sphere, "<f4")
        for mesh in lod.meshes:
            w.pack("3I", len(mesh.pieces), mesh.total_indices, mesh.total_vertices)
            w.bytes(mesh.material_field)
            for piece in mesh.pieces:
                w.pack(
                    "4I", len(piece.strip), len(piece.vertices), len(piece.palette), piece.vertices_required
                )
                w.array(piece.bbox_centre, "<f4")
                w.array(piece.bbox_half_extent, "<f4")
                w.array(piece.palette, "<u4")
                w.array(piece.vertices, VERTEX_DTYPE)
                w.array(piece.strip, "<i2")
    return w.getvalue()
