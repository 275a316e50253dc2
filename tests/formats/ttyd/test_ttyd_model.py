"""The TTYD model reader/writer against a file built byte by byte, plus hostile variants."""

import struct

import numpy as np
import pytest
import ttyd_fixtures as F
from hypothesis import given, settings
from hypothesis import strategies as st
from retro_models.formats.binary import with_endian
from retro_models.formats.errors import FormatError
from retro_models.formats.ttyd import model as fmt


@pytest.fixture(scope="module")
def data() -> bytes:
    return F.build()


@pytest.fixture(scope="module")
def model(data) -> fmt.Model:
    return fmt.read(data, "c_test")


def big_endian(table: np.ndarray) -> bytes:
    return np.ascontiguousarray(table, with_endian(table.dtype, ">")).tobytes()


def assert_models_equal(a: fmt.Model, b: fmt.Model) -> None:
    for field in ("name", "texture_name", "date", "flags", "radius", "height"):
        assert getattr(a.header, field) == getattr(b.header, field)
    np.testing.assert_array_equal(a.header.bbox_min, b.header.bbox_min)
    np.testing.assert_array_equal(a.header.bbox_max, b.header.bbox_max)
    for name, _, _ in fmt.BLOCKS:
        assert big_endian(a.block(name)) == big_endian(b.block(name)), name
    assert [x.name for x in a.animations] == [x.name for x in b.animations]
    for x, y in zip(a.animations, b.animations, strict=True):
        assert (x.data is None) == (y.data is None)
        if x.data is not None:
            for table, _ in fmt.ANIMATION_TABLES:
                assert big_endian(getattr(x.data, table)) == big_endian(getattr(y.data, table)), table
            np.testing.assert_array_equal(x.data.bbox, y.data.bbox)


def test_header(model):
    h = model.header
    assert (h.name, h.texture_name, h.date) == (b"c_test", b"c_test_tex", b"2004/07/01 12:00:00")
    assert (h.flags, h.radius, h.height) == (5, 30, 40)
    np.testing.assert_array_equal(h.bbox_min, [-0.5, 0.0, -0.5])
    np.testing.assert_array_equal(h.bbox_max, [1.5, 3.0, 0.5])


def test_shape_and_geometry_tables(model):
    shape = model.shapes[0]
    assert fmt.text(shape["name"]) == "body"
    assert (shape["position_first"], shape["position_count"]) == (0, 4)
    assert (shape["normal_count"], shape["color_count"]) == (1, 1)
    assert shape["texcoord_ranges"].tolist() == [[0, 4]] + [[0, 0]] * 7
    assert (shape["subshape_first"], shape["subshape_count"], shape["display_mode"], shape["cull_mode"]) == (
        0,
        1,
        1,
        3,
    )
    assert model.polygons.tolist() == [(0, 4)]
    np.testing.assert_array_equal(model.positions, F.POSITIONS)
    np.testing.assert_array_equal(model.normals, F.NORMALS)
    np.testing.assert_array_equal(model.colors, F.COLORS)
    np.testing.assert_array_equal(model.texcoords, F.TEXCOORDS)
    assert model.position_indices.tolist() == [0, 1, 2, 3]
    assert model.normal_indices.tolist() == [0, 0, 0, 0]
    assert model.texcoord_indices[0].tolist() == [0, 1, 2, 3]
    assert all(len(t) == 0 for t in model.texcoord_indices[1:])


def test_material_tables(model):
    sub = model.subshapes[0]
    assert (sub["texture_count"], sub["unknown_04"], sub["tev_mode"], sub["unknown_0c"]) == (1, 7, 0, 9)
    assert sub["samplers"].tolist() == [0, -1, -1, -1, -1, -1, -1, -1]
    assert (sub["polygon_first"], sub["polygon_count"]) == (0, 1)
    transform = model.texcoord_transforms[0]
    assert transform["frame_offset"] == 0
    assert transform["translate"].tolist() == list(F.TRANSLATE)
    assert transform["scale"].tolist() == [1.0, 1.0] and transform["rotate"] == 0.0
    assert model.samplers.tolist() == [(0, 3)]
    assert [fmt.text(t["name"]) for t in model.textures] == ["tex_a", "tex_b"]
    assert model.textures["tpl_index"].tolist() == [0, 1]


def test_groups_and_nodes(model):
    assert [fmt.text(g["name"]) for g in model.groups] == ["body", "root"]
    assert model.groups[["next", "child", "shape", "visibility", "node", "compensate"]].tolist() == [
        (-1, -1, 0, 1, 24, 0),
        (-1, 0, -1, 0, 0, 0),
    ]
    np.testing.assert_array_equal(model.node_floats, F.ROOT_NODE + F.BODY_NODE)
    assert model.visibility.tolist() == [1, 1]
    assert fmt.group_parents(model.groups).tolist() == [1, -1]


