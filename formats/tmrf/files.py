"""A TMRF file on disk: any of the Tertius media files, read by what it holds, not by its extension.

A file with animations and neither skeleton nor mesh is applied to an armature: ``retarget``
binds it to that armature's skeleton, and its layout (with the file's name) stays with the
armature. ``sources`` decides by the exported file's name which animations it holds: under the
name of a file they came from, that file's resources and nothing else.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

import numpy as np

from .. import extras as extras_codec
from ..errors import ExportError
from ..files import read_bytes, write_files
from ..options import Included, Panel, animations_option, option, oriented
from ..scene import Scene, Skeleton
from . import convert, media

# Suggested extensions and what an export with each holds (convert.CONTENTS).
CONTENT_BY_EXTENSION = {
    ".tmdl": "everything",
    ".tani": "animations",
    ".tapk": "animations",
    ".tskl": "skeleton",
    ".tskm": "skinned_model",
    ".tmsh": "static_mesh",
    ".tpak": "everything",
}
EXTENSIONS = tuple(CONTENT_BY_EXTENSION)
# Armature data extras key, and scene extras key on export: layouts of the animation-only files
# applied to it, by source key; each layout also holds its file's name (without extension).
ANIMATION_LAYOUTS = "tmrf_animation_layouts"
FILE_NAME = "file_name"
# Animation extras key: the source key of the animation-only file it came from.
ANIMATION_SOURCE = "tmrf_animation_source"
KEEP = "KEEP"  # an encoding option's "as imported"

COMPRESSION = Panel("Compression")
ANIMATION = Panel("Animation")
Orientation = oriented(convert.AXES)


@dataclass
class ImportOptions(Orientation):
    import_animations: bool = animations_option()


@dataclass
class ExportOptions(Orientation, Included):
    file_contents: str = option(
        ".tmdl",
        "Contents",
        "What the file holds; it sets the file's extension",
        choices=(
            (".tmdl", "Model (.tmdl)", "Skeleton, skinned meshes and animations"),
            (".tskm", "Skinned Model (.tskm)", "Meshes with their skin, without the skeleton"),
            (".tmsh", "Static Mesh (.tmsh)", "Meshes without skin"),
            (".tskl", "Skeleton (.tskl)", "The armature's skeleton only"),
            (".tani", "Animation (.tani)", "The armature's animations only"),
            (".tapk", "Animation Pack (.tapk)", "The armature's animations only"),
            (".tpak", "Everything (.tpak)", "Everything, shader resources kept from the import included"),
        ),
    )
    normals: str = option(
        KEEP,
        "Normals",
        "How normals are stored",
        choices=(
            (KEEP, "As Imported", "Each imported mesh keeps its encoding; new meshes are compressed"),
            ("NONE", "Full", "Three floats per normal (Normals)"),
            ("COMPRESSED", "Compressed", "Two 16-bit angles per normal (CompressedNormals)"),
        ),
        panel=COMPRESSION,
    )
    tangents: str = option(
        KEEP,
        "Tangents",
        "How tangents are stored",
        choices=(
            (KEEP, "As Imported", "Each imported mesh keeps its encoding; new meshes get full tangents"),
            ("NONE", "Full", "Both tangent vectors as floats (TangentVectors)"),
            ("COMPRESSED", "Compressed", "Horizontal vector and a sign (CompressedTangentVectors)"),
            ("HIGH", "High Compression", "One 16-bit angle per vertex; needs compressed normals"),
        ),
        panel=COMPRESSION,
    )
    animation_kind: str = option(
        KEEP,
        "Animation Storage",
        "How animations are stored",
        choices=(
            (KEEP, "As Imported", "Each imported animation keeps its kind; new ones are frame animations"),
            ("FRAME", "Frames", "One pose per frame at the animation's frame rate (AX3FrameAnimation)"),
            ("TRACK", "Tracks", "Keys at their times, per bone (AX3TrackAnimation)"),
        ),
        panel=ANIMATION,
    )
    orientations: str = option(
        KEEP,
        "Orientation Storage",
        "How frame animations store bone orientations",
        choices=(
            (KEEP, "As Imported", "Each imported bone keeps its storage; new ones are 32-bit floats"),
            ("F32", "32-bit Floats", "Exact"),
            ("S16", "16-bit Integers", "Half the size, to about 1/32767"),
        ),
        panel=ANIMATION,
    )


def is_animation_only(scene: Scene) -> bool:
    return bool(scene.animations) and not scene.skeletons and not scene.meshes


def load(path: str, options: ImportOptions) -> Scene:
    """Read any TMRF file into a Scene (an animation-only one has animations without a skeleton)."""
    scene = convert.to_scene(media.read(read_bytes(path), path), options.axis())
    scene.name = os.path.splitext(os.path.basename(path))[0]
    return scene


def retarget(scene: Scene, skeleton: Skeleton, axis: np.ndarray, rate: float | None = None) -> None:
    """Bind an animation-only scene to ``skeleton`` (an armature's, Blender's bone names).

    ``rate``: the scene's frame rate when it already plays animations; the file's are shown at it,
    each still at its own speed (``convert.common_rate``), and export writes them at their own.

    Channels of bones the armature lacks are dropped with a warning (their values stay in the
    animation's extras, ``convert.KEPT_VALUES``, for the file written back). Root bones
    hang from the armature object, so their keys get the axis conversion that
    ``convert.to_scene`` gives the roots of a skeleton in the file.
    """
    layout = {**scene.extras.get("tmrf", {}), FILE_NAME: scene.name}
    source = hashlib.sha1(json.dumps(extras_codec.encode(layout), sort_keys=True).encode()).hexdigest()[:16]
    scene.extras = {ANIMATION_LAYOUTS: {source: layout}}
    scene.skeletons = [skeleton]
    if rate is not None:
        convert.common_rate(scene.animations, rate)
    roots = {n for n, p in zip(skeleton.bone_names, skeleton.parents, strict=True) if p < 0}
    for animation in scene.animations:
        animation.skeleton = 0
        animation.extras[ANIMATION_SOURCE] = source
        missing = sorted({c.target for c in animation.channels if c.target not in skeleton.bone_names})
        if missing:
            scene.warnings.append(
                f"animation {animation.name}: bones missing from armature {skeleton.name!r} left out "
                "(kept for writing the file back): " + ", ".join(missing)
            )
        animation.channels = [c for c in animation.channels if c.target in skeleton.bone_names]
        by_bone: dict[str, dict[str, object]] = {}
        for channel in animation.channels:
            if channel.target in roots:
                by_bone.setdefault(channel.target, {})[channel.path] = channel
        for pair in by_bone.values():  # to_scene gives every bone both, at the same times
            location, rotation = pair["location"], pair["rotation_quaternion"]
            # The converter's own root conversion, so that export undoes it bit for bit.
            location.values, rotation.values = convert._root_channels(location.values, rotation.values, axis)


def export_target(path: str, options: ExportOptions) -> tuple[str, str]:
    """The path to write (the chosen contents' extension added to a name without one of the
    format's) and what the file holds (a ``convert.CONTENTS`` value)."""
    if os.path.splitext(path)[1].lower() not in CONTENT_BY_EXTENSION:
        path += options.file_contents
    return path, CONTENT_BY_EXTENSION[os.path.splitext(path)[1].lower()]


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0].lower()


def sources(scene: Scene, path: str, content: str) -> None:
    """Keep the animations the file at ``path`` holds, by its name (the Blender side calls it with
    the layouts the armature kept under ``scene.extras[ANIMATION_LAYOUTS]``).

    - The name of an animation-only file applied to the armature: that file written back, its
      animations as Blender has them, its other resources (shaders, unknown types) as they were,
      no mesh, skeleton or other action (``save`` sees its layout and writes it so).
    - The name of the file the model came from (``scene.source``): the model's own resources and
      the actions made in Blender; animations applied from other files stay in those.
    - Any other name: every animation; those applied from animation-only files become new
      resources of the kind (frame or track) they had in their file.
    """
    layouts = scene.extras.pop(ANIMATION_LAYOUTS, {})
    stem = _stem(path)
    named = [s for s, layout in layouts.items() if str(layout.get(FILE_NAME, "")).lower() == stem]
    if named and "animation" in convert.CONTENTS[content]:
        source = named[-1]
        scene.extras["tmrf"] = layouts[source]
        scene.animations = [a for a in scene.animations if a.extras.get(ANIMATION_SOURCE) == source]
        scene.meshes, scene.materials, scene.images = [], [], []
        return
    if scene.source and _stem(scene.source) == stem:
        scene.animations = [a for a in scene.animations if a.extras.get(ANIMATION_SOURCE) is None]
    for animation in scene.animations:
        source = animation.extras.pop(ANIMATION_SOURCE, None)
        if source is not None:
            resource = animation.extras.pop("tmrf_resource", None)
            animation.extras.pop("tmrf_name", None)
            # Written as the kind it was in its file (a .tani's track animation stays one).
            entries = layouts.get(source, {}).get("resources", [])
            if isinstance(resource, int) and 0 <= resource < len(entries):
                animation.extras[convert.KIND] = entries[resource]["kind"]


def _encoding(value: str) -> str | None:
    """An export choice as ``convert.from_scene`` takes it (None: as imported)."""
    return None if value == KEEP else value.lower()


def save(scene: Scene, path: str, options: ExportOptions) -> list[str]:
    """Write the scene at ``path``; the extension chooses the contents. Returns the path written."""
    path, content = export_target(path, options)
    if FILE_NAME in (scene.extras.get("tmrf") or {}) and "animation" in convert.CONTENTS[content]:
        content = "animation_file"  # an applied animation file written back (``sources``)
    try:
        model = convert.from_scene(
            scene,
            normals=_encoding(options.normals),
            tangents=_encoding(options.tangents),
            animation=_encoding(options.animation_kind),
            s16=None if options.orientations == KEEP else options.orientations == "S16",
            content=content,
            axis=options.axis(),
        )
    except ValueError as e:  # options that do not go together
        raise ExportError(str(e)) from e
    return write_files({path: media.write(model)})
