"""Menus, drag-and-drop file handlers and sidebar panels."""

import bpy

from .. import operators
from . import panels


def _menu_import(self, context):
    for family in operators.FAMILIES:
        for idname, text in family.IMPORT_MENU:
            self.layout.operator(idname, text=text)


def _menu_export(self, context):
    for family in operators.FAMILIES:
        for idname, text in family.EXPORT_MENU:
            self.layout.operator(idname, text=text)


def _file_handlers():
    """One FileHandler class per importer, built from the family's declaration."""
    handlers = []
    for family in operators.FAMILIES:
        for idname, label, import_op, export_op, extensions in family.FILE_HANDLERS:
            attrs = {
                "bl_idname": idname,
                "bl_label": label,
                "bl_import_operator": import_op,
                "bl_export_operator": export_op,
                "bl_file_extensions": extensions,
                "poll_drop": classmethod(lambda cls, context: _poll_drop(context)),
            }
            handlers.append(type(idname, (bpy.types.FileHandler,), attrs))
    return handlers


def _poll_drop(context):
    from bpy_extras.io_utils import poll_file_object_drop

    return poll_file_object_drop(context)


_registered: list = []


def register():
    _registered[:] = _file_handlers() + list(panels.classes)
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
