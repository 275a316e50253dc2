"""Scene materials ⇄ Blender materials, and where material channels are keyed.

A material is a Principled BSDF with one image node per texture slot (numbered in
``props.SLOT``, with the slot's role, wraps and rest transform), a UV Map node when the slot
names a UV layer and a Mapping node "Mapping <slot>" when the slot has a transform (or is
animated, or ``animatable_mapping`` asks for one). The first texture of each role feeds the
BSDF: base colour (its alpha too when the material blends or the image has alpha; through an
"Alpha Clip" node for CLIP, above ``alpha_threshold``), normal (through a Normal Map node) or
emission. The surface colour (``color_input``: Base Color, or Emission Color on a black BSDF
when the material is ``unlit``) is then the base texture times the base colour ("Material Color",
when ``tint_texture``) times the ``vertex_color`` layer ("Vertex Color", its alpha into the Alpha
of a material that is not opaque); ``specular`` sets the Specular IOR Level; an ``additive``
material adds the BSDF onto a clear Transparent BSDF ("Additive"). A slot with a ``center`` gets
the Mapping chain of ``slot_mapping``.

Material channels (``key_channel``; the paths ``formats.scene.Channel`` documents):
``texture.<slot>.translate|rotate|scale`` drive that slot's Mapping node (added in front of the
slot's image node of an existing material when missing; a transform about a centre,
``TEXTURE_CENTER``, gets the chain of ``slot_mapping``), ``color.base_color`` the Principled Base
Color; any other path (e.g. ``texture.<slot>.image_index``, a family's own colour) is keyed on a
custom property of that name on the node tree, so it travels back on export
(``switch_images`` shows swapped images). A channel with ``Channel.index`` keys that one
component (colour properties get 4). A family shows its own paths in the shading through a
material-channel hook (``hooks``).
"""

from __future__ import annotations

import bpy
import numpy as np

from ...formats.scene import TEXTURE_CENTER, Channel, Material, TextureSlot
from . import compat, hooks, props
from .records import ChannelRecord

_WRAP_TO_EXTENSION = {"REPEAT": "REPEAT", "CLAMP": "EXTEND", "MIRROR": "MIRROR"}
_EXTENSION_TO_WRAP = {"REPEAT": "REPEAT", "EXTEND": "CLAMP", "CLIP": "CLAMP", "MIRROR": "MIRROR"}


def mapping_input(path: str) -> tuple[str, tuple[int, ...]] | None:
    """The Mapping node input and components a material channel path drives, if any."""
    parts = path.split(".")
    if len(parts) != 3 or parts[0] != "texture" or not parts[1].isdigit():
        return None
    return {"translate": ("Location", (0, 1)), "rotate": ("Rotation", (2,)), "scale": ("Scale", (0, 1))}.get(
        parts[2]
    )


def mapping_node_name(slot: int) -> str:
    return f"Mapping {slot}"


def principled(tree) -> bpy.types.Node:
    """The tree's Principled BSDF (made when missing)."""
    node = next((n for n in tree.nodes if n.type == "BSDF_PRINCIPLED"), None)
    return node or tree.nodes.new("ShaderNodeBsdfPrincipled")


def socket(sockets, identifier: str):
    """The socket of ``sockets`` with this identifier (names repeat across data types, identifiers do not)."""
    return next(s for s in sockets if s.identifier == identifier)


# -- build --------------------------------------------------------------------


