"""Paper Mario: The Thousand-Year Door character/object models (the game's ``a/`` files).

Big-endian. A 0x1B0-byte header gives a count and an offset for each of 25
tables (shapes, draw polygons, vertex pools and their index arrays, texture
tables, subshapes, visibility groups, node floats, groups, animation entries);
each animation entry points at its own data (a 0x5C-byte header with eight
tables whose offsets are relative to that header). Every table is kept as a
numpy array of its records, so unknown fields survive verbatim.

Layout: a file read from bytes remembers where every table was and the bytes
no table covers (padding); ``write`` puts everything back there as long as no
table changed size, which makes ``write(read(b)) == b`` hold for any accepted
file. Otherwise (or for models built from scratch) the tables are laid out in
header order, 4-byte aligned, with the animation data after them.

``read`` also checks every reference the geometry, the group tree and the
animations make (see ``validate``), so the converter and the evaluator can
index freely.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np

from ..binary import Reader, Writer, with_endian
from ..errors import FormatError

ENDIAN = ">"
HEADER_SIZE = 0x1B0
ANIMATION_HEADER_SIZE = 0x5C
ALIGNMENT = 4
TEXCOORD_ARRAYS = 8
NODE_FLOATS = 24
NAME_ENCODING = "shift_jis"

SHAPE_DTYPE = np.dtype(
    [
        ("name", "S64"),
        ("position_first", "u4"),
        ("position_count", "u4"),
        ("normal_first", "u4"),
        ("normal_count", "u4"),
        ("color_first", "u4"),
        ("color_count", "u4"),
        ("texcoord_ranges", "u4", (TEXCOORD_ARRAYS, 2)),  # (first, count) per texture-coordinate array
        ("subshape_first", "u4"),
        ("subshape_count", "u4"),
        ("display_mode", "u4"),
        ("cull_mode", "u4"),
    ]
)
POLYGON_DTYPE = np.dtype([("first", "u4"), ("count", "u4")])  # one triangle fan
TEXCOORD_TRANSFORM_DTYPE = np.dtype(
    [
        ("frame_offset", "u1"),  # added to the sampler's first texture
        ("padding", "u1", (3,)),
        ("translate", "f4", (2,)),
        ("scale", "f4", (2,)),
        ("rotate", "f4"),  # degrees
    ]
)
SAMPLER_DTYPE = np.dtype([("first_texture", "u4"), ("wrap", "u4")])
TEXTURE_DTYPE = np.dtype([("unknown", "u4"), ("tpl_index", "u4"), ("type", "u4"), ("name", "S52")])
SUBSHAPE_DTYPE = np.dtype(
    [
        ("texture_count", "u4"),
        ("unknown_04", "u4"),
        ("tev_mode", "u4"),
        ("unknown_0c", "u4"),
        ("samplers", "i4", (8,)),
        ("texcoord_arrays", "u1", (8,)),
        ("polygon_first", "u4"),
        ("polygon_count", "u4"),
        ("position_base", "u4"),
        ("normal_base", "u4"),
        ("color_base", "u4"),
        ("texcoord_bases", "u4", (TEXCOORD_ARRAYS,)),
    ]
)
GROUP_DTYPE = np.dtype(
    [
        ("name", "S64"),
        ("next", "i4"),  # next sibling, -1 none
        ("child", "i4"),  # first child, -1 none
        ("shape", "i4"),  # -1 none
        ("visibility", "i4"),  # index into the visibility groups
        ("node", "i4"),  # index of the first of the node's 24 floats
        ("compensate", "u4"),  # segment scale compensation: undo the parent's scale
    ]
)
ENTRY_DTYPE = np.dtype([("name", "S60"), ("data_offset", "u4")])

BASE_DTYPE = np.dtype([("loop", "u4"), ("start", "f4"), ("end", "f4")])
DELTA_KINDS = ("position", "normal", "texture", "visibility", "node")
KEYFRAME_DTYPE = np.dtype(
    [("time", "f4")] + [(f"{kind}_{part}", "u4") for kind in DELTA_KINDS for part in ("first", "count")]
)
VERTEX_DELTA_DTYPE = np.dtype([("step", "u1"), ("delta", "i1", (3,))])  # delta in 1/16 units
TEXTURE_DELTA_DTYPE = np.dtype(
    [("step", "u1"), ("frame_step", "i1"), ("padding", "u1", (2,)), ("translate", "f4", (2,))]
)
VISIBILITY_DELTA_DTYPE = np.dtype([("step", "u1"), ("value", "i1")])  # +1 show, -1 hide, 0 nothing
NODE_DELTA_DTYPE = np.dtype([("step", "u1"), ("value", "i1"), ("tangent_in", "i1"), ("tangent_out", "i1")])
UNKNOWN_RECORD_DTYPE = np.dtype([("raw", "u1", (8,))])

# (attribute, dtype, components): the header's tables in order; components > 1 make (N, k) arrays.
BLOCKS = (
    [
        ("shapes", SHAPE_DTYPE, 1),
        ("polygons", POLYGON_DTYPE, 1),
        ("positions", np.dtype("f4"), 3),
        ("position_indices", np.dtype("u4"), 1),
        ("normals", np.dtype("f4"), 3),
        ("normal_indices", np.dtype("u4"), 1),
        ("colors", np.dtype("u1"), 4),
        ("color_indices", np.dtype("u4"), 1),
    ]
    + [(f"texcoord_indices.{i}", np.dtype("u4"), 1) for i in range(TEXCOORD_ARRAYS)]
    + [
        ("texcoords", np.dtype("f4"), 2),
        ("texcoord_transforms", TEXCOORD_TRANSFORM_DTYPE, 1),
        ("samplers", SAMPLER_DTYPE, 1),
        ("textures", TEXTURE_DTYPE, 1),
        ("subshapes", SUBSHAPE_DTYPE, 1),
        ("visibility", np.dtype("u1"), 1),
        ("node_floats", np.dtype("f4"), 1),
        ("groups", GROUP_DTYPE, 1),
    ]
)
BLOCK_INDEX = {name: i for i, (name, _, _) in enumerate(BLOCKS)}
ENTRIES_BLOCK = len(BLOCKS)  # the animation entry table is the 25th block
BLOCK_COUNT = len(BLOCKS) + 1
ANIMATION_TABLES = (
    ("base", BASE_DTYPE),
    ("keyframes", KEYFRAME_DTYPE),
    ("position_deltas", VERTEX_DELTA_DTYPE),
    ("normal_deltas", VERTEX_DELTA_DTYPE),
    ("texture_deltas", TEXTURE_DELTA_DTYPE),
    ("visibility_deltas", VISIBILITY_DELTA_DTYPE),
    ("node_deltas", NODE_DELTA_DTYPE),
    ("unknown_records", UNKNOWN_RECORD_DTYPE),
)
# Delta table of each keyframe range, and the table its running indices address.
DELTA_TABLES = {
    "position": ("position_deltas", "positions"),
    "normal": ("normal_deltas", "normals"),
    "texture": ("texture_deltas", "texcoord_transforms"),
    "visibility": ("visibility_deltas", "visibility"),
    "node": ("node_deltas", "node_floats"),
}


def text(raw: bytes) -> str:
    """A name field as text (up to its first NUL)."""
    return raw.split(b"\0", 1)[0].decode(NAME_ENCODING, errors="replace")


def encode_name(name: str) -> bytes:
    return name.encode(NAME_ENCODING, errors="replace")


def empty(dtype: np.dtype, components: int = 1) -> np.ndarray:
    return np.zeros((0, components) if components > 1 else 0, dtype)


@dataclass
class Header:
    name: bytes = b""  # model name (64-byte field, trailing NULs dropped)
    texture_name: bytes = b""  # the TPL is this name plus "-"
    date: bytes = b""  # build date
    flags: int = 0
    radius: int = 0
    height: int = 0
    bbox_min: np.ndarray = field(default_factory=lambda: np.zeros(3, np.float32))
    bbox_max: np.ndarray = field(default_factory=lambda: np.zeros(3, np.float32))


@dataclass
class AnimationData:
    base: np.ndarray = field(default_factory=lambda: np.zeros(1, BASE_DTYPE))  # one record: loop, start, end
    keyframes: np.ndarray = field(default_factory=lambda: empty(KEYFRAME_DTYPE))
    position_deltas: np.ndarray = field(default_factory=lambda: empty(VERTEX_DELTA_DTYPE))
    normal_deltas: np.ndarray = field(default_factory=lambda: empty(VERTEX_DELTA_DTYPE))
    texture_deltas: np.ndarray = field(default_factory=lambda: empty(TEXTURE_DELTA_DTYPE))
    visibility_deltas: np.ndarray = field(default_factory=lambda: empty(VISIBILITY_DELTA_DTYPE))
    node_deltas: np.ndarray = field(default_factory=lambda: empty(NODE_DELTA_DTYPE))
    unknown_records: np.ndarray = field(default_factory=lambda: empty(UNKNOWN_RECORD_DTYPE))
    bbox: np.ndarray = field(default_factory=lambda: np.zeros(6, np.float32))

    @property
    def loop(self) -> bool:
        return bool(self.base["loop"][0]) if len(self.base) else False

    @property
    def start(self) -> float:
        return float(self.base["start"][0]) if len(self.base) else 0.0

    @property
    def end(self) -> float:
        return float(self.base["end"][0]) if len(self.base) else 0.0


@dataclass
class Animation:
    name: bytes
    data: AnimationData | None  # None: the entry's data offset is 0


@dataclass
class Layout:
    """Where a file read from bytes kept each table, and the bytes between them."""

    size: int
    data_area: int  # header word 0
    offsets: list[int]  # per header block
    animation_offsets: list[int]  # per entry, 0 = no data
    animation_sizes: list[int]  # word 0 of each animation's data
    animation_tables: list[list[int]]  # per animation: the eight relative table offsets
    region_sizes: list[int]  # byte size of every table as read; the layout holds while these hold
    fill: list[tuple[int, bytes]]  # (offset, bytes) runs no table covers


@dataclass
class Model:
    header: Header = field(default_factory=Header)
    shapes: np.ndarray = field(default_factory=lambda: empty(SHAPE_DTYPE))
    polygons: np.ndarray = field(default_factory=lambda: empty(POLYGON_DTYPE))
    positions: np.ndarray = field(default_factory=lambda: empty(np.dtype("f4"), 3))
    position_indices: np.ndarray = field(default_factory=lambda: empty(np.dtype("u4")))
    normals: np.ndarray = field(default_factory=lambda: empty(np.dtype("f4"), 3))
    normal_indices: np.ndarray = field(default_factory=lambda: empty(np.dtype("u4")))
    colors: np.ndarray = field(default_factory=lambda: empty(np.dtype("u1"), 4))  # RGBA8
    color_indices: np.ndarray = field(default_factory=lambda: empty(np.dtype("u4")))
    texcoord_indices: list[np.ndarray] = field(
        default_factory=lambda: [empty(np.dtype("u4")) for _ in range(TEXCOORD_ARRAYS)]
    )
    texcoords: np.ndarray = field(default_factory=lambda: empty(np.dtype("f4"), 2))
    texcoord_transforms: np.ndarray = field(default_factory=lambda: empty(TEXCOORD_TRANSFORM_DTYPE))
    samplers: np.ndarray = field(default_factory=lambda: empty(SAMPLER_DTYPE))
    textures: np.ndarray = field(default_factory=lambda: empty(TEXTURE_DTYPE))
    subshapes: np.ndarray = field(default_factory=lambda: empty(SUBSHAPE_DTYPE))
    visibility: np.ndarray = field(default_factory=lambda: empty(np.dtype("u1")))  # 0 hidden, 1 shown
    node_floats: np.ndarray = field(default_factory=lambda: empty(np.dtype("f4")))
    groups: np.ndarray = field(default_factory=lambda: empty(GROUP_DTYPE))
    animations: list[Animation] = field(default_factory=list)
    layout: Layout | None = None

    def block(self, name: str) -> np.ndarray:
        if name.startswith("texcoord_indices."):
            return self.texcoord_indices[int(name.rsplit(".", 1)[1])]
        return getattr(self, name)

    def set_block(self, name: str, value: np.ndarray) -> None:
        if name.startswith("texcoord_indices."):
            self.texcoord_indices[int(name.rsplit(".", 1)[1])] = value
        else:
            setattr(self, name, value)


# -- reading -----------------------------------------------------------------------


def _read_table(
    r: Reader, offset: int, dtype: np.dtype, components: int, count: int, what: str
) -> np.ndarray:
    r.seek(offset, what)
    values = r.array(dtype, count * components, what)
    return values.reshape(count, components) if components > 1 else values


def read(data: bytes, filename: str = "<bytes>") -> Model:
    r = Reader(data, ENDIAN, filename)
    r.need(HEADER_SIZE, "model header")
    data_area = r.u32("animation data offset")
    header = Header(
        name=r.bytes(64).rstrip(b"\0"),
        texture_name=r.bytes(64).rstrip(b"\0"),
        date=r.bytes(64).rstrip(b"\0"),
    )
    header.flags, header.radius, header.height = r.unpack("3I", "flags, radius, height")
    header.bbox_min = np.array(r.unpack("3f", "bounding box"), np.float32)
    header.bbox_max = np.array(r.unpack("3f", "bounding box"), np.float32)
    counts = list(r.unpack(f"{BLOCK_COUNT}I", "table counts"))
    offsets = list(r.unpack(f"{BLOCK_COUNT}I", "table offsets"))

    model = Model(header=header)
    regions = [(0, HEADER_SIZE)]
    for i, (name, dtype, components) in enumerate(BLOCKS):
        table = _read_table(r, offsets[i], dtype, components, counts[i], f"{name} table")
        model.set_block(name, table)
        regions.append((offsets[i], table.nbytes))
    entries = _read_table(
        r, offsets[ENTRIES_BLOCK], ENTRY_DTYPE, 1, counts[ENTRIES_BLOCK], "animation entries"
    )
    regions.append((offsets[ENTRIES_BLOCK], entries.nbytes))

    animation_sizes, animation_tables = [], []
    for entry in entries:
        start = int(entry["data_offset"])
        if start == 0:
            model.animations.append(Animation(bytes(entry["name"]), None))
            continue
        anim, size, table_offsets = _read_animation(r, start, text(bytes(entry["name"])))
        model.animations.append(Animation(bytes(entry["name"]), anim))
        animation_sizes.append(size)
        animation_tables.append(table_offsets)
        regions.append((start, ANIMATION_HEADER_SIZE))
        regions += [
            (start + rel, getattr(anim, name).nbytes)
            for rel, (name, _) in zip(table_offsets, ANIMATION_TABLES, strict=True)
        ]

    model.layout = Layout(
        size=len(data),
        data_area=data_area,
        offsets=offsets,
        animation_offsets=[int(o) for o in entries["data_offset"]],
        animation_sizes=animation_sizes,
        animation_tables=animation_tables,
        region_sizes=[size for _, size in regions],
        fill=_uncovered(data, regions),
    )
    validate(model, filename)
    return model


def _read_animation(r: Reader, start: int, name: str) -> tuple[AnimationData, int, list[int]]:
    what = f"animation {name!r}"
    r.seek(start, f"{what} data")
    size = r.u32(f"{what} size")
    counts = r.unpack("8I", f"{what} table counts")
    relative = list(r.unpack("8I", f"{what} table offsets"))
    anim = AnimationData(bbox=np.array(r.unpack("6f", f"{what} bounding box"), np.float32))
    for (table, dtype), count, rel in zip(ANIMATION_TABLES, counts, relative, strict=True):
        setattr(anim, table, _read_table(r, start + rel, dtype, 1, count, f"{what} {table}"))
    return anim, size, relative


def _uncovered(data: bytes, regions: list[tuple[int, int]]) -> list[tuple[int, bytes]]:
    covered = np.zeros(len(data) + 2, bool)
    covered[0] = covered[-1] = True  # sentinels so every run has a start and an end
    for offset, size in regions:
        covered[offset + 1 : offset + 1 + size] = True
    edges = np.flatnonzero(np.diff(covered.view(np.int8)))
    return [(int(a), data[a:b]) for a, b in zip(edges[0::2], edges[1::2], strict=True)]


# -- validation --------------------------------------------------------------------


SHAPES = 0


def _offset(model: Model, block: int, index: int) -> int:
    """File offset of record ``index`` of a header block (0 for a model built in memory)."""
    if model.layout is None:
        return 0
    return (
        model.layout.offsets[block] + index * model.block(BLOCKS[block][0]).dtype.itemsize * BLOCKS[block][2]
    )


def _check_ranges(filename, model, block, first, count, limit, what) -> None:
    """Each (first, count) with count > 0 must lie inside a table of ``limit`` records."""
    first, count = np.asarray(first, np.int64), np.asarray(count, np.int64)
    bad = np.flatnonzero((count > 0) & (first + count > limit))
    if len(bad):
        i = int(bad[0])
        raise FormatError(filename, _offset(model, block, i), f"{what} {first[i]}+{count[i]} exceeds {limit}")


def polygon_corners(polygons: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(corner offsets relative to the index bases, polygon of each corner) for fans in order."""
    counts = polygons["count"].astype(np.int64)
    starts = np.repeat(polygons["first"].astype(np.int64), counts)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return starts + within, np.repeat(np.arange(len(polygons)), counts)


