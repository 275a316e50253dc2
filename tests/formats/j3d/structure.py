"""An independent check of the structural rules the game's loader relies on in a BMD/BDL file.

Written from the format's rules (../shared/notes/j3d-models.md), with its own parsing (struct),
not from the project's reader or writer: ``problems(data)`` lists every broken rule (empty when
the file is sound). Checked: the header, section order, sizes and 32-byte alignment; INF1's
scene graph (balanced, every joint and shape once, materials in range), packet and position
counts; VTX1's format list and 32-aligned arrays; EVP1 weights and joints; DRW1 entries and
layout; SHP1 descriptor lists, matrix slot tables (≤ 10 slots, 0xFFFF never in a shape's first
packet), packet display lists (32-byte offsets and sizes, known primitives, vertex counts,
PNMTXIDX slots that a packet loaded, every index inside its array), zero padding after the end.
"""

from __future__ import annotations

import struct

ORDER = [b"INF1", b"VTX1", b"EVP1", b"DRW1", b"JNT1", b"SHP1", b"MAT3"]
PRIMITIVES = {0x80, 0x88, 0x90, 0x98, 0xA0, 0xA8, 0xB0, 0xB8}
COMPONENT_SIZES = (1, 1, 2, 2, 4)
COLOR_SIZES = (2, 3, 4, 2, 3, 4)
ARRAY_SLOTS = (9, 10, 25, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)


def _u16(data: bytes, at: int) -> int:
    return struct.unpack_from(">H", data, at)[0]


def _u32(data: bytes, at: int) -> int:
    return struct.unpack_from(">I", data, at)[0]


def _stride(attribute: int, count: int, kind: int) -> int:
    if attribute in (11, 12):
        return COLOR_SIZES[kind]
    components = {9: 3 if count else 2, 10: 3 if count == 0 else 9, 25: 9}.get(attribute, 2 if count else 1)
    return components * COMPONENT_SIZES[kind]


def problems(data: bytes) -> list[str]:
    out: list[str] = []
    try:
        _check(data, out)
    except (struct.error, IndexError, KeyError, ValueError) as e:
        out.append(f"unreadable: {e!r}")
    return out


def _check(data: bytes, out: list[str]) -> None:
    if data[:4] != b"J3D2" or data[4:8] not in (b"bmd3", b"bdl4"):
        out.append(f"magic {data[:8]!r}")
        return
    if _u32(data, 8) != len(data):
        out.append(f"header size {_u32(data, 8)} for {len(data)} bytes")
    sections: dict[bytes, tuple[int, int]] = {}
    at, order = 0x20, []
    for _ in range(_u32(data, 12)):
        tag, size = data[at : at + 4], _u32(data, at + 4)
        if size % 32 or at % 32 or at + size > len(data):
            out.append(f"{tag!r} at {at} size {size}: not 32-aligned or past the end")
            return
        sections[tag] = (at, size)
        order.append(tag)
        at += size
    expected = ORDER + ([b"MDL3"] if data[4:8] == b"bdl4" else []) + [b"TEX1"]
    if order != expected:
        out.append(f"sections {order} (expected {expected})")
        return
    s = {tag: data[a : a + n] for tag, (a, n) in sections.items()}
    joints, materials = _u16(s[b"JNT1"], 8), _u16(s[b"MAT3"], 8)
    shapes = _u16(s[b"SHP1"], 8)
    _check_graph(s[b"INF1"], joints, materials, shapes, out)
    arrays = _check_vtx1(s[b"VTX1"], out)
    envelopes = _check_evp1(s[b"EVP1"], joints, out)
    draws = _check_drw1(s[b"DRW1"], joints, envelopes, out)
    packets = _check_shp1(s[b"SHP1"], arrays, draws, out)
    inf1 = s[b"INF1"]
    if _u32(inf1, 0x0C) != packets:
        out.append(f"INF1 packet count {_u32(inf1, 0x0C)}, SHP1 has {packets}")
    if 9 in arrays and _u32(inf1, 0x10) > arrays[9]:
        out.append(f"INF1 position count {_u32(inf1, 0x10)} is past the array's {arrays[9]} entries")


