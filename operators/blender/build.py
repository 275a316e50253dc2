"""Build Blender data from a neutral ``Scene``: the one builder every importer uses.

Everything is created in bulk from numpy (``foreach_set``, ``keyframe_points.add``);
what Blender cannot hold natively is kept in custom properties and attributes
(see ``props``) so that ``extract.extract_scene`` gives the same Scene back.
``build_scene`` makes everything new; ``add_animations`` (animations onto an
existing armature and materials), ``replace_materials`` (a material set by
name) and ``switch_images`` (texture patterns) apply a Scene to existing data.

Choices a user sees:
- One collection per import, with a child collection per ``Mesh.collection``.
  Hidden meshes (e.g. lower levels of detail) are hidden in the viewport
  (the eye, so one click shows them) and in renders.
- Each Animation becomes one action per animated datablock: bone and armature
  object channels on the armature object, visibility on the mesh object,
  shape keys on the mesh's shape keys, material channels on the material's
  node tree. All get a fake user so they persist; the first animation is
  assigned. Looping animations get a Cycles modifier on every F-curve.
- Material channels: ``texture.<slot>.translate|rotate|scale`` drive that
  slot's Mapping node (added in front of the slot's image node of an existing
  material when missing; a channel with extras ``center`` gets the centred
  chain of ``_slot_mapping``), ``color.base_color`` the Principled Base Color;
  any other path (e.g. ``texture.<slot>.image_index``, ``color.konst0``) is
  keyed on a custom property of that name on the node tree, so it travels
  back on export (the viewport shows the slot's first image). A channel with
  ``Channel.index`` keys that one component (colour properties get 4). J3D
  colour slots (``color.register<n>``, ``color.konst<n>``, ``color.material``)
  are also shown in the shading by driven nodes (``_color_slot_nodes``).
- LINEAR bone quaternion channels are spherical (``Channel``), F-curves linear per component: whole
  frames between keys where the two part get the slerp as keys (``curves.slerp_keys``, recorded for
  the extractor, which takes them off while they still lie on the slerp).
- Bone euler channels keep their keys and Bézier handles when the bone's rest
  rotation (parent-relative) is the identity; otherwise, and when a bone also
  has quaternion channels, they are baked to quaternions at every frame
  (listed in ``BuildResult.baked``).
- Edit bones hold no scale: a rest scale (per axis of the bone, under a parent
  scaled evenly) is carried by the pose bases instead (``rest_scales``), so poses
  deform as the scene means at every frame and export gets the channels back;
  bones that would need shear are named in a warning.
- Bone channels of one component (``Channel.index``) become one F-curve when
  that component maps onto one pose component; otherwise the components of
  the bone and path are merged (see ``_component_channels``) and the parts are
  recorded, so an unedited export returns them exactly.
- A hidden mesh whose visibility an animation drives is hidden with
  ``hide_viewport`` (which the F-curves key), not the eye.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

import bpy
import numpy as np
from mathutils import Matrix

from ...formats.curves import (
    BoneMaps,
    continuity_signs,
    euler_to_matrix,
    loop_keys,
    map_keys,
    matrix_to_euler,
    sample,
    scaled_permutation,
    slerp_keys,
    split_bezier,
)
from ...formats.j3d.bpk import COLOR_RANGE as MATERIAL_COLOR_RANGE
from ...formats.j3d.brk import KONST_RANGE, REGISTER_RANGE
from ...formats.scene import Animation, Channel, Image, Layer, Material, Mesh, Scene, Skeleton, matrix_to_quat
from . import compat, props

INTERPOLATION_CODES = {"CONSTANT": 0, "LINEAR": 1, "BEZIER": 2}
_HANDLE_FREE = 0
# Frames: FCurve.update merges keys up to 0.01 apart (BEZT_BINARYSEARCH_THRESH, float32 times a little over).
MERGE_DISTANCE = 0.02
_UNSPREAD = "\0unspread"  # channel extras key, never a scene's: the keys before _spread_channel
_WRAP_TO_EXTENSION = {"REPEAT": "REPEAT", "CLAMP": "EXTEND", "MIRROR": "MIRROR"}
_BONE_PATHS = ("location", "rotation_quaternion", "rotation_euler", "scale")


@dataclass
class BuildResult:
    collection: bpy.types.Collection
    armatures: list[bpy.types.Object] = field(default_factory=list)  # per Scene skeleton
    objects: list[bpy.types.Object] = field(default_factory=list)  # per Scene mesh
    materials: list[bpy.types.Material] = field(default_factory=list)
    images: list[bpy.types.Image] = field(default_factory=list)
    actions: list[bpy.types.Action] = field(default_factory=list)
    baked: list[str] = field(default_factory=list)  # "animation: bone path" channels baked per frame
    warnings: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "armatures": len(self.armatures),
            "meshes": len(self.objects),
            "materials": len(self.materials),
            "images": len(self.images),
            "actions": len(self.actions),
        }


def build_scene(
    scene: Scene,
    context,
    *,
    collection_name: str | None = None,
    progress: Callable[[float], None] | None = None,
    set_frame_rate: bool = True,
    animatable_mapping: bool = False,
) -> BuildResult:
    """Create the Scene's images, materials, armatures, meshes and actions in ``context.scene``.

    ``set_frame_rate`` sets the scene's frame rate and range from the first
    animation; ``animatable_mapping`` gives every texture slot a Mapping node
    (else only slots with a transform or a texture animation get one).
    """
    report = progress or (lambda fraction: None)
    if context.view_layer.objects.active and context.view_layer.objects.active.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    collection = bpy.data.collections.new(collection_name or scene.name or "Import")
    context.scene.collection.children.link(collection)
    props.set_extras(collection, scene.extras)
    result = BuildResult(collection)

    result.images = [_build_image(image) for image in scene.images]
    report(0.1)
    animated_slots = {
        (c.target, int(c.path.split(".")[1]))
        for a in scene.animations
        for c in a.channels
        if c.target_kind == "material" and _mapping_input(c.path)
    }
    result.materials = [
        _build_material(m, result.images, scene.images, animated_slots, animatable_mapping)
        for m in scene.materials
    ]
    report(0.15)
    maps = [bone_maps(s) for s in scene.skeletons]
    rotation_modes = _rotation_modes(scene, maps)
    for i, skeleton in enumerate(scene.skeletons):
        modes = {bone: mode for (s, bone), mode in rotation_modes.items() if s == i}
        result.armatures.append(_build_armature(context, skeleton, collection, modes, result))
    report(0.2)
    child_collections: dict[str, bpy.types.Collection] = {}
    for i, mesh in enumerate(scene.meshes):
        target = collection
        if mesh.collection:
            if mesh.collection not in child_collections:
                child_collections[mesh.collection] = bpy.data.collections.new(mesh.collection)
                child_collections[mesh.collection][props.SCENE_NAME] = mesh.collection
                collection.children.link(child_collections[mesh.collection])
            target = child_collections[mesh.collection]
        armature = result.armatures[mesh.skeleton] if mesh.skeleton is not None else None
        obj = _build_mesh(context, mesh, target, result.materials, armature, result)
        result.objects.append(obj)
        report(0.2 + 0.5 * (i + 1) / len(scene.meshes))
    groups = []
    for i, animation in enumerate(scene.animations):
        groups.append(_build_animation(scene, animation, i, maps, result, assign=i == 0))
        report(0.7 + 0.3 * (i + 1) / len(scene.animations))
    collection[props.SCENE] = {
        "name": scene.name,
        "materials": [m.name for m in result.materials],
        "images": [i.name for i in result.images],
        "animations": groups,
    }
    for i, armature in enumerate(result.armatures):
        armature.data[props.ANIMATIONS] = [
            g for g, a in zip(groups, scene.animations, strict=True) if (a.skeleton or 0) == i
        ]
    if set_frame_rate and scene.animations:
        _set_frame_rate(context.scene, scene.animations[0])
    # An animated visibility drives hide_viewport, which the eye (hide_set) would override.
    animated = {
        c.target
        for a in scene.animations
        for c in a.channels
        if (c.target_kind, c.path) == ("object", "hide")
    }
    hidden = [
        o for o, m in zip(result.objects, scene.meshes, strict=True) if m.hidden and m.name not in animated
    ]
    for obj, mesh in zip(result.objects, scene.meshes, strict=True):
        obj.hide_viewport = mesh.hidden and mesh.name in animated
    if hidden:
        context.view_layer.update()  # the view layer knows new objects only once synced
        for obj in hidden:
            obj.hide_set(True, view_layer=context.view_layer)
    report(1.0)
    return result


# -- images -------------------------------------------------------------------


def pixels_hash(pixels: np.ndarray) -> str:
    """Hash of (H, W, 4) uint8 pixels, top row first."""
    return hashlib.sha1(np.ascontiguousarray(pixels, dtype=np.uint8).tobytes()).hexdigest()


def _build_image(image: Image) -> bpy.types.Image:
    pixels = image.pixels
    if pixels is None:
        height, width = max(image.height, 1), max(image.width, 1)
        pixels = np.broadcast_to(np.array([255, 0, 255, 255], np.uint8), (height, width, 4))
    height, width = pixels.shape[:2]
    blender_image = bpy.data.images.new(image.name, width, height, alpha=True)
    blender_image[props.SCENE_NAME] = image.name
    blender_image.alpha_mode = "CHANNEL_PACKED"
    flat = np.ascontiguousarray(pixels[::-1], dtype=np.float32).reshape(-1) * np.float32(1 / 255)
    blender_image.pixels.foreach_set(flat)
    blender_image.pack()
    blender_image[props.PIXELS_HASH] = pixels_hash(pixels)
    if image.pixels is None:
        blender_image[props.UNDECODED] = [image.width, image.height]
    if image.source_bytes is not None:
        blender_image[props.SOURCE_BYTES] = base64.b64encode(image.source_bytes).decode("ascii")
    blender_image[props.SOURCE_FORMAT] = image.source_format
    props.set_extras(blender_image, image.extras)
    return blender_image


# -- materials ----------------------------------------------------------------


def _mapping_input(path: str) -> tuple[str, tuple[int, ...]] | None:
    """The Mapping node input and components a material channel path drives, if any."""
    parts = path.split(".")
    if len(parts) != 3 or parts[0] != "texture" or not parts[1].isdigit():
        return None
    return {"translate": ("Location", (0, 1)), "rotate": ("Rotation", (2,)), "scale": ("Scale", (0, 1))}.get(
        parts[2]
    )


def mapping_node_name(slot: int) -> str:
    return f"Mapping {slot}"


def _principled(tree) -> bpy.types.Node:
    node = next((n for n in tree.nodes if n.type == "BSDF_PRINCIPLED"), None)
    return node or tree.nodes.new("ShaderNodeBsdfPrincipled")


def _build_material(material: Material, images, scene_images, animated_slots, animatable_mapping):
    blender_material = compat.new_material(material.name)
    blender_material[props.SCENE_NAME] = material.name
    tree = blender_material.node_tree
    bsdf = _principled(tree)
    bsdf.inputs["Base Color"].default_value = material.base_color
    bsdf.inputs["Alpha"].default_value = material.base_color[3]
    blender_material.diffuse_color = material.base_color
    # Since 4.2 transparency is blended or dithered; alpha clipping is a node (see _link_role).
    blender_material.surface_render_method = "BLENDED" if material.alpha_mode == "BLEND" else "DITHERED"
    blender_material[props.ALPHA_MODE] = material.alpha_mode
    blender_material.use_backface_culling = material.backface_culling
    props.set_extras(blender_material, material.extras)
    linked: set[str] = set()
    for i, slot in enumerate(material.textures):
        node = tree.nodes.new("ShaderNodeTexImage")
        node.location = (-700, 300 - 320 * i)
        node.image = images[slot.image]
        node.extension = _WRAP_TO_EXTENSION.get(slot.wrap_s, "REPEAT")
        node[props.SLOT] = {
            "index": i,
            "role": slot.role,
            "wrap_s": slot.wrap_s,
            "wrap_t": slot.wrap_t,
            # The transform at rest, for when an animation drives the Mapping node.
            "translate": list(slot.translate),
            "rotate": slot.rotate,
            "scale": list(slot.scale),
        }
        props.set_extras(node, slot.extras)
        vector = None
        if slot.uv_layer:
            uv_node = tree.nodes.new("ShaderNodeUVMap")
            uv_node.uv_map = slot.uv_layer
            uv_node.location = (-1250, node.location.y)
            vector = uv_node.outputs["UV"]
        transformed = slot.translate != (0.0, 0.0) or slot.rotate != 0.0 or tuple(slot.scale) != (1.0, 1.0)
        if transformed or animatable_mapping or (material.name, i) in animated_slots:
            mapping = tree.nodes.new("ShaderNodeMapping")
            mapping.name = mapping_node_name(i)
            mapping.location = (-950, node.location.y)
            mapping.inputs["Location"].default_value = (*slot.translate, 0.0)
            mapping.inputs["Rotation"].default_value = (0.0, 0.0, slot.rotate)
            mapping.inputs["Scale"].default_value = (*slot.scale, 1.0)
            if vector is None:
                coords = tree.nodes.new("ShaderNodeTexCoord")
                coords.location = (-1250, node.location.y)
                vector = coords.outputs["UV"]
            tree.links.new(vector, mapping.inputs["Vector"])
            vector = mapping.outputs["Vector"]
        if vector is not None:
            tree.links.new(vector, node.inputs["Vector"])
        _link_role(tree, bsdf, node, slot.role, material, scene_images[slot.image], linked)
    return blender_material


def _link_role(tree, bsdf, node, role, material, scene_image, linked):
    """Connect the first texture of each role to the Principled BSDF."""
    if role in linked:
        return
    if role == "base_color":
        tree.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])
        has_alpha = scene_image.pixels is not None and bool((scene_image.pixels[..., 3] < 255).any())
        if material.alpha_mode == "CLIP":
            clip = tree.nodes.new("ShaderNodeMath")
            clip.name = clip.label = "Alpha Clip"
            clip.operation = "GREATER_THAN"
            clip.inputs[1].default_value = 0.5
            clip.location = (-250, node.location.y - 200)
            tree.links.new(node.outputs["Alpha"], clip.inputs[0])
            tree.links.new(clip.outputs["Value"], bsdf.inputs["Alpha"])
        elif material.alpha_mode == "BLEND" or has_alpha:
            tree.links.new(node.outputs["Alpha"], bsdf.inputs["Alpha"])
    elif role == "normal":
        node.image.colorspace_settings.name = "Non-Color"
        normal_map = tree.nodes.new("ShaderNodeNormalMap")
        normal_map.location = (-250, node.location.y)
        tree.links.new(node.outputs["Color"], normal_map.inputs["Color"])
        tree.links.new(normal_map.outputs["Normal"], bsdf.inputs["Normal"])
    elif role == "emission":
        tree.links.new(node.outputs["Color"], bsdf.inputs["Emission Color"])
        bsdf.inputs["Emission Strength"].default_value = 1.0
    else:
        return
    linked.add(role)


# -- armatures ----------------------------------------------------------------


def _display(skeleton: Skeleton) -> np.ndarray:
    return np.eye(4) if skeleton.bone_display is None else np.asarray(skeleton.bone_display, dtype=np.float64)


def _orthonormal(rest: np.ndarray) -> tuple[np.ndarray, float]:
    """Rest matrices without scale, shear or mirroring (edit bones cannot hold them), and how far off they were."""
    u, s, vt = np.linalg.svd(rest[:, :3, :3])
    mirrored = np.linalg.det(u @ vt) < 0
    u[mirrored, :, 2] *= -1
    s[mirrored, 2] *= -1
    out = rest.copy()
    out[:, :3, :3] = u @ vt
    return out, float(np.abs(s - 1).max(initial=0.0))


def bone_lengths(rest: np.ndarray, parents: np.ndarray, display: np.ndarray) -> np.ndarray:
    """Lengths that reach each bone's farthest child ahead of it, else half the parent's (or typical) length."""
    heads = rest[:, :3, 3]
    axes = (rest[:, :3, :3] @ display[:3, :3])[:, :, 1]
    lengths = np.zeros(len(parents))
    for i, parent in enumerate(parents):
        if parent >= 0:
            reach = (heads[i] - heads[parent]) @ axes[parent]
            lengths[parent] = max(lengths[parent], reach)
    extent = float(np.ptp(heads, axis=0).max(initial=0.0)) if len(heads) else 0.0
    typical = float(np.median(lengths[lengths > 0])) if (lengths > 0).any() else max(extent * 0.1, 0.1)
    minimum = typical * 0.1
    for i, parent in enumerate(parents):  # parents precede children
        if lengths[i] < minimum:
            lengths[i] = max(lengths[parent] * 0.5 if parent >= 0 else typical, minimum)
    return lengths


def _build_armature(context, skeleton: Skeleton, collection, rotation_modes, result) -> bpy.types.Object:
    armature = bpy.data.armatures.new(skeleton.name)
    obj = bpy.data.objects.new(skeleton.name, armature)
    obj[props.SCENE_NAME] = skeleton.name
    collection.objects.link(obj)
    display = _display(skeleton)
    rest, scales, _, _, inexact = rest_scales(skeleton)
    if inexact:
        result.warnings.append(
            f"{skeleton.name}: the rest scale of bones {', '.join(inexact[:8])} (uneven under a rotated child, "
            "or sheared) is not kept while they animate"
        )
    shown = rest @ display
    lengths = bone_lengths(rest, skeleton.parents, display)
    deform = np.ones(len(skeleton), bool) if skeleton.deform is None else np.asarray(skeleton.deform, bool)
    context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = []
    for i, name in enumerate(skeleton.bone_names):
        bone = armature.edit_bones.new(name)
        bone.head = (0.0, 0.0, 0.0)
        bone.tail = (0.0, float(lengths[i]), 0.0)
        bone.matrix = Matrix(shown[i].tolist())
        if skeleton.parents[i] >= 0:
            bone.parent = edit_bones[skeleton.parents[i]]
        bone.use_deform = bool(deform[i])
        edit_bones.append(bone)
    names = [b.name for b in edit_bones]
    bpy.ops.object.mode_set(mode="OBJECT")
    if names != list(skeleton.bone_names):
        result.warnings.append(f"{skeleton.name}: bone names were shortened or made unique by Blender")
    armature[props.JOINT_ORDER] = names
    if not np.allclose(scales, np.eye(3), atol=1e-9):
        armature[props.REST_SCALE] = scales.reshape(-1).tolist()
    if skeleton.bone_display is not None:
        armature[props.BONE_DISPLAY] = display.reshape(-1).tolist()
    props.set_extras(armature, skeleton.extras)
    for name, extras in zip(names, skeleton.bone_extras, strict=False):
        props.set_extras(armature.bones[name], extras)
    for name, pose_bone in zip(skeleton.bone_names, (obj.pose.bones[n] for n in names), strict=True):
        pose_bone.rotation_mode = rotation_modes.get(name, "QUATERNION")
    return obj


def rest_scales(skeleton: Skeleton) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """What edit bones cannot hold of the rest matrices, and how pose bases carry it instead.

    Edit bones hold rotations, so bone i stands at the rotation part Rᵢ of its rest Wᵢ
    (``_orthonormal``), leaving Kᵢ = Rᵢ⁻¹·Wᵢ (3×3). Skinning moves vertices by pose·Rᵢ⁻¹ where the
    scene means W(t)·Wᵢ⁻¹, so the pose matrix must be W(t)·Kᵢ⁻¹, and a bone whose channels give the
    parent-relative G gets the basis Lᵢ⁻¹·Kₚ·G·Kᵢ⁻¹ (L: the rotation-only local rest). With Kₚ a
    uniform kₚ and Kᵢ a diagonal k (in the bone's rest frame) that is G with its translation × kₚ
    and its scale × kₚ/k: affine maps of the channels (``BoneMaps``), exact at every frame, undone
    on export by their inverses (the extractor gets K back from ``props.REST_SCALE``). Otherwise the
    basis would need shear; such bones keep k = kₚ = 1 and are listed.

    Returns (rotation-only rests (N, 4, 4), K (N, 3, 3), k (N, 3), kₚ (N,), names of inexact bones).
    """
    full = np.asarray(skeleton.rest, dtype=np.float64)
    rest, _ = _orthonormal(full)
    scales = np.swapaxes(rest[:, :3, :3], 1, 2) @ full[:, :3, :3]
    # Rests read back from Blender are float32: differences that small are rounding, not scale.
    scales = np.where(np.abs(scales - np.eye(3)) <= 1e-5, np.eye(3), scales)
    diagonal = np.diagonal(scales, axis1=1, axis2=2)
    size = np.maximum(1.0, np.abs(diagonal).max(axis=1))
    is_diagonal = np.abs(scales - diagonal[:, :, None] * np.eye(3)).max(axis=(1, 2)) <= 1e-6 * size
    uniform = is_diagonal & (np.ptp(diagonal, axis=1) <= 1e-6 * size)
    parents = np.asarray(skeleton.parents)
    has_parent = parents >= 0
    exact = is_diagonal & np.where(has_parent, uniform[np.maximum(parents, 0)], True)
    bone_scale = np.where(exact[:, None], diagonal, 1.0)
    parent_scale = np.where(exact & has_parent, diagonal[np.maximum(parents, 0), 0], 1.0)
    unscaled = (scales == np.eye(3)).all(axis=(1, 2))
    lost = ~exact & ~(unscaled & np.where(has_parent, unscaled[np.maximum(parents, 0)], True))
    inexact = [name for name, bad in zip(skeleton.bone_names, lost, strict=True) if bad]
    return rest, scales, bone_scale, parent_scale, inexact


def bone_maps(skeleton: Skeleton) -> dict[str, BoneMaps]:
    """Bone name → the maps between its parent-relative channels and its pose basis."""
    rest, _, bone_scale, parent_scale, _ = rest_scales(skeleton)
    local = Skeleton(skeleton.name, skeleton.bone_names, skeleton.parents, rest).local_rest()
    display = _display(skeleton)
    rest_quats = matrix_to_quat(local[:, :3, :3])
    display_quat = matrix_to_quat(display[:3, :3])
    return {
        name: BoneMaps(m, display, q, display_quat, k, float(kp))
        for name, m, q, k, kp in zip(
            skeleton.bone_names, local, rest_quats, bone_scale, parent_scale, strict=True
        )
    }


def _rotation_modes(scene: Scene, maps: list[dict[str, BoneMaps]]) -> dict[tuple[int, str], str]:
    """(skeleton, bone) → 'XYZ' when its only rotation channels are eulers that map exactly, else 'QUATERNION'."""
    modes: dict[tuple[int, str], str] = {}
    for animation in scene.animations:
        if not scene.skeletons:
            break
        skeleton = animation.skeleton or 0
        for channel in animation.channels:
            bone = maps[skeleton].get(channel.target) if channel.target_kind == "bone" else None
            if bone is None:
                continue
            key = (skeleton, channel.target)
            exact_euler = "rotation_euler" in bone.maps
            if channel.path == "rotation_quaternion" or (
                channel.path == "rotation_euler" and not exact_euler
            ):
                modes[key] = "QUATERNION"
            elif channel.path == "rotation_euler":
                modes.setdefault(key, "XYZ")
    return modes


# -- meshes -------------------------------------------------------------------


def _attribute(mesh, name: str, kind: str, domain: str, data: np.ndarray, field_name: str) -> None:
    dtype = np.int32 if kind == "INT" else np.float32
    mesh.attributes.new(name, kind, domain).data.foreach_set(
        field_name, np.ascontiguousarray(data, dtype).ravel()
    )


def _corner_data(
    layer_data: np.ndarray, domain: str, corner_vertices: np.ndarray, keep: np.ndarray
) -> np.ndarray:
    """A layer's values per built corner (POINT layers expanded through the corner vertices)."""
    if domain == "POINT":
        return layer_data[corner_vertices]
    return layer_data.reshape(-1, 3, layer_data.shape[-1])[keep].reshape(-1, layer_data.shape[-1])


def set_normals(blender_mesh, normals: Layer, corners: np.ndarray, keep: np.ndarray) -> None:
    """Blender's custom normals, and the exact source normals beside them for the extractor."""
    data = np.asarray(normals.data, np.float32)
    if normals.domain == "POINT":
        blender_mesh.normals_split_custom_set_from_vertices(data)
    else:
        data = _corner_data(data, "CORNER", corners, keep)
        blender_mesh.normals_split_custom_set(data)
    _attribute(blender_mesh, props.SOURCE_NORMAL, "FLOAT_VECTOR", normals.domain, data, "vector")


def _build_mesh(context, mesh: Mesh, collection, materials, armature, result) -> bpy.types.Object:
    triangles = np.asarray(mesh.triangles, np.int32).reshape(-1, 3)
    # Blender cannot hold triangles that repeat a vertex (or name a missing one).
    keep = (
        (triangles[:, 0] != triangles[:, 1])
        & (triangles[:, 1] != triangles[:, 2])
        & (triangles[:, 0] != triangles[:, 2])
        & ((triangles >= 0) & (triangles < len(mesh.positions))).all(axis=1)
    )
    if not keep.all():
        result.warnings.append(f"{mesh.name}: {int((~keep).sum())} degenerate triangles left out")
        triangles = triangles[keep]
    corners = triangles.ravel()
    blender_mesh = bpy.data.meshes.new(mesh.name)
    blender_mesh.vertices.add(len(mesh.positions))
    blender_mesh.loops.add(len(corners))
    blender_mesh.polygons.add(len(triangles))
    blender_mesh.attributes["position"].data.foreach_set(
        "vector", np.ascontiguousarray(mesh.positions, np.float32).ravel()
    )
    blender_mesh.attributes[".corner_vert"].data.foreach_set("value", corners)
    blender_mesh.polygons.foreach_set("loop_start", np.arange(0, len(corners), 3, dtype=np.int32))
    blender_mesh.update(calc_edges=True)

    if mesh.normals is not None:
        set_normals(blender_mesh, mesh.normals, corners, keep)
    info = {"uv_domains": {}}
    for layer in mesh.uv_layers:
        uv = blender_mesh.uv_layers.new(name=layer.name)
        info["uv_domains"][uv.name] = layer.domain
        # The layer's generic attribute takes the values several times faster than ``uv.data``.
        blender_mesh.attributes[uv.name].data.foreach_set(
            "vector",
            np.ascontiguousarray(
                _corner_data(np.asarray(layer.data), layer.domain, corners, keep), np.float32
            ).ravel(),
        )
    for layer in mesh.color_layers:
        data = np.asarray(layer.data)
        if layer.domain == "CORNER":
            data = _corner_data(data, "CORNER", corners, keep)
        attribute = blender_mesh.color_attributes.new(layer.name, "FLOAT_COLOR", layer.domain)
        attribute.data.foreach_set("color", np.ascontiguousarray(data, np.float32).ravel())
    if mesh.tangents is not None:
        data = np.asarray(mesh.tangents.data)
        if mesh.tangents.domain == "CORNER":
            data = _corner_data(data, "CORNER", corners, keep)
        _attribute(blender_mesh, props.TANGENT, "FLOAT_VECTOR", mesh.tangents.domain, data[:, :3], "vector")
        _attribute(blender_mesh, props.TANGENT_SIGN, "FLOAT", mesh.tangents.domain, data[:, 3], "value")
    for index in mesh.materials:
        blender_mesh.materials.append(materials[index])
    indices = None if mesh.material_indices is None else np.asarray(mesh.material_indices, np.int32)[keep]
    if indices is not None and mesh.materials and indices.any():  # all zero is Blender's default
        _attribute(blender_mesh, "material_index", "INT", "FACE", indices, "value")
    if mesh.skin_weights is not None:
        info["skin_influences"] = int(np.asarray(mesh.skin_weights).shape[1])
    if mesh.shape_keys:
        info["shape_key_extras"] = {k.name: k.extras for k in mesh.shape_keys if k.extras}
    props.set_extras(blender_mesh, mesh.extras)

    obj = bpy.data.objects.new(mesh.name, blender_mesh)
    obj[props.SCENE_NAME] = mesh.name
    collection.objects.link(obj)
    if mesh.matrix is not None:
        obj.matrix_basis = Matrix(np.asarray(mesh.matrix, dtype=np.float64).tolist())
    if armature is not None:
        obj.parent = armature
        modifier = obj.modifiers.new("Armature", "ARMATURE")
        modifier.object = armature
        if mesh.skin_joints is not None and mesh.skin_weights is not None:
            add_vertex_groups(
                obj, list(armature.data[props.JOINT_ORDER]), mesh.skin_joints, mesh.skin_weights
            )
    if mesh.shape_keys:
        obj.shape_key_add(name="Basis", from_mix=False)
        for key in mesh.shape_keys:
            block = obj.shape_key_add(name=key.name, from_mix=False)
            block.value = 0.0  # Blender adds keys at full weight; the scene's mesh is the rest
            block.data.foreach_set("co", np.ascontiguousarray(key.positions, np.float32).ravel())
    blender_mesh[props.MESH_INFO] = info
    obj.hide_render = mesh.hidden
    obj[props.HIDDEN] = mesh.hidden
    return obj


def add_vertex_groups(obj, bone_names: list[str], joints: np.ndarray, weights: np.ndarray) -> None:
    """One vertex group per bone that has weights; one call per distinct (bone, weight) pair.

    Blender has no bulk setter for vertex weights; grouping equal weights keeps the
    calls few for the 8- and 16-bit weights files store.
    """
    joints = np.asarray(joints, np.int64)
    weights = np.asarray(weights, np.float32)
    vertex = np.repeat(np.arange(joints.shape[0]), joints.shape[1])
    joints, weights = joints.ravel(), weights.ravel()
    used = (weights > 0) & (joints >= 0) & (joints < len(bone_names))
    vertex, joints, weights = vertex[used], joints[used], weights[used]
    # One sort on (bone, weight bits): positive float32 bits sort like the floats; vertices stay in order.
    key = (joints << 32) | weights.view(np.uint32).astype(np.int64)
    order = np.argsort(key, kind="stable")
    key, vertex = key[order], vertex[order].tolist()
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], len(key)].tolist()
    groups: dict[int, bpy.types.VertexGroup] = {}
    for start, end, joint, weight in zip(
        starts.tolist(), ends, (key[starts] >> 32).tolist(), weights[order][starts].tolist(), strict=True
    ):
        group = groups.get(joint)
        if group is None:
            group = groups[joint] = obj.vertex_groups.new(name=bone_names[joint])
        group.add(vertex[start:end], weight, "REPLACE")


