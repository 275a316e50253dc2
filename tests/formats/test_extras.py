"""The extras codec: every value a converter keeps comes back as it was, in a form JSON holds."""

import json
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from retro_models.formats import extras

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False)
    | st.text(st.characters(exclude_characters="\0"), max_size=8)
    | st.binary(max_size=16)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text("abcdef_", min_size=1), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(values)
def test_encode_then_decode_gives_the_value_back(value):
    encoded = extras.encode(value)
    json.dumps(encoded)  # JSON-safe
    assert extras.decode(json.loads(json.dumps(encoded))) == value


def test_bytes_are_base64_and_numpy_values_plain():
    encoded = extras.encode({"raw": b"\x00\xff", "array": np.arange(3, dtype=np.uint16), "n": np.int64(7)})
    assert encoded == {"raw": {extras.BYTES: "AP8="}, "array": [0, 1, 2], "n": 7}


def test_values_blender_cannot_hold_become_json():
    assert extras.encode(2**40) == {extras.JSON: "1099511627776"}
    assert extras.encode([1, "a"]) == {extras.JSON: '[1, "a"]'}
    assert extras.encode([1, 2.5]) == {extras.JSON: "[1, 2.5]"}  # ints stay ints
    assert extras.encode(None) == {extras.JSON: "null"}
    assert math.isnan(extras.decode(extras.encode([float("nan")]))[0])
