"""The TMRF container and every resource type, against the hand-built fixture."""

import math
import struct

import numpy as np
import pytest
import tmrf_fixtures as fx
from retro_models.formats.errors import FormatError
from retro_models.formats.tmrf import media
from retro_models.formats.tmrf import resources as res


@pytest.fixture(scope="module")
def data() -> bytes:
    return fx.full_file()


@pytest.fixture(scope="module")
def model(data) -> media.MediaFile:
    return media.read(data, "full.tmdl")


def by_type(model, type_name):
    return [r for r in model.walk() if model.type_name(r) == type_name]


def test_header_and_strings(model):
    assert model.version == 1
    assert model.strings.texts() == fx.STRINGS
    pool, spans = fx.string_section()
    assert model.strings.pool == pool
    assert model.strings.spans.tolist() == [list(s) for s in spans]
    # "Bone" and "Weight" reuse the bytes of longer strings.
    assert model.strings.spans[fx.ident("Bone")][1] == model.strings.spans[fx.ident("BoneBinding")][1]
    assert model.strings.name(0) is None and model.strings.name(fx.ref("root")) == "root"


def test_tree_in_file_order(model):
    types = [model.type_name(r) for r in model.walk()]
    assert types == [
        "TableOfContents",
        "Hints",
        "AX3Skeleton",
        "3DPoints",
        "AX3SkeletalDeform",
        "TriangleMesh",
        "Normals",
        "CompressedNormals",
        "Texture",
        "TextureCoordinates",
        "TangentVectors",
        "CompressedTangentVectors",
        "HighCompressedTangentVectors",
        "AX3FrameAnimation",
        "AX3TrackAnimation",
        "TMatVariants",
        "Mystery",
    ]
    assert [len(r.children) for r in model.resources] == [0, 0, 0, 1, 3, 0, 0, 0, 0]


def test_toc_names_and_offsets(model, data):
    toc = model.resources[0].content
    assert toc.resources.tolist() == list(range(1, 17))
    names = model.names()
    assert names[2] == ("skel", "Hints") and names[1] == ("Hints", None) and names[16] == (None, "Hints")
    assert model.find("mesh").content.point_list == fx.ref("pts")
    # the offsets stored in the fixture are the headers the writer lays out again
    stored = np.frombuffer(data, ">u4", 16 * 4, fx.header_size() + 16).reshape(16, 4)[:, 3]
    assert [s for s, _ in media.resource_spans(model)][1:] == stored.tolist()


def test_warnings_only_for_the_unknown_type(model):
    assert len(model.warnings) == 1 and "Mystery" in model.warnings[0]
    assert by_type(model, "Mystery")[0].content.data == b"\x01\x02\x03"
    assert by_type(model, "TMatVariants")[0].content.data == b"\x00\x00\x00\x02opaque"


def test_hints(model):
    hints = model.resources[1].content
    got = [
        (model.strings.text(int(t)), model.strings.text(int(d)), int(c))
        for t, d, c in zip(hints.types, hints.data_types, hints.counts, strict=True)
    ]
    assert got == fx.HINTS
    computed = media.computed_hints(model)[1]
    assert {k: v for k, v in computed.items()} == {(t, d): c for t, d, c in fx.HINTS}


def test_skeleton(model):
    bones = by_type(model, "AX3Skeleton")[0].content.bones
    assert bones["parent"].tolist() == [0, 1]
    assert bones["name"].tolist() == [fx.ref("root"), fx.ref("arm")]
    assert bones["position"].tolist() == [[1, 2, 3], [0, 1.5, 0]]
    np.testing.assert_array_equal(
        bones["orientation"], np.array([[0, 0, 0, 1], [0, 0, 0.6, 0.8]], np.float32)
    )


def test_points_and_deform(model):
    points = by_type(model, "3DPoints")[0]
    assert points.content.points.tolist() == [[0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 5, 5]]
    deform = points.children[0].content
    assert deform.skeleton == fx.ref("skel")
    assert deform.bindings.tolist() == [fx.ref("root"), fx.ref("arm")]
    assert deform.weight_counts.tolist() == [1, 2]
    assert deform.weights["binding"].tolist() == [0, 0, 1]
    assert deform.weights["factor"].tolist() == [1.0, 0.25, 0.75]
    assert deform.starts.tolist() == [0, 1]
    assert deform.point_blends.tolist() == [0, 1, 1, 0]


