"""Scene images ⇄ Blender images.

Built images are packed, their pixels set in bulk (top row first in the Scene, bottom row first
in Blender). What an image cannot hold goes into custom properties: the encoded bytes from the
file, their format, a hash of the pixels as built (an unchanged hash tells the extractor that the
encoded bytes still apply) and, for an image the Scene could not decode or that has no texels,
its size (a magenta placeholder stands in).
"""

from __future__ import annotations

import hashlib

import bpy
import numpy as np

from ...formats import extras as codec
from ...formats.scene import Image
from . import props

PLACEHOLDER_LIMIT = 1024  # texels of a placeholder's side at most, whatever size the file claims


def pixels_hash(pixels: np.ndarray) -> str:
    """Hash of (H, W, 4) uint8 pixels, top row first."""
    return hashlib.sha1(np.ascontiguousarray(pixels, dtype=np.uint8).tobytes()).hexdigest()


def build_image(image: Image) -> bpy.types.Image:
    # Blender has no image 0 texels wide or high: such an image is shown as a placeholder too.
    pixels = image.pixels if image.pixels is not None and image.pixels.size else None
    if pixels is None:
        height, width = (min(max(size, 1), PLACEHOLDER_LIMIT) for size in (image.height, image.width))
        pixels = np.broadcast_to(np.array([255, 0, 255, 255], np.uint8), (height, width, 4))
    height, width = pixels.shape[:2]
    blender_image = bpy.data.images.new(image.name, width, height, alpha=True)
    blender_image[props.SCENE_NAME] = image.name
    blender_image.alpha_mode = "CHANNEL_PACKED"
    flat = np.ascontiguousarray(pixels[::-1], dtype=np.float32).reshape(-1) * np.float32(1 / 255)
    blender_image.pixels.foreach_set(flat)
    blender_image.pack()
    blender_image[props.PIXELS_HASH] = pixels_hash(pixels)
    if pixels is not image.pixels:
        blender_image[props.UNDECODED] = codec.encode([image.width, image.height])
    if image.source_bytes is not None:
        blender_image[props.SOURCE_BYTES] = codec.encode(image.source_bytes)
    blender_image[props.SOURCE_FORMAT] = image.source_format
    props.set_extras(blender_image, image.extras)
    return blender_image


def build_images(images: list[Image]) -> list[bpy.types.Image]:
    """Blender images (packed) of Scene images, for data that exists already (see ``material.switch_images``)."""
    return [build_image(image) for image in images]


def extract_image(image) -> Image:
    """The Scene image of a Blender image: its encoded bytes from the file while the pixels are unchanged."""
    width, height = image.size
    flat = np.empty(width * height * 4, np.float32)
    image.pixels.foreach_get(flat)
    pixels = np.round(np.clip(flat, 0, 1) * 255).astype(np.uint8).reshape(height, width, 4)[::-1].copy()
    unchanged = image.get(props.PIXELS_HASH) == pixels_hash(pixels)
    result = Image(
        props.scene_name(image),
        pixels,
        width,
        height,
        source_format=image.get(props.SOURCE_FORMAT, ""),
        extras=props.get_extras(image),
    )
    if unchanged and props.SOURCE_BYTES in image:
        result.source_bytes = codec.decode(image[props.SOURCE_BYTES])
    if unchanged and props.UNDECODED in image:
        result.pixels = None
        result.width, result.height = codec.decode(image[props.UNDECODED])
    return result