def build_material(material: Material, images, scene_images, animated_slots, animatable_mapping):
    """``animated_slots``: (material name, slot) pairs an animation transforms (they get a Mapping node)."""
    blender_material = compat.new_material(material.name)
    blender_material[props.SCENE_NAME] = material.name
    tree = blender_material.node_tree
    bsdf = principled(tree)
    bsdf.inputs["Base Color"].default_value = material.base_color
    bsdf.inputs["Alpha"].default_value = material.base_color[3]
    blender_material.diffuse_color = material.base_color
    # Since 4.2 transparency is blended or dithered; alpha clipping is a node (see _link_role).
    blender_material.surface_render_method = "BLENDED" if material.alpha_mode == "BLEND" else "DITHERED"
    blender_material[props.ALPHA_MODE] = material.alpha_mode
    blender_material.use_backface_culling = material.backface_culling
    props.set_extras(blender_material, material.extras)
    if material.specular is not None:
        bsdf.inputs["Specular IOR Level"].default_value = material.specular
    if material.unlit:
        _make_unlit(blender_material, bsdf, material.base_color)
    linked: set[str] = set()
    for i, slot in enumerate(material.textures):
        node = _texture_node(tree, i, slot, images[slot.image])
        mapped = animatable_mapping or (material.name, i) in animated_slots
        vector = _slot_vector(tree, i, slot, node.location.y, mapped)
        if vector is not None:
            tree.links.new(vector, node.inputs["Vector"])
        if slot.center is not None:
            _main, rotation, _center = slot_mapping(tree, i, slot.center)
            rotation.inputs["Rotation"].default_value = (0.0, 0.0, slot.rotate)
        _link_role(tree, bsdf, node, slot.role, material, scene_images[slot.image], linked)
    if material.tint_texture and "base_color" in linked:
        tint = multiply_into(tree, color_input(blender_material), None, keep_default=False)
        tint.name = tint.label = MATERIAL_COLOR
        socket(tint.inputs, "B_Color").default_value = material.base_color
    if material.vertex_color:
        _multiply_vertex_color(blender_material, bsdf, material)
    if material.additive:
        _make_additive(tree, bsdf)
    return blender_material


UNLIT = "unlit"  # material: the colour shows through the Emission input, without lighting
MATERIAL_COLOR = "Material Color"  # Multiply node: the base colour tinting the base texture
VERTEX_COLOR = "Vertex Color"  # Color Attribute node multiplying the base colour and alpha
ADDITIVE = "Additive"  # Add Shader: the surface added onto what is behind it
_DEFAULT_SPECULAR = 0.5  # a new Principled BSDF's Specular IOR Level


def color_input(material) -> bpy.types.NodeSocket:
    """The socket the material's surface colour flows into: Base Color, or Emission Color when unlit."""
    return principled(material.node_tree).inputs["Emission Color" if material.get(UNLIT) else "Base Color"]


def _make_unlit(material, bsdf, color) -> None:
    """Unlit: black diffuse, the colour as emission (Principled keeps its alpha; give it no specular)."""
    material[UNLIT] = True
    bsdf.inputs["Base Color"].default_value = (0.0, 0.0, 0.0, 1.0)
    bsdf.inputs["Emission Color"].default_value = color
    bsdf.inputs["Emission Strength"].default_value = 1.0


def _multiply_vertex_color(material, bsdf, scene_material: Material) -> None:
    tree = material.node_tree
    node = tree.nodes.new("ShaderNodeVertexColor")
    node.name = node.label = VERTEX_COLOR
    node.layer_name = scene_material.vertex_color
    node.location = (-700, 600)
    multiply_into(tree, color_input(material), node.outputs["Color"], keep_default=True)
    if scene_material.alpha_mode != "OPAQUE":
        alpha = bsdf.inputs["Alpha"]
        if alpha.links and alpha.links[0].from_node.name == "Alpha Clip":  # the game compares the final alpha
            alpha = alpha.links[0].from_node.inputs[0]
        multiply_into(tree, alpha, node.outputs["Alpha"], keep_default=True)


def _make_additive(tree, bsdf) -> None:
    """The surface added onto what is behind it: Principled plus a clear Transparent BSDF."""
    output = next(n for n in tree.nodes if n.type == "OUTPUT_MATERIAL")
    add = tree.nodes.new("ShaderNodeAddShader")
    add.name = add.label = ADDITIVE
    add.location = (output.location.x, output.location.y - 200)
    clear = tree.nodes.new("ShaderNodeBsdfTransparent")
    clear.location = (add.location.x - 250, add.location.y - 150)
    tree.links.new(bsdf.outputs[0], add.inputs[0])
    tree.links.new(clear.outputs[0], add.inputs[1])
    tree.links.new(add.outputs[0], output.inputs["Surface"])


