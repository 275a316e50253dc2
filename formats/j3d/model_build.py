"""A new BMD model from plain arrays: joints, vertex arrays, envelopes, draw matrices, shapes made of
packets, and simple textured materials. ``build`` takes packets exactly as given (generated test
models and benchmarks that need a chosen packet layout); ``skeleton`` makes a model with joints,
materials and textures and no geometry, which ``model_write.new_model`` fills from mesh arrays
(the exporter's way: strips, packets and tables chosen by the writer); ``joints_from_rest``
turns an armature's rest matrices into those joints. ``model.write`` lays the sections out.

Tables are built the way the game's tools build them: DRW1 lists its weighted block twice, every
array and display list is 32-byte aligned, the scene graph nests shapes under the root joint,
shapes with several draw matrices send PNMTXIDX (slot × 3). ``build`` sends triangles as GX
triangle lists (``strips.triangle_list``), each given clockwise from the front.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..curves import matrix_to_euler
from . import strips
from .container import aligned_padding
from .mat3 import MAT3, MATERIAL_DTYPE
from .model import (
    DESCRIPTOR_DTYPE,
    DRW1,
    EVP1,
    FORMAT_DTYPE,
    GRAPH_DTYPE,
    GROUP_DTYPE,
    INF1,
    JNT1,
    JOINT_DTYPE,
    NODE_CLOSE,
    NODE_END,
    NODE_JOINT,
    NODE_MATERIAL,
    NODE_OPEN,
    NODE_SHAPE,
    PACKET_DTYPE,
    SHAPE_DTYPE,
    SHP1,
    VTX1,
    Model,
)
from .tex1 import BTI_DTYPE, BTI_SIZE, TEX1

POS, NRM, TEX0 = 9, 10, 13


@dataclass
class Joint:
    name: str
    parent: int
    translation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rotation: tuple[int, int, int] = (0, 0, 0)  # raw, 0x8000 = 180°
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)


@dataclass
class Packet:
    slots: list[int]  # DRW1 indices loaded into matrix slots 0…(≤ 9)
    corners: np.ndarray  # (3·T, 4) per triangle corner: slot, position, normal, UV index


@dataclass
class Shape:
    material: int
    packets: list[Packet]


def joints_from_rest(names: list[str], parents: list[int], rest: np.ndarray) -> list[Joint]:
    """Joints whose rest matrices under the basic scaling rule (W = W_parent · T · Rz·Ry·Rx · S) are
    ``rest`` ((J, 4, 4) model space, parents first): each local matrix split into translation,
    rotation (raw, 0x8000 = 180°) and scale (a mirrored joint gets a negative X scale)."""
    rest = np.asarray(rest, np.float64)
    parent_rest = np.array([rest[p] if p >= 0 else np.eye(4) for p in parents]).reshape(-1, 4, 4)
    local = np.linalg.pinv(parent_rest) @ rest  # pinv: a parent scaled to nothing
    linear = local[:, :3, :3]
    scale = np.linalg.norm(linear, axis=1)
    scale[:, 0] *= np.where(np.linalg.det(linear) < 0, -1, 1)
    rotation = linear / np.where(scale == 0, 1, scale)[:, None, :]
    raw = np.rint(matrix_to_euler(rotation) * (32768 / np.pi)).astype(np.int64)
    raw = (raw + 32768) % 65536 - 32768
    return [
        Joint(name, int(parent), tuple(t), tuple(int(r) for r in angles), tuple(sc))
        for name, parent, t, angles, sc in zip(
            names, parents, local[:, :3, 3].tolist(), raw, scale.tolist(), strict=True
        )
    ]


def _graph(joints: list[Joint], shapes: list[Shape]) -> np.ndarray:
    children: dict[int, list[int]] = {}
    for i, joint in enumerate(joints):
        children.setdefault(joint.parent, []).append(i)
    nodes: list[tuple[int, int]] = []

    def visit(j: int) -> None:
        nodes.extend([(NODE_JOINT, j), (NODE_OPEN, 0)])
        if j == 0:
            for s, shape in enumerate(shapes):
                nodes.extend(
                    [(NODE_MATERIAL, shape.material), (NODE_OPEN, 0), (NODE_SHAPE, s), (NODE_CLOSE, 0)]
                )
        for child in children.get(j, []):
            visit(child)
        nodes.append((NODE_CLOSE, 0))

    visit(0)
    nodes.append((NODE_END, 0))
    return np.array(nodes, GRAPH_DTYPE)


def _joints(joints: list[Joint]) -> JNT1:
    entries = np.zeros(len(joints), JOINT_DTYPE)
    entries["scale_compensate"], entries["pad"], entries["pad2"] = 0xFF, 0xFF, 0xFFFF
    entries["scale"] = [j.scale for j in joints]
    entries["rotation"] = [j.rotation for j in joints]
    entries["translation"] = [j.translation for j in joints]
    return JNT1(entries, np.arange(len(joints), dtype=">u2"), [j.name for j in joints])


def _shapes(shapes: list[Shape]) -> SHP1:
    entries = np.zeros(len(shapes), SHAPE_DTYPE)
    descriptors = bytearray()
    slots: list[int] = []
    lists = bytearray()
    groups, packets = [], []
    for s, shape in enumerate(shapes):
        multi = any(len(p.slots) > 1 for p in shape.packets) or len(shape.packets) > 1
        attributes = ([(0, 1)] if multi else []) + [(POS, 3), (NRM, 3), (TEX0, 3), (0xFF, 0)]
        entries[s] = (3 if multi else 0, 0xFF, len(shape.packets), len(descriptors), len(groups), len(packets),
                      0xFFFF, 0.0, (0, 0, 0), (0, 0, 0))  # fmt: skip
        descriptors += np.array(attributes, DESCRIPTOR_DTYPE).tobytes()
        vertex = np.dtype([("slot", "u1"), ("pos", ">u2"), ("nrm", ">u2"), ("uv", ">u2")] if multi else
                          [("pos", ">u2"), ("nrm", ">u2"), ("uv", ">u2")])  # fmt: skip
        for packet in shape.packets:
            groups.append((packet.slots[0], len(packet.slots), len(slots)))
            slots += packet.slots
            corners = np.asarray(packet.corners, np.int64)
            if len(corners) and corners[:, 1:].max() > 0xFFFF:  # display lists index with 16 bits
                raise ValueError(f"shape {s}: index {corners[:, 1:].max()} does not fit a 16-bit index")
            records = np.zeros(len(corners), vertex)
            if multi:
                records["slot"] = corners[:, 0] * 3
            records["pos"], records["nrm"], records["uv"] = corners[:, 1], corners[:, 2], corners[:, 3]
            start = len(lists)
            lists += strips.encode(strips.triangle_list(np.arange(len(records))), records)
            packets.append((len(lists) - start, start))
    return SHP1(
        entries,
        np.arange(len(shapes), dtype=">u2"),
        [],
        bytes(descriptors),
        np.array(slots, ">u2"),
        bytes(lists),
        np.array(groups, GROUP_DTYPE),
        np.array(packets, PACKET_DTYPE),
    )


def _materials(names: list[str], textures: int) -> MAT3:
    records = np.zeros(len(names), MATERIAL_DTYPE)
    for field in MATERIAL_DTYPE.names:
        base = MATERIAL_DTYPE.fields[field][0].base
        if base.itemsize == 2:
            records[field] = 0xFFFF
    records["flag"] = 1
    records["material_colors"][:, 0] = 0
    records["textures"][:, 0] = np.arange(len(names)) % max(textures, 1) if textures else 0xFFFF
    tables = {
        "cull_modes": np.array([2], ">u4").tobytes(),  # back
        "material_colors": bytes([255, 255, 255, 255]),
        "color_channel_counts": bytes([1]) + aligned_padding(1, 4),
        "texgen_counts": bytes([1]) + aligned_padding(1, 4),
        "tev_stage_counts": bytes([1]) + aligned_padding(1, 4),
        "z_modes": bytes([1, 3, 1, 0xFF]),
        "z_compare": bytes([1]) + aligned_padding(1, 4),
        "dither": bytes([1]) + aligned_padding(1, 4),
        "texture_remap": np.arange(textures, dtype=">u2").tobytes() + aligned_padding(2 * textures, 4),
    }
    return MAT3(records, np.arange(len(names), dtype=">u2"), list(names), tables)


def _textures(images: list[tuple[str, np.ndarray]]) -> TEX1:
    """I8 textures from (name, (H, W) uint8 with H, W multiples of 4 and 8)."""
    headers = np.zeros(len(images), BTI_DTYPE)
    data = bytearray()
    for i, (_, pixels) in enumerate(images):
        h, w = pixels.shape
        tiles = pixels.reshape(h // 4, 4, w // 8, 8).transpose(0, 2, 1, 3)
        header_to_data = (len(images) - i) * BTI_SIZE + len(data)
        headers[i] = (1, 0, w, h, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0, header_to_data)
        data += tiles.tobytes()
    return TEX1(headers, [name for name, _ in images], bytes(data) + aligned_padding(len(data), 32))


def _sections(
    joints: list[Joint],
    inf1: INF1,
    vtx1: VTX1,
    evp1: EVP1,
    drw1: DRW1,
    shp1: SHP1,
    materials: list[str] | MAT3,
    images: list[tuple[str, np.ndarray]] | TEX1,
) -> list:
    tex1 = images if isinstance(images, TEX1) else _textures(images)
    mat3 = materials if isinstance(materials, MAT3) else _materials(materials, len(tex1.headers))
    return [inf1, vtx1, evp1, drw1, _joints(joints), shp1, mat3, tex1]


def skeleton(
    joints: list[Joint],
    materials: list[str] | MAT3,
    images: list[tuple[str, np.ndarray]] | TEX1 = (),
    scaling_rule: int = 0,
) -> Model:
    """A BMD model with joints, materials and textures and no shapes (no vertex arrays, envelopes or
    draw matrices yet). ``materials``: names of simple textured materials (material i shows
    image i modulo the count) or a MAT3 section; ``images``: (name, I8 pixels) or a TEX1 section."""
    formats = np.zeros(1, FORMAT_DTYPE)
    formats["attribute"], formats["count"], formats["pad"] = 0xFF, 1, b"\xff\xff\xff"
    no_shapes = SHP1(
        np.zeros(0, SHAPE_DTYPE),
        np.zeros(0, ">u2"),
        [],
        b"",
        np.zeros(0, ">u2"),
        b"",
        np.zeros(0, GROUP_DTYPE),
        np.zeros(0, PACKET_DTYPE),
    )
    no_envelopes = EVP1(np.zeros(0, "u1"), np.zeros(0, ">u2"), np.zeros(0, ">f4"), np.zeros((0, 3, 4), ">f4"))
    inf1 = INF1(scaling_rule, 0, 0, _graph(joints, []))
    drw1 = DRW1(np.zeros(0, "u1"), np.zeros(0, ">u2"))
    sections = _sections(joints, inf1, VTX1(formats, {}), no_envelopes, drw1, no_shapes, materials, images)
    return Model(b"bmd3", sections)


def build(
    joints: list[Joint],
    positions: np.ndarray,
    normals: np.ndarray,
    uvs: np.ndarray,
    envelopes: list[tuple[list[int], list[float]]],
    rigid: list[int],
    shapes: list[Shape],
    materials: list[str],
    images: list[tuple[str, np.ndarray]],
    inverse_binds: np.ndarray,
) -> Model:
    """A BMD model; draw matrices are ``rigid`` joints, then ``envelopes`` (DRW1 order)."""
    formats = np.zeros(4, FORMAT_DTYPE)
    formats["attribute"] = [POS, NRM, TEX0, 0xFF]
    formats["count"] = [1, 0, 1, 1]
    formats["type"] = [4, 4, 4, 0]
    formats["pad"] = b"\xff\xff\xff"
    arrays = {
        POS: np.asarray(positions, ">f4").tobytes(),
        NRM: np.asarray(normals, ">f4").tobytes(),
        TEX0: np.asarray(uvs, ">f4").tobytes(),
    }
    counts = np.array([len(j) for j, _ in envelopes], "u1")
    evp1 = EVP1(
        counts,
        np.array([i for j, _ in envelopes for i in j], ">u2"),
        np.array([w for _, ws in envelopes for w in ws], ">f4"),
        np.asarray(inverse_binds, np.float64)[:, :3, :].astype(">f4")
        if envelopes
        else np.zeros((0, 3, 4), ">f4"),
    )
    weighted = list(range(len(envelopes)))
    drw1 = DRW1(
        np.array([0] * len(rigid) + [1] * 2 * len(weighted), "u1"),
        np.array(rigid + weighted + weighted, ">u2"),
    )
    inf1 = INF1(0, sum(len(s.packets) for s in shapes), len(positions), _graph(joints, shapes))
    return Model(
        b"bmd3",
        _sections(joints, inf1, VTX1(formats, arrays), evp1, drw1, _shapes(shapes), materials, images),
    )