# -- animations ---------------------------------------------------------------


def _spread_close_keys(times, values, handles_left, handles_right):
    """Keys less than ``MERGE_DISTANCE`` apart, moved that far apart; the curve kept at every whole frame.

    ``FCurve.update`` merges keys closer than that, and Blender picks either of two keys on one
    frame, where the game takes the later. So a step over a short gap (a file may step over
    0.0005 frames) starts ``MERGE_DISTANCE`` after the earlier key, and a step on one frame ends
    that far before it; the segment next to the moved key is cut there (de Casteljau), so it is
    the same curve. Only the instants inside the gap differ.
    """
    times = np.array(times, np.float64)
    gaps = np.diff(times)
    close = np.flatnonzero((gaps >= 0) & (gaps < MERGE_DISTANCE)) + 1
    if not len(close):
        return times, values, handles_left, handles_right
    values = np.array(values, np.float64)
    bezier = handles_left is not None and handles_right is not None
    if bezier:
        handles_left, handles_right = np.array(handles_left, np.float64), np.array(handles_right, np.float64)
    for i in close:  # few, and each depends on the previous move
        if times[i] == times[i - 1]:  # a step on one frame: the earlier key moves back
            key, target, segment = i - 1, times[i] - MERGE_DISTANCE, i - 2
        else:  # a step over a short gap: the later key moves on
            key, target, segment = i, times[i - 1] + MERGE_DISTANCE, i
        if segment < 0 or segment + 1 >= len(times) or not times[segment] < target < times[segment + 1]:
            shift = target - times[key]  # nothing to cut: move the key and its handles as they are
            times[key] = target
            if bezier:
                handles_left[key, 0] += shift
                handles_right[key, 0] += shift
            continue
        if not bezier:
            fraction = (target - times[segment]) / (times[segment + 1] - times[segment])
            values[key] = values[segment] + fraction * (values[segment + 1] - values[segment])
            times[key] = target
            continue
        p0 = np.array([times[segment], values[segment]])
        p3 = np.array([times[segment + 1], values[segment + 1]])
        a, d, point, e, c = split_bezier(p0, handles_right[segment], handles_left[segment + 1], p3, target)
        point[0] = target
        moved = point - np.array([times[key], values[key]])
        times[key], values[key] = point
        if key == segment + 1:  # the segment's end moved back: keep its first part
            handles_right[segment], handles_left[key] = a, d
            handles_right[key] += moved
        else:  # its start moved on: keep its last part
            handles_right[key], handles_left[segment + 1] = e, c
            handles_left[key] += moved
    return times, values, handles_left, handles_right


