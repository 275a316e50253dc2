"""Blender operators: thin wrappers (options → read → to_scene → build) per format family."""

from __future__ import annotations

import inspect
import os

import bpy

from . import animation, j3d, tamsoft, tmrf, toshi, ttyd
from .j3d_shading import color_slot_nodes  # noqa: F401  (importing it registers the J3D shading hook)

# Each family module exposes ``classes`` (operators), ``IMPORTERS`` (extension →
# loader returning a Scene), ``IMPORT_MENU`` / ``EXPORT_MENU`` entries
# (operator idname, menu text) and ``FILE_HANDLERS``. Families that share an
# extension also expose ``detect(path) -> bool`` (see ``importer_for``).
FAMILIES = (toshi, ttyd, tamsoft, tmrf, j3d)


def import_file(context, path: str, **options) -> str:
    """Import one file with default options (those a loader does not take are ignored).

    For batch runs; returns the summary line. Raises FormatError or OSError and
    leaves the Blender data unchanged when the file cannot be imported.
    """
    from .blender.build import build_scene
    from .common import rollback_on_error, summary_line

    loader = importer_for(path)
    accepted = inspect.signature(loader).parameters
    with rollback_on_error():
        scene = loader(path, **{k: v for k, v in options.items() if k in accepted})
        result = build_scene(scene, context, collection_name=scene.name or None)
    notes = "".join(f"\n  warning: {w}" for w in scene.warnings)
    return summary_line(path, result.counts()) + notes


def importer_for(path: str):
    """The loader for a file: by extension, and by content when several families list the extension.

    Then the first family whose ``detect(path)`` accepts the file wins; else the
    first without ``detect`` (it takes what the others do not recognise); else
    the first, whose reader reports what is wrong with the file.
    """
    extension = os.path.splitext(path)[1].lower()
    families = [f for f in FAMILIES if extension in f.IMPORTERS]
    if not families:
        raise OSError(f"{path}: no importer for '{extension}' files")
    if len(families) > 1:
        families = (
            [f for f in families if hasattr(f, "detect") and f.detect(path)]
            + [f for f in families if not hasattr(f, "detect")]
            + families
        )
    return families[0].IMPORTERS[extension]


def _classes():
    yield from animation.classes
    for module in FAMILIES:
        yield from module.classes


def register():
    for cls in _classes():
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(list(_classes())):
        bpy.utils.unregister_class(cls)