def test_mesh_and_subresources(model):
    mesh = by_type(model, "TriangleMesh")[0]
    assert mesh.content.point_list == fx.ref("pts")
    assert mesh.content.vertex_points.tolist() == [0, 1, 2]
    assert mesh.content.triangles.tolist() == [[0, 1, 2]]
    normals, compressed, texture = (c.content for c in mesh.children)
    assert normals.normals.tolist() == [[0, 0, 1]] * 3
    assert compressed.coefficients.tolist() == [list(ab) for ab in fx.COMPRESSED_AB]
    assert texture.texture == fx.ref("wood")
    coordinates, tangents, compressed_tangents, high = (c.content for c in mesh.children[2].children)
    assert coordinates.coordinates.tolist() == [[0, 0], [1, 0], [0, 1]]
    assert tangents.horizontal.tolist() == [[1, 0, 0]] * 3 and tangents.vertical.tolist() == [[0, 1, 0]] * 3
    assert compressed_tangents.horizontal.tolist() == [[1, 0, 0]] * 3
    assert compressed_tangents.multipliers.tolist() == [-1] * 3
    assert high.coefficients.tolist() == list(fx.HIGH_C)


def test_frame_animation(model):
    anim = by_type(model, "AX3FrameAnimation")[0].content
    assert (anim.skeleton, anim.frame_count, float(anim.fps)) == (fx.ref("skel"), 2, 24.0)
    root, arm = anim.bones
    assert root.bone == fx.ref("root") and root.flags == 0
    assert root.positions.tolist() == [[1, 2, 3], [1, 2, 4]]
    np.testing.assert_array_equal(root.orientations, np.array([[0, 0, 0, 1], [0, 0.6, 0, 0.8]], np.float32))
    assert arm.flags == 1 | 2 | 4 | 8 | 16 | 64 | 128
    assert arm.positions.shape == (2, 0)
    assert arm.orientations.dtype == np.int16 and arm.orientations.tolist() == [[16384], [-32767]]
    positions, orientations = arm.decode()
    assert positions.tolist() == [[0, 1.5, 0]] * 2
    z = 16384 / 32767
    base = np.float32(0.0)  # orient x, y copied from the base pose (0, 0)
    np.testing.assert_allclose(orientations[0], [base, base, z, math.sqrt(1 - z * z)], rtol=0, atol=1e-12)
    np.testing.assert_allclose(orientations[1], [0, 0, -1, 0], atol=1e-12)


def test_track_animation(model):
    anim = by_type(model, "AX3TrackAnimation")[0].content
    assert (anim.name, anim.skeleton, float(anim.length)) == (fx.ref("run"), fx.ref("skel"), 1.5)
    assert anim.bindings.tolist() == [fx.ref("root")]
    (track,) = anim.tracks
    assert track["time"].tolist() == [0, 1.5]
    assert track["position"].tolist() == [[0, 0, 0], [1, 0, 0]]
    assert math.copysign(1, track["position"][0, 0]) == -1  # −0.0 keeps its sign
    assert track["orientation"].tolist() == [[0, 0, 0, 1], [0, 0, 1, 0]]


def test_round_trip_is_exact(data, model):
    assert media.write(model) == data


def test_tail_bytes_are_kept():
    resources = fx.body()
    resources[1].data += b"\xaa\xbb"
    data = fx.assemble(resources)
    model = media.read(data)
    assert model.resources[2].tail == b"\xaa\xbb"
    assert any("2 bytes after" in w for w in model.warnings)
    assert media.write(model) == data


def test_synonym_type_name():
    strings = [*fx.STRINGS, "TangentVectorsCompressedHigh"]
    resources = fx.body()
    resources[3].children[2].children[3].type = len(fx.STRINGS)
    model = media.read(fx.assemble(resources, strings))
    high = model.walk()[12]
    assert isinstance(high.content, res.HighCompressedTangentVectors)
    assert model.type_name(high) == "HighCompressedTangentVectors"


