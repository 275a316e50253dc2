"""One codec for the format-only fields (``extras``) that ride through Blender and back.

Converters put any plain value in ``extras``: str, int, float, bool, None, bytes, numpy
scalars and arrays, and lists and dicts of those. Blender's custom (ID) properties hold less:
no bytes in JSON-safe form, no None, no integer beyond 32 bits, no list mixing kinds of
values. ``encode`` gives a value that Blender (and JSON) can hold and that a user can still
read in the properties panel; ``decode`` gives the converter's value back exactly:

- bytes → ``{"__bytes__": base64 text}``;
- a list of numbers of one kind (bool, 32-bit int, float), of strings, of dicts or of
  lists that encode natively stays a list;
- anything else (None, a wider int, a list mixing kinds) → ``{"__json__": JSON text}``,
  whose bytes and nested values use the same rules.

Floats keep their double value; tuples come back as lists.
"""

from __future__ import annotations

import base64
import json
import math

import numpy as np

BYTES = "__bytes__"
JSON = "__json__"
_INT32 = (-(2**31), 2**31 - 1)
_AS_THEY_ARE = (str, float, bool)  # scalars both forms hold unchanged


def encode(value):
    """``value`` in a form Blender's ID properties and JSON both hold (see the module)."""
    if type(value) in _AS_THEY_ARE:
        return value
    value = _plain(value)
    if isinstance(value, bytes):
        return {BYTES: base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list):
        if _plain_scalars(value):  # the common long lists (keys, indices), without a call per item
            return value
        items = [encode(v) for v in value]
        return items if _native_list(items) else {JSON: json.dumps(_jsonable(value))}
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and not _fits(value)):
        return {JSON: json.dumps(value)}
    return value


def decode(value):
    """The value ``encode`` was given (lists for tuples and arrays); accepts ID property values."""
    if type(value) in _AS_THEY_ARE or type(value) is int:
        return value
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    elif hasattr(value, "to_list"):
        value = value.to_list()
    if isinstance(value, dict):
        if set(value) == {BYTES}:
            return base64.b64decode(value[BYTES])
        if set(value) == {JSON}:
            return _from_json(json.loads(value[JSON]))
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return list(value) if _plain_scalars(value) else [decode(v) for v in value]
    return value


def _plain(value):
    """numpy values and tuples as plain Python."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value


def _fits(number: int) -> bool:
    return _INT32[0] <= number <= _INT32[1]


def _plain_scalars(items) -> bool:
    """Whether a list is finite floats, 32-bit ints, bools or strings, all of one kind: encoded as it is."""
    kinds = set(map(type, items))
    if kinds == {float}:
        return math.isfinite(sum(items))  # NaN and ±inf carry through a sum (an overflow says no too)
    if kinds == {int}:
        return _fits(min(items)) and _fits(max(items))
    return kinds == {bool} or kinds == {str}


def _kind(item) -> str:
    """What an ID property array or list may hold together: one kind of scalar, or containers."""
    if isinstance(item, bool):
        return "bool"
    if isinstance(item, int):
        return "int"
    if isinstance(item, float):
        return "float"
    if isinstance(item, str):
        return "str"
    if isinstance(item, dict):
        return "dict"
    return "list"


def _native_list(items: list) -> bool:
    """Whether Blender stores these encoded items as a list and gives the same values back."""
    kinds = {_kind(i) for i in items}
    if len(kinds) > 1:
        return False
    if kinds == {"float"}:
        return all(math.isfinite(i) for i in items)  # JSON keeps NaN and ±inf exactly
    if kinds == {"list"}:
        return all(_native_list(i) for i in items) and len({_kind(i[0]) if i else "" for i in items}) <= 1
    return True


def _jsonable(value):
    """``value`` with its bytes tagged, for JSON text."""
    value = _plain(value)
    if isinstance(value, bytes):
        return {BYTES: base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _from_json(value):
    if isinstance(value, dict):
        if set(value) == {BYTES}:
            return base64.b64decode(value[BYTES])
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value