def _write_fcurve(fcurve, times, values, interpolation, handles_left=None, handles_right=None, cyclic=False):
    """``interpolation``: one for every key, or one per key."""
    count = len(times)
    points = fcurve.keyframe_points
    points.add(count)
    co = np.empty((count, 2), np.float32)
    co[:, 0] = times
    co[:, 1] = values
    points.foreach_set("co", co.ravel())
    linear = INTERPOLATION_CODES["LINEAR"]  # for modes the scene does not name
    if isinstance(interpolation, str):
        codes = np.full(count, INTERPOLATION_CODES.get(interpolation, linear), np.int32)
    else:
        modes, per_key = np.unique(np.asarray(interpolation, dtype=str), return_inverse=True)
        codes = np.array([INTERPOLATION_CODES.get(m, linear) for m in modes], np.int32)[per_key]
    points.foreach_set("interpolation", codes)
    if handles_left is not None and handles_right is not None:
        free = np.full(count, _HANDLE_FREE, np.int32)
        points.foreach_set("handle_left_type", free)
        points.foreach_set("handle_right_type", free)
        points.foreach_set("handle_left", np.ascontiguousarray(handles_left, np.float32).ravel())
        points.foreach_set("handle_right", np.ascontiguousarray(handles_right, np.float32).ravel())
    if cyclic:
        fcurve.modifiers.new("CYCLES")
    fcurve.update()


