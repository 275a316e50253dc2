"""Build Blender data from a neutral ``Scene``: the one builder every importer uses.

``build_scene`` makes everything new, one datablock module at a time: images (``image``),
materials (``material``), armatures (``armature``), mesh objects (``mesh``), then one action per
animated datablock for each animation (``animation``: that is where a BCK, or any file's
animation, becomes actions). ``add_animations`` (animations onto an existing armature and
materials), ``replace_animations`` (a model's animations read against another keyframe
library) and ``replace_materials`` (a material set by name) apply a Scene to existing data.

Each entry first checks the Scene (``formats.scene.validate``: finite positions, matrices and
keys, times Blender holds) so that bad input fails before any datablock is made or changed.
Everything goes in in bulk from numpy (``foreach_set``, ``keyframe_points.add``); what Blender
cannot hold natively is kept in custom properties and attributes (``props``, ``records``) so
that ``extract.extract_scene`` gives the same Scene back.

Choices a user sees:
- One collection per import, with a child collection per ``Mesh.collection``. Hidden meshes
  (e.g. lower levels of detail) are hidden in the viewport (the eye, so one click shows them)
  and in renders; a hidden mesh whose visibility an animation drives is hidden with
  ``hide_viewport`` (which the F-curves key) instead.
- Each Animation becomes one action per animated datablock, all with a fake user; the first
  animation is assigned and (``set_frame_rate``) sets the scene's frame rate and range.
  Looping animations get a Cycles modifier on every F-curve.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
from collections.abc import Callable
from dataclasses import dataclass, field

import bpy

from ...formats.parts import Part
from ...formats.scene import Material, Scene, validate
from . import props
from .animation import build_animation, set_scene_frame_rate
from .armature import bone_maps, build_armature, rig, rotation_modes
from .image import build_image, build_images, pixels_hash  # noqa: F401  (pixels_hash: for the operators)
from .material import build_material, mapping_input, mapping_node_name, switch_images  # noqa: F401
from .mesh import build_mesh, show_animated_visibility
from .records import read_record


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


def _cycle_collector_paused(build):
    """``build`` with Python's cycle collector paused: an import makes tens of thousands of objects
    that all outlive it, and each full collection on the way walks every object the process holds
    (three of them, 0.14 s, in a 2,000-bone import). What cycles it leaves are collected after."""

    @functools.wraps(build)
    def paused(*args, **kwargs):
        if not gc.isenabled():
            return build(*args, **kwargs)
        gc.disable()
        try:
            return build(*args, **kwargs)
        finally:
            gc.enable()

    return paused


@_cycle_collector_paused
def build_scene(
    scene: Scene,
    context,
    *,
    collection_name: str | None = None,
    progress: Callable[[float], None] | None = None,
    set_frame_rate: bool = True,
    animatable_mapping: bool = False,
    part: Part | None = None,
) -> BuildResult:
    """Create the Scene's images, materials, armatures, meshes and actions in ``context.scene``.

    ``set_frame_rate`` sets the scene's frame rate and range from the first
    animation; ``animatable_mapping`` gives every texture slot a Mapping node
    (else only slots with a transform or a texture animation get one); ``part``: only the
    animations that part builds (``formats.parts``: those animating bones alone are shared out),
    each at its place among all.
    """
    validate(scene)
    report = progress or (lambda fraction: None)
    if context.view_layer.objects.active and context.view_layer.objects.active.mode != "OBJECT":
        bpy.ops.object.mode_set(mode="OBJECT")
    collection = bpy.data.collections.new(collection_name or scene.name or "Import")
    context.scene.collection.children.link(collection)
    props.set_extras(collection, scene.extras)
    result = BuildResult(collection)

    result.images = [build_image(image) for image in scene.images]
    report(0.1)
    animated_slots = {
        (c.target, int(c.path.split(".")[1]))
        for a in scene.animations
        for c in a.channels
        if c.target_kind == "material" and mapping_input(c.path)
    }
    result.materials = [
        build_material(m, result.images, scene.images, animated_slots, animatable_mapping)
        for m in scene.materials
    ]
    report(0.15)
    maps = [bone_maps(s) for s in scene.skeletons]
    modes_by_bone = rotation_modes(scene, maps)
    for i, skeleton in enumerate(scene.skeletons):
        modes = {bone: mode for (s, bone), mode in modes_by_bone.items() if s == i}
        result.armatures.append(build_armature(context, skeleton, collection, modes, result))
    report(0.2)
    _build_meshes(context, scene, collection, result, lambda done: report(0.2 + 0.5 * done))
    rigs = [rig(a, s, m) for a, s, m in zip(result.armatures, scene.skeletons, maps, strict=True)]
    built = range(len(scene.animations))
    if part is not None:
        built = part.built([all(c.target_kind == "bone" for c in a.channels) for a in scene.animations])
    groups = {}  # place among the animations → its action group
    for done, i in enumerate(built):
        groups[i] = build_animation(scene, scene.animations[i], i, rigs, result, assign=i == 0)
        report(0.7 + 0.3 * (done + 1) / len(built))
    if scene.source:
        collection[props.SOURCE_FILE] = scene.source
    collection[props.SCENE] = {
        "name": scene.name,
        "materials": [m.name for m in result.materials],
        "images": [i.name for i in result.images],
        "animations": list(groups.values()),
    }
    for i, armature in enumerate(result.armatures):
        armature.data[props.ANIMATIONS] = [
            g for place, g in groups.items() if (scene.animations[place].skeleton or 0) == i
        ]
    if set_frame_rate and scene.animations:
        set_scene_frame_rate(context.scene, scene.animations[0])
    animated = {
        c.target
        for a in scene.animations
        for c in a.channels
        if (c.target_kind, c.path) == ("object", "hide")
    }
    show_animated_visibility(context, result.objects, scene.meshes, animated)
    report(1.0)
    return result


def _build_meshes(context, scene: Scene, collection, result: BuildResult, report) -> None:
    """The mesh objects, each in the import's collection or its child collection ``Mesh.collection``."""
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
        result.objects.append(build_mesh(context, mesh, target, result.materials, armature, result))
        report((i + 1) / len(scene.meshes))