def test_hint_mismatch_warns_and_round_trips():
    wrong = [(t, d, c + 1 if d == "Weight" else c) for t, d, c in fx.HINTS[:-1]] + [
        ("TriangleMesh", "unused", 9)
    ]
    data = fx.assemble(fx.body(wrong))
    model = media.read(data)
    text = " | ".join(model.warnings)
    assert "AX3SkeletalDeform/Weight says 4 but the bound resources hold 3" in text
    assert "TriangleMesh/unused = 9 cannot be checked" in text
    assert "no hint for AX3TrackAnimation/Key" in text
    assert media.write(model) == data
    media.refresh_hints(model)
    hints = model.resources[1].content
    assert hints.counts.tolist()[:13] == [c for *_, c in fx.HINTS[:-1]] + [9]
    assert model.strings.text(int(hints.data_types[-1])) == "Key"


def test_misplaced_subresource_is_kept_as_bytes():
    resources = fx.body()
    resources.append(fx.Res(fx.ident("Normals"), fx.f32(0, 0, 1)))
    data = fx.assemble(resources)
    model = media.read(data)
    assert isinstance(model.resources[-1].content, res.Opaque)
    assert any("not under the resource" in w for w in model.warnings)
    assert media.write(model) == data


def test_builder_from_scratch_reads_back_equal():
    b = media.Builder()
    s = b.model.strings
    bones = np.zeros(1, res.BONE_DTYPE)
    bones["name"] = s.ref("solo")
    bones["orientation"] = [0, 0, 0, 1]
    b.add(res.SKELETON, res.Skeleton(bones), "skeleton")
    pl = b.add(res.POINTS, res.PointList(np.eye(3, dtype=np.float32)), "points")
    mesh = b.add(
        res.TRIANGLE_MESH,
        res.TriangleMesh(s.ref("points"), np.array([2, 1, 0], np.uint32), np.array([[0, 1, 2]], np.uint32)),
        "tri",
    )
    b.add(res.NORMALS, res.Normals(np.eye(3, dtype=np.float32)), parent=mesh)
    model = b.finish()
    data = media.write(model)
    back = media.read(data)
    assert back.warnings == []
    assert media.write(back) == data
    assert [back.type_name(r) for r in back.walk()] == [
        "TableOfContents",
        "Hints",
        "AX3Skeleton",
        "3DPoints",
        "TriangleMesh",
        "Normals",
    ]
    assert back.walk()[3].content.points.tolist() == np.eye(3).tolist() and pl is not None
    assert back.names() == {
        1: ("Hints", None),
        2: ("skeleton", "Hints"),
        3: ("points", "Hints"),
        4: ("tri", "Hints"),
        5: (None, "Hints"),
    }
    counts = back.resources[1].content.counts.tolist()
    assert counts == [1, 3, 3, 1]  # Bone, Point, Vertex, Triangle


def test_new_strings_share_pool_bytes():
    table = media.StringTable()
    assert table.ident("BoneBinding") == 0
    assert table.ident("Bone") == 1 and table.pool == b"BoneBinding"
    assert table.ident("Bone") == 1
    assert table.ref(None) == 0 and table.ref("Binding") == 3
    assert table.spans.tolist() == [[11, 0], [4, 0], [7, 4]]


def test_strings_are_found_after_the_table_is_replaced():
    """The name index follows a pool and spans set from outside, and a repeated string keeps its first index."""
    table = media.StringTable(b"AB", np.array([[1, 0], [1, 1], [1, 0]], np.uint32))
    assert table.ident("A") == 0 and table.ident("B") == 1
    table.pool, table.spans = b"BA", np.array([[1, 1], [1, 0]], np.uint32)
    assert table.ident("A") == 0 and table.ident("B") == 1 and table.ident("C") == 2


# -- bad input -------------------------------------------------------------------


def test_every_truncation_is_a_format_error(data):
    for size in range(len(data)):
        with pytest.raises(FormatError):
            media.read(data[:size], "cut.tmrf")


def test_wrong_magic(data):
    with pytest.raises(FormatError, match="TMRF magic"):
        media.read(b"TDPMediX" + data[8:])


def patch(data: bytes, offset: int, fmt: str, *values) -> bytes:
    out = bytearray(data)
    struct.pack_into(">" + fmt, out, offset, *values)
    return bytes(out)


def spans(data):
    return media.resource_spans(media.read(data))