def multiply_into(tree, target, output, keep_default: bool):
    """Feed ``target`` with ``output`` times what fed it: its link, else (``keep_default``) its own value.

    The Multiply node made (None when ``output`` simply replaces an unlinked default). ``output``
    None leaves the second factor unlinked (its value set by the caller).
    """
    source = target.links[0].from_socket if target.links else None
    if source is None and not keep_default:
        tree.links.new(output, target)
        return None
    if target.type == "RGBA":
        node = tree.nodes.new("ShaderNodeMix")
        node.data_type, node.blend_type = "RGBA", "MULTIPLY"
        socket(node.inputs, "Factor_Float").default_value = 1.0
        first, second = socket(node.inputs, "A_Color"), socket(node.inputs, "B_Color")
        result = socket(node.outputs, "Result_Color")
    else:
        node = tree.nodes.new("ShaderNodeMath")
        node.operation = "MULTIPLY"
        first, second, result = node.inputs[0], node.inputs[1], node.outputs[0]
    anchor = (output or target).node.location
    node.location = (anchor.x + 600 * (output is not None) - 250 * (output is None), anchor.y)
    if source is None:
        first.default_value = target.default_value
    else:
        tree.links.new(source, first)
    if output is not None:
        tree.links.new(output, second)
    tree.links.new(result, target)
    return node


def _texture_node(tree, i: int, slot: TextureSlot, image):
    """The image node of texture slot ``i``, numbered for the extractor."""
    node = tree.nodes.new("ShaderNodeTexImage")
    node.location = (-700, 300 - 320 * i)
    node.image = image
    node.extension = _WRAP_TO_EXTENSION.get(slot.wrap_s, "REPEAT")
    node.interpolation = slot.interpolation
    node[props.SLOT] = {
        "index": i,
        "role": slot.role,
        "wrap_s": slot.wrap_s,
        "wrap_t": slot.wrap_t,
        # The transform at rest, for when an animation drives the Mapping node.
        "translate": list(slot.translate),
        "rotate": slot.rotate,
        "scale": list(slot.scale),
        "center": None if slot.center is None else list(slot.center),
    }
    props.set_extras(node, slot.extras)
    return node


def _slot_vector(tree, i: int, slot: TextureSlot, y: float, mapped: bool):
    """The socket giving slot ``i`` its coordinates (UV map, then Mapping node), None for the default UVs."""
    vector = None
    if slot.uv_layer:
        uv_node = tree.nodes.new("ShaderNodeUVMap")
        uv_node.uv_map = slot.uv_layer
        uv_node.location = (-1250, y)
        vector = uv_node.outputs["UV"]
    transformed = slot.translate != (0.0, 0.0) or slot.rotate != 0.0 or tuple(slot.scale) != (1.0, 1.0)
    if transformed or mapped:
        mapping = tree.nodes.new("ShaderNodeMapping")
        mapping.name = mapping_node_name(i)
        mapping.location = (-950, y)
        mapping.inputs["Location"].default_value = (*slot.translate, 0.0)
        mapping.inputs["Rotation"].default_value = (0.0, 0.0, slot.rotate)
        mapping.inputs["Scale"].default_value = (*slot.scale, 1.0)
        if vector is None:
            coords = tree.nodes.new("ShaderNodeTexCoord")
            coords.location = (-1250, y)
            vector = coords.outputs["UV"]
        tree.links.new(vector, mapping.inputs["Vector"])
        vector = mapping.outputs["Vector"]
    return vector