class _ActionSet:
    """The actions of one Animation, one per animated datablock, made on first use."""

    def __init__(self, animation: Animation, index: int, result: BuildResult, assign: bool):
        self.animation = animation
        self.index = index  # position in Scene.animations, for the order on export
        self.result = result
        self.assign = assign
        self.actions: dict[int, tuple] = {}
        self.order = 0
        self.group = secrets.token_hex(8)  # ties the actions of one animation together

    def fcurves(
        self, id_data, id_type: str, data_path: str, count: int, group: str, meta: dict | None, indices=None
    ):
        """New F-curves for ``count`` components (array ``indices``, else 0…count−1); ``meta`` (None for
        a duplicate) tells the extractor the channel: it becomes the channel's record (``write`` adds to it)."""
        action, slot, channels = self.ensure(id_data, id_type)
        if meta is not None:
            meta.update(order=self.order, data_path=data_path)
            channels.append(meta)
            self.order += 1
        return compat.new_fcurves(
            action, slot, data_path, range(count) if indices is None else indices, group
        )

    def write(
        self, fcurves, meta, times, values, interpolation, handles_left=None, handles_right=None
    ) -> None:
        """Key ``fcurves`` with the components of ``values`` (K, C) and handles (K, C, 2).

        A looping animation repeats its frame range, not each F-curve's keys (``loop_keys``); what that
        adds goes to the channel record ``meta`` (None for a duplicate) for the extractor to take off.
        """
        animation = self.animation
        loop = animation.loop and animation.frame_end > animation.frame_start
        if loop:
            channel_interpolation = interpolation
            times, values, interpolation, handles_left, handles_right, sides = loop_keys(
                times,
                values,
                channel_interpolation,
                handles_left,
                handles_right,
                animation.frame_start,
                animation.frame_end,
                MERGE_DISTANCE,
            )
            if sides and meta is not None:
                meta["loop"] = _loop_record(sides, fcurves, animation, channel_interpolation)
        for c, fcurve in enumerate(fcurves):
            _write_fcurve(
                fcurve,
                times,
                values[:, c],
                interpolation,
                None if handles_left is None else handles_left[:, c],
                None if handles_right is None else handles_right[:, c],
                animation.loop,
            )

    def ensure(self, id_data, id_type: str) -> tuple:
        """The action (with its slot and channel records) animating ``id_data``."""
        key = id_data.as_pointer()
        if key not in self.actions:
            name = self.animation.name if not self.actions else f"{self.animation.name} {id_data.name}"
            action, slot = compat.new_action(name, id_type, id_data.name)
            action.use_fake_user = True
            self._frame_range(action)
            action[props.ANIMATION] = {
                "name": self.animation.name,
                "fps": float(self.animation.fps),
                "loop": self.animation.loop,
                "frame_start": float(self.animation.frame_start),
                "frame_end": float(self.animation.frame_end),
                "skeleton": -1 if self.animation.skeleton is None else self.animation.skeleton,
                "index": self.index,
                "primary": not self.actions,
                "group": self.group,
            }
            if not self.actions:
                props.set_extras(action, self.animation.extras)
            self.actions[key] = (action, slot, [])
            self.result.actions.append(action)
            if self.assign:
                compat.assign_action(id_data, action, slot)
        return self.actions[key]

    def _frame_range(self, action) -> None:
        if self.animation.frame_end > self.animation.frame_start:
            action.use_frame_range = True
            action.frame_start = self.animation.frame_start
            action.frame_end = self.animation.frame_end
            action.use_cyclic = self.animation.loop

    def finish(self) -> None:
        for action, _slot, channels in self.actions.values():
            info = action[props.ANIMATION]
            info["channels"] = channels