def test_string_outside_the_pool(data):
    start = 20 + len(fx.string_section()[0])
    with pytest.raises(FormatError, match="runs past the"):
        media.read(patch(data, start + 8 * 3, "I", 10_000))


def test_broken_string_indices(data):
    skeleton = spans(data)[2][0]
    with pytest.raises(FormatError, match="bone name refers to string 999"):
        media.read(patch(data, skeleton + 12 + 4 + 4, "I", 999))
    with pytest.raises(FormatError, match="resource type 500"):
        media.read(patch(data, skeleton, "I", 500))
    hints = spans(data)[1][0]
    with pytest.raises(FormatError, match="hint type"):
        media.read(patch(data, hints + 16, "I", len(fx.STRINGS)))


def test_parent_cycles_and_forward_parents(data):
    skeleton = spans(data)[2][0]
    with pytest.raises(FormatError, match="bone 0 has parent 1"):
        media.read(patch(data, skeleton + 16, "I", 1))  # the root names itself
    with pytest.raises(FormatError, match="bone 1 has parent 2"):
        media.read(patch(data, skeleton + 16 + 36, "I", 2))


def test_subresources_past_their_parent(data):
    points, size = spans(data)[3]
    deform, deform_size = spans(data)[4]
    with pytest.raises(FormatError, match="runs past the end of the resource"):
        media.read(patch(data, deform + 4, "I", deform_size + 4))
    with pytest.raises(FormatError, match="first subresource offset"):
        media.read(patch(data, points + 8, "I", size + 12))
    with pytest.raises(FormatError, match="first subresource offset"):
        media.read(patch(data, points + 8, "I", 4))


def test_counts_beyond_the_file(data):
    layout = spans(data)
    for index, field_offset in ((2, 12), (3, 12), (4, 12 + 8), (5, 12 + 4), (13, 12 + 4), (14, 12 + 12)):
        with pytest.raises(FormatError):
            media.read(patch(data, layout[index][0] + field_offset, "I", 0xFFFFFFFF))
    deform = layout[4][0]
    with pytest.raises(FormatError, match="weight blend 1 has"):
        media.read(patch(data, deform + 12 + 20 + 12, "I", 0x10000000))
    with pytest.raises(FormatError, match="string definitions"):
        media.read(patch(data, 16, "I", 0xFFFFFFF))


def test_indices_beyond_their_lists(data):
    layout = spans(data)
    deform, mesh = layout[4][0], layout[5][0]
    with pytest.raises(FormatError, match="weight uses bone binding 7"):
        media.read(patch(data, deform + 12 + 20 + 4, "I", 7))
    with pytest.raises(FormatError, match="point uses weight blend 5"):
        media.read(patch(data, deform + 12 + 20 + 32, "I", 5))
    with pytest.raises(FormatError, match="triangle 0 uses a vertex"):
        media.read(patch(data, mesh + 12 + 12 + 12, "I", 3))
    with pytest.raises(FormatError, match="uses point 9"):
        media.read(patch(data, mesh + 12 + 12, "I", 9))


def test_toc_entry_not_at_a_header(data):
    with pytest.raises(FormatError, match="not a resource header"):
        media.read(patch(data, fx.header_size() + 16 + 12, "I", 3))


def test_the_first_resource_must_be_the_toc(data):
    with pytest.raises(FormatError, match="table of contents"):
        media.read(data[: fx.header_size()])
    with pytest.raises(FormatError, match="table of contents"):
        media.read(patch(data, fx.header_size(), "I", fx.ident("Hints")))


def test_deep_nesting_is_refused():
    inner = b""
    for _ in range(100):
        inner = struct.pack(">3I", 0, len(inner) + 4, 16 if inner else 0) + b"\0\0\0\0" + inner
    pool, spans_ = fx.string_section(["Texture"], {})
    data = b"TDPMedia" + struct.pack(">3I", 1, len(pool), 1) + pool + struct.pack(">2I", *spans_[0]) + inner
    with pytest.raises(FormatError, match="nested deeper"):
        media.read(data)


def test_keys_out_of_order_warn():
    resources = fx.body()
    track = resources[5]
    track.data = track.data.replace(fx.f32(1.5, 1, 0, 0), fx.f32(0.0, 1, 0, 0))
    model = media.read(fx.assemble(resources))
    assert "track 0 of animation 'run': keys out of order" in model.warnings
