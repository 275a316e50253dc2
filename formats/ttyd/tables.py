"""The model's header, tables and layout, and each animation's tables, kept in the scene's extras.

``from_scene`` starts from them, so a model exported without edits is the file it came from.
"""

from __future__ import annotations

import numpy as np

from ..scene import Scene
from . import model as fmt
from .model import AnimationData, Model, text


def signed(value: int) -> int:
    """A u32 field as the signed 32-bit int the extras show."""
    return int(np.array(value, np.uint32).view(np.int32))


def unsigned(value: int) -> int:
    """The u32 field ``signed`` showed."""
    return int(np.array(value, np.int32).view(np.uint32))


def model_extras(model: Model, tpl) -> dict:
    """The header, every table and the layout of the model (and of its TPL) for the scene's extras."""
    h = model.header
    extras = {
        "name": h.name,
        "texture_name": h.texture_name,
        "date": h.date,
        "flags": signed(h.flags),
        "radius": signed(h.radius),
        "height": signed(h.height),
        "bbox": [float(v) for v in np.concatenate([h.bbox_min, h.bbox_max])],
        "tables": {name: fmt.table_bytes(model.block(name)) for name, _, _ in fmt.BLOCKS},
    }
    layout = model.layout
    if layout is not None:
        extras["layout"] = {
            "size": layout.size,
            "data_area": signed(layout.data_area),
            "offsets": [signed(o) for o in layout.offsets],
            "animation_offsets": [signed(o) for o in layout.animation_offsets],
            "animation_sizes": [signed(o) for o in layout.animation_sizes],
            "animation_tables": [signed(o) for table in layout.animation_tables for o in table],
            "region_sizes": layout.region_sizes,
            "fill_offsets": [offset for offset, _ in layout.fill],
            "fill_bytes": [raw for _, raw in layout.fill],
        }
    if tpl is not None:
        extras["tpl"] = {
            "table_offset": -1 if tpl.table_offset is None else tpl.table_offset,
            "size": -1 if tpl.size is None else tpl.size,
            "unused_offsets": [offset for offset, _ in tpl.unused],
            "unused_bytes": [raw for _, raw in tpl.unused],
        }
    return extras


def base_model(scene: Scene, extras: dict) -> Model:
    """The model the extras kept (an empty one without them), named after the scene."""
    model = Model()
    h = model.header
    if extras:
        h.name, h.texture_name, h.date = (extras[k] for k in ("name", "texture_name", "date"))
        h.flags, h.radius, h.height = (unsigned(extras[k]) for k in ("flags", "radius", "height"))
        bbox = np.array(extras["bbox"], np.float32)
        h.bbox_min, h.bbox_max = bbox[:3], bbox[3:]
        for name, dtype, components in fmt.BLOCKS:
            model.set_block(name, fmt.table_from_bytes(extras["tables"][name], dtype, components))
        layout = extras.get("layout")
        if layout is not None:
            tables = [unsigned(o) for o in layout["animation_tables"]]
            model.layout = fmt.Layout(
                size=layout["size"],
                data_area=unsigned(layout["data_area"]),
                offsets=[unsigned(o) for o in layout["offsets"]],
                animation_offsets=[unsigned(o) for o in layout["animation_offsets"]],
                animation_sizes=[unsigned(o) for o in layout["animation_sizes"]],
                animation_tables=[tables[i : i + 8] for i in range(0, len(tables), 8)],
                region_sizes=list(layout["region_sizes"]),
                fill=list(zip(layout["fill_offsets"], layout["fill_bytes"], strict=True)),
            )
    else:
        h.texture_name = fmt.encode_name(scene.name)
    if text(h.name) != scene.name:
        h.name = fmt.encode_name(scene.name)
    return model


def animation_extras(anim: AnimationData) -> dict:
    """An animation's tables and bounding box, as ``stored_animation`` reads them back."""
    return {
        "tables": {table: fmt.table_bytes(getattr(anim, table)) for table, _ in fmt.ANIMATION_TABLES},
        "bbox": [float(v) for v in anim.bbox],
    }


def stored_animation(extras: dict) -> AnimationData | None:
    """The animation tables an animation's extras kept (None without them)."""
    tables = extras.get("tables")
    if tables is None:
        return None
    anim = AnimationData(bbox=np.array(extras["bbox"], np.float32))
    for table, dtype in fmt.ANIMATION_TABLES:
        setattr(anim, table, fmt.table_from_bytes(tables[table], dtype))
    return anim
