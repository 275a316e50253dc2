"""TPL images ⇄ scene images, and the model's texture table that names them.

One scene image per TPL image (decoded, with the encoded texels as source bytes and
every TPL field in extras); without a TPL, one placeholder without pixels per TPL index
the texture table names (extras ``tpl_index``). On export an image keeps its encoded
bytes while it has them; an edited or new one is encoded again from its pixels.
"""

from __future__ import annotations

import numpy as np

from ..scene import Image, Scene
from ..textures import gx
from ..textures import tpl as tpl_format
from . import model as fmt
from .model import Model, text

DEFAULT_TEXTURE_FORMAT = gx.RGB5A3
# TPL image fields kept in the image extras and given back to the TPL writer.
IMAGE_FIELDS = (
    "wrap_s",
    "wrap_t",
    "min_filter",
    "mag_filter",
    "lod_bias",
    "edge_lod",
    "min_lod",
    "max_lod",
    "unpacked",
)


def scene_images(model: Model, tpl) -> list[Image]:
    """One image per TPL image, named by the first texture that shows it; placeholders without a TPL."""
    textures = model.textures
    names: dict[int, str] = {}
    for texture in textures:
        names.setdefault(int(texture["tpl_index"]), text(texture["name"]))
    base = text(model.header.texture_name)
    if tpl is None:  # one image without pixels per TPL image the textures name
        return [
            Image(names[i], None, extras={"placeholder": True, "tpl_index": i})
            for i in np.unique(textures["tpl_index"]).tolist()
        ]
    return [
        Image(
            names.get(i, f"{base}-{i}"),
            image.decode(),
            image.width,
            image.height,
            source_bytes=image.data,
            source_format=gx.NAMES.get(image.format, str(image.format)),
            extras=_image_extras(image),
        )
        for i, image in enumerate(tpl.images)
    ]


def _image_extras(image: tpl_format.TPLImage) -> dict:
    extras = {
        "format": image.format,
        "wrap_s": image.wrap_s,
        "wrap_t": image.wrap_t,
        "min_filter": image.min_filter,
        "mag_filter": image.mag_filter,
        "lod_bias": float(image.lod_bias),
        "edge_lod": image.edge_lod,
        "min_lod": image.min_lod,
        "max_lod": image.max_lod,
        "unpacked": image.unpacked,
        "header_offset": _offset_extra(image.header_offset),
        "data_offset": _offset_extra(image.data_offset),
    }
    if image.palette is not None:
        p = image.palette
        extras["palette"] = {
            "entry_count": p.entry_count,
            "unpacked": p.unpacked,
            "pad": p.pad,
            "format": p.format,
            "data": p.data,
            "header_offset": _offset_extra(p.header_offset),
            "data_offset": _offset_extra(p.data_offset),
        }
    return extras


def _offset_extra(offset: int | None) -> int:
    """An offset the TPL kept, −1 for none."""
    return -1 if offset is None else offset


def _kept_offset(extras: dict, key: str) -> int | None:
    return extras[key] if extras.get(key, -1) >= 0 else None


def image_lookup(scene: Scene):
    """TPL image index → scene image index (the game shows image 0 for an index past the TPL)."""
    known = tpl_index_of(scene, np.arange(len(scene.images)))
    order = np.argsort(known, kind="stable")
    ordered = known[order]

    def lookup(index):
        index = np.asarray(index, np.int64)
        if not len(known):
            return np.zeros_like(index)
        at = np.minimum(ordered.searchsorted(index), len(known) - 1)
        return np.where(ordered[at] == index, order[at], 0)

    return lookup


def tpl_index_of(scene: Scene, image) -> np.ndarray:
    """Scene image index → the TPL image index it stands for."""
    lookup = np.array([i.extras.get("tpl_index", n) for n, i in enumerate(scene.images)] or [0], np.int64)
    image = np.asarray(image, np.int64)
    return np.where(image < len(scene.images), lookup[np.minimum(image, len(lookup) - 1)], image)


def texture_image(model: Model, sampler, frame_offset):
    """TPL image shown by a sampler at a frame offset, or (int64 array) by each of an array of them or at
    each of an array of frame offsets (the game falls back to image 0)."""
    texture = model.samplers["first_texture"][sampler].astype(np.int64) + np.asarray(frame_offset, np.int64)
    shown = np.append(model.textures["tpl_index"].astype(np.int64), 0)  # past the table: image 0
    image = shown[np.minimum(texture, len(model.textures))]
    return int(image) if image.ndim == 0 else image


def append_texture(model: Model, scene: Scene, image: int) -> int:
    """A texture entry showing scene image ``image``; returns its index."""
    record = np.zeros(1, fmt.TEXTURE_DTYPE)
    record["tpl_index"] = tpl_index_of(scene, image)
    record["name"] = fmt.encode_name(scene.images[image].name)[:52] if image < len(scene.images) else b""
    model.textures = np.concatenate([model.textures, record])
    return len(model.textures) - 1


def tpl_from_scene(scene: Scene, extras: dict, texture_format: int | None = None) -> tpl_format.TPL | None:
    """The TPL of the scene's images (None when no image has data), laid out as the kept one was;
    edited and new images in ``texture_format`` when given, else in their own."""
    if not any(image.pixels is not None or image.source_bytes is not None for image in scene.images):
        return None
    tpl = tpl_format.TPL([_tpl_image(image, texture_format) for image in scene.images])
    kept = extras.get("tpl", {})
    if kept:
        tpl.table_offset = _kept_offset(kept, "table_offset")
        tpl.size = _kept_offset(kept, "size")
        tpl.unused = list(zip(kept["unused_offsets"], kept["unused_bytes"], strict=True))
    return tpl


def _tpl_image(image: Image, texture_format: int | None) -> tpl_format.TPLImage:
    """The kept encoded image while the scene image has its source bytes, else one encoded from its
    pixels (in ``texture_format`` when given)."""
    e = image.extras
    fields = {key: e[key] for key in IMAGE_FIELDS if key in e}
    palette = e.get("palette")
    if image.source_bytes is None or "format" not in e:
        pixels = image.pixels if image.pixels is not None else np.zeros((1, 1, 4), np.uint8)
        fields.pop("max_lod", None)
        fields.pop("min_lod", None)
        encoding = e.get("format", DEFAULT_TEXTURE_FORMAT)
        if image.source_bytes is None and texture_format is not None:  # edited or new: the chosen format
            encoding, palette = texture_format, None
        return tpl_format.image_from_pixels(
            pixels, encoding, palette["format"] if palette else None, **fields
        )
    tpl_image = tpl_format.TPLImage(image.width, image.height, e["format"], image.source_bytes, **fields)
    tpl_image.header_offset = _kept_offset(e, "header_offset")
    tpl_image.data_offset = _kept_offset(e, "data_offset")
    if palette is not None:
        tpl_image.palette = tpl_format.TPLPalette(
            palette["entry_count"],
            palette["unpacked"],
            palette["pad"],
            palette["format"],
            palette["data"],
        )
        tpl_image.palette.header_offset = _kept_offset(palette, "header_offset")
        tpl_image.palette.data_offset = _kept_offset(palette, "data_offset")
    return tpl_image
