"""Compressed normals and tangents: the spec's formulas, worked by hand, and the encoders."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from retro_models.formats.tmrf import vectors


def spec_normal(a: int, b: int) -> list[float]:
    car, cbr = a * math.pi / 32768, b * math.pi / 65535
    return [math.sin(car) * math.sin(cbr), math.cos(car) * math.sin(cbr), math.cos(cbr)]


def spec_tangents(a: int, b: int, c: int) -> tuple[list[float], list[float]]:
    car, cbr, ccr = a * math.pi / 32768, b * math.pi / 65535, c * math.pi / 16384
    sa, ca, sb, cb, sc, cc = (
        math.sin(car),
        math.cos(car),
        math.sin(cbr),
        math.cos(cbr),
        math.sin(ccr),
        math.cos(ccr),
    )
    h = [-ca * sc + cb * sa * cc, sa * sc + cb * ca * cc, -sb * cc]
    v = [-ca * cc - cb * sa * sc, sa * cc - cb * ca * sc, sb * sc]
    if c > 32767:
        h = [-x for x in h]
    return h, v


def test_decode_normals_known_values():
    got = vectors.decode_normals(np.array([[0, 0], [16384, 32768], [0, 65535], [32768, 16384]], np.uint16))
    np.testing.assert_allclose(got[0], [0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(got[1], spec_normal(16384, 32768), atol=1e-15)
    np.testing.assert_allclose(got[2], [0, 0, -1], atol=1e-15)
    # A = 32768 → a = π: the normal points along −Y, 45° from the pole (B = 16384 ≈ 65535 / 4)
    np.testing.assert_allclose(got[3], spec_normal(32768, 16384), atol=1e-15)
    assert got[3][1] < 0 and abs(got[3][0]) < 1e-12


def test_decode_high_tangents_known_values():
    ab = np.array([[0, 0], [16384, 32768], [49152, 65535]], np.uint16)
    c = np.array([0, 8192, 40960], np.uint16)
    h, v = vectors.decode_high_tangents(ab, c)
    for k in range(3):
        want_h, want_v = spec_tangents(*(int(x) for x in ab[k]), int(c[k]))
        np.testing.assert_allclose(h[k], want_h, atol=1e-15)
        np.testing.assert_allclose(v[k], want_v, atol=1e-15)
    # A = B = C = 0: horizontal (0, 1, 0), vertical (−1, 0, 0)
    np.testing.assert_allclose(h[0], [0, 1, 0], atol=1e-15)
    np.testing.assert_allclose(v[0], [-1, 0, 0], atol=1e-15)


def test_high_tangent_pair_is_orthonormal_with_the_normal():
    rng = np.random.default_rng(1)
    ab = rng.integers(0, 65536, (200, 2)).astype(np.uint16)
    c = rng.integers(0, 65536, 200).astype(np.uint16)
    h, v = vectors.decode_high_tangents(ab, c)
    n = vectors.decode_normals(ab)
    np.testing.assert_allclose(np.sum(h * n, 1), 0, atol=1e-12)
    np.testing.assert_allclose(np.sum(h * v, 1), 0, atol=1e-12)
    sign = np.where(c >= 32768, -1, 1)
    np.testing.assert_allclose(np.cross(n, h) * sign[:, None], v, atol=1e-12)


def test_encode_normals_picks_the_closest_coefficients():
    rng = np.random.default_rng(2)
    normals = rng.normal(size=(300, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    coefficients = vectors.encode_normals(normals)
    error = np.sum((vectors.decode_normals(coefficients) - normals) ** 2, 1)
    # no neighbouring coefficient pair decodes closer
    for da in (-1, 0, 1):
        for db in (-1, 0, 1):
            other = coefficients.astype(np.int64) + [da, db]
            other[:, 0] %= 65536
            other[:, 1] = np.clip(other[:, 1], 0, 65535)
            assert (np.sum((vectors.decode_normals(other) - normals) ** 2, 1) >= error - 1e-18).all()


def test_encode_normals_round_trips_decoded_values():
    rng = np.random.default_rng(3)
    coefficients = rng.integers(0, 65536, (500, 2)).astype(np.uint16)
    coefficients[:, 1] = np.clip(coefficients[:, 1], 200, 65300)  # away from the poles, where A is lost
    again = vectors.encode_normals(vectors.decode_normals(coefficients).astype(np.float32))
    np.testing.assert_array_equal(again, coefficients)


def test_encode_normals_of_zero_vectors_points_up():
    assert vectors.encode_normals(np.zeros((1, 3))).tolist() == [[0, 0]]


def test_encode_high_tangents_round_trips():
    rng = np.random.default_rng(4)
    ab = rng.integers(0, 65536, (400, 2)).astype(np.uint16)
    ab[:, 1] = np.clip(ab[:, 1], 200, 65300)
    c = rng.integers(0, 65536, 400).astype(np.uint16)
    h, v = vectors.decode_high_tangents(ab, c)
    again = vectors.encode_high_tangents(ab, h.astype(np.float32), v.astype(np.float32))
    np.testing.assert_array_equal(again % 32768, c % 32768)
    np.testing.assert_array_equal(again >= 32768, c >= 32768)


def test_compressed_tangent_vertical():
    n = np.array([[0, 0, 1.0]])
    h = np.array([[1, 0, 0.0]])
    assert vectors.compressed_tangent_vertical(n, h, np.array([-2.0])).tolist() == [[0, -2, 0]]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=3, max_size=3))
def test_encode_normals_is_never_worse_than_truncation(vector):
    n = np.array([vector])
    if np.linalg.norm(n) < 1e-6:
        return
    unit = n / np.linalg.norm(n)
    coefficients = vectors.encode_normals(n)
    assert np.linalg.norm(vectors.decode_normals(coefficients) - unit) < 1e-4
