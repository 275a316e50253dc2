"""MAT3: the material section of J3D models and BMT files.

A count, then thirty offsets of tables. Material records (0x14C bytes each)
are lists of indices into the other tables; a remap table maps each material
slot to its record and a name table names the slots. The other tables
(colours, TEV stages, blend modes, ...) are kept verbatim, each with the
bytes up to the next table, and rewritten in the order the file had them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Reader, Writer
from .container import aligned_padding, read_names, write_names

MAT3_HEADER_SIZE = 0x84
TABLES = (
    "materials",
    "remap",
    "names",
    "indirect",
    "cull_modes",
    "material_colors",
    "color_channel_counts",
    "color_channels",
    "ambient_colors",
    "lights",
    "texgen_counts",
    "texgens",
    "post_texgens",
    "texture_matrices",
    "post_texture_matrices",
    "texture_remap",
    "tev_orders",
    "tev_colors",
    "konst_colors",
    "tev_stage_counts",
    "tev_stages",
    "swap_modes",
    "swap_tables",
    "fog",
    "alpha_compare",
    "blend",
    "z_modes",
    "z_compare",
    "dither",
    "nbt_scale",
)
PARSED_TABLES = ("materials", "remap", "names")
# One material record: indices into the tables above (0xFFFF = unused).
MATERIAL_DTYPE = np.dtype(
    [
        ("flag", "u1"),
        ("cull_mode", "u1"),
        ("color_channel_count", "u1"),
        ("texgen_count", "u1"),
        ("tev_stage_count", "u1"),
        ("z_compare", "u1"),
        ("z_mode", "u1"),
        ("dither", "u1"),
        ("material_colors", ">u2", (2,)),
        ("color_channels", ">u2", (4,)),
        ("ambient_colors", ">u2", (2,)),
        ("lights", ">u2", (8,)),
        ("texgens", ">u2", (8,)),
        ("post_texgens", ">u2", (8,)),
        ("texture_matrices", ">u2", (10,)),
        ("post_texture_matrices", ">u2", (20,)),
        ("textures", ">u2", (8,)),
        ("konst_colors", ">u2", (4,)),
        ("konst_color_selects", "u1", (16,)),
        ("konst_alpha_selects", "u1", (16,)),
        ("tev_orders", ">u2", (16,)),
        ("tev_colors", ">u2", (4,)),
        ("tev_stages", ">u2", (16,)),
        ("swap_modes", ">u2", (16,)),
        ("swap_tables", ">u2", (4,)),
        ("unknown", ">u2", (12,)),
        ("fog", ">u2"),
        ("alpha_compare", ">u2"),
        ("blend", ">u2"),
        ("nbt_scale", ">u2"),
    ]
)


@dataclass
class MAT3:
    materials: np.ndarray  # MATERIAL_DTYPE, one record per distinct material
    remap: np.ndarray  # (count,) uint16: material slot → record
    names: list[str]  # (count,)
    tables: dict[str, bytes] = field(default_factory=dict)  # the other tables verbatim; absent ones missing
    order: list[str] = field(default_factory=list)  # present tables in file order; empty = TABLES order
    padding_after: dict[str, bytes] = field(default_factory=dict)  # after the parsed tables, when unusual
    marker: int = 0xFFFF
    # None: pad the section to 32 bytes. b"": a section cut short (its last table holds what is left).
    end_padding: bytes | None = None
    records_offset: int = field(default=0, compare=False)  # of the material records in the file read

    def material(self, slot: int) -> np.void:
        return self.materials[int(self.remap[slot])]

    def index_offset(self, slot: int, name: str, element: int = 0) -> int:
        """File offset of the table index ``name`` (its ``element``) in the record of material ``slot``."""
        base, offset = MATERIAL_DTYPE.fields[name][0].base, MATERIAL_DTYPE.fields[name][1]
        record = int(self.remap[slot])
        return self.records_offset + record * MATERIAL_DTYPE.itemsize + offset + element * base.itemsize


def read_mat3(data: bytes, offset: int, size: int, filename: str) -> MAT3:
    """The MAT3 section of ``size`` bytes at file ``offset``."""
    r = Reader(data, ">", filename, offset, offset + size)
    r.seek(offset + 8)
    count, marker = r.unpack("HH", "MAT3 header")
    offsets = r.unpack("30I", "MAT3 table offsets")
    # An unused table may share the offset of the next one (lights the texgen counts'); tables at one
    # offset hold no bytes but the last. The indirect table, which comes after the name table in the
    # header, shares the name table's offset in files from before indirect texturing: it goes first.
    indirect = TABLES.index("indirect")
    present = sorted(
        ((o, i) for i, o in enumerate(offsets) if o), key=lambda p: (p[0], p[1] != indirect, p[1])
    )
    spans: dict[str, tuple[int, int]] = {}
    for k, (start, index) in enumerate(present):
        end = present[k + 1][0] if k + 1 < len(present) else size
        if start < MAT3_HEADER_SIZE or start > size:
            raise r.error(
                f"MAT3 {TABLES[index]} table offset {start} is outside the section", offset + 12 + 4 * index
            )
        spans[TABLES[index]] = (start, end)
    for name in PARSED_TABLES:
        if name not in spans:
            raise r.error(f"MAT3 expected a {name} table", offset + 12 + 4 * TABLES.index(name))

    start, end = spans["remap"]
    remap = r.sub(offset + start, end - start, "MAT3 remap table").array(">u2", count, "MAT3 remap")
    names, names_size = read_names(r, offset + spans["names"][0], "MAT3 name table")
    if len(names) != count:
        raise r.error(
            f"MAT3 name table expected {count} names, found {len(names)}", offset + spans["names"][0]
        )
    records = int(remap.max()) + 1 if count else 0
    start, end = spans["materials"]
    materials = r.sub(offset + start, end - start, "MAT3 materials").array(
        MATERIAL_DTYPE, records, "MAT3 materials"
    )
    parsed_sizes = {"materials": records * MATERIAL_DTYPE.itemsize, "remap": count * 2, "names": names_size}
    padding_after = {}
    for name, used in parsed_sizes.items():
        start, end = spans[name]
        if start + used > end:
            raise r.error(f"MAT3 {name} table ({used} bytes) overlaps the next table", offset + start)
        tail = data[offset + start + used : offset + end]
        if tail != aligned_padding(start + used, 4) or end == size:
            padding_after[name] = tail
    tables = {
        name: data[offset + s : offset + e] for name, (s, e) in spans.items() if name not in PARSED_TABLES
    }
    order = [TABLES[i] for _, i in present]
    end_padding = None if size % 32 == 0 else b""
    records_offset = offset + spans["materials"][0]
    return MAT3(materials, remap, names, tables, order, padding_after, marker, end_padding, records_offset)


def write_mat3(mat3: MAT3) -> bytes:
    parsed = {
        "materials": np.ascontiguousarray(mat3.materials, MATERIAL_DTYPE).tobytes(),
        "remap": np.asarray(mat3.remap, ">u2").tobytes(),
        "names": write_names(mat3.names),
    }
    order = mat3.order or [name for name in TABLES if name in parsed or name in mat3.tables]
    body = bytearray(MAT3_HEADER_SIZE)
    offsets = dict.fromkeys(TABLES, 0)
    for name in order:
        offsets[name] = len(body)
        if name in parsed:
            body += parsed[name]
            padding = mat3.padding_after.get(name)
            body += aligned_padding(len(body), 4) if padding is None else padding
        else:
            body += mat3.tables[name]
    body += aligned_padding(len(body), 32) if mat3.end_padding is None else mat3.end_padding
    header = Writer(">")
    header.bytes(b"MAT3")
    header.u32(len(body))
    header.pack("HH", len(mat3.names), mat3.marker)
    header.pack("30I", *(offsets[name] for name in TABLES))
    body[:MAT3_HEADER_SIZE] = header.getvalue()
    return bytes(body)
