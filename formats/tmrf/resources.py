"""The data of each TMRF resource type: dataclasses that mirror the spec's structs.

Every content class reads itself from a ``Reader`` bounded to the resource's
data, writes itself to a ``Writer``, and lists the counts it adds to the hints
(DTL). String fields hold the raw file values: ``string`` fields are 1-based
(0 = none), ``ident`` fields 0-based, both into ``MediaFile.strings``.
Scalar floats are ``np.float32`` and arrays keep the file's float32 values, so
that every bit survives (decision 14: −0.0 keeps its sign).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from functools import lru_cache
from typing import ClassVar

import numpy as np

from ..binary import Reader, Writer

TABLE_OF_CONTENTS = "TableOfContents"
HINTS = "Hints"
SKELETON = "AX3Skeleton"
POINTS = "3DPoints"
SKELETAL_DEFORM = "AX3SkeletalDeform"
FRAME_ANIMATION = "AX3FrameAnimation"
TRACK_ANIMATION = "AX3TrackAnimation"
TRIANGLE_MESH = "TriangleMesh"
NORMALS = "Normals"
COMPRESSED_NORMALS = "CompressedNormals"
TEXTURE = "Texture"
TEXTURE_COORDINATES = "TextureCoordinates"
TANGENT_VECTORS = "TangentVectors"
COMPRESSED_TANGENT_VECTORS = "CompressedTangentVectors"
HIGH_COMPRESSED_TANGENT_VECTORS = "HighCompressedTangentVectors"
# Decision 12: the spec's text also calls this type "TangentVectorsCompressedHigh".
TYPE_SYNONYMS = {"TangentVectorsCompressedHigh": HIGH_COMPRESSED_TANGENT_VECTORS}

BONE_DTYPE = np.dtype([("parent", ">u4"), ("name", ">u4"), ("position", ">f4", 3), ("orientation", ">f4", 4)])
WEIGHT_DTYPE = np.dtype([("binding", ">u4"), ("factor", ">f4")])
KEY_DTYPE = np.dtype([("time", ">f4"), ("position", ">f4", 3), ("orientation", ">f4", 4)])
TOC_ENTRY_DTYPE = np.dtype([("name", ">u4"), ("dtl", ">u4"), ("type", ">u4"), ("offset", ">u4")])
HINT_DTYPE = np.dtype([("type", ">u4"), ("data", ">u4"), ("count", ">u4")])

# Frame animation compression flags.
COPY_POSITION = (1, 2, 4)
COPY_ORIENTATION = (8, 16, 32)
REGENERATE_W = 64
ORIENTATION_S16 = 128
S16_SCALE = 32767.0


def _f32(r: Reader, what: str) -> np.float32:
    return r.array(">f4", 1, what)[0]


def _write_f32(w: Writer, value) -> None:
    w.bytes(np.array([value], ">f4").tobytes())


@dataclass(eq=False)
class Opaque:
    """Decisions 4 and 5: shader resources and unknown types are kept as their bytes."""

    data: bytes = b""

    @classmethod
    def read(cls, r: Reader, owner) -> Opaque:
        return cls(r.bytes(r.remaining, "resource data"))

    def write(self, w: Writer) -> None:
        w.bytes(self.data)


@dataclass(eq=False)
class TableOfContents:
    """Entries {name (string), DTL name (string), type (ident), resource}.

    ``resource`` is the index of the resource in file order (``MediaFile.walk()``);
    the writer turns it into the byte offset of that resource's header.
    """

    names: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    dtls: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    types: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    resources: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    offsets: np.ndarray | None = None  # as read; resolved to ``resources`` by the container

    @classmethod
    def read(cls, r: Reader, owner) -> TableOfContents:
        entries = r.array(TOC_ENTRY_DTYPE, r.u32("TOC entry count"), "TOC entries")
        return cls(
            entries["name"].astype(np.uint32),
            entries["dtl"].astype(np.uint32),
            entries["type"].astype(np.uint32),
            np.full(len(entries), -1, np.int64),
            entries["offset"].astype(np.int64),
        )

    def write(self, w: Writer, header_offsets: np.ndarray | None = None) -> None:
        entries = np.zeros(len(self.names), TOC_ENTRY_DTYPE)
        entries["name"], entries["dtl"], entries["type"] = self.names, self.dtls, self.types
        if header_offsets is not None:
            entries["offset"] = header_offsets[self.resources]
        w.u32(len(entries))
        w.array(entries)


@dataclass(eq=False)
class Hints:
    """Dynamic total hints: (resource type ident, data type ident, count)."""

    types: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    data_types: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))

    @classmethod
    def read(cls, r: Reader, owner) -> Hints:
        entries = r.array(HINT_DTYPE, r.u32("hint count"), "hints")
        return cls(*(entries[k].astype(np.uint32) for k in ("type", "data", "count")))

    def write(self, w: Writer) -> None:
        entries = np.zeros(len(self.types), HINT_DTYPE)
        entries["type"], entries["data"], entries["count"] = self.types, self.data_types, self.counts
        w.u32(len(entries))
        w.array(entries)


@dataclass(eq=False)
class Skeleton:
    bones: np.ndarray = field(default_factory=lambda: np.zeros(0, BONE_DTYPE))  # BONE_DTYPE

    @classmethod
    def read(cls, r: Reader, owner) -> Skeleton:
        start = r.pos
        bones = r.array(BONE_DTYPE, r.u32("bone count"), "bones")
        parents = bones["parent"].astype(np.int64)
        # Decision 6: parents are 1-based (0 = none) and precede their children.
        bad = np.flatnonzero(parents > np.arange(len(bones)))
        if len(bad):
            i = int(bad[0])
            raise r.error(
                f"bone {i} has parent {parents[i]}, which is not a bone listed before it "
                "(parents are 1-based and must precede their children)",
                start + 4 + i * BONE_DTYPE.itemsize,
            )
        return cls(bones)

    def write(self, w: Writer) -> None:
        w.u32(len(self.bones))
        w.array(self.bones, BONE_DTYPE)

    def hint_counts(self) -> list[tuple[str, int]]:
        return [("Bone", len(self.bones))]


@dataclass(eq=False)
class PointList:
    points: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))  # (N, 3)

    @classmethod
    def read(cls, r: Reader, owner) -> PointList:
        return cls(r.array((">f4", 3), r.u32("point count"), "points").astype(np.float32))

    def write(self, w: Writer) -> None:
        w.u32(len(self.points))
        w.array(self.points, ">f4")

    def hint_counts(self) -> list[tuple[str, int]]:
        return [("Point", len(self.points))]


@dataclass(eq=False)
class SkeletalDeform:
    """Weight blends shared by the points of the owning point list.

    Blend ``i`` is ``weights[starts[i] : starts[i] + weight_counts[i]]``;
    ``point_blends`` picks one blend per point (decision 11: as many as the
    owner has points; binding indices 0-based).
    """

    skeleton: int = 0  # string
    bindings: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))  # strings
    weight_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    weights: np.ndarray = field(default_factory=lambda: np.zeros(0, WEIGHT_DTYPE))
    point_blends: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))

    @property
    def starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.weight_counts, dtype=np.int64)[:-1]]).astype(np.int64)

    @classmethod
    def read(cls, r: Reader, owner: PointList) -> SkeletalDeform:
        skeleton, binding_count, blend_count = r.unpack("3I", "skeletal deformation header")
        bindings = r.array(">u4", binding_count, "bone bindings").astype(np.uint32)
        r.check_count(blend_count, 4, "weight blends")
        # Blends are variable-sized, so finding where each starts is a walk over their counts.
        counts = np.zeros(blend_count, np.int64)
        pos, data, end = r.pos, r.data, r.end
        for i in range(blend_count):
            if end - pos < 4:
                raise r.error(f"expected weight blend {i} of {blend_count} but the resource ends", pos)
            count = struct.unpack_from(">I", data, pos)[0]
            if count > (end - pos - 4) // WEIGHT_DTYPE.itemsize:
                raise r.error(f"weight blend {i} has {count} weights, more than the resource holds", pos)
            counts[i] = count
            pos += 4 + count * WEIGHT_DTYPE.itemsize
        words = np.frombuffer(data, ">u4", (pos - r.pos) // 4, r.pos)
        count_words = np.arange(blend_count) + 2 * np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(
            np.int64
        )
        is_weight = np.ones(len(words), bool)
        is_weight[count_words] = False
        weights = words[is_weight].copy().view(WEIGHT_DTYPE)
        r.pos = pos
        point_blends = r.array(">u4", len(owner.points), "per-point blend indices").astype(np.uint32)
        if len(weights) and int(weights["binding"].max()) >= binding_count:
            raise r.error(f"a weight uses bone binding {int(weights['binding'].max())} of {binding_count}")
        if len(point_blends) and int(point_blends.max()) >= blend_count:
            raise r.error(f"a point uses weight blend {int(point_blends.max())} of {blend_count}")
        return cls(skeleton, bindings, counts.astype(np.uint32), weights, point_blends)

    def write(self, w: Writer) -> None:
        counts = np.asarray(self.weight_counts, np.int64)
        w.pack("3I", self.skeleton, len(self.bindings), len(counts))
        w.array(self.bindings, ">u4")
        words = np.zeros(len(counts) + 2 * len(self.weights), ">u4")
        count_words = np.arange(len(counts)) + 2 * np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(
            np.int64
        )
        is_weight = np.ones(len(words), bool)
        is_weight[count_words] = False
        words[count_words] = counts
        words[is_weight] = np.asarray(self.weights, WEIGHT_DTYPE).view(">u4")
        w.array(words)
        w.array(self.point_blends, ">u4")

    def hint_counts(self) -> list[tuple[str, int]]:
        return [
            ("BoneBinding", len(self.bindings)),
            ("WeightBlend", len(self.weight_counts)),
            ("Weight", len(self.weights)),
        ]


@dataclass(eq=False)
class FrameBone:
    """One bone of a frame animation: base pose, compression flags and the values kept per frame.

    Decision 3: frame-major; each frame holds the position components whose
    copy flag is clear (f32), then the orientation components x, y, z whose
    copy flag is clear and w unless it is regenerated (f32, or s16 with flag 128).
    """

    bone: int = 0  # string
    base_position: np.ndarray = field(default_factory=lambda: np.zeros(3, np.float32))
    base_orientation: np.ndarray = field(
        default_factory=lambda: np.array([0, 0, 0, 1], np.float32)
    )  # x, y, z, w
    flags: int = 0
    positions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))  # (F, kept)
    orientations: np.ndarray = field(
        default_factory=lambda: np.zeros((0, 4), np.float32)
    )  # (F, kept) f32 or i16

    @staticmethod
    def kept(flags: int) -> tuple[list[int], list[int]]:
        """Indices of the position (0..2) and orientation (0..3 = x, y, z, w) values stored per frame."""
        positions = [i for i, bit in enumerate(COPY_POSITION) if not flags & bit]
        orientations = [i for i, bit in enumerate(COPY_ORIENTATION) if not flags & bit]
        if not flags & REGENERATE_W:
            orientations.append(3)
        return positions, orientations

    @staticmethod
    @lru_cache(maxsize=256)  # a few flag sets, one dtype each, asked for by every bone read
    def frame_dtype(flags: int) -> np.dtype:
        positions, orientations = FrameBone.kept(flags)
        orientation_type = ">i2" if flags & ORIENTATION_S16 else ">f4"
        return np.dtype([("p", ">f4", (len(positions),)), ("o", orientation_type, (len(orientations),))])

    def decode(self) -> tuple[np.ndarray, np.ndarray]:
        """Full (F, 3) positions and (F, 4) x, y, z, w orientations (float64)."""
        positions, orientations = decode_bones([self])
        return positions[0], orientations[0]

    def set_frames(self, positions: np.ndarray, orientations: np.ndarray) -> None:
        """Store full (F, 3) positions and (F, 4) x, y, z, w orientations under the current flags."""
        kept_positions, kept_orientations = self.kept(self.flags)
        self.positions = np.asarray(positions, np.float32)[:, kept_positions]
        values = np.asarray(orientations, np.float64)[:, kept_orientations]
        if self.flags & ORIENTATION_S16:
            self.orientations = np.clip(np.rint(values * S16_SCALE), -32768, 32767).astype(np.int16)
        else:
            self.orientations = values.astype(np.float32)


def decode_bones(bones: list[FrameBone]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``FrameBone.decode`` of each of ``bones``: the bones of one compression and frame count together."""
    positions: list = [None] * len(bones)
    orientations: list = [None] * len(bones)
    groups: dict[tuple, list[int]] = {}
    for b, bone in enumerate(bones):
        groups.setdefault((bone.flags, len(bone.positions)), []).append(b)
    for (flags, frames), members in groups.items():
        kept_positions, kept_orientations = FrameBone.kept(flags)
        group = [bones[b] for b in members]
        p = np.repeat(np.stack([g.base_position for g in group]).astype(np.float64)[:, None], frames, 1)
        p[:, :, kept_positions] = np.stack([g.positions for g in group])
        o = np.repeat(np.stack([g.base_orientation for g in group]).astype(np.float64)[:, None], frames, 1)
        stored = np.stack([g.orientations for g in group]).astype(np.float64)
        if flags & ORIENTATION_S16:
            stored /= S16_SCALE
        o[:, :, kept_orientations] = stored
        if flags & REGENERATE_W:
            # Decision 3: a regenerated W is sqrt(max(0, 1 − x² − y² − z²)).
            o[:, :, 3] = np.sqrt(np.maximum(0.0, 1.0 - np.sum(o[:, :, :3] ** 2, axis=2)))
        for n, b in enumerate(members):
            positions[b], orientations[b] = p[n], o[n]
    return positions, orientations


