"""Subshapes ⇄ materials: texture slots from samplers, alpha and culling from the shape.

One material per subshape, with one texture slot per sampler: wrap modes from the sampler
(or the TPL), the texture-coordinate transform as the slot's translate, rotate (radians)
and scale of one Blender Mapping node (scale, rotate, then translate), which reproduces the
game's transform exactly (``slot_transform``; the translate is not the file's); backface
culling when the cull mode is 0 (back), alpha mode from the shape's display mode (0 and 2
CLIP, 1 OPAQUE, 3 BLEND).
"""

from __future__ import annotations

import numpy as np

from ..scene import Material, Scene, TextureSlot
from . import model as fmt
from .images import append_texture, texture_image, tpl_index_of
from .kept import restore, unique_names
from .model import Model, text

DISPLAY_ALPHA = {0: "CLIP", 1: "OPAQUE", 2: "CLIP", 3: "BLEND"}
ALPHA_DISPLAY = {"CLIP": 0, "OPAQUE": 1, "BLEND": 3}
CULL_BACK, CULL_NONE = 0, 3
WRAP_NAMES = {0: "CLAMP", 1: "REPEAT", 2: "MIRROR"}
TEXCOORD_CENTER = 0.5  # the game rotates texture coordinates about (0.5, 0.5)
USE_TPL_WRAP = 0x80000000


def mapping_location(translate, scale, rotate_degrees) -> np.ndarray:
    """(…, 2) Mapping-node location of the game's texture-coordinate transform (see ``slot_transform``)."""
    translate, scale = np.asarray(translate, np.float64), np.asarray(scale, np.float64)
    angle = np.radians(np.asarray(rotate_degrees, np.float64))
    x = translate[..., 0] - TEXCOORD_CENTER
    y = TEXCOORD_CENTER - translate[..., 1] - scale[..., 1]
    c, s = np.cos(angle), np.sin(angle)
    return np.stack([c * x - s * y + TEXCOORD_CENTER, s * x + c * y + TEXCOORD_CENTER], axis=-1)


def file_translate(location, scale, rotate_degrees) -> np.ndarray:
    """(…, 2) file translation (S, T) whose transform has the Mapping-node ``location``: the inverse of
    ``mapping_location`` for the same scale and rotation."""
    location, scale = np.asarray(location, np.float64), np.asarray(scale, np.float64)
    angle = np.radians(np.asarray(rotate_degrees, np.float64))
    x, y = location[..., 0] - TEXCOORD_CENTER, location[..., 1] - TEXCOORD_CENTER
    c, s = np.cos(angle), np.sin(angle)
    x, y = c * x + s * y, -s * x + c * y
    return np.stack([x + TEXCOORD_CENTER, TEXCOORD_CENTER - y - scale[..., 1]], axis=-1)


def slot_transform(
    translate, scale, rotate_degrees
) -> tuple[tuple[float, float], float, tuple[float, float]]:
    """The game's texture-coordinate transform as one Blender Mapping node: (location, rotation, scale).

    The game maps (S, T) (T down) by T(.5,.5)·R(−rot)·T(−.5,−.5)·T(t)·S(s): scale about the
    origin, translate, rotate about the centre. In Blender's UV (V = 1 − T) that is
    uv' = R(rot)·(s·uv + t') + (.5, .5) with t' = (tS − .5, .5 − tT − sT), which is exactly what
    a Mapping node computes (scale, rotate, then add its location) with location R(rot)·t' + (.5, .5).
    """
    location = mapping_location(translate, scale, rotate_degrees)
    return (
        (float(location[0]), float(location[1])),
        float(np.radians(rotate_degrees)),
        (float(scale[0]), float(scale[1])),
    )


def wrap_modes(flags: int, tpl_wrap: tuple[int, int]) -> tuple[str, str]:
    """Blender wrap modes (S, T) of a sampler's flags, or of the TPL image when the flags defer to it."""
    if flags & USE_TPL_WRAP:
        return WRAP_NAMES.get(tpl_wrap[0], "REPEAT"), WRAP_NAMES.get(tpl_wrap[1], "REPEAT")

    def one(repeat: int, mirror: int) -> str:
        return "MIRROR" if flags & mirror else "REPEAT" if flags & repeat else "CLAMP"

    return one(0x1, 0x4), one(0x2, 0x8)


def scene_materials(model: Model, scene: Scene, tpl, image_of) -> dict[int, int]:
    """One material per subshape; returns subshape → material index."""
    material_of = {}
    names = []
    for s, shape in enumerate(model.shapes):
        count = int(shape["subshape_count"])
        for k in range(count):
            d = int(shape["subshape_first"]) + k
            if d in material_of:
                continue
            subshape = model.subshapes[d]
            slots = [
                _texture_slot(model, tpl, image_of, int(subshape["samplers"][j]), j)
                for j in range(int(subshape["texture_count"]))
                if scene.images
            ]
            display, cull = int(shape["display_mode"]), int(shape["cull_mode"])
            material_of[d] = len(scene.materials)
            names.append(text(shape["name"]) if count == 1 else f"{text(shape['name'])}.{k}")
            scene.materials.append(
                Material(
                    name="",
                    base_color=(1.0, 1.0, 1.0, 1.0),
                    textures=slots,
                    alpha_mode=DISPLAY_ALPHA.get(display, "OPAQUE"),
                    backface_culling=cull == CULL_BACK,
                    extras={"subshape": d, "shape": s, "display_mode": display, "cull_mode": cull},
                )
            )
    for material, name in zip(scene.materials, unique_names(names), strict=True):
        material.name = material.extras["label"] = name
    return material_of


