"""Bounds-checked binary reading and writing shared by every format family.

A ``Reader`` walks a byte buffer with an explicit endianness; every read checks
the buffer's length first and raises ``FormatError`` naming the file, the byte
offset and what was expected. Counts taken from a file are checked against the
bytes that remain before anything is allocated. ``Writer`` is the mirror image.
Arrays of records use numpy structured dtypes so that whole tables are read and
written in one call.
"""

from __future__ import annotations

import struct
from functools import lru_cache

import numpy as np

from .errors import FormatError


def _order(endian: str) -> str:
    if endian not in ("<", ">"):
        raise ValueError(f"endian must be '<' or '>', not {endian!r}")
    return endian


class Reader:
    """Sequential, bounds-checked reads from ``data`` (bytes or memoryview)."""

    def __init__(
        self,
        data: bytes,
        endian: str = "<",
        filename: str = "<bytes>",
        offset: int = 0,
        end: int | None = None,
    ):
        self.data = data if isinstance(data, bytes) else bytes(data)
        self.endian = _order(endian)
        self.filename = filename
        self.pos = offset
        self.end = len(self.data) if end is None else end
        self._structs: dict[str, struct.Struct] = {}

    # -- position -------------------------------------------------------
    def __len__(self) -> int:
        return self.end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def error(self, message: str, offset: int | None = None) -> FormatError:
        return FormatError(self.filename, self.pos if offset is None else offset, message)

    def seek(self, offset: int, what: str = "data") -> Reader:
        if not 0 <= offset <= self.end:
            raise self.error(f"{what} starts outside the file ({self.end} bytes)", offset)
        self.pos = offset
        return self

    def need(self, size: int, what: str) -> None:
        """Raise unless ``size`` more bytes are available for ``what``."""
        if size < 0 or size > self.end - self.pos:
            raise self.error(f"expected {what} ({size} bytes) but only {max(self.remaining, 0)} bytes remain")

    def check_count(self, count: int, item_size: int, what: str, limit: int | None = None) -> int:
        """Validate a count read from the file before anything is allocated from it."""
        if count < 0:
            raise self.error(f"negative {what} count {count}")
        if limit is not None and count > limit:
            raise self.error(f"{what} count {count} exceeds the limit of {limit}")
        self.need(count * item_size, f"{count} × {what}")
        return count

    # -- scalars ---------------------------------------------------------
    def unpack(self, fmt: str, what: str = "values") -> tuple:
        key = self.endian + fmt
        s = self._structs.get(key)
        if s is None:
            s = self._structs[key] = struct.Struct(key)
        self.need(s.size, what)
        values = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return values

    def _one(self, fmt: str, what: str):
        return self.unpack(fmt, what)[0]

    def u8(self, what: str = "u8") -> int:
        return self._one("B", what)

    def i8(self, what: str = "i8") -> int:
        return self._one("b", what)

    def u16(self, what: str = "u16") -> int:
        return self._one("H", what)

    def i16(self, what: str = "i16") -> int:
        return self._one("h", what)

    def u32(self, what: str = "u32") -> int:
        return self._one("I", what)

    def i32(self, what: str = "i32") -> int:
        return self._one("i", what)

    def f32(self, what: str = "f32") -> float:
        return self._one("f", what)

    def bytes(self, size: int, what: str = "bytes") -> bytes:
        self.need(size, what)
        out = self.data[self.pos : self.pos + size]
        self.pos += size
        return out

    def magic(self, expected: bytes, what: str = "magic") -> bytes:
        start = self.pos
        got = self.bytes(len(expected), what)
        if got != expected:
            raise self.error(f"expected {what} {expected!r}, found {got!r}", start)
        return got

    def cstring(self, size: int, what: str = "string", encoding: str = "ascii") -> str:
        """A fixed-size field holding a NUL-terminated string."""
        raw = self.bytes(size, what)
        return raw.split(b"\0", 1)[0].decode(encoding, errors="replace")

    def zstring(self, what: str = "string", encoding: str = "ascii") -> str:
        """A NUL-terminated string of unknown length."""
        end = self.data.find(b"\0", self.pos, self.end)
        if end < 0:
            raise self.error(f"{what} has no terminating NUL before the end of the file")
        raw = self.data[self.pos : end]
        self.pos = end + 1
        return raw.decode(encoding, errors="replace")

    # -- arrays ----------------------------------------------------------
    def array(self, dtype, count: int, what: str = "array", limit: int | None = None) -> np.ndarray:
        """``count`` records of ``dtype`` (byte order applied), copied out of the buffer."""
        dt = with_endian(np.dtype(dtype), self.endian)
        self.check_count(count, dt.itemsize, what, limit)
        out = np.frombuffer(self.data, dt, count, self.pos).copy()
        self.pos += count * dt.itemsize
        return out

    def sub(self, offset: int, size: int, what: str = "block") -> Reader:
        """A reader over ``size`` bytes at ``offset``; offsets stay file-absolute."""
        if offset < 0 or size < 0 or offset + size > self.end:
            raise self.error(f"{what} ({size} bytes) runs past the end of its container", offset)
        return Reader(self.data, self.endian, self.filename, offset, offset + size)