def _check_graph(inf1: bytes, joints: int, materials: int, shapes: int, out: list[str]) -> None:
    at, depth, seen_joints, seen_shapes, material = _u32(inf1, 0x14), 0, set(), set(), -1
    while True:
        op, index = _u16(inf1, at), _u16(inf1, at + 2)
        at += 4
        if op == 0:
            break
        if op == 1:
            depth += 1
        elif op == 2:
            depth -= 1
            if depth < 0:
                out.append("INF1 closes more levels than it opens")
        elif op == 0x10:
            if index >= joints or index in seen_joints:
                out.append(f"INF1 joint node {index}")
            seen_joints.add(index)
        elif op == 0x11:
            if index >= materials:
                out.append(f"INF1 material node {index} of {materials}")
            material = index
        elif op == 0x12:
            if index >= shapes or index in seen_shapes or material < 0:
                out.append(f"INF1 shape node {index}")
            seen_shapes.add(index)
        else:
            out.append(f"INF1 node type {op:#x}")
    if depth:
        out.append(f"INF1 leaves {depth} levels open")
    if len(seen_joints) != joints or len(seen_shapes) != shapes:
        out.append(f"INF1 names {len(seen_joints)}/{joints} joints and {len(seen_shapes)}/{shapes} shapes")


def _check_vtx1(vtx1: bytes, out: list[str]) -> dict[int, int]:
    """Entries each array can hold."""
    formats = {}
    at = _u32(vtx1, 8)
    while _u32(vtx1, at) != 0xFF:
        formats[_u32(vtx1, at)] = (_u32(vtx1, at + 4), _u32(vtx1, at + 8))
        at += 16
    offsets = [_u32(vtx1, 0x0C + 4 * k) for k in range(13)]
    present = sorted((o, a) for o, a in zip(offsets, ARRAY_SLOTS, strict=True) if o)
    entries = {}
    for k, (offset, attribute) in enumerate(present):
        end = present[k + 1][0] if k + 1 < len(present) else len(vtx1)
        if offset % 32:
            out.append(f"VTX1 array {attribute} at {offset}: not 32-aligned")
        if attribute not in formats:
            out.append(f"VTX1 array {attribute} has no format")
            continue
        count, kind = formats[attribute]
        entries[attribute] = (end - offset) // _stride(attribute, count, kind)
    return entries


def _check_evp1(evp1: bytes, joints: int, out: list[str]) -> int:
    count = _u16(evp1, 8)
    counts_at, joints_at, weights_at, binds_at = (_u32(evp1, 0x0C + 4 * k) for k in range(4))
    total = 0
    binds = (len(evp1) - binds_at) // 48 if binds_at else 0
    for e in range(count):
        n = evp1[counts_at + e]
        js = struct.unpack_from(f">{n}H", evp1, joints_at + 2 * total)
        ws = struct.unpack_from(f">{n}f", evp1, weights_at + 4 * total)
        total += n
        if max(js) >= joints or max(js) >= binds:
            out.append(f"EVP1 envelope {e} names joint {max(js)} ({joints} joints, {binds} inverse binds)")
        if abs(sum(ws) - 1) > 1e-3:
            out.append(f"EVP1 envelope {e} weights sum to {sum(ws)}")
    return count


def _check_drw1(drw1: bytes, joints: int, envelopes: int, out: list[str]) -> int:
    count = _u16(drw1, 8)
    kinds = drw1[_u32(drw1, 0x0C) : _u32(drw1, 0x0C) + count]
    values = struct.unpack_from(f">{count}H", drw1, _u32(drw1, 0x10))
    for d, (kind, value) in enumerate(zip(kinds, values, strict=True)):
        if kind > 1 or value >= (envelopes if kind else joints):
            out.append(f"DRW1 entry {d}: kind {kind} value {value}")
    rigid = kinds.count(0)
    if count != rigid + 2 * envelopes or any(kinds[:rigid]):
        out.append(f"DRW1 layout: {count} entries, {rigid} rigid, {envelopes} envelopes")
    return count


