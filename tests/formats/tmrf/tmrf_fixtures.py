"""A TMRF file assembled by hand with struct.pack, holding every resource type of the spec.

Nothing here uses the project's writer: the layout follows the spec and the
decisions of the project's notes, and every value below is what the tests
expect to read back.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

STRINGS = [
    "TableOfContents",  # 0
    "Hints",  # 1
    "AX3Skeleton",  # 2
    "3DPoints",  # 3
    "AX3SkeletalDeform",  # 4
    "TriangleMesh",  # 5
    "Normals",  # 6
    "CompressedNormals",  # 7
    "Texture",  # 8
    "TextureCoordinates",  # 9
    "TangentVectors",  # 10
    "CompressedTangentVectors",  # 11
    "HighCompressedTangentVectors",  # 12
    "AX3FrameAnimation",  # 13
    "AX3TrackAnimation",  # 14
    "TMatVariants",  # 15
    "Mystery",  # 16 (a type this reader does not know)
    "root",  # 17
    "arm",  # 18
    "skel",  # 19
    "pts",  # 20
    "mesh",  # 21
    "wood",  # 22
    "walk",  # 23
    "run",  # 24
    "BoneBinding",  # 25
    "Bone",  # 26: shares the pool bytes of "BoneBinding"
    "Point",  # 27
    "WeightBlend",  # 28
    "Weight",  # 29: shares the pool bytes of "WeightBlend"
    "Vertex",  # 30
    "Triangle",  # 31
    "Frame",  # 32
    "Float32",  # 33
    "SInt16",  # 34
    "Key",  # 35
    "shaders",  # 36
    "unused",  # 37: referenced by nothing
]
SHARED = {"Bone": "BoneBinding", "Weight": "WeightBlend"}


def ident(text: str) -> int:
    return STRINGS.index(text)


def ref(text: str) -> int:
    return STRINGS.index(text) + 1


def string_section(
    strings: list[str] = STRINGS, shared: dict[str, str] = SHARED
) -> tuple[bytes, list[tuple[int, int]]]:
    pool = b""
    spans = []
    offsets = {}
    for text in strings:
        if text in shared:
            spans.append((len(text), offsets[shared[text]]))
            continue
        offsets[text] = len(pool)
        spans.append((len(text), len(pool)))
        pool += text.encode()
    return pool, spans


@dataclass
class Res:
    """A resource to assemble: type ident, data bytes, subresources, TOC name and DTL."""

    type: int
    data: bytes
    children: list[Res] = field(default_factory=list)
    name: str | None = None
    dtl: str | None = "Hints"
    in_toc: bool = True


def f32(*values: float) -> bytes:
    return struct.pack(f">{len(values)}f", *values)


def u32(*values: int) -> bytes:
    return struct.pack(f">{len(values)}I", *values)


def skeleton() -> Res:
    bones = u32(0, ref("root")) + f32(1, 2, 3) + f32(0, 0, 0, 1)
    bones += u32(1, ref("arm")) + f32(0, 1.5, 0) + f32(0, 0, 0.6, 0.8)
    return Res(ident("AX3Skeleton"), u32(2) + bones, name="skel")


def points() -> Res:
    data = u32(4) + f32(0, 0, 0, 1, 0, 0, 0, 1, 0, 5, 5, 5)
    deform = u32(ref("skel"), 2, 2, ref("root"), ref("arm"))
    deform += u32(1, 0) + f32(1.0)  # blend 0: root 1.0
    deform += u32(2, 0) + f32(0.25) + u32(1) + f32(0.75)  # blend 1: root 0.25, arm 0.75
    deform += u32(0, 1, 1, 0)  # one blend per point
    return Res(ident("3DPoints"), data, [Res(ident("AX3SkeletalDeform"), deform)], name="pts")


HIGH_C = (0, 8192, 40960)
COMPRESSED_AB = ((0, 0), (16384, 32768), (49152, 65535))


def mesh() -> Res:
    data = u32(ref("pts"), 3, 1, 0, 1, 2) + u32(0, 1, 2)
    normals = f32(0, 0, 1, 0, 0, 1, 0, 0, 1)
    compressed = struct.pack(">6H", *(v for ab in COMPRESSED_AB for v in ab))
    coordinates = f32(0, 0, 1, 0, 0, 1)
    tangents = f32(1, 0, 0, 0, 1, 0) * 3
    compressed_tangents = (f32(1, 0, 0) + f32(-1)) * 3
    high = struct.pack(">3H", *HIGH_C)
    texture = Res(
        ident("Texture"),
        u32(ref("wood")),
        [
            Res(ident("TextureCoordinates"), coordinates),
            Res(ident("TangentVectors"), tangents),
            Res(ident("CompressedTangentVectors"), compressed_tangents),
            Res(ident("HighCompressedTangentVectors"), high),
        ],
    )
    children = [Res(ident("Normals"), normals), Res(ident("CompressedNormals"), compressed), texture]
    return Res(ident("TriangleMesh"), data, children, name="mesh")


def frame_animation() -> Res:
    data = u32(ref("skel"), 2, 2) + f32(24.0)
    # root: no compression, 7 f32 per frame
    data += u32(ref("root")) + f32(1, 2, 3, 0, 0, 0, 1) + u32(0)
    data += f32(1, 2, 3, 0, 0, 0, 1) + f32(1, 2, 4, 0, 0.6, 0, 0.8)
    # arm: position and orient x, y copied, W regenerated, orientation s16: only z per frame
    data += u32(ref("arm")) + f32(0, 1.5, 0, 0, 0, 0.6, 0.8) + u32(1 | 2 | 4 | 8 | 16 | 64 | 128)
    data += struct.pack(">2h", 16384, -32767)
    return Res(ident("AX3FrameAnimation"), data, name="walk")


def track_animation() -> Res:
    data = u32(ref("run"), ref("skel")) + f32(1.5) + u32(1, ref("root"))
    data += u32(2) + f32(0, -0.0, 0, 0, 0, 0, 0, 1) + f32(1.5, 1, 0, 0, 0, 0, 1, 0)
    return Res(ident("AX3TrackAnimation"), data, name="run")


HINTS = [
    ("AX3Skeleton", "Bone", 2),
    ("3DPoints", "Point", 4),
    ("AX3SkeletalDeform", "BoneBinding", 2),
    ("AX3SkeletalDeform", "WeightBlend", 2),
    ("AX3SkeletalDeform", "Weight", 3),
    ("TriangleMesh", "Vertex", 3),
    ("TriangleMesh", "Triangle", 1),
    ("AX3FrameAnimation", "Frame", 2),
    ("AX3FrameAnimation", "BoneBinding", 2),
    ("AX3FrameAnimation", "Float32", 14),
    ("AX3FrameAnimation", "SInt16", 2),
    ("AX3TrackAnimation", "BoneBinding", 1),
    ("AX3TrackAnimation", "Key", 2),
]


def hints(entries=HINTS) -> Res:
    data = u32(len(entries)) + b"".join(u32(ident(t), ident(d), c) for t, d, c in entries)
    return Res(ident("Hints"), data, name="Hints", dtl=None)


def body(hint_entries=HINTS) -> list[Res]:
    return [
        hints(hint_entries),
        skeleton(),
        points(),
        mesh(),
        frame_animation(),
        track_animation(),
        Res(ident("TMatVariants"), b"\x00\x00\x00\x02opaque", name="shaders"),
        Res(ident("Mystery"), b"\x01\x02\x03"),
    ]


def _size(r: Res) -> int:
    return 12 + len(r.data) + sum(_size(c) for c in r.children)


def _flatten(resources: list[Res]) -> list[Res]:
    out = []
    for r in resources:
        out.append(r)
        out.extend(_flatten(r.children))
    return out


def _emit(r: Res) -> bytes:
    children = b"".join(_emit(c) for c in r.children)
    sub = 12 + len(r.data) if r.children else 0
    return u32(r.type, len(r.data) + len(children), sub) + r.data + children


def assemble(resources: list[Res], strings: list[str] = STRINGS, shared=SHARED, version: int = 1) -> bytes:
    """The file: header, strings, a TOC listing every resource in file order, the resources."""
    pool, spans = string_section(strings, shared)
    listed = [r for r in _flatten(resources) if r.in_toc]
    toc_size = 12 + 4 + 16 * len(listed)
    start = 8 + 12 + len(pool) + 8 * len(spans)
    offsets = {}
    position = start + toc_size
    for r in resources:
        for node, offset in _offsets(r, position):
            offsets[id(node)] = offset
        position += _size(r)
    entries = b"".join(
        u32(
            ref(r.name) if r.name else 0,
            ref(r.dtl) if r.dtl else 0,
            r.type,
            offsets[id(r)],
        )
        for r in listed
    )
    toc = u32(ident("TableOfContents"), toc_size - 12, 0) + u32(len(listed)) + entries
    head = b"TDPMedia" + u32(version, len(pool), len(spans)) + pool + b"".join(u32(*s) for s in spans)
    return head + toc + b"".join(_emit(r) for r in resources)


def _offsets(r: Res, position: int):
    yield r, position
    child = position + 12 + len(r.data)
    for c in r.children:
        yield from _offsets(c, child)
        child += _size(c)


def full_file() -> bytes:
    return assemble(body())


def header_size() -> int:
    pool, spans = string_section()
    return 20 + len(pool) + 8 * len(spans)