def _link_role(tree, bsdf, node, role, material, scene_image, linked):
    """Connect the first texture of each role to the Principled BSDF."""
    if role in linked:
        return
    if role == "base_color":
        tree.links.new(
            node.outputs["Color"], bsdf.inputs["Emission Color" if material.unlit else "Base Color"]
        )
        has_alpha = scene_image.pixels is not None and bool((scene_image.pixels[..., 3] < 255).any())
        if material.alpha_mode == "CLIP":
            clip = tree.nodes.new("ShaderNodeMath")
            clip.name = clip.label = "Alpha Clip"
            clip.operation = "GREATER_THAN"
            clip.inputs[1].default_value = material.alpha_threshold
            clip.location = (-250, node.location.y - 200)
            tree.links.new(node.outputs["Alpha"], clip.inputs[0])
            tree.links.new(clip.outputs["Value"], bsdf.inputs["Alpha"])
        elif material.alpha_mode == "BLEND" or has_alpha:
            tree.links.new(node.outputs["Alpha"], bsdf.inputs["Alpha"])
    elif role == "normal":
        node.image.colorspace_settings.name = "Non-Color"
        normal_map = tree.nodes.new("ShaderNodeNormalMap")
        normal_map.location = (-250, node.location.y)
        tree.links.new(node.outputs["Color"], normal_map.inputs["Color"])
        tree.links.new(normal_map.outputs["Normal"], bsdf.inputs["Normal"])
    elif role == "emission":
        tree.links.new(node.outputs["Color"], bsdf.inputs["Emission Color"])
        bsdf.inputs["Emission Strength"].default_value = 1.0
    else:
        return
    linked.add(role)


def switch_images(material, slot: int, images: dict[int, bpy.types.Image]) -> bool:
    """Make texture ``slot`` show ``images[i]`` while the material's ``texture.<slot>.image_index`` is i.

    The (keyed) custom property drives a Value node; each image gets an image node beside the
    slot's, and Mix nodes in front of every link of the slot's Color and Alpha outputs pick the
    image whose index is within 0.5 of the value; other values show the slot's own image. A slot
    switched before (another pattern) keeps its switch: only values it lacks are added.
    False when the material has no image node for the slot.
    """
    tree = material.node_tree
    node = slot_image_node(tree, slot)
    if node is None:
        return False
    path = f"texture.{slot}.image_index"
    if path not in tree:
        tree[path] = 0.0
    label = f"{path} = "
    shown = {
        n[props.SWITCHED_IMAGE] for n in tree.nodes if props.SWITCHED_IMAGE in n and n.label.startswith(label)
    }
    images = {value: image for value, image in images.items() if value not in shown}
    if not images:
        return True
    index = tree.nodes.get(f"Image Index {slot}") or _driven_value(tree, f"Image Index {slot}", path)
    index.location = (node.location.x - 250, node.location.y - 300)
    vector = node.inputs["Vector"].links[0].from_socket if node.inputs["Vector"].links else None
    outputs = {
        "Color": (node.outputs["Color"], "RGBA", "Color"),
        "Alpha": (node.outputs["Alpha"], "FLOAT", "Float"),
    }
    targets = {name: [link.to_socket for link in output.links] for name, (output, _, _) in outputs.items()}
    current = {name: output for name, (output, _, _) in outputs.items()}
    for k, (value, image) in enumerate(sorted(images.items())):
        texture = tree.nodes.new("ShaderNodeTexImage")
        texture.image, texture.extension, texture.interpolation = image, node.extension, node.interpolation
        texture.label = f"{label}{value}"
        texture[props.SWITCHED_IMAGE] = value
        texture.location = (node.location.x, node.location.y - 300 * (len(shown) + k + 1))
        if vector is not None:
            tree.links.new(vector, texture.inputs["Vector"])
        chosen = tree.nodes.new("ShaderNodeMath")
        chosen.operation = "COMPARE"
        chosen.inputs[1].default_value = value
        chosen.inputs[2].default_value = 0.5
        chosen.location = (node.location.x + 250, texture.location.y)
        tree.links.new(index.outputs[0], chosen.inputs[0])
        for name, (_, data_type, kind) in outputs.items():
            mix = tree.nodes.new("ShaderNodeMix")
            mix.data_type = data_type
            mix.location = (node.location.x + 450 + 200 * (name == "Alpha"), texture.location.y)
            tree.links.new(chosen.outputs[0], socket(mix.inputs, "Factor_Float"))
            tree.links.new(current[name], socket(mix.inputs, f"A_{kind}"))
            tree.links.new(texture.outputs[name], socket(mix.inputs, f"B_{kind}"))
            current[name] = socket(mix.outputs, f"Result_{kind}")
    for name, sockets in targets.items():
        for target in sockets:
            tree.links.new(current[name], target)
    return True