@dataclass(eq=False)
class FrameAnimation:
    skeleton: int = 0  # string
    frame_count: int = 0
    fps: np.float32 = np.float32(30)
    bones: list[FrameBone] = field(default_factory=list)

    @classmethod
    def read(cls, r: Reader, owner) -> FrameAnimation:
        skeleton, frame_count, bone_count = r.unpack("3I", "frame animation header")
        fps = _f32(r, "frames per second")
        r.check_count(bone_count, 36, "animated bones")
        bones = []
        for _ in range(bone_count):
            bone = r.u32("bone name")
            base = r.array(">f4", 7, "base pose").astype(np.float32)
            flags = r.u32("compression flags")
            dtype = FrameBone.frame_dtype(flags)
            if dtype.itemsize:
                frames = r.array(dtype, frame_count, "frame data")
                values = frames["p"].astype(np.float32), frames["o"].astype(dtype["o"].base.newbyteorder("="))
            else:
                values = np.zeros((frame_count, 0), np.float32), np.zeros((frame_count, 0), np.float32)
            bones.append(FrameBone(bone, base[:3], base[3:], flags, *values))
        return cls(skeleton, frame_count, fps, bones)

    def write(self, w: Writer) -> None:
        w.pack("3I", self.skeleton, self.frame_count, len(self.bones))
        _write_f32(w, self.fps)
        for bone in self.bones:
            w.u32(bone.bone)
            w.array(np.concatenate([bone.base_position, bone.base_orientation]), ">f4")
            w.u32(bone.flags)
            dtype = FrameBone.frame_dtype(bone.flags)
            if len(bone.positions) != self.frame_count or len(bone.orientations) != self.frame_count:
                raise ValueError(
                    f"frame animation bone {bone.bone}: frame data does not hold {self.frame_count} frames"
                )
            frames = np.zeros(self.frame_count, dtype)
            frames["p"], frames["o"] = bone.positions, bone.orientations
            w.array(frames)

    def hint_counts(self) -> list[tuple[str, int]]:
        # Decision 9: Float32 and SInt16 count the values packed in frame data only.
        float32 = sint16 = 0
        for bone in self.bones:
            positions, orientations = FrameBone.kept(bone.flags)
            float32 += len(positions) * self.frame_count
            if bone.flags & ORIENTATION_S16:
                sint16 += len(orientations) * self.frame_count
            else:
                float32 += len(orientations) * self.frame_count
        return [
            ("Frame", self.frame_count),
            ("BoneBinding", len(self.bones)),
            ("Float32", float32),
            ("SInt16", sint16),
        ]