def _loop_record(sides: dict, fcurves, animation: Animation, interpolation: str) -> dict:
    """``loop_keys``' changes as the extractor reads them (``curves.unloop_rows``): cut keys by F-curve
    array index, the channel's interpolation as the F-curve's code."""
    record = {
        "frames": [float(animation.frame_start), float(animation.frame_end)],
        "interpolation": INTERPOLATION_CODES.get(interpolation, INTERPOLATION_CODES["LINEAR"]),
    }
    for side, change in sides.items():
        if "held" not in change:
            change = {
                kind: {str(fc.array_index): rows for fc, rows in zip(fcurves, change[kind], strict=True)}
                for kind in ("original", "written")
            }
        record[side] = change
    return record


def _channel_meta(channel: Channel) -> dict:
    meta = {"kind": channel.target_kind, "target": channel.target, "path": channel.path}
    extras = dict(channel.extras)
    unspread = extras.pop(_UNSPREAD, None)
    if extras:
        meta["extras"] = extras
    if unspread is not None:
        meta["unspread"] = unspread
    return meta


def _spread_channel(channel: Channel) -> Channel:
    """The channel with keys too close for an F-curve spread (``_spread_close_keys``).

    The file's keys go along (under ``_UNSPREAD``, moved to the channel record by
    ``_channel_meta``) so that the extractor gives them back while the keys are unedited.
    """
    times, values = _keys(channel)
    gaps = np.diff(times)
    if not ((gaps >= 0) & (gaps < MERGE_DISTANCE)).any():
        return channel
    bezier = channel.handles_left is not None and channel.handles_right is not None
    shape = values.shape + (2,)
    left = np.asarray(channel.handles_left, np.float64).reshape(shape) if bezier else None
    right = np.asarray(channel.handles_right, np.float64).reshape(shape) if bezier else None
    columns = [
        _spread_close_keys(
            times, values[:, c], left[:, c] if bezier else None, right[:, c] if bezier else None
        )
        for c in range(values.shape[1])
    ]
    spread = dataclasses.replace(
        channel,
        times=columns[0][0],
        values=np.stack([column[1] for column in columns], axis=1),
        handles_left=np.stack([column[2] for column in columns], axis=1) if bezier else None,
        handles_right=np.stack([column[3] for column in columns], axis=1) if bezier else None,
    )
    original = {"times": times.tolist(), "values": values.tolist(), "spread_times": spread.times.tolist()}
    original["spread_values"] = spread.values.tolist()
    if bezier:
        original.update(handles_left=left.tolist(), handles_right=right.tolist())
    spread.extras = {**channel.extras, _UNSPREAD: original}
    return spread


def _keys(channel: Channel):
    times = np.asarray(channel.times, np.float64)
    values = np.asarray(channel.values, np.float64).reshape(len(times), -1)
    return times, values


def bake_frames(times: np.ndarray) -> np.ndarray:
    """Every whole frame of the keyed range plus the key times themselves."""
    whole = np.arange(np.ceil(times[0]), np.floor(times[-1]) + 1)
    return np.union1d(whole, times)


def _build_animation(
    scene: Scene,
    animation: Animation,
    index: int,
    skeleton_maps,
    result: BuildResult,
    assign: bool,
    blender_names: bool = False,
) -> str:
    """``blender_names``: the skeleton's bone names are the armature's (else the built ones, which
    Blender may have shortened, are looked up through the joint order)."""
    actions = _ActionSet(animation, index, result, assign)
    armature = maps = None
    if result.armatures:
        skeleton = scene.skeletons[animation.skeleton or 0]
        armature, maps = result.armatures[animation.skeleton or 0], skeleton_maps[animation.skeleton or 0]
        order = skeleton.bone_names if blender_names else armature.data[props.JOINT_ORDER]
        pose_names = dict(zip(skeleton.bone_names, order, strict=True))
    objects = {o.get(props.SCENE_NAME, o.name): o for o in result.armatures + result.objects}
    meshes = {m.name: o for m, o in zip(scene.meshes, result.objects, strict=True)}
    materials = {m.name: b for m, b in zip(scene.materials, result.materials, strict=True)}
    channels = [(c, None) for c in animation.channels]
    if maps is not None:
        channels = _component_channels(animation.channels, maps, armature, pose_names)
    for channel, parts in channels:
        channel = _spread_channel(channel)
        times, values = _keys(channel)
        if len(times) == 0:
            continue
        kind = channel.target_kind
        if kind == "bone" and maps is not None and channel.target in maps and channel.path in _BONE_PATHS:
            _build_bone_channel(
                channel,
                times,
                values,
                maps[channel.target],
                armature,
                pose_names[channel.target],
                actions,
                result,
                parts,
            )
        elif kind == "object" and channel.path == "hide" and channel.target in objects:
            obj = objects[channel.target]
            meta = _channel_meta(channel)
            for data_path in ("hide_viewport", "hide_render"):
                record = meta if data_path == "hide_viewport" else None
                fcurves = actions.fcurves(obj, "OBJECT", data_path, 1, "", record)
                actions.write(fcurves, record, times, values[:, :1], "CONSTANT")
        elif kind == "shape_key" and channel.target in meshes and meshes[channel.target].data.shape_keys:
            key = meshes[channel.target].data.shape_keys
            if channel.path not in key.key_blocks:
                result.warnings.append(f"{animation.name}: no shape key {channel.path!r} on {channel.target}")
                continue
            data_path = f'key_blocks["{bpy.utils.escape_identifier(channel.path)}"].value'
            meta = _channel_meta(channel)
            fcurves = actions.fcurves(key, "KEY", data_path, 1, "", meta)
            actions.write(
                fcurves,
                meta,
                times,
                values,
                channel.interpolation,
                channel.handles_left,
                channel.handles_right,
            )
        elif kind == "material" and channel.target in materials:
            _build_material_channel(materials[channel.target], channel, times, values, actions)
        else:
            result.warnings.append(
                f"{animation.name}: channel {kind} {channel.target!r} {channel.path} has no target"
            )
    if not actions.actions and armature is not None:  # keep an animation without channels for export
        actions.ensure(armature, "OBJECT")
    actions.finish()
    return actions.group