def _driven_value(tree, name: str, path: str):
    """A Value node named ``name`` showing the tree's custom property ``path`` (through a driver)."""
    node = tree.nodes.new("ShaderNodeValue")
    node.name = node.label = name
    driver = node.outputs[0].driver_add("default_value").driver
    driver.type = "AVERAGE"
    variable = driver.variables.new()
    variable.targets[0].id_type = "NODETREE"
    variable.targets[0].id = tree
    variable.targets[0].data_path = f'["{bpy.utils.escape_identifier(path)}"]'
    return node


def slot_image_node(tree, slot: int):
    """The image texture node of texture ``slot``: the one the builder numbered so, else the slot-th from the top."""
    images = [n for n in tree.nodes if n.type == "TEX_IMAGE"]
    numbered = [n for n in images if props.to_python(n.get(props.SLOT, {})).get("index") == slot]
    if numbered:
        return numbered[0]
    images.sort(key=lambda n: -n.location.y)
    return images[slot] if slot < len(images) else None


def slot_mapping(tree, slot: int, center):
    """(main, rotation, centre) of the texture transform of ``slot``, made in front of its image node when missing.

    Without a centre one Mapping node does it all (Blender's order: scale, rotate, translate).
    A transform about a centre c, ``S·R·(uv − c) + c + t`` (rotate, then scale), takes three:
    "<name> Center" (location −c), "<name> Rotation", then the main node (scale, location t + c).
    None when the material has no image node for the slot.
    """
    main = tree.nodes.get(mapping_node_name(slot))
    if main is None:
        image = slot_image_node(tree, slot)
        if image is None:
            return None
        main = _insert_mapping(tree, image, mapping_node_name(slot))
    if center is None:
        return main, main, None
    center = [float(c) for c in center[:2]] + [0.0]
    rotation = tree.nodes.get(f"{main.name} Rotation")
    if rotation is None:
        main.inputs["Rotation"].default_value = (0.0, 0.0, 0.0)
        rotation = _insert_mapping(tree, main, f"{main.name} Rotation")
        shift = _insert_mapping(tree, rotation, f"{main.name} Center")
        shift.inputs["Location"].default_value = [-c for c in center]
        location = main.inputs["Location"]
        location.default_value = (np.array(location.default_value) + center).tolist()
    return main, rotation, center


def _insert_mapping(tree, before, name: str):
    """A Mapping node feeding ``before``'s Vector input (from what fed it, else the UV coordinates)."""
    node = tree.nodes.new("ShaderNodeMapping")
    node.name = node.label = name
    node.location = (before.location.x - 250, before.location.y)
    links = before.inputs["Vector"].links
    if links:
        source = links[0].from_socket
    else:
        coords = tree.nodes.new("ShaderNodeTexCoord")
        coords.location = (node.location.x - 250, node.location.y)
        source = coords.outputs["UV"]
    tree.links.new(source, node.inputs["Vector"])
    tree.links.new(node.outputs["Vector"], before.inputs["Vector"])
    return node


# -- material channels ----------------------------------------------------------