@dataclass(eq=False)
class TrackAnimation:
    name: int = 0  # string
    skeleton: int = 0  # string
    length: np.float32 = np.float32(0)  # seconds
    bindings: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))  # strings
    tracks: list[np.ndarray] = field(default_factory=list)  # KEY_DTYPE per binding

    @classmethod
    def read(cls, r: Reader, owner) -> TrackAnimation:
        name, skeleton = r.unpack("2I", "track animation names")
        length = _f32(r, "animation length")
        bindings = r.array(">u4", r.u32("bone binding count"), "bone bindings").astype(np.uint32)
        r.check_count(len(bindings), 4, "animation tracks")
        tracks = [r.array(KEY_DTYPE, r.u32("key count"), "keys") for _ in bindings]
        return cls(name, skeleton, length, bindings, tracks)

    def write(self, w: Writer) -> None:
        if len(self.tracks) != len(self.bindings):
            raise ValueError("a track animation needs one track per bone binding")
        w.pack("2I", self.name, self.skeleton)
        _write_f32(w, self.length)
        w.u32(len(self.bindings))
        w.array(self.bindings, ">u4")
        for track in self.tracks:
            w.u32(len(track))
            w.array(track, KEY_DTYPE)

    def hint_counts(self) -> list[tuple[str, int]]:
        return [("BoneBinding", len(self.bindings)), ("Key", sum(len(t) for t in self.tracks))]


