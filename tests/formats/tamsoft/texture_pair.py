"""A model CAT + texture CAT pair laid out as measured on a real Senran Kagura pair
(../shared/notes/gxt.md, first section), written with the project's own writers, smaller:

- the model CAT holds one tmd0 (stride-28 vertices, flags 0x0DC7) and the 8-line name list whose
  first line names the package (``pl00_head``) and the model's first texture;
- the texture CAT's name list has one line per resource (``GXT,conv0,name`` opens a payload,
  ``,,name`` adds to it): 4 payloads of 5 + 1 + 1 + 1 resources, each a bundle of DDS files
  (flags 0x81007, mip count 0, no DX10 header); bundle data ends with 16 or 32 zero bytes and the
  CAT adds 32 after the first payload;
- the model's five texture entries are the first five resources; the face's entry gives half its
  real size, as the ``_hi`` files do;
- the model's stored normals are not unit length and some weights sum to 253, as in the real file.

``vita_pair`` is the same model with a texture CAT whose bundles hold Sony GXT files (UBC1, linear
8888, P8) and whose last payload is a bare GXT with two textures named by the payload's lines.
"""

from __future__ import annotations

import struct

import numpy as np
from retro_models.formats.scene import Image, Layer, Material, Mesh, Scene, Skeleton, TextureSlot
from retro_models.formats.tamsoft import convert, tmd0
from retro_models.formats.textures import dds, gxm, gxt
from tamsoft_fixtures import cat_bytes

PACKAGE = "pl00_head"
MODEL_LINES = [
    f"TMD_TOON,{PACKAGE},pl00_eye00",
    ",,pl00_face00",
    ",,toon_sdw_non",
    ",,toon_sdw_skin00",
    ",,toon_sdw_weapon00",
    ",,pl00_body00",
    ",,pl00_hilighttex",
    ",,freecos01_name",
]
TEXTURE_LINES = [
    "GXT,conv0,pl00_eye00",
    ",,pl00_face00",
    ",,toon_sdw_non",
    ",,toon_sdw_skin00",
    ",,toon_sdw_weapon00",
    "GXT,conv0,pl00_body00",
    "GXT,conv0,pl00_hilighttex",
    "GXT,conv0,freecos01_name",
]
# Per payload: (name, width, height, DDS format) of each resource.
PAYLOADS = [
    [
        ("pl00_eye00", 16, 16, "DXT1"),
        ("pl00_face00", 32, 32, "DXT1"),
        ("toon_sdw_non", 16, 4, "DXT5"),
        ("toon_sdw_skin00", 16, 4, "DXT5"),
        ("toon_sdw_weapon00", 16, 4, "DXT5"),
    ],
    [("pl00_body00", 32, 32, "DXT1")],
    [("pl00_hilighttex", 8, 8, "DXT1")],
    [("freecos01_name", 16, 8, "DXT1")],
]
TABLE_SIZES = [(16, 16), (16, 16), (16, 4), (16, 4), (16, 4)]  # the face's entry says half its size
MODEL_TEXTURES = [name for name, *_ in PAYLOADS[0]]
DATA_ZEROS = [32, 16, 16, 16]  # zero bytes ending each bundle's data block
CAT_TAILS = [32, 0, 0, 0]  # bytes the CAT adds after each payload
GRID = 5  # vertices per side of the model's grid


