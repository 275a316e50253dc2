"""J3D materials as Blender can show them: the MAT3 tables parsed, and the TEV approximated.

MAT3 keeps its tables as the file's bytes (so writing stays byte-exact); ``read_tables`` views
them as numpy records. ``approximate`` turns one material into a Scene material:

- base colour: the texture of the first TEV stage whose order names a texture map, on the UV
  layer of its texgen's source (``uv_layer_name``), times vertex colour CLR0
  (``color_layer_name``) when colour channel 0 takes its material colour from the vertices,
  else times material colour 0;
- alpha compare (GEQUAL / GREATER r) → alpha clip above r / 255; blend (src-alpha,
  inv-src-alpha) or the translucent mode flag → alpha blend; (src-alpha or one, one) → additive;
- cull back → backface culling; lighting off on channel 0 → unlit;
- the texgen's texture matrix → the slot's transform about its centre (V flipped, as BTK keys
  are); wrap and min filter of the TEX1 header → extension and interpolation.

What this cannot show (indirect stages, more than one TEV stage, texgens from normals or
positions) is named in the material's extras (``unshown``) and summed up once per material set
(``Scene.warnings``); the material record itself stays in extras (``mat3``).

Mesh layers follow the same names: the model importer names TEXn's UV layer
``uv_layer_name(n)`` and CLRn's colour layer ``color_layer_name(n)``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import FormatError
from ..scene import Image, Material, TextureSlot
from ..textures import gx
from . import tex1 as tex1_module
from .mat3 import MAT3, MATERIAL_DTYPE

NONE = 0xFFFF
NO_MAP = 0xFF  # TEV order: no texture coordinate / texture map

# GX enumerations the approximation reads (see ../shared/notes/j3d-models.md §8).
CULL_FRONT, CULL_BACK, CULL_ALL = 1, 2, 3  # 0: none
BLEND_BLEND = 1  # 0 none, 2 logic, 3 subtract
FACTOR_ONE, FACTOR_SRC_ALPHA = 1, 4
COMPARE_LEQUAL, COMPARE_GREATER, COMPARE_GEQUAL, COMPARE_ALWAYS = 3, 4, 6, 7
ALPHA_OP_AND, ALPHA_OP_OR = 0, 1
MODE_TRANSLUCENT = 4  # material record flag
SOURCE_VERTEX = 1  # colour channel material source
TEXGEN_SOURCE_TEX0 = 4  # texgen sources 4..11 are TEX0..TEX7
TEXGEN_MATRIX_TEX0 = 30  # texgen matrix 30 + 3k is texture matrix k; 60 is identity
TEXGEN_MATRIX_IDENTITY = 60
TEXGEN_SOURCES = {0: "positions", 1: "normals", 2: "binormals", 3: "tangents"}

COLOR_DTYPE = np.dtype(("u1", (4,)))
COLOR_CHANNEL_DTYPE = np.dtype(
    [
        ("lighting", "u1"),
        ("material_source", "u1"),
        ("light_mask", "u1"),
        ("diffuse", "u1"),
        ("attenuation", "u1"),
        ("ambient_source", "u1"),
        ("pad", "V2"),
    ]
)
TEXGEN_DTYPE = np.dtype([("type", "u1"), ("source", "u1"), ("matrix", "u1"), ("pad", "u1")])
TEXTURE_MATRIX_DTYPE = np.dtype(
    [
        ("projection", "u1"),
        ("mode", "u1"),
        ("pad0", ">u2"),
        ("center", ">f4", (3,)),
        ("scale", ">f4", (2,)),
        ("rotation", ">i2"),  # half-turns × 1/32768
        ("pad1", ">u2"),
        ("translate", ">f4", (2,)),
        ("effect", ">f4", (4, 4)),
    ]
)
TEV_ORDER_DTYPE = np.dtype([("texcoord", "u1"), ("texmap", "u1"), ("channel", "u1"), ("pad", "u1")])
TEV_COLOR_DTYPE = np.dtype((">i2", (4,)))
TEV_STAGE_DTYPE = np.dtype(
    [
        ("unknown", "u1"),
        ("color_in", "u1", (4,)),
        ("color_op", "u1"),
        ("color_bias", "u1"),
        ("color_scale", "u1"),
        ("color_clamp", "u1"),
        ("color_dest", "u1"),
        ("alpha_in", "u1", (4,)),
        ("alpha_op", "u1"),
        ("alpha_bias", "u1"),
        ("alpha_scale", "u1"),
        ("alpha_clamp", "u1"),
        ("alpha_dest", "u1"),
        ("pad", "u1"),
    ]
)
ALPHA_COMPARE_DTYPE = np.dtype(
    [("comp0", "u1"), ("ref0", "u1"), ("op", "u1"), ("comp1", "u1"), ("ref1", "u1"), ("pad", "V3")]
)
BLEND_DTYPE = np.dtype([("mode", "u1"), ("source", "u1"), ("destination", "u1"), ("logic", "u1")])
Z_MODE_DTYPE = np.dtype([("enable", "u1"), ("function", "u1"), ("write", "u1"), ("pad", "u1")])
INDIRECT_DTYPE = np.dtype([("enabled", "u1"), ("stage_count", "u1"), ("rest", "V310")])  # 0x138 per material

# MAT3 table → its element type. Tables of counts and cull modes are plain integers.
TABLE_DTYPES = {
    "indirect": INDIRECT_DTYPE,
    "cull_modes": np.dtype(">u4"),
    "material_colors": COLOR_DTYPE,
    "color_channel_counts": np.dtype("u1"),
    "color_channels": COLOR_CHANNEL_DTYPE,
    "ambient_colors": COLOR_DTYPE,
    "texgen_counts": np.dtype("u1"),
    "texgens": TEXGEN_DTYPE,
    "texture_matrices": TEXTURE_MATRIX_DTYPE,
    "texture_remap": np.dtype(">u2"),
    "tev_orders": TEV_ORDER_DTYPE,
    "tev_colors": TEV_COLOR_DTYPE,
    "konst_colors": COLOR_DTYPE,
    "tev_stage_counts": np.dtype("u1"),
    "tev_stages": TEV_STAGE_DTYPE,
    "alpha_compare": ALPHA_COMPARE_DTYPE,
    "blend": BLEND_DTYPE,
    "z_modes": Z_MODE_DTYPE,
}
# Material record field → (table it indexes, what the error calls it).
RECORD_TABLES = {
    "cull_mode": ("cull_modes", "cull mode"),
    "color_channel_count": ("color_channel_counts", "colour channel count"),
    "texgen_count": ("texgen_counts", "texgen count"),
    "tev_stage_count": ("tev_stage_counts", "TEV stage count"),
    "z_mode": ("z_modes", "z mode"),
    "material_colors": ("material_colors", "material colour"),
    "color_channels": ("color_channels", "colour channel"),
    "texgens": ("texgens", "texgen"),
    "texture_matrices": ("texture_matrices", "texture matrix"),
    "textures": ("texture_remap", "texture"),
    "konst_colors": ("konst_colors", "konst colour"),
    "tev_orders": ("tev_orders", "TEV order"),
    "tev_colors": ("tev_colors", "TEV colour"),
    "tev_stages": ("tev_stages", "TEV stage"),
    "alpha_compare": ("alpha_compare", "alpha compare"),
    "blend": ("blend", "blend mode"),
}
_BYTE_INDEX_FIELDS = {"cull_mode", "color_channel_count", "texgen_count", "tev_stage_count", "z_mode"}


def uv_layer_name(n: int) -> str:
    """The UV layer of texture coordinate TEXn: "UVMap", "UVMap.001", … (Blender's own naming)."""
    return "UVMap" if n == 0 else f"UVMap.{n:03d}"


def color_layer_name(n: int) -> str:
    """The colour layer of vertex colour CLRn: "Color", "Color.001"."""
    return "Color" if n == 0 else f"Color.{n:03d}"


def read_tables(mat3: MAT3) -> dict[str, np.ndarray]:
    """Every MAT3 table the approximation reads, as records (the padding after the last one left out)."""
    tables = {}
    for name, dtype in TABLE_DTYPES.items():
        data = mat3.tables.get(name, b"")
        tables[name] = np.frombuffer(data[: len(data) // dtype.itemsize * dtype.itemsize], dtype)
    return tables


class _Entries:
    """The table rows one material's record selects, checked against their tables."""

    def __init__(self, mat3: MAT3, tables: dict[str, np.ndarray], slot: int, filename: str):
        self.mat3, self.tables, self.slot, self.filename = mat3, tables, slot, filename
        self.record = mat3.material(slot)

    def get(self, field: str, element: int = 0):
        """The row index ``field`` (its ``element``) selects; None when unused or the file has no such table."""
        index = int(np.atleast_1d(self.record[field])[element])
        table_name, what = RECORD_TABLES[field]
        if index == (0xFF if field in _BYTE_INDEX_FIELDS else NONE) or table_name not in self.mat3.tables:
            return None
        table = self.tables[table_name]
        if index >= len(table):
            raise FormatError(
                self.filename,
                self.mat3.index_offset(self.slot, field, element),
                f"MAT3 material {self.mat3.names[self.slot]!r}: {what} index {index} is past its table "
                f"({len(table)} entries)",
            )
        return table[index]

    def count(self, field: str, limit: int) -> int:
        value = self.get(field)
        return min(int(value), limit) if value is not None else 0


def _alpha_clip(compare) -> float | None:
    """The alpha a fragment must exceed for ``compare`` to pass, when one comparison decides it."""
    if compare is None:
        return None
    tests = [(int(compare["comp0"]), int(compare["ref0"])), (int(compare["comp1"]), int(compare["ref1"]))]

    def passes_all(comp, ref):
        return (
            comp == COMPARE_ALWAYS
            or (comp == COMPARE_LEQUAL and ref == 255)
            or (comp == COMPARE_GEQUAL and ref == 0)
        )

    if int(compare["op"]) == ALPHA_OP_OR and any(passes_all(*t) for t in tests):
        return None
    thresholds = []
    for comp, ref in tests:
        if passes_all(comp, ref):
            continue
        if comp == COMPARE_GEQUAL:
            thresholds.append((ref - 0.5) / 255)
        elif comp == COMPARE_GREATER:
            thresholds.append((ref + 0.5) / 255)
    if not thresholds:
        return None
    return max(thresholds) if int(compare["op"]) == ALPHA_OP_AND else min(thresholds)


def _blend(record, blend) -> tuple[str, bool]:
    """(alpha mode without the compare, additive)."""
    if blend is not None and int(blend["mode"]) == BLEND_BLEND:
        source, destination = int(blend["source"]), int(blend["destination"])
        if destination == FACTOR_ONE and source in (FACTOR_SRC_ALPHA, FACTOR_ONE):
            return "BLEND", True
        return "BLEND", False
    if int(record["flag"]) == MODE_TRANSLUCENT:
        return "BLEND", False
    return "OPAQUE", False


def _transform(matrix) -> dict:
    """TextureSlot fields of a texture matrix, in Blender's UV space (V up, as ``apply.to_blender_uv``)."""
    if matrix is None:
        return {}
    center = [float(c) for c in matrix["center"][:2]]
    scale = tuple(float(s) for s in matrix["scale"])
    rotate = -float(matrix["rotation"]) * math.pi / 32768.0
    translate = (float(matrix["translate"][0]), -float(matrix["translate"][1]))
    fields = {"translate": translate, "rotate": rotate, "scale": scale}
    if rotate or scale != (1.0, 1.0):
        fields["center"] = (center[0], 1.0 - center[1])
    return fields


def _record_extras(record: np.void) -> dict:
    extras = {}
    for name in MATERIAL_DTYPE.names:
        value = record[name]
        extras[name] = value.tolist() if isinstance(value, np.ndarray) else int(value)
    return extras


def tex1_image(tex1, index: int, filename: str = "<bytes>") -> Image:
    """TEX1 texture ``index`` decoded, with its index in extras ``tex1_index`` (how BTP files name textures)."""
    header = tex1.headers[index]
    fmt = int(header["format"])
    return Image(
        tex1.names[index],
        tex1_module.decode(tex1, index, filename),
        int(header["width"]),
        int(header["height"]),
        source_format=gx.NAMES.get(fmt, str(fmt)),
        extras={"tex1_index": index},
    )


def approximate(
    mat3: MAT3, tables: dict[str, np.ndarray], slot: int, tex1, filename: str = "<bytes>"
) -> tuple[Material, list[int]]:
    """Material ``slot`` as a Scene material, and the TEX1 index of each of its texture slots
    (``TextureSlot.image`` is left for the caller to point at its image list)."""
    entries = _Entries(mat3, tables, slot, filename)
    record = entries.record
    color = entries.get("material_colors", 0)
    cull = entries.get("cull_mode")
    alpha_mode, additive = _blend(record, entries.get("blend"))
    threshold = _alpha_clip(entries.get("alpha_compare"))
    if threshold is not None and alpha_mode == "OPAQUE":
        alpha_mode = "CLIP"
    channel = entries.get("color_channels", 0) if entries.count("color_channel_count", 4) else None
    vertex = channel is not None and int(channel["material_source"]) == SOURCE_VERTEX
    unshown = []
    stage_count = entries.count("tev_stage_count", 16)
    if stage_count > 1:
        unshown.append(f"{stage_count} TEV stages")
    indirect = tables["indirect"]
    if slot < len(indirect) and indirect["enabled"][slot] and indirect["stage_count"][slot]:
        unshown.append("indirect texturing")
    if cull is not None and int(cull) in (CULL_FRONT, CULL_ALL):
        unshown.append(f"cull mode {int(cull)}")
    material = Material(
        mat3.names[slot],
        # The material colour register is what channel 0 shows unless it takes the vertex colours.
        base_color=(1.0,) * 4 if vertex or color is None else tuple(float(c) / 255.0 for c in color),
        alpha_mode=alpha_mode,
        backface_culling=cull is not None and int(cull) == CULL_BACK,
        vertex_color=color_layer_name(0) if vertex else "",
        tint_texture=not vertex,
        alpha_threshold=threshold if threshold is not None else 0.5,
        additive=additive,
        unlit=channel is not None and not int(channel["lighting"]),
        specular=0.0,  # GX colour channels add no Principled-like highlight
        extras={"mat3": _record_extras(record)},
    )
    texgen_count = entries.count("texgen_count", 8)

    def texgen_of(texcoord: int):
        return entries.get("texgens", texcoord) if texcoord < texgen_count else None

    def from_uvs(texgen) -> bool:
        return texgen is not None and 0 <= int(texgen["source"]) - TEXGEN_SOURCE_TEX0 < 8

    # Which texture coordinate each texture map is read with, from the first stage using it. The
    # base texture is the first one read with UVs (a ramp indexed by a colour, as Wind Waker's toon
    # shading does, or an environment map comes after it in the game's stages), else the first.
    texcoords: dict[int, int] = {}
    for stage in range(stage_count):
        order = entries.get("tev_orders", stage)
        if order is not None and int(order["texmap"]) != NO_MAP:
            texcoords.setdefault(int(order["texmap"]), int(order["texcoord"]))
    on_uvs = [k for k, c in texcoords.items() if from_uvs(texgen_of(c))]
    base_map = on_uvs[0] if on_uvs else next(iter(texcoords), None)
    tex1_indices = []
    texture_count = len(tex1.headers) if tex1 is not None else 0
    for k in range(len(record["textures"])):
        remapped = entries.get("textures", k)
        if remapped is None or int(remapped) >= texture_count:
            continue
        index = int(remapped)
        header = tex1.headers[index]
        wraps = [tex1_module.WRAP_MODES[min(int(header[w]), 2)] for w in ("wrap_s", "wrap_t")]
        texture = TextureSlot(
            -1,
            role="base_color" if k == base_map else "",
            wrap_s=wraps[0],
            wrap_t=wraps[1],
            interpolation="Closest" if int(header["min_filter"]) == 0 else "Linear",
        )
        texgen = texgen_of(texcoords.get(k, k))
        if from_uvs(texgen):
            texture.uv_layer = uv_layer_name(int(texgen["source"]) - TEXGEN_SOURCE_TEX0)
            matrix = int(texgen["matrix"])
            if TEXGEN_MATRIX_TEX0 <= matrix < TEXGEN_MATRIX_IDENTITY:
                fields = _transform(entries.get("texture_matrices", (matrix - TEXGEN_MATRIX_TEX0) // 3))
                for name, value in fields.items():
                    setattr(texture, name, value)
        elif texgen is not None and k == base_map:
            unshown.append(f"texture coordinates from {TEXGEN_SOURCES.get(int(texgen['source']), 'colours')}")
        material.textures.append(texture)
        tex1_indices.append(index)
    if base_map is None and material.textures and stage_count:
        material.textures[0].role = ""  # the stages use no texture: the textures stay unwired
    if unshown:
        material.extras["unshown"] = unshown
    return material, tex1_indices


def materials_and_images(mat3: MAT3, tex1, filename: str = "<bytes>") -> tuple[list[Material], list[Image]]:
    """Every material in slot order and every TEX1 image in TEX1 order (``Image.extras["tex1_index"]``);
    texture slots point at those images. A model's import and a material set's share this."""
    tables = read_tables(mat3)
    images = []
    if tex1 is not None:
        decoded: dict[tuple, Image] = {}  # headers sharing texels (and how to read them) decode once
        fields = ["format", "width", "height", "palette_format", "palette_count"]
        keys = zip(
            tex1.data_positions().tolist(), tex1.data_positions("palette_offset").tolist(), strict=True
        )
        for i, (texels, palette) in enumerate(keys):
            key = (texels, palette, *(int(tex1.headers[i][f]) for f in fields))
            if key in decoded:
                image = dataclasses.replace(decoded[key], name=tex1.names[i], extras={"tex1_index": i})
            else:
                image = decoded[key] = tex1_image(tex1, i, filename)
            images.append(image)
    materials = []
    for slot in range(len(mat3.names)):
        material, indices = approximate(mat3, tables, slot, tex1, filename)
        for texture, index in zip(material.textures, indices, strict=True):
            texture.image = index
        materials.append(material)
    return materials, images


def unshown_warning(materials: list[Material], name: str) -> list[str]:
    """One warning naming what the approximation leaves out, and on how many materials (none: [])."""
    counts: dict[str, int] = {}
    for material in materials:
        for what in material.extras.get("unshown", []):
            kind = what.split(" ", 1)[1] if what[0].isdigit() else what
            counts[kind] = counts.get(kind, 0) + 1
    if not counts:
        return []
    listed = "; ".join(f"{kind}: {n} material{'s' * (n > 1)}" for kind, n in sorted(counts.items()))
    return [f"{name}: shown as texture × colour, without {listed} (kept in each material's extras)"]