@dataclass(eq=False)
class TriangleMesh:
    point_list: int = 0  # string
    vertex_points: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))  # (V,)
    triangles: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.uint32))  # (T, 3)

    @classmethod
    def read(cls, r: Reader, owner) -> TriangleMesh:
        point_list, vertex_count, triangle_count = r.unpack("3I", "triangle mesh header")
        vertex_points = r.array(">u4", vertex_count, "vertex point indices").astype(np.uint32)
        start = r.pos
        triangles = r.array((">u4", 3), triangle_count, "triangles").astype(np.uint32)
        if triangles.size and int(triangles.max()) >= vertex_count:
            bad = int(np.argmax(triangles.max(axis=1) >= vertex_count))
            raise r.error(
                f"triangle {bad} uses a vertex beyond the {vertex_count} vertices", start + 12 * bad
            )
        return cls(point_list, vertex_points, triangles)

    def write(self, w: Writer) -> None:
        w.pack("3I", self.point_list, len(self.vertex_points), len(self.triangles))
        w.array(self.vertex_points, ">u4")
        w.array(self.triangles, ">u4")

    def hint_counts(self) -> list[tuple[str, int]]:
        return [("Vertex", len(self.vertex_points)), ("Triangle", len(self.triangles))]


@dataclass(eq=False)
class Texture:
    texture: int = 0  # string

    @classmethod
    def read(cls, r: Reader, owner) -> Texture:
        return cls(r.u32("texture name"))

    def write(self, w: Writer) -> None:
        w.u32(self.texture)