def replace_animations(scene: Scene, armature_obj) -> BuildResult:
    """Swap the bone animations imported for ``armature_obj`` for the Scene's (of its first skeleton).

    For re-reading a model's animations against another keyframe library: the
    old actions are removed, the new ones are recorded for export in their place
    and the first is assigned.
    """
    record = props.import_record([armature_obj])
    old_groups = set(props.to_python(armature_obj.data.get(props.ANIMATIONS, [])))
    for action in [a for a in bpy.data.actions if a.get(props.ANIMATION, {}).get("group") in old_groups]:
        bpy.data.actions.remove(action)
    result = BuildResult(record or armature_obj.users_collection[0], armatures=[armature_obj])
    scene = dataclasses.replace(scene, meshes=[], materials=[], images=[])  # bone channels only
    maps = [bone_maps(s) for s in scene.skeletons]
    groups = [
        _build_animation(scene, animation, i, maps, result, assign=i == 0)
        for i, animation in enumerate(scene.animations)
    ]
    armature_obj.data[props.ANIMATIONS] = groups
    if record is not None:
        info = props.to_python(record[props.SCENE])
        info["animations"] = [g for g in info["animations"] if g not in old_groups] + groups
        record[props.SCENE] = info
    return result


def add_animations(
    scene: Scene, context, armature_obj=None, materials=(), *, set_frame_rate: bool = True
) -> BuildResult:
    """Build the Scene's animations onto existing Blender data, after the animations it already has.

    Bone channels animate ``armature_obj``: ``scene.skeletons[0]`` is its own skeleton (as
    ``extract.extract_scene`` gives it), so channels find their bones by Blender's names; bones
    whose euler channels map exactly turn to XYZ rotation. Material channels animate those of
    ``materials`` whose Scene name (``props.scene_name``) they give. The new actions are recorded
    for export and the first is assigned; ``set_frame_rate``: the frame rate and range follow it.
    """
    armatures = [armature_obj] if armature_obj is not None else []
    record = props.import_record(armatures)
    collection = record or (armature_obj.users_collection[0] if armature_obj else context.scene.collection)
    targets = {props.scene_name(m): m for m in materials}
    result = BuildResult(collection, armatures=armatures, materials=list(targets.values()))
    scene = dataclasses.replace(scene, meshes=[], materials=[Material(name) for name in targets], images=[])
    maps = [bone_maps(s) for s in scene.skeletons]
    for (_, bone), mode in _rotation_modes(scene, maps).items():
        armature_obj.pose.bones[bone].rotation_mode = mode
    old_groups = props.to_python(armature_obj.data.get(props.ANIMATIONS, [])) if armature_obj else []
    groups = [
        _build_animation(scene, animation, len(old_groups) + i, maps, result, i == 0, blender_names=True)
        for i, animation in enumerate(scene.animations)
    ]
    if armature_obj is not None:
        armature_obj.data[props.ANIMATIONS] = old_groups + groups
    if record is not None:
        info = props.to_python(record[props.SCENE])
        info["animations"] = info["animations"] + groups
        record[props.SCENE] = info
    if scene.animations and set_frame_rate:
        _set_frame_rate(context.scene, scene.animations[0])
    return result


def replace_materials(scene: Scene, context, materials=()) -> BuildResult:
    """Build the Scene's images and materials; each replaces the one of ``materials`` with its Scene name.

    A replaced material's users switch to the new one, which takes its name (the old one is
    removed); materials without a match are new. ``BuildResult.materials`` in Scene order.
    """
    result = BuildResult(context.scene.collection)
    result.images = [_build_image(image) for image in scene.images]
    result.materials = [
        _build_material(m, result.images, scene.images, set(), False) for m in scene.materials
    ]
    existing = {props.scene_name(m): m for m in materials}
    for material, built in zip(scene.materials, result.materials, strict=True):
        old = existing.get(material.name)
        if old is not None and old != built:
            old.user_remap(built)
            name = old.name
            bpy.data.materials.remove(old)
            built.name = name
    return result


def _build_material_channel(material, channel: Channel, times, values, actions) -> None:
    """Key a material channel on the material's node tree: a whole vector, or one component."""
    tree = material.node_tree
    data_path, indices, offsets = _material_data_path(tree, channel, values.shape[1])
    meta = _channel_meta(channel)
    if channel.index is not None:  # the other components are other channels on the same data path
        indices, offsets = (
            indices[channel.index : channel.index + 1],
            offsets[channel.index : channel.index + 1],
        )
        meta.update(index=channel.index, array_index=indices[0])
    offsets = np.asarray(offsets, np.float64)
    if offsets.any():
        meta["offset"] = offsets.tolist()
    fcurves = actions.fcurves(tree, "NODETREE", data_path, len(indices), "", meta, indices)
    _color_slot_nodes(material, channel.path)
    handles = [channel.handles_left, channel.handles_right]
    for i, side in enumerate(handles):
        if side is not None:
            handles[i] = np.array(side, np.float64)
            handles[i][..., 1] += offsets
    actions.write(fcurves, meta, times, values + offsets, channel.interpolation, *handles)


# J3D colour slots (formats/j3d/convert.py paths) and the range the game clamps each to.
_COLOR_SLOT = re.compile(r"color\.(register|konst|material)(\d*)$")
_COLOR_RANGES = {"register": REGISTER_RANGE, "konst": KONST_RANGE, "material": MATERIAL_COLOR_RANGE}
# What the game makes of a keyed value v (colour / 255): clamped, truncated to an integer. A key's
# float32 value can sit a hair below its integer, so values within 0.001 of the next one count as it.
_COLOR_EXPRESSION = "trunc(clamp(v * 255, {}, {}) + (0.001 if v > 0 else -0.001)) / 255"


def _color_slot_nodes(material, path: str) -> None:
    """Show the colour slot keyed on the node tree property ``path`` in the shading, once per material.

    An RGB node "J3D <kind> <n>" (R, G, B) and a Value node "J3D <kind> <n> alpha" are driven by the
    property's components, as the game evaluates them (``_COLOR_EXPRESSION``); the keys stay the
    file's curves on the property, which is what export reads back. The RGB node cannot go below 0
    (register colours can): it shows 0, what the game's final clamp makes of a negative tint.

    Wiring, the game's most common use of each slot: the material colour (BPK, MAT1 material colour
    0) multiplies what feeds the Base Color (the texture; with nothing linked it replaces the static
    colour), and its alpha the Alpha (only when the material is not opaque or Alpha is linked: blending
    off, the game shows no alpha). The first TEV register or konst colour animated on a material (a
    BRK's registers come before its konsts) tints the Base Color (Multiply, named "J3D tint"); the
    other slots and register / konst alphas stay unwired (the TEV stages that use them are not built).
    """
    match = _COLOR_SLOT.match(path)
    tree = material.node_tree
    if match is None or tree.nodes.get(f"J3D {match[1]} {match[2] or 0}") is not None:
        return
    kind, number = match[1], int(match[2] or 0)
    name = f"J3D {kind} {number}"
    shown = sum(props.COLOR_SLOT in n for n in tree.nodes) // 2  # slots already shown (two nodes each)
    color, alpha = tree.nodes.new("ShaderNodeRGB"), tree.nodes.new("ShaderNodeValue")
    for k, (node, label) in enumerate(((color, name), (alpha, f"{name} alpha"))):
        node.name = node.label = label
        node.location = (-1000 - 250 * k, 700 + 250 * shown)
        node[props.COLOR_SLOT] = {"path": path, "kind": kind, "slot": number}
    expression = _COLOR_EXPRESSION.format(*_COLOR_RANGES[kind])
    for c in range(min(len(tree[path]), 4)):
        socket, index = (alpha.outputs[0], -1) if c == 3 else (color.outputs[0], c)
        driver = socket.driver_add("default_value", index).driver
        driver.type = "SCRIPTED"
        variable = driver.variables.new()
        variable.name = "v"
        variable.targets[0].id_type = "NODETREE"
        variable.targets[0].id = tree
        variable.targets[0].data_path = f'["{bpy.utils.escape_identifier(path)}"][{c}]'
        driver.expression = expression
    bsdf = _principled(tree)
    if kind == "material":
        _multiply_into(tree, bsdf.inputs["Base Color"], color.outputs[0], keep_default=False)
        target = bsdf.inputs["Alpha"]
        if (
            target.links and target.links[0].from_node.name == "Alpha Clip"
        ):  # the game compares the final alpha
            target = target.links[0].from_node.inputs[0]
        if target.links or material.get(props.ALPHA_MODE, "OPAQUE") != "OPAQUE":
            _multiply_into(tree, target, alpha.outputs[0], keep_default=False)
    elif tree.nodes.get("J3D tint") is None:
        _multiply_into(tree, bsdf.inputs["Base Color"], color.outputs[0], keep_default=True).name = "J3D tint"