class Writer:
    """Appends values in a fixed byte order; mirrors ``Reader``."""

    def __init__(self, endian: str = "<"):
        self.endian = _order(endian)
        self.buf = bytearray()
        self._structs: dict[str, struct.Struct] = {}

    def __len__(self) -> int:
        return len(self.buf)

    @property
    def pos(self) -> int:
        return len(self.buf)

    def getvalue(self) -> bytes:
        return bytes(self.buf)

    def pack(self, fmt: str, *values) -> None:
        s = self._structs.get(fmt)
        if s is None:
            s = self._structs[fmt] = struct.Struct(self.endian + fmt)
        self.buf += s.pack(*values)

    def pack_at(self, offset: int, fmt: str, *values) -> None:
        """Patch an already written field (offsets and sizes known only later)."""
        struct.pack_into(self.endian + fmt, self.buf, offset, *values)

    def u8(self, v: int) -> None:
        self.pack("B", v)

    def i8(self, v: int) -> None:
        self.pack("b", v)

    def u16(self, v: int) -> None:
        self.pack("H", v)

    def i16(self, v: int) -> None:
        self.pack("h", v)

    def u32(self, v: int) -> None:
        self.pack("I", v)

    def i32(self, v: int) -> None:
        self.pack("i", v)

    def f32(self, v: float) -> None:
        self.pack("f", v)

    def bytes(self, b: bytes) -> None:
        self.buf += b

    def cstring(self, text: str | bytes, size: int, what: str = "string", encoding: str = "ascii") -> None:
        """A fixed-size, NUL-padded field; raises ValueError when ``text`` does not fit."""
        raw = text.encode(encoding) if isinstance(text, str) else text
        if len(raw) > size:
            raise ValueError(f"{what} {raw!r} is longer than {size} bytes")
        self.buf += raw + b"\0" * (size - len(raw))

    def zstring(self, text: str, encoding: str = "ascii") -> None:
        self.buf += text.encode(encoding) + b"\0"

    def array(self, values: np.ndarray, dtype=None) -> None:
        arr = np.asarray(values)
        dt = with_endian(np.dtype(dtype) if dtype is not None else arr.dtype, self.endian)
        self.buf += np.ascontiguousarray(arr, dtype=dt).tobytes()

    def align(self, boundary: int, fill: bytes = b"\0") -> None:
        pad = -len(self.buf) % boundary
        self.buf += (fill * (pad // len(fill) + 1))[:pad]


@lru_cache(maxsize=1024)  # few dtypes, asked for by every table read and written
def with_endian(dt: np.dtype, endian: str) -> np.dtype:
    """``dt`` with every multi-byte field in the given byte order (structured dtypes too)."""
    if dt.fields is None:
        if dt.subdtype is not None:
            base, shape = dt.subdtype
            return np.dtype((with_endian(base, endian), shape))
        return dt.newbyteorder(endian) if dt.itemsize > 1 and dt.kind in "iufc" else dt
    return np.dtype(
        {
            "names": list(dt.names),
            "formats": [with_endian(dt.fields[n][0], endian) for n in dt.names],
            "offsets": [dt.fields[n][1] for n in dt.names],
            "itemsize": dt.itemsize,
        }
    )
