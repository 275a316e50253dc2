"""J3D colour slots in the shading: a material-channel hook (``blender.hooks``), registered on import.

A J3D colour animation (BRK, BPK) keys ``color.register<n>``, ``color.konst<n>`` or
``color.material`` (``formats/j3d/convert.py``) on a custom property of the material's node
tree. This hook shows each slot by nodes driven by that property, as the game evaluates it.
"""

from __future__ import annotations

import bpy

from ..formats.j3d.bpk import COLOR_RANGE as MATERIAL_COLOR_RANGE
from ..formats.j3d.brk import KONST_RANGE, REGISTER_RANGE
from .blender import hooks, props
from .blender.material import MATERIAL_COLOR, color_input, multiply_into, principled, socket

# The range the game clamps each colour slot to.
_COLOR_RANGES = {"register": REGISTER_RANGE, "konst": KONST_RANGE, "material": MATERIAL_COLOR_RANGE}
# What the game makes of a keyed value v (colour / 255): clamped, truncated towards zero. Blender
# keeps v in float32, which can put an integer key k at k·(1 − 2⁻²⁴); scaling by one float32 unit
# more (255·(1 + 2⁻²³)) gives it back as k, and moves no value by more than the float32 error.
_COLOR_EXPRESSION = "trunc(clamp(v * 255.0000304, {}, {})) / 255"


@hooks.material_channel(r"color\.(register|konst|material)(\d*)")
def color_slot_nodes(material, channel, match) -> None:
    """Show the colour slot keyed on the node tree property ``channel.path`` in the shading, once per material.

    An RGB node "J3D <kind> <n>" (R, G, B) and a Value node "J3D <kind> <n> alpha" are driven by the
    property's components, as the game evaluates them (``_COLOR_EXPRESSION``); the keys stay the
    file's curves on the property, which is what export reads back. The RGB node cannot go below 0
    (register colours can): it shows 0, what the game's final clamp makes of a negative tint.

    Wiring, the game's most common use of each slot: the material colour (BPK, MAT1 material colour
    0) feeds the "Material Color" node tinting the texture when the material has one, else multiplies
    what feeds the surface colour (``color_input``: Base Color, or Emission Color when unlit; with
    nothing linked it replaces the static colour), and its alpha the Alpha (only when the material is not opaque or Alpha is linked: blending
    off, the game shows no alpha). The first TEV register or konst colour animated on a material (a
    BRK's registers come before its konsts) tints the surface colour (Multiply, named "J3D tint"); the
    other slots and register / konst alphas stay unwired (the TEV stages that use them are not built).
    """
    tree = material.node_tree
    path = channel.path
    if tree.nodes.get(f"J3D {match[1]} {match[2] or 0}") is not None:
        return
    kind, number = match[1], int(match[2] or 0)
    name = f"J3D {kind} {number}"
    shown = sum(props.COLOR_SLOT in n for n in tree.nodes) // 2  # slots already shown (two nodes each)
    color, alpha = tree.nodes.new("ShaderNodeRGB"), tree.nodes.new("ShaderNodeValue")
    for k, (node, label) in enumerate(((color, name), (alpha, f"{name} alpha"))):
        node.name = node.label = label
        node.location = (-1000 - 250 * k, 700 + 250 * shown)
        node[props.COLOR_SLOT] = {"path": path, "kind": kind, "slot": number}
    expression = _COLOR_EXPRESSION.format(*_COLOR_RANGES[kind])
    for c in range(min(len(tree[path]), 4)):
        output, index = (alpha.outputs[0], -1) if c == 3 else (color.outputs[0], c)
        driver = output.driver_add("default_value", index).driver
        driver.type = "SCRIPTED"
        variable = driver.variables.new()
        variable.name = "v"
        variable.targets[0].id_type = "NODETREE"
        variable.targets[0].id = tree
        variable.targets[0].data_path = f'["{bpy.utils.escape_identifier(path)}"][{c}]'
        driver.expression = expression
    bsdf = principled(tree)
    if kind == "material":
        tint = tree.nodes.get(MATERIAL_COLOR)
        if tint is not None:  # the animated colour replaces the static one
            tree.links.new(color.outputs[0], socket(tint.inputs, "B_Color"))
        else:
            multiply_into(tree, color_input(material), color.outputs[0], keep_default=False)
        target = bsdf.inputs["Alpha"]
        if (
            target.links and target.links[0].from_node.name == "Alpha Clip"
        ):  # the game compares the final alpha
            target = target.links[0].from_node.inputs[0]
        if target.links or material.get(props.ALPHA_MODE, "OPAQUE") != "OPAQUE":
            multiply_into(tree, target, alpha.outputs[0], keep_default=False)
    elif tree.nodes.get("J3D tint") is None:
        multiply_into(tree, color_input(material), color.outputs[0], keep_default=True).name = "J3D tint"
