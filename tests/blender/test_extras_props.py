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
