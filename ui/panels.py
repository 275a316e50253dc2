"""Sidebar panels in the 3D view (category "Retro"): a model's panels show while any object of it is
selected or active (its armature, or a mesh the armature deforms or parents)."""

import bpy

from ..operators.blender import props
from ..operators.blender.objects import target_armature


class VIEW3D_PT_retro_toshi(bpy.types.Panel):
    """Where an armature imported from a TMD came from, and its keyframe library."""

    bl_label = "Toshi Model"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Retro"

    @classmethod
    def poll(cls, context):
        armature = target_armature(context)
        return armature is not None and "tkl_file" in props.get_extras(armature.data)

    def draw(self, context):
        from ..formats.toshi.files import TKL_LIBRARY, library_name

        armature = target_armature(context)
        extras = props.get_extras(armature.data)
        record = props.import_record([armature])
        # The record's extras hold the whole stored library: read only the two keys needed.
        header = props.get_extras(record, "tkl_field") if record is not None else {}
        layout = self.layout
        col = layout.column(align=True)
        col.label(text=f"Model: {bpy.path.basename(props.source_file([armature]))}", icon="FILE")
        col.label(text=f"Keyframe library: {library_name(header) or '(none)'}", icon="ACTION")
        if extras.get("tkl_file"):
            col.label(text=f"Loaded from: {bpy.path.basename(extras['tkl_file'])}")
        if record is not None and TKL_LIBRARY in record.get(props.EXTRAS, {}):
            col.label(text="Library kept in this .blend for export", icon="PACKAGE")
        layout.operator("retro_models.toshi_load_tkl", icon="IMPORT")


class VIEW3D_PT_retro_animations(bpy.types.Panel):
    """The animations imported for the active armature and for its active material; click one to play it."""

    bl_label = "Animations"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Retro"

    @staticmethod
    def owners(context) -> list:
        """(label, armature object or material, material name or "") with imported animations."""
        armature = target_armature(context)
        found = []
        if armature is not None and props.ANIMATIONS in armature.data:
            found.append((f"Armature {armature.name}", armature, ""))
        obj = context.active_object
        material = obj.active_material if obj is not None else None
        if material is not None and props.ANIMATIONS in material:
            found.append((f"Material {material.name}", material, material.name))
        return found

    @classmethod
    def poll(cls, context):
        return bool(cls.owners(context))

    def draw(self, context):
        from ..operators.animation import group_actions, primary_action

        for label, owner, material in self.owners(context):
            box = self.layout.box()
            box.label(text=label, icon="MATERIAL" if material else "ARMATURE_DATA")
            id_data = owner.node_tree if material else owner
            playing = id_data.animation_data.action if id_data.animation_data else None
            for group in props.to_python(
                owner[props.ANIMATIONS] if material else owner.data[props.ANIMATIONS]
            ):
                actions = group_actions(group)
                primary = primary_action(actions)
                if primary is None:
                    continue
                kind = props.get_extras(primary).get("j3d_type", "")
                text = f"{primary.name} ({kind.upper()})" if kind else primary.name
                row = box.row()
                op = row.operator(
                    "retro_models.use_animation", text=text, depress=playing in actions, icon="ACTION"
                )
                op.group, op.material = group, material


classes = (VIEW3D_PT_retro_toshi, VIEW3D_PT_retro_animations)
