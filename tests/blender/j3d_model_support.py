"""J3D model export tests' shared pieces: importing and selecting a model, the generated model on disk,
and an armature, mesh, material and image made in Blender (for the export tests and their golden dumps)."""

import bpy
import numpy as np
import retro_models
from j3d_model_fixtures import generated_bytes
from retro_models.operators.blender import compat


def import_model(path, **options):
    retro_models.import_file(bpy.context, str(path), import_animations=False, **options)
    return select(next(o for o in bpy.data.objects if o.type == "ARMATURE"))


def select(armature):
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    armature.select_set(True)
    bpy.context.view_layer.objects.active = armature
    return armature


def generated_file(tmp_path):
    path = tmp_path / "generated.bmd"
    path.write_bytes(generated_bytes())
    return path


def made_in_blender():
    """An armature of two bones, a quad weighted to them (one vertex shared half and half) with a UV map,
    and a material showing an 8 × 8 image: what someone makes in Blender, Z up."""
    armature = bpy.data.objects.new("Rig", bpy.data.armatures.new("Rig"))
    bpy.context.scene.collection.objects.link(armature)
    select(armature)
    bpy.ops.object.mode_set(mode="EDIT")
    root = armature.data.edit_bones.new("root")
    root.head, root.tail = (0, 0, 0), (0, 0, 1)
    top = armature.data.edit_bones.new("top")
    top.head, top.tail, top.parent = (0, 0, 1), (0, 0, 2), root
    bpy.ops.object.mode_set(mode="OBJECT")
    mesh = bpy.data.meshes.new("quad")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (1, 0, 2), (0, 0, 2)], [], [(0, 1, 2), (0, 2, 3)])
    uv = mesh.uv_layers.new(name="UVMap")
    uv.data.foreach_set("uv", np.array([[0, 0], [1, 0], [1, 1], [0, 0], [1, 1], [0, 1]], np.float32).ravel())
    obj = bpy.data.objects.new("quad", mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.parent = armature
    obj.modifiers.new("Armature", "ARMATURE").object = armature
    obj.vertex_groups.new(name="root").add([0, 1], 1.0, "REPLACE")
    obj.vertex_groups["root"].add([1], 0.5, "REPLACE")
    obj.vertex_groups.new(name="top").add([1], 0.5, "REPLACE")
    obj.vertex_groups["top"].add([2, 3], 1.0, "REPLACE")
    image = bpy.data.images.new("green", 8, 8, alpha=True)
    pixels = np.zeros((8, 8, 4), np.float32)
    pixels[..., 1] = np.arange(8)[:, None] / 7
    pixels[..., 3] = 1
    image.pixels.foreach_set(pixels.ravel())
    material = compat.new_material("painted")
    texture = material.node_tree.nodes.new("ShaderNodeTexImage")
    texture.image = image
    bsdf = next(n for n in material.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    material.node_tree.links.new(texture.outputs["Color"], bsdf.inputs["Base Color"])
    mesh.materials.append(material)
    select(armature)
    return obj, pixels
