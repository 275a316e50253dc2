"""Hypothesis: damaged files fail cleanly or round-trip; generated files read back equal."""

import struct

import numpy as np
import tmrf_fixtures as fx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from retro_models.formats.errors import FormatError
from retro_models.formats.tmrf import convert, media
from retro_models.formats.tmrf import resources as res

DATA = fx.full_file()
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _is_nan(word: bytes) -> bool:
    return len(word) == 4 and np.isnan(np.frombuffer(word, ">f4")[0])


def same_but_quieted_nans(a: bytes, b: bytes) -> bool:
    """Equal, except signalling NaNs that came back quiet (the scene's float64 values quiet them)."""
    if len(a) != len(b):
        return False
    for i in np.flatnonzero(np.frombuffer(a, np.uint8) != np.frombuffer(b, np.uint8)):
        if not any(_is_nan(a[w : w + 4]) and _is_nan(b[w : w + 4]) for w in range(max(i - 3, 0), i + 1)):
            return False
    return True


def accepts(data: bytes) -> None:
    """Reading raises FormatError only; whatever is accepted writes back unchanged, also through a scene."""
    try:
        model = media.read(data, "fuzz.tmrf")
    except FormatError:
        return
    assert media.write(model) == data
    assert same_but_quieted_nans(media.write(convert.from_scene(convert.to_scene(model))), data)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, len(DATA) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_byte_changes(changes):
    data = bytearray(DATA)
    for offset, value in changes:
        data[offset] = value
    accepts(bytes(data))


@SETTINGS
@given(st.integers(0, len(DATA) - 4), st.sampled_from([0, 1, 2, 3, 0x7FFFFFFF, 0xFFFFFFFF, 12, 40]))
def test_word_changes(offset, value):
    data = bytearray(DATA)
    struct.pack_into(">I", data, offset, value)
    accepts(bytes(data))


@SETTINGS
@given(st.integers(0, len(DATA)), st.binary(min_size=1, max_size=16))
def test_insertions(offset, extra):
    accepts(DATA[:offset] + extra + DATA[offset:])


finite = st.floats(-1e6, 1e6, allow_nan=False, width=32)


@SETTINGS
@given(
    bone_count=st.integers(0, 6),
    points=hnp.arrays(np.float32, st.tuples(st.integers(1, 8), st.just(3)), elements=finite),
    triangles=st.integers(0, 5),
    frames=st.integers(0, 4),
    flags=st.integers(0, 255),
    keys=st.integers(0, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_generated_files_read_back_equal(bone_count, points, triangles, frames, flags, keys, seed):
    rng = np.random.default_rng(seed)
    b = media.Builder()
    s = b.model.strings
    bones = np.zeros(bone_count, res.BONE_DTYPE)
    bones["parent"] = [rng.integers(0, i + 1) for i in range(bone_count)]
    bones["name"] = [s.ref(f"b{i}") for i in range(bone_count)]
    bones["position"] = rng.normal(size=(bone_count, 3))
    bones["orientation"] = rng.normal(size=(bone_count, 4))
    b.add(res.SKELETON, res.Skeleton(bones), "skel")
    point_list = b.add(res.POINTS, res.PointList(points), "pts")
    if bone_count:
        counts = rng.integers(0, 3, size=3).astype(np.uint32)
        weights = np.zeros(int(counts.sum()), res.WEIGHT_DTYPE)
        weights["binding"] = rng.integers(0, bone_count, len(weights))
        weights["factor"] = rng.random(len(weights))
        blends = rng.integers(0, 3, len(points)).astype(np.uint32)
        bindings = bones["name"].astype(np.uint32)
        b.add(
            res.SKELETAL_DEFORM,
            res.SkeletalDeform(s.ref("skel"), bindings, counts, weights, blends),
            parent=point_list,
        )
    vertex_count = len(points)
    mesh = res.TriangleMesh(
        s.ref("pts"),
        rng.integers(0, len(points), vertex_count).astype(np.uint32),
        rng.integers(0, vertex_count, (triangles, 3)).astype(np.uint32),
    )
    mesh_node = b.add(res.TRIANGLE_MESH, mesh, "mesh")
    normals = rng.normal(size=(vertex_count, 3))
    coefficients = rng.integers(0, 65536, (vertex_count, 2)).astype(np.uint16)
    b.add(res.NORMALS, res.Normals(normals.astype(np.float32)), parent=mesh_node)
    b.add(res.COMPRESSED_NORMALS, res.CompressedNormals(coefficients), parent=mesh_node)
    texture = b.add(res.TEXTURE, res.Texture(s.ref("tex")), parent=mesh_node)
    b.add(
        res.TEXTURE_COORDINATES,
        res.TextureCoordinates(rng.random((vertex_count, 2)).astype(np.float32)),
        parent=texture,
    )
    high = rng.integers(0, 65536, vertex_count).astype(np.uint16)
    b.add(res.HIGH_COMPRESSED_TANGENT_VECTORS, res.HighCompressedTangentVectors(high), parent=texture)
    frame_bones = []
    for i in range(bone_count):
        bone = res.FrameBone(int(bones["name"][i]), flags=flags)
        quats = rng.normal(size=(frames, 4))
        bone.set_frames(rng.normal(size=(frames, 3)), quats / np.linalg.norm(quats, axis=1, keepdims=True))
        frame_bones.append(bone)
    b.add(res.FRAME_ANIMATION, res.FrameAnimation(s.ref("skel"), frames, np.float32(30), frame_bones), "walk")
    tracks = []
    for _ in range(bone_count):
        track = np.zeros(keys, res.KEY_DTYPE)
        track["time"] = np.sort(rng.random(keys))
        track["orientation"] = [0, 0, 0, 1]
        tracks.append(track)
    b.add(
        res.TRACK_ANIMATION,
        res.TrackAnimation(s.ref("run"), s.ref("skel"), np.float32(1), bones["name"].copy(), tracks),
        "run",
    )
    model = b.finish()
    data = media.write(model)
    back = media.read(data)
    assert back.warnings == []
    assert media.write(back) == data
    assert back.strings.texts() == model.strings.texts()
    got = {r.content.__class__: r.content for r in back.walk()}
    np.testing.assert_array_equal(got[res.Skeleton].bones, bones)
    np.testing.assert_array_equal(got[res.PointList].points, points)
    np.testing.assert_array_equal(got[res.TriangleMesh].triangles, mesh.triangles)
    np.testing.assert_array_equal(got[res.CompressedNormals].coefficients, coefficients)
    np.testing.assert_array_equal(got[res.HighCompressedTangentVectors].coefficients, high)
    for want, have in zip(frame_bones, got[res.FrameAnimation].bones, strict=True):
        assert have.flags == flags
        np.testing.assert_array_equal(have.orientations, want.orientations)
        np.testing.assert_array_equal(have.positions, want.positions)
    for want, have in zip(tracks, got[res.TrackAnimation].tracks, strict=True):
        np.testing.assert_array_equal(have, want)
    scene = convert.to_scene(back)
    assert media.write(convert.from_scene(scene)) == data