def _multiply_into(tree, target, output, keep_default: bool):
    """Feed ``target`` with ``output`` times what fed it: its link, else (``keep_default``) its own value.

    The Multiply node made (None when ``output`` simply replaces an unlinked default).
    """
    source = target.links[0].from_socket if target.links else None
    if source is None and not keep_default:
        tree.links.new(output, target)
        return None
    if target.type == "RGBA":
        node = tree.nodes.new("ShaderNodeMix")
        node.data_type, node.blend_type = "RGBA", "MULTIPLY"
        _socket(node.inputs, "Factor_Float").default_value = 1.0
        first, second = _socket(node.inputs, "A_Color"), _socket(node.inputs, "B_Color")
        result = _socket(node.outputs, "Result_Color")
    else:
        node = tree.nodes.new("ShaderNodeMath")
        node.operation = "MULTIPLY"
        first, second, result = node.inputs[0], node.inputs[1], node.outputs[0]
    node.location = (output.node.location.x + 600, output.node.location.y)
    if source is None:
        first.default_value = target.default_value
    else:
        tree.links.new(source, first)
    tree.links.new(output, second)
    tree.links.new(result, target)
    return node


def _socket_path(node, socket_name: str) -> str:
    socket = next(i for i, s in enumerate(node.inputs) if s.name == socket_name)
    return f'nodes["{bpy.utils.escape_identifier(node.name)}"].inputs[{socket}].default_value'


def _material_data_path(tree, channel: Channel, components: int) -> tuple[str, tuple[int, ...], list[float]]:
    """Data path, array indices and value offsets animating a material channel (see the module docstring)."""
    path = channel.path
    mapping = _mapping_input(path)
    nodes = _slot_mapping(tree, int(path.split(".")[1]), channel.extras.get("center")) if mapping else None
    if nodes is not None:
        main, rotation, center = nodes
        offsets = [0.0] * len(mapping[1])
        if center is not None and mapping[0] == "Location":
            offsets = [center[i] for i in mapping[1]]
        node = rotation if mapping[0] == "Rotation" else main
        return _socket_path(node, mapping[0]), mapping[1], offsets
    size = (
        components if channel.index is None else max(channel.index + 1, 4 if path.startswith("color.") else 1)
    )
    if path == "color.base_color":
        return _socket_path(_principled(tree), "Base Color"), tuple(range(size)), [0.0] * size
    current = tree.get(path)
    if channel.index is None or len(current if hasattr(current, "__len__") else ()) < size:
        tree[path] = [0.0] * size if size > 1 or channel.index is not None else 0.0
    return f'["{bpy.utils.escape_identifier(path)}"]', tuple(range(size)), [0.0] * size


def build_images(images: list[Image]) -> list[bpy.types.Image]:
    """Blender images (packed) of Scene images, for data that exists already (see ``switch_images``)."""
    return [_build_image(image) for image in images]


def _socket(sockets, identifier: str):
    return next(s for s in sockets if s.identifier == identifier)


def switch_images(material, slot: int, images: dict[int, bpy.types.Image]) -> bool:
    """Make texture ``slot`` show ``images[i]`` while the material's ``texture.<slot>.image_index`` is i.

    The (keyed) custom property drives a Value node; each image gets an image node beside the
    slot's, and Mix nodes in front of every link of the slot's Color and Alpha outputs pick the
    image whose index is within 0.5 of the value; other values show the slot's own image.
    False when the material has no image node for the slot.
    """
    tree = material.node_tree
    node = _slot_image_node(tree, slot)
    if node is None:
        return False
    path = f"texture.{slot}.image_index"
    if path not in tree:
        tree[path] = 0.0
    index = tree.nodes.new("ShaderNodeValue")
    index.name = index.label = f"Image Index {slot}"
    index.location = (node.location.x - 250, node.location.y - 300)
    driver = index.outputs[0].driver_add("default_value").driver
    driver.type = "AVERAGE"
    variable = driver.variables.new()
    variable.targets[0].id_type = "NODETREE"
    variable.targets[0].id = tree
    variable.targets[0].data_path = f'["{bpy.utils.escape_identifier(path)}"]'
    vector = node.inputs["Vector"].links[0].from_socket if node.inputs["Vector"].links else None
    outputs = {
        "Color": (node.outputs["Color"], "RGBA", "Color"),
        "Alpha": (node.outputs["Alpha"], "FLOAT", "Float"),
    }
    targets = {name: [link.to_socket for link in output.links] for name, (output, _, _) in outputs.items()}
    current = {name: output for name, (output, _, _) in outputs.items()}
    for k, (value, image) in enumerate(sorted(images.items())):
        texture = tree.nodes.new("ShaderNodeTexImage")
        texture.image, texture.extension, texture.interpolation = image, node.extension, node.interpolation
        texture.label = f"{path} = {value}"
        texture[props.SWITCHED_IMAGE] = value
        texture.location = (node.location.x, node.location.y - 300 * (k + 1))
        if vector is not None:
            tree.links.new(vector, texture.inputs["Vector"])
        chosen = tree.nodes.new("ShaderNodeMath")
        chosen.operation = "COMPARE"
        chosen.inputs[1].default_value = value
        chosen.inputs[2].default_value = 0.5
        chosen.location = (node.location.x + 250, texture.location.y)
        tree.links.new(index.outputs[0], chosen.inputs[0])
        for name, (_, data_type, kind) in outputs.items():
            mix = tree.nodes.new("ShaderNodeMix")
            mix.data_type = data_type
            mix.location = (node.location.x + 450 + 200 * (name == "Alpha"), texture.location.y)
            tree.links.new(chosen.outputs[0], _socket(mix.inputs, "Factor_Float"))
            tree.links.new(current[name], _socket(mix.inputs, f"A_{kind}"))
            tree.links.new(texture.outputs[name], _socket(mix.inputs, f"B_{kind}"))
            current[name] = _socket(mix.outputs, f"Result_{kind}")
    for name, sockets in targets.items():
        for target in sockets:
            tree.links.new(current[name], target)
    return True


def _slot_image_node(tree, slot: int):
    """The image texture node of texture ``slot``: the one the builder numbered so, else the slot-th from the top."""
    images = [n for n in tree.nodes if n.type == "TEX_IMAGE"]
    numbered = [n for n in images if props.to_python(n.get(props.SLOT, {})).get("index") == slot]
    if numbered:
        return numbered[0]
    images.sort(key=lambda n: -n.location.y)
    return images[slot] if slot < len(images) else None


def _slot_mapping(tree, slot: int, center):
    """(main, rotation, centre) of the texture transform of ``slot``, made in front of its image node when missing.

    Without a centre one Mapping node does it all (Blender's order: scale, rotate, translate).
    A transform about a centre c, ``S·R·(uv − c) + c + t`` (the GameCube's order: rotate, then
    scale), takes three: "<name> Center" (location −c), "<name> Rotation", then the main node
    (scale, location t + c). None when the material has no image node for the slot.
    """
    main = tree.nodes.get(mapping_node_name(slot))
    if main is None:
        image = _slot_image_node(tree, slot)
        if image is None:
            return None
        main = _insert_mapping(tree, image, mapping_node_name(slot))
    if center is None:
        return main, main, None
    center = [float(c) for c in center[:2]] + [0.0]
    rotation = tree.nodes.get(f"{main.name} Rotation")
    if rotation is None:
        main.inputs["Rotation"].default_value = (0.0, 0.0, 0.0)
        rotation = _insert_mapping(tree, main, f"{main.name} Rotation")
        shift = _insert_mapping(tree, rotation, f"{main.name} Center")
        shift.inputs["Location"].default_value = [-c for c in center]
        location = main.inputs["Location"]
        location.default_value = (np.array(location.default_value) + center).tolist()
    return main, rotation, center


def _insert_mapping(tree, before, name: str):
    """A Mapping node feeding ``before``'s Vector input (from what fed it, else the UV coordinates)."""
    node = tree.nodes.new("ShaderNodeMapping")
    node.name = node.label = name
    node.location = (before.location.x - 250, before.location.y)
    links = before.inputs["Vector"].links
    if links:
        source = links[0].from_socket
    else:
        coords = tree.nodes.new("ShaderNodeTexCoord")
        coords.location = (node.location.x - 250, node.location.y)
        source = coords.outputs["UV"]
    tree.links.new(source, node.inputs["Vector"])
    tree.links.new(node.outputs["Vector"], before.inputs["Vector"])
    return node


def keys_hash(co: np.ndarray, interpolation: str) -> str:
    """Hash of (C, K, 2) key coordinates as F-curves hold them (float32): tells whether they were edited."""
    return hashlib.sha1(np.ascontiguousarray(co, np.float32).tobytes() + interpolation.encode()).hexdigest()


