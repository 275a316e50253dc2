"""Extras through Blender's ID properties: what a converter keeps is what export gets back."""

import bpy
from hypothesis import given, settings
from hypothesis import strategies as st
from retro_models.operators.blender import props

scalars = (
    st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False)
    | st.text(st.characters(min_codepoint=32, max_codepoint=0x2FFF), max_size=8)
    | st.binary(max_size=16)
    | st.none()
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text("abcdef_", min_size=1), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text("abcdef_", min_size=1), values, min_size=1, max_size=4))
def test_extras_survive_id_properties(addon, value):
    holder = bpy.data.objects.get("extras holder") or bpy.data.objects.new("extras holder", None)
    holder.pop(props.EXTRAS, None)
    props.set_extras(holder, value)
    assert props.get_extras(holder) == value


def test_top_level_bytes_are_held_raw_and_base64_still_reads(addon):
    """Bytes at the top of the extras are a bytes property (no base64 to write or read); extras saved by
    earlier versions, their bytes in the codec's base64 form, still read."""
    holder = bpy.data.objects.get("extras holder") or bpy.data.objects.new("extras holder", None)
    extras = {"strips": b"\x01\x00\x02\x00", "nested": {"raw": b"\xff"}, "empty": b""}
    props.set_extras(holder, extras)
    assert holder[props.EXTRAS]["strips"] == b"\x01\x00\x02\x00"
    assert props.get_extras(holder) == extras
    assert props.get_extras(holder, "strips") == {"strips": b"\x01\x00\x02\x00"}
    holder[props.EXTRAS] = {"strips": {"__bytes__": "AQACAA=="}, "nested": {"raw": {"__bytes__": "/w=="}}}
    assert props.get_extras(holder) == {"strips": b"\x01\x00\x02\x00", "nested": {"raw": b"\xff"}}
