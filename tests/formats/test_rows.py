"""Row matching (formats/rows.py) against numpy's own row sort and a brute-force search."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from retro_models.formats.rows import match_rows, unique_rows


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(0, 300),
    width=st.integers(1, 5),
    kind=st.sampled_from(["i2", ">i2", "u1", "f4", "f8"]),
)
def test_unique_rows_groups_exactly_the_equal_rows_in_order_of_first_appearance(seed, rows, width, kind):
    rng = np.random.default_rng(seed)
    values = rng.integers(-3, 3, (rows, width)).astype(kind)
    ids, first = unique_rows(values)
    _, expected = np.unique(values, axis=0, return_inverse=True)
    expected = expected.reshape(-1)
    assert len(first) == len(np.unique(expected))
    assert (ids[:, None] == ids[None, :]).tolist() == (expected[:, None] == expected[None, :]).tolist()
    assert (np.diff(first) > 0).all() and (first[ids] <= np.arange(rows)).all()


def test_unique_rows_takes_minus_zero_for_zero():
    ids, _ = unique_rows(np.array([[0.0, 1.0], [-0.0, 1.0]]))
    assert ids.tolist() == [0, 0]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), tolerance=st.sampled_from([0.0, 1e-3, 0.25]))
def test_match_rows_finds_a_row_within_the_tolerance_whenever_there_is_one(seed, tolerance):
    rng = np.random.default_rng(seed)
    existing = np.round(rng.normal(0, 2, (200, 3)), 2)
    wanted = np.concatenate(
        [
            existing[rng.integers(0, 200, 50)] + rng.uniform(-1, 1, (50, 3)) * tolerance * 0.999,
            rng.normal(0, 2, (50, 3)),
        ]
    )
    found = match_rows(existing, wanted, tolerance)
    close = (np.abs(existing[None] - wanted[:, None]) <= tolerance).all(axis=2)
    assert (found >= 0).tolist() == close.any(axis=1).tolist()
    hit = found >= 0
    assert close[np.flatnonzero(hit), found[hit]].all()
