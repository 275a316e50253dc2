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


def test_the_others_go_to_part_0_at_their_places():
    shared = [False, True, True, False, True, True, True]
    assert Part(0, 2).built(shared) == [0, 1, 2, 3, 4]
    assert Part(1, 2).built(shared) == [5, 6]


def test_a_part_outside_its_count_is_refused():
    with pytest.raises(ValueError):
        Part(2, 2)