def fan_triangles(counts: np.ndarray) -> np.ndarray:
    """(F, 3) corner numbers of fans with ``counts`` corners laid out one after another: (0, i, i+1)."""
    counts = np.asarray(counts, np.int64)
    tris = np.maximum(counts - 2, 0)
    first = np.repeat(np.cumsum(counts) - counts, tris)
    i = np.arange(tris.sum()) - np.repeat(np.cumsum(tris) - tris, tris) + 1
    return np.stack([first, first + i, first + i + 1], axis=1)


def subshape_corner_indices(
    model: Model, shape: np.void, subshape: np.void, filename: str = "<model>", offset: int = 0
) -> dict:
    """Local pool indices of every corner of one subshape: {'position', 'normal', 'color', 'texcoord.j'}.

    Attributes whose pool range in the shape is empty are left out. Index values use
    their low 16 bits, as the game does.
    """
    polygons = model.polygons[
        int(subshape["polygon_first"]) : int(subshape["polygon_first"] + subshape["polygon_count"])
    ]
    shape_name = text(shape["name"])
    firsts, counts = polygons["first"].astype(np.int64), polygons["count"].astype(np.int64)
    ends = firsts + counts + int(subshape["position_base"])
    if len(polygons) and (
        ends.max() > len(model.position_indices) or counts.sum() > len(model.position_indices)
    ):
        raise FormatError(filename, offset, f"polygons of shape {shape_name!r} run past the position indices")
    offsets, _ = polygon_corners(polygons)
    sources = [
        ("position", model.position_indices, subshape["position_base"], shape["position_count"]),
        ("normal", model.normal_indices, subshape["normal_base"], shape["normal_count"]),
        ("color", model.color_indices, subshape["color_base"], shape["color_count"]),
    ]
    for j in range(min(int(subshape["texture_count"]), TEXCOORD_ARRAYS)):
        sources.append(
            (
                f"texcoord.{j}",
                model.texcoord_indices[j],
                subshape["texcoord_bases"][j],
                shape["texcoord_ranges"][j, 1],
            )
        )
    out = {}
    for key, table, base, pool in sources:
        if pool == 0 and key != "position":
            continue
        where = offsets + int(base)
        if len(where) and where.max() >= len(table):
            raise FormatError(
                filename,
                offset,
                f"{key} index entry {where.max()} of shape {shape_name!r} is outside its array",
            )
        local = (table[where] & 0xFFFF).astype(np.int64)
        if len(local) and local.max() >= pool:
            raise FormatError(
                filename,
                offset,
                f"{key} index {local.max()} of shape {shape_name!r} exceeds its pool of {pool}",
            )
        out[key] = local
    return out