def blocky(width: int, height: int, seed: int, opaque: bool = True) -> np.ndarray:
    """RGBA pixels of one random colour per 4×4 block (exact through DXT within 565 precision)."""
    colours = np.random.default_rng(seed).integers(
        0, 256, (max(height // 4, 1), max(width // 4, 1), 4), np.uint8
    )
    if opaque:
        colours[..., 3] = 255
    return np.ascontiguousarray(np.repeat(np.repeat(colours, 4, axis=0), 4, axis=1)[:height, :width])


def with_mips(data: bytes, pixels: np.ndarray) -> bytes:
    """The DDS ``data`` again with a full mip chain (header flags and count set, levels regenerated)."""
    header = bytearray(dds.read(data).header)
    levels = max(pixels.shape[:2]).bit_length()
    struct.pack_into("<I", header, 8, struct.unpack_from("<I", header, 8)[0] | dds.DDSD_MIPMAPCOUNT)
    struct.pack_into("<I", header, dds.MIP_COUNT_OFFSET, levels)
    struct.pack_into("<I", header, 108, 0x401008)  # caps: complex, texture, mipmap
    return dds.reencode(bytes(header), pixels)


def bundle(resources: list[bytes], zeros: int, tail: int) -> bytes:
    """A Tamsoft bundle: header (12 + 4·count rounded to 16), resources back to back, zeros, tail."""
    header_size = -(-(12 + 4 * len(resources)) // 16) * 16
    offsets, position = [], 0
    for resource in resources:
        offsets.append(position)
        position += len(resource)
    head = struct.pack(f"<3I{len(offsets)}I", header_size, len(resources), position + zeros, *offsets)
    return head + bytes(header_size - len(head)) + b"".join(resources) + bytes(zeros) + bytes(tail)


def dds_files(mips: bool = False) -> dict[str, tuple[bytes, np.ndarray]]:
    """name → (DDS file, pixels) for every resource; ``mips``: the eye texture with a full mip chain."""
    out = {}
    for seed, (name, width, height, fmt) in enumerate(r for payload in PAYLOADS for r in payload):
        pixels = blocky(width, height, seed)
        data = dds.encode(pixels, fmt)
        if mips and name == "pl00_eye00":
            data = with_mips(data, pixels)
        out[name] = (data, dds.read(data).decode())
    return out


def texture_cat(mips: bool = False) -> bytes:
    files = dds_files(mips)
    payloads = [
        bundle([files[name][0] for name, *_ in payload], zeros, tail)
        for payload, zeros, tail in zip(PAYLOADS, DATA_ZEROS, CAT_TAILS, strict=True)
    ]
    return cat_bytes(payloads, TEXTURE_LINES)


def model_scene() -> Scene:
    """A 5×5 grid (32 triangles) skinned to two bones, one material using the face and a toon ramp."""
    axis = convert.DEFAULT_AXIS[:3, :3]
    steps = np.arange(GRID, dtype=np.float32)
    x, z = np.meshgrid(steps, steps)
    positions = np.stack([x.ravel(), np.zeros(GRID * GRID, np.float32), z.ravel()], axis=1) * 0.25
    quads = [
        (r * GRID + c, r * GRID + c + 1, (r + 1) * GRID + c + 1, (r + 1) * GRID + c)
        for r in range(4)
        for c in range(4)
    ]
    triangles = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], np.int32)
    # Stored normal bytes: mostly up (+Y in the file), tilted, never unit length; the 4th byte 255.
    rng = np.random.default_rng(7)
    raw = np.stack(
        [
            127 + rng.integers(-12, 13, GRID * GRID),
            np.full(GRID * GRID, 252),
            127 + rng.integers(-12, 13, GRID * GRID),
        ],
        axis=1,
    )
    file_normals = (raw - 127) / 128
    # Two bones; the weight bytes of every third vertex sum to 253, as the real file's do.
    first = np.linspace(255, 0, GRID * GRID).round().astype(np.int64)
    second = 255 - first - 2 * (np.arange(GRID * GRID) % 3 == 0) * (first < 254)
    weights = np.stack([first, np.maximum(second, 0)], axis=1) / 255
    mesh = Mesh(
        "grid",
        (positions @ axis.T).astype(np.float32),
        triangles,
        material_indices=np.zeros(len(triangles), np.int32),
        materials=[0],
        skeleton=0,
        normals=Layer("normal", (file_normals @ axis.T).astype(np.float32)),
        uv_layers=[Layer("UV0", np.stack([x.ravel() / 4, z.ravel() / 4], axis=1).astype(np.float32))],
        skin_joints=np.tile(np.arange(2, dtype=np.int32), (GRID * GRID, 1)),
        skin_weights=weights.astype(np.float32),
    )
    rest = np.tile(np.eye(4), (2, 1, 1))
    rest[1, 2, 3] = 1.0
    skeleton = Skeleton(PACKAGE, ["root", "head"], np.array([-1, 0], np.int32), rest)
    material = Material(
        "skin",
        textures=[
            TextureSlot(1, role="base_color", uv_layer="UV0", extras={"slot": 0, "type": 0}),
            TextureSlot(3, role="specular", uv_layer="UV0", extras={"slot": 2, "type": 4}),
        ],
    )
    images = [
        Image(name, None, w, h, extras={"index": i, "flags": 0x00FF})
        for i, (name, (w, h)) in enumerate(zip(MODEL_TEXTURES, TABLE_SIZES, strict=True))
    ]
    flags = 0x0DC7  # position, normal, uv0, interleaved, skin and the high bits of the real file
    return Scene(
        name=PACKAGE,
        skeletons=[skeleton],
        meshes=[mesh],
        materials=[material],
        images=images,
        extras={convert.KEY: {"flags": flags}},
    )


def model_bytes() -> bytes:
    return tmd0.write(convert.from_scene(model_scene()))


def model_cat() -> bytes:
    return cat_bytes([model_bytes()], MODEL_LINES)


def write_pair(folder, mips: bool = False, vita: bool = False) -> tuple[bytes, bytes]:
    """pl00_head_mdl_hi.cat and pl00_head_tex_hi.cat in ``folder``; returns their bytes."""
    model, textures = model_cat(), vita_texture_cat() if vita else texture_cat(mips)
    (folder / "pl00_head_mdl_hi.cat").write_bytes(model)
    (folder / "pl00_head_tex_hi.cat").write_bytes(textures)
    return model, textures


# -- the Vita variant ----------------------------------------------------------------------------

UBC1 = gxm.make_format(gxm.UBC1)


def gxt_file(textures: list[tuple[int, int, int, int]], pixels: list[np.ndarray]) -> bytes:
    """A GXT written by the project: records for (format, type, width, height), then each texture
    encoded by ``gxt.encode`` (P8 textures get a palette of their own)."""
    offset = gxt.HEADER.size + gxt.RECORD.size * len(textures)
    records, position, p8 = [], offset, 0
    for fmt, kind, width, height in textures:
        base = gxm.supported_base(fmt, kind, "fixture", 0)
        size = gxm.level_size(base, kind, width, height, 0, False)
        palette = p8 if gxm.base_code(fmt) == gxm.P8 else -1
        p8 += palette >= 0
        records.append(gxt.GXTTexture(position, size, palette, 0, kind, fmt, width, height, 1))
        position += -(-size // 64) * 64
    data = bytes(position - offset + p8 * gxt.PALETTE_BYTES[gxm.P8])
    container = gxt.GXT(records, data, p8_palette_count=p8)
    for index, image in enumerate(pixels):
        container = gxt.encode(container, index, image)
    return gxt.write(container)


VITA_TEXTURES = {  # name → (format word, texture type)
    "pl00_eye00": (gxm.make_format(gxm.UBC1), gxm.SWIZZLED),
    "pl00_face00": (gxm.make_format(gxm.U8U8U8U8), gxm.LINEAR),
    "toon_sdw_non": (gxm.make_format(gxm.P8), gxm.SWIZZLED),
    "toon_sdw_skin00": (gxm.make_format(gxm.UBC3), gxm.SWIZZLED),
    "toon_sdw_weapon00": (gxm.make_format(gxm.UBC3), gxm.SWIZZLED),
}


def vita_files() -> dict[str, tuple[bytes, np.ndarray]]:
    """name → (GXT file, pixels) of the five model textures."""
    out = {}
    for seed, (name, width, height, _) in enumerate(PAYLOADS[0]):
        fmt, kind = VITA_TEXTURES[name]
        pixels = blocky(width, height, 100 + seed)
        data = gxt_file([(fmt, kind, width, height)], [pixels])
        out[name] = (data, gxt.decode(gxt.read(data), 0))
    return out


def vita_texture_cat() -> bytes:
    """Bundles of GXT files, and a last payload that is one bare GXT holding two textures."""
    files = vita_files()
    body = gxt_file([(UBC1, gxm.SWIZZLED, 32, 32)], [blocky(32, 32, 5)])
    pair = gxt_file(
        [(UBC1, gxm.SWIZZLED, 8, 8), (UBC1, gxm.SWIZZLED, 16, 8)], [blocky(8, 8, 6), blocky(16, 8, 7)]
    )
    payloads = [
        bundle([files[name][0] for name in MODEL_TEXTURES], 32, 32),
        bundle([body], 16, 0),
        pair,
    ]
    lines = [*TEXTURE_LINES[:6], "GXT,conv0,pl00_hilighttex", ",,freecos01_name"]
    return cat_bytes(payloads, lines)