def key_channel(actions, material, channel: Channel, times, values, record: ChannelRecord):
    """Key a material channel on the material's node tree: a whole vector, or one component; returns the
    keys as written."""
    tree = material.node_tree
    data_path, indices, offsets = _channel_data_path(tree, channel, values.shape[1])
    if channel.index is not None:  # the other components are other channels on the same data path
        indices, offsets = (
            indices[channel.index : channel.index + 1],
            offsets[channel.index : channel.index + 1],
        )
        record.array_index = indices[0]
    offsets = np.asarray(offsets, np.float64)
    if offsets.any():
        record.offset = offsets.tolist()
    fcurves = actions.fcurves(tree, "NODETREE", data_path, len(indices), "", record, indices)
    hooks.run_material_channel_hooks(material, channel)
    handles = [channel.handles_left, channel.handles_right]
    for i, side in enumerate(handles):
        if side is not None:
            handles[i] = np.array(side, np.float64)
            handles[i][..., 1] += offsets
    return actions.write(fcurves, record, times, values + offsets, channel.interpolation, *handles)


def _socket_path(node, socket_name: str) -> str:
    socket_index = next(i for i, s in enumerate(node.inputs) if s.name == socket_name)
    return f'nodes["{bpy.utils.escape_identifier(node.name)}"].inputs[{socket_index}].default_value'


def _channel_data_path(tree, channel: Channel, components: int) -> tuple[str, tuple[int, ...], list[float]]:
    """Data path, array indices and value offsets animating a material channel (see the module docstring)."""
    path = channel.path
    mapping = mapping_input(path)
    nodes = (
        slot_mapping(tree, int(path.split(".")[1]), channel.extras.get(TEXTURE_CENTER)) if mapping else None
    )
    if nodes is not None:
        main, rotation, center = nodes
        offsets = [0.0] * len(mapping[1])
        if center is not None and mapping[0] == "Location":
            offsets = [center[i] for i in mapping[1]]
        node = rotation if mapping[0] == "Rotation" else main
        return _socket_path(node, mapping[0]), mapping[1], offsets
    size = (
        components if channel.index is None else max(channel.index + 1, 4 if path.startswith("color.") else 1)
    )
    if path == "color.base_color":
        return _socket_path(principled(tree), "Base Color"), tuple(range(size)), [0.0] * size
    current = tree.get(path)
    if channel.index is None or len(current if hasattr(current, "__len__") else ()) < size:
        tree[path] = [0.0] * size if size > 1 or channel.index is not None else 0.0
    return f'["{bpy.utils.escape_identifier(path)}"]', tuple(range(size)), [0.0] * size


# -- extract --------------------------------------------------------------------


def extract_material(material, images) -> Material:
    """The Scene material of a Blender material; ``images`` registers the images it uses (``.add``)."""
    tree = material.node_tree
    bsdf = next((n for n in tree.nodes if n.type == "BSDF_PRINCIPLED"), None) if tree else None
    base_color = tuple(material.diffuse_color)
    tint = tree.nodes.get(MATERIAL_COLOR) if tree else None
    if tint is not None:
        base_color = tuple(float(c) for c in socket(tint.inputs, "B_Color").default_value)
    elif bsdf is not None:
        base_color = tuple(float(c) for c in color_input(material).default_value)
    stored_mode = material.get(props.ALPHA_MODE, "OPAQUE")
    if material.surface_render_method == "BLENDED":
        alpha_mode = "BLEND"
    else:
        alpha_mode = stored_mode if stored_mode in ("OPAQUE", "CLIP") else "OPAQUE"
    result = Material(
        props.scene_name(material),
        base_color=base_color,
        alpha_mode=alpha_mode,
        backface_culling=material.use_backface_culling,
        unlit=bool(material.get(UNLIT, False)),
        extras=props.get_extras(material),
    )
    if tree is None:
        return result
    if bsdf is not None and bsdf.inputs["Specular IOR Level"].default_value != _DEFAULT_SPECULAR:
        result.specular = float(bsdf.inputs["Specular IOR Level"].default_value)
    clip, vertex_color = tree.nodes.get("Alpha Clip"), tree.nodes.get(VERTEX_COLOR)
    if clip is not None and clip.type == "MATH":
        result.alpha_threshold = float(clip.inputs[1].default_value)
    if vertex_color is not None and vertex_color.type == "VERTEX_COLOR":
        result.vertex_color = vertex_color.layer_name
    result.tint_texture = tint is not None
    result.additive = any(n.type == "ADD_SHADER" and n.name == ADDITIVE for n in tree.nodes)
    nodes = [
        n
        for n in tree.nodes
        if n.type == "TEX_IMAGE" and n.image is not None and props.SWITCHED_IMAGE not in n
    ]
    nodes.sort(key=lambda n: props.to_python(n[props.SLOT])["index"] if props.SLOT in n else len(nodes))
    result.textures = [_texture_slot(node, images, tree) for node in nodes]
    return result