def group_parents(groups: np.ndarray, filename: str = "<model>", offset: int = 0) -> np.ndarray:
    """Parent of every group from the child/sibling links; raises on bad links, shared children, cycles.

    ``offset``: where the group table starts in the file, for the errors."""
    count = len(groups)
    parents = np.full(count, -1, np.int64)
    claimed = np.zeros(count, bool)
    for key in ("next", "child"):
        bad = np.flatnonzero((groups[key] < -1) | (groups[key] >= count))
        if len(bad):
            at = _field_offset(offset, int(bad[0]), key)
            raise FormatError(filename, at, f"group {key} link outside the {count} groups")
    for g in range(count):
        child = int(groups["child"][g])
        while child >= 0:
            if claimed[child]:
                raise FormatError(
                    filename,
                    offset + g * GROUP_DTYPE.itemsize,
                    f"group {child} is linked twice (a cycle or a shared child)",
                )
            claimed[child] = True
            parents[child] = g
            child = int(groups["next"][child])
    # Links from roots' sibling lists are roots too; every group must hang off a root without cycles.
    depth_known = parents < 0
    for _ in range(count):
        if depth_known.all():
            break
        depth_known = depth_known | ((parents >= 0) & depth_known[np.maximum(parents, 0)])
    if not depth_known.all():
        g = int(np.flatnonzero(~depth_known)[0])
        raise FormatError(filename, offset + g * GROUP_DTYPE.itemsize, f"group {g} is its own ancestor")
    return parents


