"""A J3D material set (BMT, or the MAT3 + TEX1 of a BMD/BDL) → Scene materials and images.

What Blender can show is converted: the first material colour (base colour),
the textures of the material's texture slots (decoded TEX1 images with their
wraps), backface culling from the cull mode and the alpha mode from the blend
and alpha-compare settings. Everything else stays in each material's extras
(``mat3``: the material record's table indices and per-stage selections), so
the game's settings travel with the material.
"""

from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..scene import Image, Material, Scene, TextureSlot
from ..textures import gx
from . import tex1 as tex1_module
from .bmt import BMT
from .mat3 import MAT3, MATERIAL_DTYPE

NONE = 0xFFFF
CULL_BACK = 2  # GX cull modes: 0 none, 1 front, 2 back, 3 all
BLEND_BLEND = 1  # GX blend modes: 0 none, 1 blend, 2 logic, 3 subtract
ALPHA_ALWAYS = 7  # GX compare function
BLEND_DTYPE = np.dtype([("mode", "u1"), ("source", "u1"), ("destination", "u1"), ("logic", "u1")])
ALPHA_COMPARE_DTYPE = np.dtype(
    [("comp0", "u1"), ("ref0", "u1"), ("op", "u1"), ("comp1", "u1"), ("ref1", "u1"), ("pad", "V3")]
)


def _table(mat3: MAT3, name: str, dtype) -> np.ndarray:
    """A kept MAT3 table as records (its trailing padding ignored)."""
    data = mat3.tables.get(name, b"")
    dtype = np.dtype(dtype)
    return np.frombuffer(data[: len(data) // dtype.itemsize * dtype.itemsize], dtype)


def _entry(table: np.ndarray, mat3: MAT3, slot: int, field: str, element: int, what: str, filename: str):
    """Row of ``table`` that index ``field`` (its ``element``) of material ``slot`` selects; None for none."""
    index = int(np.atleast_1d(mat3.material(slot)[field])[element])
    if index == NONE:
        return None
    if index >= len(table):
        raise FormatError(
            filename,
            mat3.index_offset(slot, field, element),
            f"MAT3 material {mat3.names[slot]!r}: {what} index {index} is past its table ({len(table)} entries)",
        )
    return table[index]


def _alpha_mode(blend, compare) -> str:
    if blend is not None and int(blend["mode"]) == BLEND_BLEND:
        return "BLEND"
    if compare is not None and not (
        int(compare["comp0"]) == ALPHA_ALWAYS and int(compare["comp1"]) == ALPHA_ALWAYS
    ):
        return "CLIP"
    return "OPAQUE"


def _record_extras(record: np.void) -> dict:
    extras = {}
    for field in MATERIAL_DTYPE.names:
        value = record[field]
        extras[field] = value.tolist() if isinstance(value, np.ndarray) else int(value)
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


def bmt_to_scene(bmt: BMT, name: str = "", filename: str = "<bytes>") -> Scene:
    """Materials in slot order (named as in the file) and the TEX1 images they use."""
    mat3 = bmt.mat3
    colors = _table(mat3, "material_colors", ("u1", (4,)))
    cull_modes = _table(mat3, "cull_modes", ">u4")
    blends = _table(mat3, "blend", BLEND_DTYPE)
    compares = _table(mat3, "alpha_compare", ALPHA_COMPARE_DTYPE)
    texture_remap = _table(mat3, "texture_remap", ">u2")
    scene = Scene(name=name)
    tex1 = bmt.tex1
    texture_count = len(tex1.headers) if tex1 is not None else 0
    used: dict[int, int] = {}  # TEX1 index → Scene image index
    for slot, material_name in enumerate(mat3.names):
        record = mat3.material(slot)
        color = _entry(colors, mat3, slot, "material_colors", 0, "material colour", filename)
        cull = _entry(cull_modes, mat3, slot, "cull_mode", 0, "cull mode", filename)
        blend = _entry(blends, mat3, slot, "blend", 0, "blend mode", filename)
        compare = _entry(compares, mat3, slot, "alpha_compare", 0, "alpha compare", filename)
        material = Material(
            material_name,
            base_color=tuple(float(c) / 255.0 for c in color) if color is not None else (1.0, 1.0, 1.0, 1.0),
            alpha_mode=_alpha_mode(blend, compare),
            backface_culling=cull is not None and int(cull) == CULL_BACK,
            extras={"mat3": _record_extras(record)},
        )
        for k in range(len(record["textures"])):
            remapped = _entry(texture_remap, mat3, slot, "textures", k, "texture", filename)
            if remapped is None or int(remapped) >= texture_count:
                continue
            index = int(remapped)
            if index not in used:
                used[index] = len(scene.images)
                scene.images.append(tex1_image(tex1, index, filename))
            header = tex1.headers[index]
            wraps = [tex1_module.WRAP_MODES[min(int(header[w]), 2)] for w in ("wrap_s", "wrap_t")]
            material.textures.append(TextureSlot(used[index], wrap_s=wraps[0], wrap_t=wraps[1]))
        scene.materials.append(material)
    return scene
