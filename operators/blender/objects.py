"""Which objects belong together: the armature a selection means and the meshes it deforms."""

from __future__ import annotations

from mathutils import Matrix


def armature_modifier_target(obj):
    """The armature object of the mesh's first Armature modifier that has one, else None."""
    return next((m.object for m in getattr(obj, "modifiers", ()) if m.type == "ARMATURE" and m.object), None)


def deformed_by(obj, armature_obj, *, parented: bool = True) -> bool:
    """Whether an Armature modifier of ``obj`` (or, with ``parented``, its parent) is ``armature_obj``."""
    if parented and obj.parent == armature_obj:
        return True
    return any(m.type == "ARMATURE" and m.object == armature_obj for m in getattr(obj, "modifiers", ()))


def deformed_meshes(armature_obj, objects, *, parented: bool = False) -> list:
    """The mesh objects among ``objects`` that ``armature_obj`` deforms, sorted by name."""
    meshes = [o for o in objects if o.type == "MESH" and deformed_by(o, armature_obj, parented=parented)]
    return sorted(meshes, key=lambda o: o.name)


def target_armature(context):
    """The active armature, else the first selected one, else the one the active mesh is bound to."""
    active = context.active_object
    candidates = [active, *context.selected_objects]
    armature = next((o for o in candidates if o is not None and o.type == "ARMATURE"), None)
    if armature is None and active is not None and active.type == "MESH":
        if active.parent is not None and active.parent.type == "ARMATURE":
            return active.parent
        armature = armature_modifier_target(active)
    return armature


def scale_top_level(objects, scale: float) -> None:
    """Scale the objects without a parent about the origin (after what their matrices hold already), and
    with them their children: the import's Scale, which leaves the data as the file has them."""
    if scale == 1.0:
        return
    for obj in objects:
        if obj.parent is None:
            obj.matrix_basis = Matrix.Scale(scale, 4) @ obj.matrix_basis
