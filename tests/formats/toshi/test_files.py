"""TMD, TKL and TML readers and writers against hand-built bytes."""

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from retro_models.formats.errors import FormatError
from retro_models.formats.toshi import tkl, tmd, tml
from toshi_fixtures import (
    BIND_T,
    KEYS0,
    KEYS1,
    POSITIONS,
    ROTATIONS,
    SALT,
    STRIP,
    TEXEL_BYTES,
    VERTICES,
    enc,
    tkl_bytes,
    tmd_bytes,
    tml_bytes,
)


def test_tmd_header_and_nodes():
    model = tmd.read(tmd_bytes())
    assert model.tkl_name == "lib"
    assert model.tkl_field == b"lib\0\0\0\0\0" + bytes.fromhex("4958230088000000")
    assert model.salt == SALT
    assert model.unknown == (0x10, 0x80000001)
    assert (model.node_flags, model.animation_flags) == (0x0F, 0xF0)
    assert model.aux.tolist() == [5, -7]
    assert model.node_names() == ["pelvis", "tail"]
    assert model.nodes["parent"].tolist() == [-1, 0]
    assert model.nodes["flags"].tolist() == [0, 1]
    bind = tmd.matrices(model.nodes["bind"])
    np.testing.assert_array_equal(bind[:, :3, 3], BIND_T)  # column-major: translation in floats 12..14
    np.testing.assert_allclose(
        bind @ tmd.matrices(model.nodes["inverse_bind"]), np.tile(np.eye(4), (2, 1, 1))
    )
    np.testing.assert_array_equal(model.nodes["translation"], BIND_T)
    np.testing.assert_array_equal(model.nodes["rotation"], [[0, 0, 0, 1]] * 2)


def test_tmd_animations_share_channels():
    model = tmd.read(tmd_bytes())
    walk, idle = model.animations
    assert (walk.name, walk.a, walk.b, walk.c, walk.duration) == ("walk_lp", 1, 2, 2, 1.5)
    assert idle.name == "idle"
    assert walk.channels.tolist() == [0, 1] and idle.channels.tolist() == [1, 1]
    assert len(model.channels) == 2
    assert model.channels[0].flags == tmd.CHANNEL_TRANSLATION_ROTATION
    assert model.channels[0].keys.tolist() == KEYS0
    assert model.channels[1].flags == tmd.CHANNEL_ROTATION
    assert model.channels[1].keys.tolist() == KEYS1
    assert ("animation", 0, b"GAP!") in model.layout


def test_tmd_lods_meshes_pieces():
    model = tmd.read(tmd_bytes())
    assert model.lod_value == b"\x01\x02\x03\x04"
    (lod,) = model.lods
    assert lod.unknown == b"\xaa\xbb\xcc\xdd"
    assert lod.sphere.tolist() == [0.5, 0.5, 0.0, 2.0]
    (mesh,) = lod.meshes
    assert mesh.material == "skin_Mat" and mesh.material_field.startswith(b"skin_Mat\0junk")
    assert (mesh.total_indices, mesh.total_vertices) == (4, 3)
    (piece,) = mesh.pieces
    assert piece.vertices_required == 2
    assert piece.bbox_centre.tolist() == [0.5, 0.5, 0.0] and piece.bbox_half_extent.tolist() == [
        0.5,
        0.5,
        0.0,
    ]
    assert piece.palette.tolist() == [0, 1]
    assert piece.strip.tolist() == STRIP
    v = piece.vertices
    assert v["position"].tolist() == [list(x[0]) for x in VERTICES]
    assert v["normal"].tolist() == [list(x[1]) for x in VERTICES]
    assert v["weights"].tolist() == [list(x[2]) for x in VERTICES]
    assert v["bones"].tolist() == [list(x[3]) for x in VERTICES]
    assert v["uv"].tolist() == [list(x[4]) for x in VERTICES]
    assert model.material_names() == ["skin_Mat"]


@pytest.mark.parametrize("aux", [True, False])
def test_tmd_round_trip(aux):
    data = tmd_bytes(aux=aux)
    model = tmd.read(data)
    assert (model.aux is not None) == aux
    assert tmd.write(model) == data


def test_tmd_canonical_layout_when_blocks_change():
    model = tmd.read(tmd_bytes())
    model.channels.append(tmd.Channel(2, np.zeros(0, tmd.KEY_DTYPE)))
    model.animations[1].channels[:] = [1, 2]
    again = tmd.read(tmd.write(model))
    assert [a.channels.tolist() for a in again.animations] == [[0, 1], [1, 2]]
    assert again.node_names() == model.node_names()
    assert [k for k, _, _ in again.layout] == [
        "aux",
        "nodes",
        "table",
        "animation",
        "animation",
        "channel",
        "channel",
        "channel",
        "lod",
    ]


