"""Sidebar panels in the 3D view (category "Retro")."""

import bpy

from ..operators.blender import props


class VIEW3D_PT_retro_toshi(bpy.types.Panel):
    """Where an armature imported from a TMD came from, and its keyframe library."""

    bl_label = "Toshi Model"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Retro"

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        return obj is not None and obj.type == "ARMATURE" and "source_file" in props.get_extras(obj.data)

    def draw(self, context):
        from ..operators.toshi import TKL_LIBRARY, library_name

        extras = props.get_extras(context.active_object.data)
        record = props.import_record([context.active_object])
        # The record's extras hold the whole stored library: read only the two keys needed.
        header = record[props.EXTRAS] if record is not None and props.EXTRAS in record else {}
        layout = self.layout
        col = layout.column(align=True)
        col.label(text=f"Model: {bpy.path.basename(extras['source_file'])}", icon="FILE")
        col.label(text=f"Keyframe library: {library_name(header) or '(none)'}", icon="ACTION")
        if extras.get("tkl_file"):
            col.label(text=f"Loaded from: {bpy.path.basename(extras['tkl_file'])}")
        if TKL_LIBRARY in header:
            col.label(text="Library kept in this .blend for export", icon="PACKAGE")
        layout.operator("retro_models.toshi_load_tkl", icon="IMPORT")


classes = (VIEW3D_PT_retro_toshi,)