def _texture_slot(model: Model, tpl, image_of, sampler: int, j: int) -> TextureSlot:
    """Slot ``j`` of a subshape: the image its sampler shows, its wrap modes and transform."""
    transform = model.texcoord_transforms[sampler]
    image = int(image_of(texture_image(model, sampler, transform["frame_offset"])))
    tpl_image = tpl.images[image] if tpl is not None else None
    wrap = int(model.samplers["wrap"][sampler])
    wrap_s, wrap_t = wrap_modes(wrap, (tpl_image.wrap_s, tpl_image.wrap_t) if tpl_image else (1, 1))
    translate, rotate, scale = slot_transform(transform["translate"], transform["scale"], transform["rotate"])
    return TextureSlot(
        image=image,
        uv_layer=f"UV{j}",
        wrap_s=wrap_s,
        wrap_t=wrap_t,
        translate=translate,
        rotate=rotate,
        scale=scale,
        extras={"sampler": sampler, "slot": j},
    )


def shape_modes(material: Material, display: int, cull: int) -> tuple[int, int]:
    """The shape's display and cull modes for a material: the kept ones while the material shows them."""
    if DISPLAY_ALPHA.get(display, "OPAQUE") != material.alpha_mode:
        display = ALPHA_DISPLAY.get(material.alpha_mode, 1)
    if (cull == CULL_BACK) != material.backface_culling:
        cull = CULL_BACK if material.backface_culling else CULL_NONE
    return display, cull


def update_materials(model: Model, scene: Scene) -> dict:
    """Write material settings into the kept tables; returns (material, slot) → sampler."""
    slot_samplers = {}
    for m, material in enumerate(scene.materials):
        d, s = material.extras.get("subshape"), material.extras.get("shape")
        if d is None or s is None:
            continue
        shape = model.shapes[s]
        modes = shape_modes(material, int(shape["display_mode"]), int(shape["cull_mode"]))
        model.shapes["display_mode"][s], model.shapes["cull_mode"][s] = modes
        for slot in material.textures:
            sampler = slot.extras.get("sampler")
            if sampler is None or sampler >= len(model.samplers):
                continue
            slot_to_sampler(model, scene, slot, sampler)
            slot_samplers[(m, slot.extras.get("slot", 0))] = sampler
    return slot_samplers


def wrap_flags(flags: int, wrap_s: str, wrap_t: str) -> int:
    """Sampler flags showing the wrap modes: the kept flags while they do."""
    if flags & USE_TPL_WRAP:
        return flags
    if wrap_modes(flags, (1, 1)) == (wrap_s, wrap_t):
        return flags
    bits = {"REPEAT": (0x1, 0x2), "MIRROR": (0x4, 0x8), "CLAMP": (0, 0)}
    return (flags & ~0xF) | bits.get(wrap_s, (0x1, 0))[0] | bits.get(wrap_t, (0, 0x2))[1]


def slot_to_sampler(model: Model, scene: Scene, slot: TextureSlot, sampler: int) -> None:
    """Write a texture slot's wrap, transform and image into sampler ``sampler``."""
    model.samplers["wrap"][sampler] = wrap_flags(
        int(model.samplers["wrap"][sampler]), slot.wrap_s, slot.wrap_t
    )
    transform = model.texcoord_transforms[sampler : sampler + 1]
    kept = transform.copy()
    transform["scale"] = restore(kept["scale"], kept["scale"], [slot.scale], lambda v: v)
    rotate = kept["rotate"]
    transform["rotate"] = restore(rotate, np.radians(rotate.astype(np.float64)), [slot.rotate], np.degrees)
    transform["translate"] = restore(
        kept["translate"],
        mapping_location(kept["translate"], kept["scale"], kept["rotate"]),
        [slot.translate],
        lambda v: file_translate(v, transform["scale"], transform["rotate"]),
    )
    model.texcoord_transforms[sampler] = transform[0]
    wanted = int(tpl_index_of(scene, slot.image))
    if texture_image(model, sampler, transform["frame_offset"][0]) != wanted:
        texture = int(model.samplers["first_texture"][sampler]) + int(transform["frame_offset"][0])
        if texture >= len(model.textures):
            model.samplers["first_texture"][sampler] = texture = append_texture(model, scene, slot.image)
            model.texcoord_transforms["frame_offset"][sampler] = 0
        model.textures["tpl_index"][texture] = wanted


def new_sampler(model: Model, scene: Scene, slot: TextureSlot) -> int:
    """A sampler, its transform and a texture entry for a slot the file did not have; returns its index."""
    sampler = np.zeros(1, fmt.SAMPLER_DTYPE)
    sampler["first_texture"] = append_texture(model, scene, slot.image)
    sampler["wrap"] = wrap_flags(0, slot.wrap_s, slot.wrap_t)
    transform = np.zeros(1, fmt.TEXCOORD_TRANSFORM_DTYPE)
    transform["scale"] = slot.scale
    transform["rotate"] = np.degrees(slot.rotate)
    transform["translate"] = file_translate(slot.translate, slot.scale, np.degrees(slot.rotate))
    model.samplers = np.concatenate([model.samplers, sampler])
    model.texcoord_transforms = np.concatenate([model.texcoord_transforms, transform])
    return len(model.samplers) - 1