def test_animations(model):
    walk, idle = model.animations
    assert (walk.name, idle.name, idle.data) == (b"walk", b"idle", None)
    anim = walk.data
    assert (anim.loop, anim.start, anim.end) == (True, F.START, F.END)
    assert anim.keyframes["time"].tolist() == list(F.KEY_TIMES)
    assert anim.keyframes[1].tolist()[1:] == (0, 2, 0, 0, 0, 1, 0, 1, 0, 2)
    assert anim.position_deltas["step"].tolist() == [1, 1]
    assert anim.position_deltas["delta"].tolist() == [[16, 0, 0], [0, -8, 0]]
    assert anim.texture_deltas[0]["frame_step"] == 1 and anim.texture_deltas[0]["translate"].tolist() == [
        0.5,
        0.0,
    ]
    assert anim.visibility_deltas.tolist() == [(1, -1)]
    assert anim.node_deltas.tolist() == [(25, 32, 45, 0), (8, 80, 0, 90)]
    assert anim.unknown_records["raw"].tolist() == [list(range(1, 9))]
    assert anim.bbox.tolist() == [-1, 0, -1, 1, 2, 1]


def test_running_indices(model):
    anim = model.animations[0].data
    keyframe, index, entries = fmt.running_indices(anim.keyframes, "node", anim.node_deltas["step"])
    assert keyframe.tolist() == [1, 1] and index.tolist() == [25, 33] and entries.tolist() == [0, 1]


def test_round_trip_keeps_padding(data, model):
    assert fmt.write(model) == data
    assert (656, F.GAP) in model.layout.fill


def test_packed_layout_when_sizes_change(model):
    changed = fmt.read(fmt.write(model))
    changed.positions = np.concatenate([changed.positions, [[9.0, 9.0, 9.0]]]).astype(np.float32)
    out = fmt.write(changed)
    again = fmt.read(out)
    assert_models_equal(again, changed)
    assert fmt.write(again) == out
    counts, offsets = F.offsets_of(out)
    assert offsets[0] == fmt.HEADER_SIZE and all(o % 4 == 0 for o in offsets)


def test_model_from_scratch_reads_back_equal():
    m = fmt.Model()
    m.header.name, m.header.texture_name = b"scratch", b"scratch_tex"
    m.positions = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    m.position_indices = np.array([0, 1, 2], np.uint32)
    m.normal_indices = m.color_indices = np.zeros(3, np.uint32)
    m.polygons = np.array([(0, 3)], fmt.POLYGON_DTYPE)
    m.subshapes = np.zeros(1, fmt.SUBSHAPE_DTYPE)
    m.subshapes["polygon_count"] = 1
    m.subshapes["samplers"] = -1
    m.shapes = np.zeros(1, fmt.SHAPE_DTYPE)
    m.shapes[0]["name"], m.shapes[0]["position_count"], m.shapes[0]["subshape_count"] = b"tri", 3, 1
    m.visibility = np.ones(1, np.uint8)
    m.node_floats = np.array([0, 0, 0, 1, 1, 1] + [0] * 18, np.float32)
    m.groups = np.array([(b"root", -1, -1, 0, 0, 0, 0)], fmt.GROUP_DTYPE)
    anim = fmt.AnimationData()
    anim.base = np.array([(0, 0.0, 30.0)], fmt.BASE_DTYPE)
    anim.keyframes = np.zeros(1, fmt.KEYFRAME_DTYPE)
    m.animations = [fmt.Animation(b"stand", anim), fmt.Animation(b"none", None)]
    out = fmt.write(m)
    back = fmt.read(out)
    assert_models_equal(back, m)
    assert fmt.write(back) == out


def test_low_16_bits_of_indices(data):
    model = fmt.read(data)
    model.position_indices = model.position_indices | np.uint32(0x00050000)
    corners = fmt.subshape_corner_indices(model, model.shapes[0], model.subshapes[0])
    assert corners["position"].tolist() == [0, 1, 2, 3]


def test_fan_triangles():
    assert fmt.fan_triangles([4, 3, 2]).tolist() == [[0, 1, 2], [0, 2, 3], [4, 5, 6]]


# -- bad input ----------------------------------------------------------------------


def test_every_truncation_is_a_format_error(data):
    for cut in range(len(data)):
        with pytest.raises(FormatError):
            fmt.read(data[:cut], "cut")


def patched(data: bytes, offset: int, fmt_: str, *values) -> bytes:
    out = bytearray(data)
    struct.pack_into(">" + fmt_, out, offset, *values)
    return bytes(out)