class _VertexList:
    """A per-vertex list without its own count (decision 11: the owning mesh's vertex count)."""

    DTYPE: ClassVar[np.dtype]

    @classmethod
    def read(cls, r: Reader, owner: TriangleMesh):
        values = r.array(cls.DTYPE, len(owner.vertex_points), cls.__name__)
        return cls(
            *(values[name].astype(values.dtype[name].base.newbyteorder("=")) for name in cls.DTYPE.names)
        )

    def write(self, w: Writer) -> None:
        names = self.DTYPE.names
        values = np.zeros(len(getattr(self, names[0])), self.DTYPE)
        for name in names:
            values[name] = getattr(self, name)
        w.array(values)


@dataclass(eq=False)
class Normals(_VertexList):
    DTYPE = np.dtype([("normals", ">f4", (3,))])
    normals: np.ndarray  # (V, 3) float32


@dataclass(eq=False)
class CompressedNormals(_VertexList):
    DTYPE = np.dtype([("coefficients", ">u2", (2,))])
    coefficients: np.ndarray  # (V, 2) uint16: A, B


@dataclass(eq=False)
class TextureCoordinates(_VertexList):
    DTYPE = np.dtype([("coordinates", ">f4", (2,))])
    coordinates: np.ndarray  # (V, 2) float32


