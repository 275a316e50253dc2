"""An import split into parts (formats/parts.py): which animations each part builds."""

import pytest
from retro_models.formats.parts import Part


@pytest.mark.parametrize("count", [1, 2, 3, 5])
@pytest.mark.parametrize("total", [0, 1, 2, 7, 223])
def test_every_shared_animation_is_built_once_in_order_and_part_0_has_the_first(count, total):
    shares = [Part(k, count).built([True] * total) for k in range(count)]
    assert [place for share in shares for place in share] == list(range(total))
    assert max(map(len, shares)) - min(map(len, shares)) <= 1  # even
    if total:
        assert shares[0][0] == 0  # the animation the import plays


def test_the_others_go_to_part_0_at_their_places_for_half_a_shared_one_each():
    shared = [False, True, True, False, True, True, True]
    assert Part(0, 2).built(shared) == [0, 1, 2, 3]
    assert Part(1, 2).built(shared) == [4, 5, 6]
    # Part 0 keeps the first shared one however many others it has.
    assert [Part(k, 2).built([True, False, False, False]) for k in range(2)] == [[0, 1, 2, 3], []]


def test_part_0_may_take_more_than_its_even_share():
    shares = [Part(k, 3, 0.5).built([True] * 100) for k in range(3)]
    assert [len(share) for share in shares] == [50, 25, 25]
    assert [place for share in shares for place in share] == list(range(100))
    # Its share counts its others for half a shared one each: half of 20 shared and 10 others is 12.5,
    # 5 of it the others': 8 shared (rounded up).
    shared = [True] * 10 + [False] * 10 + [True] * 10
    assert Part(0, 2, 0.5).built(shared) == list(range(8)) + list(range(10, 20))
    assert Part(0, 2, 1.0).built([True] * 4) == [0, 1, 2, 3] and Part(1, 2, 1.0).built([True] * 4) == []


def test_a_part_outside_its_count_is_refused():
    with pytest.raises(ValueError):
        Part(2, 2)
    with pytest.raises(ValueError):
        Part(0, 2, 0.0)