@pytest.mark.parametrize("block", range(fmt.BLOCK_COUNT))
def test_offsets_outside_the_file(data, block):
    with pytest.raises(FormatError, match="outside the file|past the end|expected"):
        fmt.read(patched(data, 0x14C + 4 * block, "I", len(data) + 4), "bad")


@pytest.mark.parametrize("block", range(fmt.BLOCK_COUNT))
def test_huge_counts(data, block):
    with pytest.raises(FormatError):
        fmt.read(patched(data, 0xE8 + 4 * block, "I", 0xFFFFFFFF), "huge")


def animation_at(data: bytes) -> int:
    counts, offsets = F.offsets_of(data)
    return struct.unpack_from(">I", data, offsets[24] + 0x3C)[0]


def test_animation_offsets_outside_the_file(data):
    counts, offsets = F.offsets_of(data)
    with pytest.raises(FormatError):
        fmt.read(patched(data, offsets[24] + 0x3C, "I", len(data) - 8), "bad")
    start = animation_at(data)
    for table in range(8):
        with pytest.raises(FormatError):
            fmt.read(patched(data, start + 0x24 + 4 * table, "I", 0x7FFFFFF0), "bad")
        with pytest.raises(FormatError):
            fmt.read(patched(data, start + 0x04 + 4 * table, "I", 0x10000000), "bad")


def group_offset(data: bytes, g: int, field: int) -> int:
    counts, offsets = F.offsets_of(data)
    return offsets[23] + g * fmt.GROUP_DTYPE.itemsize + field


def test_group_cycles_and_bad_links(data):
    # root's child list includes the root itself: body.next = root
    with pytest.raises(FormatError, match="linked twice|ancestor"):
        fmt.read(patched(data, group_offset(data, 0, 0x40), "i", 1), "cycle")
    # body is its own child
    with pytest.raises(FormatError, match="linked twice|ancestor"):
        fmt.read(patched(data, group_offset(data, 0, 0x44), "i", 0), "cycle")
    with pytest.raises(FormatError, match="link outside"):
        fmt.read(patched(data, group_offset(data, 0, 0x44), "i", 7), "link")
    with pytest.raises(FormatError, match="node index"):
        fmt.read(patched(data, group_offset(data, 0, 0x50), "i", 40), "node")
    with pytest.raises(FormatError, match="shape index"):
        fmt.read(patched(data, group_offset(data, 0, 0x48), "i", 3), "shape")


def test_group_errors_name_the_offset_of_the_bad_field(data):
    cases = [
        (0x44, 7, "child link"),
        (0x50, 40, "node index"),
        (0x48, 3, "shape index"),
        (0x4C, 9, "visibility"),
    ]
    for field, value, problem in cases:
        with pytest.raises(FormatError, match=problem) as error:
            fmt.read(patched(data, group_offset(data, 0, field), "i", value), "c_test")
        assert (error.value.filename, error.value.offset) == ("c_test", group_offset(data, 0, field))


def test_bad_geometry_references(data):
    counts, offsets = F.offsets_of(data)
    with pytest.raises(FormatError, match="positions"):
        fmt.read(patched(data, offsets[0] + 0x44, "I", 5), "pool")
    with pytest.raises(FormatError, match="exceeds its pool"):
        fmt.read(patched(data, offsets[3] + 8, "I", 4), "index")
    with pytest.raises(FormatError, match="run past the position indices"):
        fmt.read(patched(data, offsets[1] + 4, "I", 5), "fan")
    with pytest.raises(FormatError, match="outside its array"):  # normal indices shorter than the fan
        fmt.read(patched(data, 0xFC, "I", 3), "normals")
    with pytest.raises(FormatError, match="sampler"):
        fmt.read(patched(data, offsets[20] + 0x10, "i", 1), "sampler")
    with pytest.raises(FormatError, match="more than 8"):
        fmt.read(patched(data, offsets[20], "I", 9), "textures")


def test_bad_animation_indices(data):
    start = animation_at(data)
    node_table = start + struct.unpack_from(">I", data, start + 0x3C)[0]
    with pytest.raises(FormatError, match="node delta index"):
        fmt.read(patched(data, node_table + 4, "B", 200), "index")
    keyframes = start + struct.unpack_from(">I", data, start + 0x28)[0]
    with pytest.raises(FormatError, match="outside their table"):
        fmt.read(patched(data, keyframes + 0x2C + 0x08, "I", 3), "range")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fuzzed_bytes_read_or_fail_cleanly(data, fuzz):
    mutated = bytearray(data)
    for _ in range(fuzz.draw(st.integers(1, 8))):
        position = fuzz.draw(st.integers(0, len(mutated) - 1))
        mutated[position] = fuzz.draw(st.integers(0, 255))
    try:
        model = fmt.read(bytes(mutated), "fuzz")
    except FormatError:
        return
    assert fmt.write(model) == bytes(mutated)