@dataclass(eq=False)
class TangentVectors(_VertexList):
    DTYPE = np.dtype([("horizontal", ">f4", (3,)), ("vertical", ">f4", (3,))])
    horizontal: np.ndarray  # (V, 3) float32
    vertical: np.ndarray  # (V, 3) float32


@dataclass(eq=False)
class CompressedTangentVectors(_VertexList):
    DTYPE = np.dtype([("horizontal", ">f4", (3,)), ("multipliers", ">f4")])
    horizontal: np.ndarray  # (V, 3) float32
    multipliers: np.ndarray  # (V,) float32


@dataclass(eq=False)
class HighCompressedTangentVectors(_VertexList):
    DTYPE = np.dtype([("coefficients", ">u2")])
    coefficients: np.ndarray  # (V,) uint16: C


# type name → (content class, the type names its parent may have; None = anywhere).
# Decision 2: where the spec's wording places each subresource.
CONTENT_TYPES: dict[str, tuple[type, tuple[str, ...] | None]] = {
    TABLE_OF_CONTENTS: (TableOfContents, None),
    HINTS: (Hints, None),
    SKELETON: (Skeleton, None),
    POINTS: (PointList, None),
    SKELETAL_DEFORM: (SkeletalDeform, (POINTS,)),
    FRAME_ANIMATION: (FrameAnimation, None),
    TRACK_ANIMATION: (TrackAnimation, None),
    TRIANGLE_MESH: (TriangleMesh, None),
    NORMALS: (Normals, (TRIANGLE_MESH,)),
    COMPRESSED_NORMALS: (CompressedNormals, (TRIANGLE_MESH,)),
    TEXTURE: (Texture, (TRIANGLE_MESH,)),
    TEXTURE_COORDINATES: (TextureCoordinates, (TEXTURE,)),
    TANGENT_VECTORS: (TangentVectors, (TEXTURE,)),
    COMPRESSED_TANGENT_VECTORS: (CompressedTangentVectors, (TEXTURE,)),
    HIGH_COMPRESSED_TANGENT_VECTORS: (HighCompressedTangentVectors, (TEXTURE,)),
}
# Decision 4: the shader resources are known but kept as bytes.
SHADER_TYPES = ("TMatVariants", "TMatCompiledShader")
# Resource types whose data adds to the hints, with their data type names in spec order (decision 9).
HINTED_TYPES = {
    SKELETON: ("Bone",),
    POINTS: ("Point",),
    SKELETAL_DEFORM: ("BoneBinding", "WeightBlend", "Weight"),
    FRAME_ANIMATION: ("Frame", "BoneBinding", "Float32", "SInt16"),
    TRACK_ANIMATION: ("BoneBinding", "Key"),
    TRIANGLE_MESH: ("Vertex", "Triangle"),
}
