"""Triangle strips: decoding, stripifying and splitting keep every triangle and its winding."""

import numpy as np
from retro_models.formats.toshi import strips


def _sorted(tris):
    c = strips.canonical(tris)
    return c[np.lexsort(c.T[::-1])]


def test_decode_alternates_winding_and_drops_degenerates():
    assert strips.to_triangles([0, 1, 2, 3, 4]).tolist() == [[0, 1, 2], [2, 1, 3], [2, 3, 4]]
    assert strips.to_triangles([0, 1, 2, 2, 5, 5, 6, 7]).tolist() == [[0, 1, 2], [6, 5, 7]]
    assert strips.to_triangles([3, 4]).shape == (0, 3)


def test_strips_one_after_another_decode_each_on_its_own():
    rng = np.random.default_rng(5)
    for _ in range(50):
        pieces = [rng.integers(0, 6, rng.choice([0, 1, 2, 3, 4, 7, 10])) for _ in range(rng.integers(1, 6))]
        each = [strips.to_triangles(p) for p in pieces]
        together = strips.to_triangles(np.concatenate(pieces), [len(p) for p in pieces])
        np.testing.assert_array_equal(together, np.concatenate(each))


def test_stripify_keeps_triangles_and_winding():
    rng = np.random.default_rng(3)
    n = 30
    i, j = np.mgrid[0:n, 0:n]
    a = (i * (n + 1) + j).ravel()
    grid = np.concatenate([np.stack([a, a + 1, a + n + 1], 1), np.stack([a + 1, a + n + 2, a + n + 1], 1)])
    for tris in (grid[rng.permutation(len(grid))], rng.integers(0, 40, (500, 3)), grid[:1]):
        strip = strips.stripify(tris)
        keep = (tris[:, 0] != tris[:, 1]) & (tris[:, 1] != tris[:, 2]) & (tris[:, 0] != tris[:, 2])
        np.testing.assert_array_equal(_sorted(strips.to_triangles(strip)), _sorted(tris[keep]))
    assert len(strips.stripify(grid)) < 3.6 * len(grid)  # edge-sharing pairs are joined


def test_split_overlaps_two_indices_and_keeps_parity():
    strip = np.arange(20001) % 977  # long strip; odd-positioned triangles must keep their flipped winding
    pieces = strips.split(strip, 7500)
    assert max(len(p) for p in pieces) <= 7500
    for previous, piece in zip(pieces, pieces[1:], strict=False):
        np.testing.assert_array_equal(piece[:2], previous[-2:])
    whole = strips.to_triangles(strip)
    parts = np.concatenate([strips.to_triangles(p) for p in pieces])
    np.testing.assert_array_equal(parts, whole)  # same triangles, same order, same winding
    odd = strips.split(strip, 7501)
    np.testing.assert_array_equal(np.concatenate([strips.to_triangles(p) for p in odd]), whole)
    assert len(strips.split(np.arange(10), 7500)) == 1