def _check_shp1(shp1: bytes, arrays: dict[int, int], draws: int, out: list[str]) -> int:
    count = _u16(shp1, 8)
    entries, _, _, descriptors, slots_at, lists_at, groups_at, packets_at = (
        _u32(shp1, 0x0C + 4 * k) for k in range(8)
    )
    if lists_at % 32:
        out.append(f"SHP1 display lists at {lists_at}: not 32-aligned")
    packets = 0
    for s in range(count):
        entry = entries + 0x28 * s
        packet_count, descriptor = _u16(shp1, entry + 2), _u16(shp1, entry + 4)
        first_group, first_packet = _u16(shp1, entry + 6), _u16(shp1, entry + 8)
        packets += packet_count
        fields, at = [], descriptors + descriptor
        while _u32(shp1, at) != 0xFF:
            attribute, kind = _u32(shp1, at), _u32(shp1, at + 4)
            if kind:
                fields.append((attribute, kind))
            at += 8
        if [a for a, _ in fields] != sorted({a for a, _ in fields}):
            out.append(f"SHP1 shape {s}: attributes out of order")
        sizes = [1 if kind == 1 else kind - 1 for _, kind in fields]
        stride = sum(sizes)
        loaded = [None] * 10
        for p in range(packet_count):
            group = groups_at + 8 * (first_group + p)
            slot_count, first = _u16(shp1, group + 2), _u32(shp1, group + 4)
            if not 1 <= slot_count <= 10:
                out.append(f"SHP1 shape {s} packet {p}: {slot_count} matrix slots")
                continue
            for k in range(slot_count):
                value = _u16(shp1, slots_at + 2 * (first + k))
                if value == 0xFFFF:
                    if p == 0 or loaded[k] is None:
                        out.append(f"SHP1 shape {s} packet {p}: slot {k} keeps a matrix nothing loaded")
                elif value >= draws:
                    out.append(f"SHP1 shape {s} packet {p}: slot {k} = draw matrix {value} of {draws}")
                else:
                    loaded[k] = value
            size, offset = (
                _u32(shp1, packets_at + 8 * (first_packet + p)),
                _u32(shp1, packets_at + 8 * (first_packet + p) + 4),
            )
            if size % 32 or offset % 32:
                out.append(
                    f"SHP1 shape {s} packet {p}: display list size {size} offset {offset} not 32-byte multiples"
                )
            _check_list(
                shp1[lists_at + offset : lists_at + offset + size],
                fields,
                sizes,
                stride,
                slot_count,
                arrays,
                f"SHP1 shape {s} packet {p}",
                out,
            )
    return packets


def _check_list(block: bytes, fields, sizes, stride, slots, arrays, where, out) -> None:
    at = 0
    while at < len(block) and block[at]:
        command = block[at]
        if command & 0xF8 not in PRIMITIVES or command & 7:
            out.append(f"{where}: command {command:#x} at {at}")
            return
        n = _u16(block, at + 1)
        at += 3
        kind = command & 0xF8
        if (kind == 0x90 and n % 3) or (kind in (0x98, 0xA0) and n < 3) or (kind in (0x80, 0x88) and n % 4):
            out.append(f"{where}: primitive {kind:#x} with {n} vertices")
        if at + n * stride > len(block):
            out.append(f"{where}: primitive runs past its display list")
            return
        for v in range(n):
            field_at = at + v * stride
            for (attribute, kind_), size in zip(fields, sizes, strict=True):
                value = block[field_at] if size == 1 else _u16(block, field_at)
                field_at += size
                if attribute == 0:
                    if value % 3 or value // 3 >= slots:
                        out.append(f"{where}: PNMTXIDX {value} with {slots} slots")
                        return
                elif kind_ in (2, 3):
                    source = 10 if attribute == 25 else attribute
                    if value >= arrays.get(source, 0):
                        out.append(
                            f"{where}: attribute {attribute} index {value} past its array ({arrays.get(source, 0)})"
                        )
                        return
        at += n * stride
    if any(block[at:]):
        out.append(f"{where}: non-zero bytes after the display list's end")
