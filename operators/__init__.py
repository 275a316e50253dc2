"""Blender operators: the import and export operators made from the registry of families
(import_export.py), and the operators families add beyond them (operators/<family>.py)."""

from __future__ import annotations

import bpy

from . import (
    animation,
    import_export,
    j3d_shading,  # noqa: F401  (importing it registers the J3D shading hook)
    toshi,
)


def _classes():
    yield from animation.classes
    yield from import_export.classes
    yield from toshi.classes


_HANDLERS = (
    (bpy.app.handlers.depsgraph_update_post, animation.rest_on_switch),
    (bpy.app.handlers.load_post, animation.forget_playing),
)


def register():
    for cls in _classes():
        bpy.utils.register_class(cls)
    for handlers, handler in _HANDLERS:
        handlers.append(handler)


def unregister():
    for handlers, handler in _HANDLERS:
        if handler in handlers:
            handlers.remove(handler)
    for cls in reversed(list(_classes())):
        bpy.utils.unregister_class(cls)