def _texture_slot(node, images, tree) -> TextureSlot:
    stored = props.to_python(node[props.SLOT]) if props.SLOT in node else {}
    slot = TextureSlot(
        images.add(node.image),
        role=stored["role"] if "role" in stored else _role(node),
        extras=props.get_extras(node),
    )
    if _WRAP_TO_EXTENSION.get(stored.get("wrap_s")) == node.extension:
        slot.wrap_s, slot.wrap_t = stored["wrap_s"], stored.get("wrap_t", stored["wrap_s"])
    else:
        slot.wrap_s = slot.wrap_t = _EXTENSION_TO_WRAP[node.extension]
    source = node.inputs["Vector"].links[0].from_node if node.inputs["Vector"].links else None
    slot.interpolation = node.interpolation
    if source is not None and source.type == "MAPPING":
        animated = compat.animated_paths(tree)

        def rest_value(mapping, socket_name: str, key: str, components: list[int]) -> list[float]:
            """The socket's value, or the stored rest value while an animation drives the socket."""
            input_socket = mapping.inputs[socket_name]
            if f"{input_socket.path_from_id()}.default_value" in animated and key in stored:
                return stored[key] if isinstance(stored[key], list) else [stored[key]]
            return [float(input_socket.default_value[i]) for i in components]

        def feeding(mapping):
            links = mapping.inputs["Vector"].links
            return links[0].from_node if links else None

        main, rotation = source, source
        source = feeding(main)
        center = None
        if source is not None and source.name == f"{main.name} Rotation":  # about a centre (slot_mapping)
            rotation, shift = source, feeding(source)
            if shift is not None and shift.name == f"{main.name} Center":
                center = [-float(c) for c in shift.inputs["Location"].default_value[:2]]
                source = feeding(shift)
        slot.translate = tuple(rest_value(main, "Location", "translate", [0, 1]))
        if center is not None and "translate" not in _animated_keys(main, animated):
            slot.translate = (slot.translate[0] - center[0], slot.translate[1] - center[1])
        (slot.rotate,) = rest_value(rotation, "Rotation", "rotate", [2])
        slot.scale = tuple(rest_value(main, "Scale", "scale", [0, 1]))
        slot.center = None if center is None else tuple(center)
    if source is not None and source.type == "UVMAP":
        slot.uv_layer = source.uv_map
    return slot


def _animated_keys(mapping, animated) -> set[str]:
    """Which rest values of a Mapping node an animation drives ("translate", "rotate", "scale")."""
    names = {"Location": "translate", "Rotation": "rotate", "Scale": "scale"}
    return {
        key
        for name, key in names.items()
        if f"{mapping.inputs[name].path_from_id()}.default_value" in animated
    }


def _role(node) -> str:
    """The role of a texture the user added, from what its colour feeds."""
    for link in node.outputs["Color"].links:
        target = link.to_node
        if target.type == "NORMAL_MAP":
            return "normal"
        if target.type == "BSDF_PRINCIPLED" and link.to_socket.name.startswith("Emission"):
            return "emission"
    return "base_color"