def _field_offset(table_offset: int, g: int, key: str) -> int:
    """File offset of field ``key`` of group record ``g``."""
    return table_offset + g * GROUP_DTYPE.itemsize + GROUP_DTYPE.fields[key][1]


def running_indices(
    keyframes: np.ndarray, kind: str, steps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(keyframe, running index, delta entry) of every delta of one kind the keyframes use, in order.

    Each keyframe's index starts at 0 and adds the step of each of its deltas.
    """
    return _running(keyframes[f"{kind}_count"], keyframes[f"{kind}_first"], steps)


def animations_running_indices(anims: list[AnimationData]) -> list[dict[str, tuple]]:
    """``running_indices`` of every kind for each of ``anims`` (keyframe ranges inside their tables),
    worked out for all of them at once: the animations are many, their tables small."""
    if not anims:
        return []
    keys = np.array([len(anim.keyframes) for anim in anims], np.int64)
    key_bases = keys.cumsum() - keys
    out: list[dict[str, tuple]] = [{} for _ in anims]
    for kind in DELTA_TABLES:
        (keyframe, index, entries), counts, bases = _running_together(anims, kind, keys)
        ends = np.concatenate([[0], counts.cumsum()])[np.concatenate([key_bases, [len(counts)]])]
        for a, (low, high, key_base, base) in enumerate(
            zip(ends[:-1].tolist(), ends[1:].tolist(), key_bases.tolist(), bases.tolist(), strict=True)
        ):
            out[a][kind] = (keyframe[low:high] - key_base, index[low:high], entries[low:high] - base)
    return out


def _running_together(anims: list[AnimationData], kind: str, keys: np.ndarray):
    """``running_indices`` of one kind of all ``anims`` (``keys``: their keyframe counts) in one pass, each
    one's keyframes and deltas after the previous one's, with the keyframes' delta counts and where each
    animation's deltas start among all; None when a keyframe's range leaves its table."""
    table = DELTA_TABLES[kind][0]
    sizes = np.array([len(getattr(anim, table)) for anim in anims], np.int64)
    counts = np.concatenate([anim.keyframes[f"{kind}_count"] for anim in anims]).astype(np.int64)
    firsts = np.concatenate([anim.keyframes[f"{kind}_first"] for anim in anims]).astype(np.int64)
    if ((counts > 0) & (firsts + counts > sizes.repeat(keys))).any():
        return None
    bases = sizes.cumsum() - sizes
    steps = np.concatenate([getattr(anim, table)["step"] for anim in anims])
    return _running(counts, firsts + bases.repeat(keys), steps), counts, bases


def _running(counts: np.ndarray, firsts: np.ndarray, steps: np.ndarray):
    """``running_indices`` of keyframes with these delta counts and first delta entries."""
    # Array methods rather than numpy functions: the tables are small, the calls many.
    counts = counts.astype(np.int64)
    starts = counts.cumsum() - counts
    keyframe = np.arange(len(counts)).repeat(counts)
    entries = (firsts - starts)[keyframe] + np.arange(len(keyframe))
    running = np.concatenate([[0], steps[entries].cumsum(dtype=np.int64)])  # 0, then the sums
    return keyframe, running[1:] - running[starts][keyframe], entries


def validate(model: Model, filename: str = "<model>") -> None:
    """Every cross-reference in range, the group tree acyclic; raises FormatError otherwise."""
    _validate_shapes(model, filename)
    _validate_subshapes(model, filename)
    _validate_groups(model, filename)
    animated = [(i, animation) for i, animation in enumerate(model.animations) if animation.data is not None]
    if not _animations_valid(model, [animation.data for _, animation in animated]):
        for i, animation in animated:  # the first fault, named
            validate_animation(model, animation, filename, animation_offset(model, i))


def _animations_valid(model: Model, anims: list[AnimationData]) -> bool:
    """Whether every one of ``anims`` passes ``validate_animation``, tested all together: each kind of
    delta in one pass over the keyframes of every animation, each one's deltas one after another."""
    if not all(len(anim.base) for anim in anims):
        return False
    if not anims:
        return True
    keys = np.array([len(anim.keyframes) for anim in anims], np.int64)
    for kind, (_, target) in DELTA_TABLES.items():
        together = _running_together(anims, kind, keys)
        if together is None:
            return False
        index = together[0][1]
        if len(index) and index.max() >= len(model.block(target)):
            return False
    return True


def animation_offset(model: Model, entry: int) -> int:
    """File offset of animation entry ``entry``'s data (0 for a model built in memory)."""
    layout = model.layout
    return (
        layout.animation_offsets[entry] if layout is not None and entry < len(layout.animation_offsets) else 0
    )


def _validate_shapes(model: Model, filename: str) -> None:
    shapes = model.shapes
    pools = [
        ("position", len(model.positions), "positions"),
        ("normal", len(model.normals), "normals"),
        ("color", len(model.colors), "colours"),
    ]
    for key, limit, what in pools:
        _check_ranges(filename, model, SHAPES, shapes[f"{key}_first"], shapes[f"{key}_count"], limit, what)
    for j in range(TEXCOORD_ARRAYS):
        ranges = shapes["texcoord_ranges"][:, j]
        _check_ranges(
            filename, model, SHAPES, ranges[:, 0], ranges[:, 1], len(model.texcoords), "texture coordinates"
        )
    _check_ranges(
        filename,
        model,
        SHAPES,
        shapes["subshape_first"],
        shapes["subshape_count"],
        len(model.subshapes),
        "subshapes",
    )


def _validate_subshapes(model: Model, filename: str) -> None:
    sub = model.subshapes
    block = BLOCK_INDEX["subshapes"]
    _check_ranges(
        filename, model, block, sub["polygon_first"], sub["polygon_count"], len(model.polygons), "polygons"
    )
    too_many = np.flatnonzero(sub["texture_count"] > 8)
    if len(too_many):
        raise FormatError(
            filename, _offset(model, block, int(too_many[0])), "subshape has more than 8 textures"
        )
    used = np.arange(8)[None, :] < sub["texture_count"][:, None].astype(np.int64)
    bad = used & ((sub["samplers"] < 0) | (sub["samplers"] >= len(model.samplers)))
    if bad.any():
        i = int(np.flatnonzero(bad.any(1))[0])
        raise FormatError(
            filename, _offset(model, block, i), f"subshape sampler outside the {len(model.samplers)} samplers"
        )
    if len(model.samplers) > len(model.texcoord_transforms):
        raise FormatError(
            filename,
            _offset(model, BLOCK_INDEX["samplers"], 0),
            "fewer texture-coordinate transforms than samplers",
        )
    for shape in model.shapes:
        first = int(shape["subshape_first"])
        for i in range(first, first + int(shape["subshape_count"])):
            subshape_corner_indices(model, shape, sub[i], filename, _offset(model, block, i))


def _validate_groups(model: Model, filename: str) -> None:
    groups = model.groups
    groups_at = _offset(model, BLOCK_INDEX["groups"], 0)
    group_parents(groups, filename, groups_at)
    limits = {
        "shape": (-1, len(model.shapes)),
        "visibility": (0, len(model.visibility)),
        "node": (0, len(model.node_floats) - NODE_FLOATS + 1),
    }
    for key, (low, limit) in limits.items():
        values = groups[key].astype(np.int64)
        bad = np.flatnonzero((values < low) | (values >= limit))
        if not len(bad):
            continue
        at = _field_offset(groups_at, int(bad[0]), key)
        if key == "node":
            raise FormatError(
                filename, at, f"group node index outside the {len(model.node_floats)} node floats"
            )
        raise FormatError(filename, at, f"group {key} index outside its table of {limit}")


def validate_animation(
    model: Model, animation: Animation, filename: str = "<model>", offset: int = 0
) -> None:
    """The base record is there, keyframe ranges lie inside their tables, running indices inside theirs."""
    anim = animation.data
    name = text(animation.name)
    if len(anim.base) < 1:
        raise FormatError(filename, offset, f"animation {name!r} has no base record")
    for kind, (table, target) in DELTA_TABLES.items():
        deltas = getattr(anim, table)
        firsts = anim.keyframes[f"{kind}_first"].astype(np.int64)
        counts = anim.keyframes[f"{kind}_count"].astype(np.int64)
        if ((counts > 0) & (firsts + counts > len(deltas))).any():
            raise FormatError(filename, offset, f"animation {name!r}: {kind} deltas outside their table")
        _, index, _ = running_indices(anim.keyframes, kind, deltas["step"])
        if len(index) and index.max() >= len(model.block(target)):
            raise FormatError(
                filename,
                offset,
                f"animation {name!r}: {kind} delta index {index.max()} outside {len(model.block(target))}",
            )


# -- writing -----------------------------------------------------------------------


@cache
def _file_dtype(dtype: np.dtype) -> np.dtype:
    """``dtype`` as the file stores it (made once per dtype: the tables are many, their dtypes few)."""
    return with_endian(dtype, ENDIAN)


def table_bytes(table: np.ndarray) -> bytes:
    """A table's records as the file stores them (big-endian)."""
    return np.ascontiguousarray(table, _file_dtype(table.dtype)).tobytes()


def table_from_bytes(raw: bytes, dtype: np.dtype, components: int = 1) -> np.ndarray:
    """The table ``table_bytes`` gave these bytes for (native byte order, (N, k) when components > 1)."""
    values = np.frombuffer(raw, _file_dtype(np.dtype(dtype))).astype(dtype)
    return values.reshape(-1, components) if components > 1 else values


def _entry_table(model: Model, offsets: list[int]) -> bytes:
    entries = np.zeros(len(model.animations), ENTRY_DTYPE)
    entries["name"] = [a.name for a in model.animations]
    entries["data_offset"] = offsets
    return table_bytes(entries)


def _animation_tables(anim: AnimationData) -> list[np.ndarray]:
    return [getattr(anim, name) for name, _ in ANIMATION_TABLES]


def _animation_header(anim: AnimationData, size: int, relative: list[int]) -> bytes:
    w = Writer(ENDIAN)
    w.u32(size)
    w.pack("8I", *(len(t) for t in _animation_tables(anim)))
    w.pack("8I", *relative)
    w.array(anim.bbox, "f4")
    return w.getvalue()


def _header(model: Model, data_area: int, offsets: list[int]) -> bytes:
    h = model.header
    w = Writer(ENDIAN)
    w.u32(data_area)
    w.cstring(h.name, 64, "model name")
    w.cstring(h.texture_name, 64, "texture name")
    w.cstring(h.date, 64, "date")
    w.pack("3I", h.flags, h.radius, h.height)
    w.array(h.bbox_min, "f4")
    w.array(h.bbox_max, "f4")
    counts = [len(model.block(name)) for name, _, _ in BLOCKS] + [len(model.animations)]
    w.pack(f"{BLOCK_COUNT}I", *counts)
    w.pack(f"{BLOCK_COUNT}I", *offsets)
    return w.getvalue()


def region_sizes(model: Model) -> list[int]:
    """Byte sizes of the tables in the order ``read`` records them."""
    sizes = [HEADER_SIZE] + [model.block(name).nbytes for name, _, _ in BLOCKS]
    sizes.append(len(model.animations) * ENTRY_DTYPE.itemsize)
    for animation in model.animations:
        if animation.data is not None:
            sizes += [ANIMATION_HEADER_SIZE] + [t.nbytes for t in _animation_tables(animation.data)]
    return sizes


def _layout_fits(model: Model) -> bool:
    layout = model.layout
    if layout is None or len(layout.animation_offsets) != len(model.animations):
        return False
    has_data = [a.data is not None for a in model.animations]
    if has_data != [o != 0 for o in layout.animation_offsets]:
        return False
    return region_sizes(model) == layout.region_sizes


def write(model: Model) -> bytes:
    if _layout_fits(model):
        return _write_in_place(model)
    return _write_packed(model)


def _write_in_place(model: Model) -> bytes:
    layout = model.layout
    buf = bytearray(layout.size)
    for offset, raw in layout.fill:
        buf[offset : offset + len(raw)] = raw

    def put(offset: int, raw: bytes) -> None:
        buf[offset : offset + len(raw)] = raw

    put(0, _header(model, layout.data_area, layout.offsets))
    for i, (name, _, _) in enumerate(BLOCKS):
        put(layout.offsets[i], table_bytes(model.block(name)))
    put(layout.offsets[ENTRIES_BLOCK], _entry_table(model, layout.animation_offsets))
    with_data = [
        (a, o) for a, o in zip(model.animations, layout.animation_offsets, strict=True) if a.data is not None
    ]
    for (animation, start), size, relative in zip(
        with_data, layout.animation_sizes, layout.animation_tables, strict=True
    ):
        put(start, _animation_header(animation.data, size, relative))
        for rel, table in zip(relative, _animation_tables(animation.data), strict=True):
            put(start + rel, table_bytes(table))
    return bytes(buf)


def _write_packed(model: Model) -> bytes:
    body = Writer(ENDIAN)
    body.bytes(bytes(HEADER_SIZE))
    offsets = []
    for name, _, _ in BLOCKS:
        body.align(ALIGNMENT)
        offsets.append(body.pos)
        body.bytes(table_bytes(model.block(name)))
    body.align(ALIGNMENT)
    offsets.append(body.pos)
    entries_at = body.pos
    body.bytes(bytes(len(model.animations) * ENTRY_DTYPE.itemsize))
    body.align(ALIGNMENT)
    data_area = body.pos

    data_offsets = []
    for animation in model.animations:
        if animation.data is None:
            data_offsets.append(0)
            continue
        start = body.pos
        data_offsets.append(start)
        chunk = Writer(ENDIAN)
        chunk.bytes(bytes(ANIMATION_HEADER_SIZE))
        relative = []
        for table in _animation_tables(animation.data):
            chunk.align(ALIGNMENT)
            relative.append(chunk.pos)
            chunk.bytes(table_bytes(table))
        chunk.align(ALIGNMENT)
        chunk.buf[:ANIMATION_HEADER_SIZE] = _animation_header(animation.data, chunk.pos, relative)
        body.bytes(chunk.getvalue())

    body.buf[:HEADER_SIZE] = _header(model, data_area, offsets)
    body.buf[entries_at : entries_at + len(model.animations) * ENTRY_DTYPE.itemsize] = _entry_table(
        model, data_offsets
    )
    return body.getvalue()
