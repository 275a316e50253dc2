"""Blender operators: thin wrappers (options → read → to_scene → build)."""

import bpy

# Each family module exposes ``classes``; registered in this order.
_MODULES: list = []


def _classes():
    for module in _MODULES:
        yield from module.classes


def register():
    for cls in _classes():
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(list(_classes())):
        bpy.utils.unregister_class(cls)
