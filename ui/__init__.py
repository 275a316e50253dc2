"""Menus, drag-and-drop file handlers and sidebar panels; the menus and handlers come from the
registry of families (formats/registry.py), in its order."""

import bpy

from ..formats.registry import FAMILIES
from . import panels, preferences


def _menu_import(self, context):
    for family in FAMILIES:
        if family.importer:
            self.layout.operator(family.importer.idname, text=family.importer.menu)


def _menu_export(self, context):
    for family in FAMILIES:
        if family.exporter:
            self.layout.operator(family.exporter.idname, text=family.exporter.menu)


def _file_handlers():
    """One FileHandler class per family that imports files with an extension (handlers match by
    extension only); Blender offers a menu when several accept a dropped file (.tmd)."""
    handlers = []
    for family in FAMILIES:
        if family.importer is None or "" in family.extensions:
            continue
        idname = "IO_FH_retro_" + family.importer.idname.split(".")[1]
        attrs = {
            "bl_idname": idname,
            "bl_label": family.label,
            "bl_import_operator": family.importer.idname,
            "bl_export_operator": family.exporter.idname if family.exporter else "",
            "bl_file_extensions": ";".join(family.extensions),
            "poll_drop": classmethod(lambda cls, context: _poll_drop(context)),
        }
        handlers.append(type(idname, (bpy.types.FileHandler,), attrs))
    return handlers


def _poll_drop(context):
    from bpy_extras.io_utils import poll_file_object_drop

    return poll_file_object_drop(context)


_registered: list = []


def register():
    _registered[:] = _file_handlers() + list(panels.classes) + list(preferences.classes)
    for cls in _registered:
        bpy.utils.register_class(cls)
    bpy.types.TOPBAR_MT_file_import.append(_menu_import)
    bpy.types.TOPBAR_MT_file_export.append(_menu_export)


def unregister():
    bpy.types.TOPBAR_MT_file_export.remove(_menu_export)
    bpy.types.TOPBAR_MT_file_import.remove(_menu_import)
    for cls in reversed(_registered):
        bpy.utils.unregister_class(cls)
    _registered.clear()