def test_tmd_truncated_everywhere():
    data = tmd_bytes()
    for cut in range(len(data)):
        with pytest.raises(FormatError):
            tmd.read(data[:cut])


def _patched(data, offset, fmt, *values):
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


@pytest.mark.parametrize(
    "patch, message",
    [
        ((0, "<4s", b"TMDX"), "magic"),
        ((60, "<I", 5), "scene block size"),
        ((116 + 4, "<I", 0x7FFFFFF0), "outside the file"),
        ((64, "<H", 60000), "bytes"),
        ((128 + 8 + 176 + 160, "<h", 1), "parents must precede"),
        ((572, "<I", enc(584)), "overlaps"),  # a channel inside another
    ],
)
def test_tmd_bad_input(patch, message):
    with pytest.raises(FormatError, match=message):
        tmd.read(_patched(tmd_bytes(), *patch))


def test_tmd_size_field_checked():
    with pytest.raises(FormatError, match="header says"):
        tmd.read(tmd_bytes() + b"\0")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6))
def test_tmd_fuzz(flips):
    data = bytearray(tmd_bytes())
    for pos, value in flips:
        data[pos % len(data)] = value
    try:
        model = tmd.read(bytes(data))
    except FormatError:
        return
    assert tmd.write(model) == bytes(data)


def test_tkl_fields_and_round_trip():
    data = tkl_bytes()
    model = tkl.read(data)
    assert model.name == "lib"
    np.testing.assert_array_equal(model.positions, POSITIONS)
    np.testing.assert_array_equal(model.rotations, np.float32(ROTATIONS))
    assert model.scale_count == 0 and model.scale_size == 4
    assert tkl.write(model) == data
    for cut in range(len(data)):
        with pytest.raises(FormatError):
            tkl.read(data[:cut])
    with pytest.raises(FormatError, match="element sizes"):
        tkl.read(_patched(data, 40, "<I", 16))
    with pytest.raises(FormatError, match="data length"):
        tkl.read(_patched(data, 28, "<I", 0xFFFFFFFF))


def test_tml_fields_and_round_trip():
    data = tml_bytes()
    model = tml.read(data)
    assert model.type == 0
    t1, t0 = model.textures
    assert (t1.id, t1.flags, t1.unknown1, t1.unknown2, t1.format, t1.width, t1.height) == (
        1,
        2,
        -3,
        77,
        0,
        2,
        1,
    )
    assert (t1.unknown3, t1.unknown4, t1.data) == (0xFFFF, 0x43000000, TEXEL_BYTES)
    assert t1.decode().tolist() == [[[255, 0, 0, 255], [0, 0, 255, 128]]]
    assert (t0.id, t0.format, t0.data) == (0, 9, b"\x12\x34\x56\x78")
    with pytest.raises(FormatError, match="format 9"):
        t0.decode()
    assert model.material_names() == ["a_mat", "skin_Mat"]
    assert [(m.id, m.flags, m.textures) for m in model.materials] == [(0, 0x4003, [1, 0]), (1, 0, [1])]
    assert tml.material_names(data) == ["a_mat", "skin_Mat"]
    assert tml.write(model) == data
    for cut in range(len(data)):
        with pytest.raises(FormatError):
            tml.read(data[:cut])
    with pytest.raises(FormatError, match="magic"):
        tml.read(b"TML2" + data[4:])
    with pytest.raises(FormatError):
        tml.read(_patched(data, 8, "<I", 1 << 30))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=4))
def test_tkl_tml_fuzz(flips):
    for module, source in ((tkl, tkl_bytes()), (tml, tml_bytes())):
        data = bytearray(source)
        for pos, value in flips:
            data[pos % len(data)] = value
        try:
            model = module.read(bytes(data))
        except FormatError:
            continue
        assert module.write(model) == bytes(data)


def test_sort_key_folds_to_lower_case():
    names = ["b_x", "B", "a_", "A^"]
    # Lower-case folding puts "_" (0x5F) after upper-case letters but before lower-case ones.
    assert sorted(names, key=tml.sort_key) == ["A^", "a_", "B", "b_x"]
    assert tml.sort_key("Zeta") > tml.sort_key("a_b")
