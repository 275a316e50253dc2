"""A J3D material set (BMT, or the MAT3 + TEX1 of a BMD/BDL) → Scene materials and images.

The materials approximate the game's TEV (``materials.approximate``); the images are every
texture of TEX1, in its order, so that a BTP applied after the set finds each frame's texture
even when no material of the set uses it.
"""

from __future__ import annotations

from ..scene import Scene
from .bmt import BMT
from .materials import materials_and_images, tex1_image, unshown_warning

__all__ = ["bmt_to_scene", "tex1_image"]


def bmt_to_scene(bmt: BMT, name: str = "", filename: str = "<bytes>") -> Scene:
    """Materials in slot order (named as in the file) and every TEX1 image."""
    scene = Scene(name=name)
    scene.materials, scene.images = materials_and_images(bmt.mat3, bmt.tex1, filename)
    scene.warnings += unshown_warning(scene.materials, name or filename)
    return scene