def replace_animations(scene: Scene, armature_obj) -> BuildResult:
    """Swap the bone animations imported for ``armature_obj`` for the Scene's (of its first skeleton).

    For re-reading a model's animations against another keyframe library: the
    old actions are removed, the new ones are recorded for export in their place
    and the first is assigned.
    """
    validate(scene)
    record = props.import_record([armature_obj])
    old_groups = set(props.to_python(armature_obj.data.get(props.ANIMATIONS, [])))
    # The old actions go once the new ones are built (a failure keeps them); their names are free already.
    old_actions = [a for a in bpy.data.actions if getattr(read_record(a), "group", None) in old_groups]
    for action in old_actions:
        action.name = f"{action.name} (replaced)"
    result = BuildResult(record or armature_obj.users_collection[0], armatures=[armature_obj])
    scene = dataclasses.replace(scene, meshes=[], materials=[], images=[])  # bone channels only
    rigs = [rig(armature_obj, s, bone_maps(s)) for s in scene.skeletons[:1]]
    groups = [
        build_animation(scene, animation, i, rigs, result, assign=i == 0)
        for i, animation in enumerate(scene.animations)
    ]
    for action in old_actions:
        bpy.data.actions.remove(action)
    armature_obj.data[props.ANIMATIONS] = groups
    if record is not None:
        info = props.to_python(record[props.SCENE])
        info["animations"] = [g for g in info["animations"] if g not in old_groups] + groups
        record[props.SCENE] = info
    return result


def add_animations(
    scene: Scene,
    context,
    armature_obj=None,
    materials=(),
    objects=(),
    *,
    set_frame_rate: bool = True,
    place: int | None = None,
) -> BuildResult:
    """Build the Scene's animations onto existing Blender data, after the animations it already has.

    Bone channels animate ``armature_obj``: ``scene.skeletons[0]`` is its own skeleton (as
    ``extract.extract_scene`` gives it), so channels find their bones by Blender's names; bones
    whose euler channels map exactly turn to XYZ rotation. Material channels animate those of
    ``materials`` whose Scene name (``props.scene_name``) they give; object (``hide``) and shape-key
    channels, those of ``objects`` their Scene name gives. The new actions are recorded
    for export and the first is assigned; ``set_frame_rate``: the frame rate and range follow it.
    ``place``: the first animation's place among the import's (default: after the armature's).
    """
    validate(scene)
    armature_objs = [armature_obj] if armature_obj is not None else []
    record = props.import_record(armature_objs)
    collection = record or (armature_obj.users_collection[0] if armature_obj else context.scene.collection)
    targets = {props.scene_name(m): m for m in materials}
    result = BuildResult(
        collection, armatures=armature_objs, objects=list(objects), materials=list(targets.values())
    )
    scene = dataclasses.replace(scene, meshes=[], materials=[Material(name) for name in targets], images=[])
    maps = [bone_maps(s) for s in scene.skeletons]
    for (_, bone), mode in rotation_modes(scene, maps).items():
        armature_obj.pose.bones[bone].rotation_mode = mode
    old_groups = props.to_python(armature_obj.data.get(props.ANIMATIONS, [])) if armature_obj else []
    # A material animation brings no skeleton.
    rigs = [
        rig(a, s, m, blender_names=True)
        for a, s, m in zip(armature_objs, scene.skeletons, maps, strict=False)
    ]
    first = len(old_groups) if place is None else place
    groups = [
        build_animation(scene, animation, first + i, rigs, result, i == 0)
        for i, animation in enumerate(scene.animations)
    ]
    if armature_obj is not None:
        armature_obj.data[props.ANIMATIONS] = old_groups + groups
    if record is not None:
        info = props.to_python(record[props.SCENE])
        info["animations"] = info["animations"] + groups
        record[props.SCENE] = info
    if scene.animations and set_frame_rate:
        set_scene_frame_rate(context.scene, scene.animations[0])
    return result


def replace_materials(scene: Scene, context, materials=()) -> BuildResult:
    """Build the Scene's images and materials; each replaces the one of ``materials`` with its Scene name.

    A replaced material's users switch to the new one, which takes its name (the old one is
    removed); materials without a match are new. ``BuildResult.materials`` in Scene order.
    """
    validate(scene)
    result = BuildResult(context.scene.collection)
    result.images = build_images(scene.images)
    result.materials = [build_material(m, result.images, scene.images, set(), False) for m in scene.materials]
    existing = {props.scene_name(m): m for m in materials}
    for material, built in zip(scene.materials, result.materials, strict=True):
        old = existing.get(material.name)
        if old is not None and old != built:
            old.user_remap(built)
            name = old.name
            bpy.data.materials.remove(old)
            built.name = name
    return result