def _single_component(channel: Channel, maps: BoneMaps, pose_bone) -> tuple[int, float, float] | None:
    """(pose component, factor, offset) when a per-component channel maps onto one pose component alone."""
    if channel.path not in maps.maps or (
        channel.path == "rotation_euler" and pose_bone.rotation_mode != "XYZ"
    ):
        return None
    a, b = maps.maps[channel.path]
    source = scaled_permutation(a)
    if source is None:
        return None
    r = int(np.flatnonzero(source == channel.index)[0])
    return r, float(a[r, channel.index]), float(b[r])


def _component_channels(channels, maps, armature, pose_names) -> list[tuple[Channel, list[Channel] | None]]:
    """Channels ready to build, with the per-component bone channels (``Channel.index``) sorted out.

    A component that maps onto one pose component alone stays one F-curve (keys and handles
    exact). Otherwise (a rest rotation mixes the components, or eulers on a quaternion bone) the
    components of that bone and path are merged into one channel, built as a whole; the parts
    travel along so that an unedited export gets them back as they were.
    """
    out: list = []
    groups: dict[tuple[str, str], list[Channel]] = {}
    for channel in channels:
        bone = maps.get(channel.target) if channel.target_kind == "bone" else None
        if (
            channel.index is None
            or bone is None
            or channel.path not in _BONE_PATHS
            or _single_component(channel, bone, armature.pose.bones[pose_names[channel.target]]) is not None
        ):
            out.append(channel)
            continue
        parts = groups.get((channel.target, channel.path))
        if parts is None:
            parts = groups[(channel.target, channel.path)] = []
            out.append(parts)
        parts.append(channel)
    return [(_merged(p, maps[p[0].target]), p) if isinstance(p, list) else (p, None) for p in out]


def _merged(parts: list[Channel], maps: BoneMaps) -> Channel:
    """One channel of every component of ``parts``' path; components they do not key hold the rest value."""
    first = parts[0]
    rest = {
        "location": maps.rest_translation,
        "rotation_euler": matrix_to_euler(maps.rest_rotation[None])[0],
        "scale": maps.rest_scale,
    }[first.path]
    times = np.asarray(first.times, np.float64)
    shared = all(np.array_equal(p.times, times) and p.interpolation == first.interpolation for p in parts)
    if not shared:  # keyed at different frames: every component sampled at every frame and key
        times = bake_frames(np.unique(np.concatenate([np.asarray(p.times, np.float64) for p in parts])))
    values = np.tile(rest, (len(times), 1))
    bezier = shared and first.interpolation == "BEZIER" and all(p.handles_left is not None for p in parts)
    handles = []
    if bezier:
        for side in ("handles_left", "handles_right"):
            frames = np.asarray(getattr(first, side), np.float64)[:, 0, 0]
            handles.append(np.stack(np.broadcast_arrays(frames[:, None], rest[None, :]), axis=-1).copy())
    for p in parts:
        keys = np.asarray(p.values, np.float64).reshape(len(p.times), 1)
        if shared:
            values[:, p.index] = keys[:, 0]
        else:
            values[:, p.index] = sample(
                p.times, keys, p.interpolation, p.handles_left, p.handles_right, times
            )[:, 0]
        for handle, side in zip(
            handles, ("handles_left", "handles_right"), strict=False
        ):  # none unless Bézier
            handle[:, p.index] = np.asarray(getattr(p, side), np.float64)[:, 0]
    interpolation = first.interpolation if shared else "LINEAR"
    left, right = handles if bezier else (None, None)
    return Channel("bone", first.target, first.path, times, values, interpolation, left, right, first.extras)


def _part_record(channel: Channel) -> dict:
    """A per-component channel as plain values, for the action's channel records."""
    record = {
        "index": channel.index,
        "times": np.asarray(channel.times, np.float64).tolist(),
        "values": np.asarray(channel.values, np.float64).ravel().tolist(),
        "interpolation": channel.interpolation,
        "extras": channel.extras,
    }
    if channel.handles_left is not None and channel.handles_right is not None:
        record["handles_left"] = np.asarray(channel.handles_left, np.float64).ravel().tolist()
        record["handles_right"] = np.asarray(channel.handles_right, np.float64).ravel().tolist()
    return record


def _build_bone_channel(
    channel, times, values, maps: BoneMaps, armature, pose_name, actions, result, parts=None
):
    """``parts``: the per-component channels ``channel`` merges (see ``_component_channels``)."""
    pose_bone = armature.pose.bones[pose_name]
    path = channel.path
    interpolation = channel.interpolation
    hl = None if channel.handles_left is None else np.asarray(channel.handles_left, np.float64)
    hr = None if channel.handles_right is None else np.asarray(channel.handles_right, np.float64)
    data_path = f'pose.bones["{bpy.utils.escape_identifier(pose_name)}"].{path}'
    if channel.index is not None:  # one component onto one pose component: factor and offset only
        component, factor, offset = _single_component(channel, maps, pose_bone)
        meta = {**_channel_meta(channel), "index": channel.index, "array_index": component}
        if hl is not None and hr is not None:
            hl, hr = hl.copy(), hr.copy()
            hl[..., 1] = hl[..., 1] * factor + offset
            hr[..., 1] = hr[..., 1] * factor + offset
        (fcurve,) = actions.fcurves(armature, "OBJECT", data_path, 1, pose_name, meta, (component,))
        actions.write([fcurve], meta, times, values * factor + offset, interpolation, hl, hr)
        return
    meta = _channel_meta(channel)
    if path == "rotation_quaternion" and interpolation == "LINEAR":
        # Before the map: it is orthogonal on quaternions, so it carries the slerp, but which arc is
        # the shorter between keys half a turn apart (dot 0) is the channel's to say, not rounding's.
        times, values, added = slerp_keys(times, values, MERGE_DISTANCE)
        if len(added):
            meta["slerp"] = added.tolist()
    mapped = None
    if path in maps.maps and not (path == "rotation_euler" and pose_bone.rotation_mode != "XYZ"):
        mapped = map_keys(values, hl, hr, interpolation, *maps.maps[path])
    if mapped is None:
        frames = bake_frames(times)
        sampled = sample(times, values, interpolation, hl, hr, frames)
        if path == "rotation_euler":
            path = "rotation_quaternion"
            sampled = matrix_to_quat(maps.basis_rotation(euler_to_matrix(sampled)))
            meta["baked"] = "rotation_euler"
        else:
            sampled = sampled @ maps.maps[path][0].T + maps.maps[path][1]
            meta["baked"] = path
        result.baked.append(f"{actions.animation.name}: {channel.target} {channel.path}")
        times, mapped, interpolation = frames, (sampled, None, None), "LINEAR"
    new_values, hl, hr = mapped
    if path == "rotation_quaternion":
        signs = continuity_signs(new_values)
        flipped = np.flatnonzero(signs < 0)
        if len(flipped) and "baked" not in meta:
            meta["flipped"] = flipped.tolist()
        new_values = new_values * signs[:, None]
        if hl is not None:
            hl = hl.copy()
            hr = hr.copy()
            hl[..., 1] *= signs[:, None]
            hr[..., 1] *= signs[:, None]
    if parts is not None:
        co = np.stack(np.broadcast_arrays(np.asarray(times)[None, :], new_values.T), axis=-1)
        meta.update(parts=[_part_record(p) for p in parts], written=keys_hash(co, interpolation))
    elif "baked" not in meta and not _float32_exact(values, mapped[0], maps.inverses[path]):
        # F-curves hold float32 pose values; mapped back, the last bit of a value can change. The
        # file's values stay with the keys for the extractor, used while the keys are unedited.
        co = np.stack(np.broadcast_arrays(np.asarray(times)[None, :], new_values.T), axis=-1)
        meta.update(
            source=np.asarray(values, np.float64).ravel().tolist(), written=keys_hash(co, interpolation)
        )
    data_path = f'pose.bones["{bpy.utils.escape_identifier(pose_name)}"].{path}'
    fcurves = actions.fcurves(armature, "OBJECT", data_path, new_values.shape[1], pose_name, meta)
    actions.write(fcurves, meta, times, new_values, interpolation, hl, hr)


def _float32_exact(values: np.ndarray, pose_values: np.ndarray, inverse_affine) -> bool:
    """Whether float32 pose values map back to the same float32 parent-relative values, −0.0 included."""
    a, b = inverse_affine
    back = np.asarray(pose_values, np.float32).astype(np.float64) @ a.T + b
    return np.array_equal(
        back.astype(np.float32).view(np.uint32), np.asarray(values, np.float32).view(np.uint32)
    )


def _set_frame_rate(scene, animation: Animation) -> None:
    fps = max(int(round(animation.fps)), 1)
    scene.render.fps = fps
    scene.render.fps_base = fps / animation.fps
    if animation.frame_end > animation.frame_start:
        scene.frame_start = int(np.floor(animation.frame_start))
        scene.frame_end = int(np.ceil(animation.frame_end))
