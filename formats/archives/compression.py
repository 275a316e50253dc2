"""Yaz0 and Yay0: the LZ77 compression of GameCube and Wii files (.szs, .carc, .szp, members).

Both share one token stream: a literal byte, or a back-reference ``NDDD`` (big-endian u16,
distance ``DDD + 1`` up to 4096, length ``N + 2``, or a further byte + 0x12 when ``N`` is 0,
so 3…273) read MSB first from code bits. Yaz0 interleaves code bytes, literals and
references in one stream; Yay0 keeps the code words, the references and the literal /
extra-length bytes in three streams.

Decoding is vectorised: for Yaz0, where a group of eight tokens would end is computed for
every position at once (numpy, in cache-sized blocks), the real groups are the chain from the
first one (one Python step per sixteen groups), and their tokens are read in numpy; Yay0's
tokens come straight from its code bits. The output is built by resolving, for every output
byte, the literal it copies (pointer jumping), so no Python code runs per byte or per token.
A declared size is never trusted beyond what the stream can expand to.

Encoding finds matches with ``bytes.rfind`` in the 4 KB window, the previous start of
every 3-byte string (numpy) saying at once when there is none (greedy, with one step of lazy matching); the same
tokens pack into either layout.
"""

from __future__ import annotations

import struct

import numpy as np

from ..errors import FormatError

YAZ0 = b"Yaz0"
YAY0 = b"Yay0"
HEADER_SIZE = 16
WINDOW = 0x1000
MIN_MATCH = 3
MAX_MATCH = 0x111
# The most output one input byte can give: a 3-byte reference of 273 bytes and an eighth of a
# code byte. Declared sizes above this bound are refused before anything is allocated.
MAX_EXPANSION = MAX_MATCH * 8 // (3 * 8 + 1) + 1

_REFERENCE_BYTES = np.where(np.arange(256) >> 4 == 0, 3, 2).astype(np.int8)  # by a reference's first byte
_BLOCK = 1 << 16  # stream positions per block of _group_ends
# By code byte: the row of _group_steps for its bits 1-0, 3-2, 5-4, 7-6.
_STEP_ROWS = np.array([(np.arange(256) >> shift) & 3 for shift in (0, 2, 4, 6)], np.int32)


def is_compressed(data: bytes) -> bool:
    return data[:4] in (YAZ0, YAY0)


def declared_size(data: bytes) -> int:
    return struct.unpack_from(">I", data, 4)[0]


def decompress(data: bytes, filename: str = "<bytes>", limit: int | None = None) -> bytes:
    """The bytes a Yaz0 or Yay0 file holds; with ``limit``, only (at most) the first ``limit``.

    A stream that ends before ``limit`` bytes is not an error in prefix mode: detection may
    hand over the first few kilobytes of a file.
    """
    if len(data) < HEADER_SIZE:
        raise FormatError(filename, 0, f"compressed file header needs {HEADER_SIZE} bytes, found {len(data)}")
    magic = bytes(data[:4])
    if magic not in (YAZ0, YAY0):
        raise FormatError(filename, 0, f"expected 'Yaz0' or 'Yay0', found {magic!r}")
    size = declared_size(data)
    if limit is None and size > MAX_EXPANSION * len(data):
        raise FormatError(
            filename, 4, f"declared size {size} is more than {len(data)} compressed bytes can expand to"
        )
    wanted = size if limit is None else min(size, limit)
    if magic == YAZ0:
        if limit is not None:  # an output byte never costs more than 9/8 of an input byte
            data = data[: HEADER_SIZE + wanted + wanted // 8 + 4]
        tokens = _yaz0_tokens(np.frombuffer(data, np.uint8), wanted, filename, limit is not None)
    else:
        tokens = _yay0_tokens(data, wanted, filename, limit is not None)
    return _expand(*tokens, filename)


# -- decoding ---------------------------------------------------------------------------------


def _group_steps(stream: np.ndarray) -> np.ndarray:
    """How far two tokens starting at each position reach, by their kinds: (4, positions).

    Row ``k`` holds the bits of the two code bits (1 = literal), first token in bit 1.
    """
    positions = len(stream)
    reference = _REFERENCE_BYTES[stream]
    steps = np.empty((4, positions), np.int32)
    steps[3] = 2
    steps[2, :-1] = reference[1:] + 1
    steps[2, -1] = 3
    steps[1] = reference + 1
    after = np.minimum(np.arange(positions, dtype=np.int32) + reference, positions - 1)
    steps[0] = reference + reference[after]
    return steps


def _group_ends(stream: np.ndarray, n: int) -> np.ndarray:
    """Where a group starting at each position of the stream would end (relative to the stream).

    Two tokens per step, every position at once, in blocks that stay in the processor's cache.
    """
    ends = np.empty(n - HEADER_SIZE, np.int32)
    for low in range(HEADER_SIZE, n, _BLOCK):
        high = min(n, low + _BLOCK)
        window = stream[low : high + 32]  # a group reaches at most 25 bytes past its start
        steps = _group_steps(window).ravel()
        end = np.arange(1, high - low + 1, dtype=np.int32)
        code = window[: high - low]
        for row in _STEP_ROWS[::-1] * len(window):  # where each row starts in ``steps``
            index = row[code]
            index += end
            end += steps[index]
        end += low - HEADER_SIZE
        ends[low - HEADER_SIZE : high - HEADER_SIZE] = end
    return ends


def _yaz0_tokens(buf: np.ndarray, size: int, filename: str, prefix: bool):
    """(input offsets, lengths, distances, literal values, literal flags, output size) of the tokens needed."""
    n = len(buf)
    stream = np.zeros(n + 40, np.uint8)  # room for a last group's eight 3-byte tokens and a block's window
    stream[:n] = buf
    end = _group_ends(stream, n)
    last = n - HEADER_SIZE
    following = np.empty(last + 1, np.int32)
    np.minimum(end, last, out=following[:last])
    following[last] = last  # past the stream: stays there
    # Follow the chain 16 groups at a time in Python, then fill in the groups between in numpy.
    ahead = following
    for _ in range(4):
        ahead = ahead[ahead]
    jumps = memoryview(ahead)
    every_16th = []
    position = 0
    while position < last:
        every_16th.append(position)
        position = jumps[position]
    chain = np.empty((len(every_16th), 16), np.int32)
    chain[:, 0] = every_16th
    for index in range(1, 16):
        chain[:, index] = following[chain[:, index - 1]]
    groups = chain.ravel()
    groups = groups[groups < last] + HEADER_SIZE
    # The tokens of those groups, in order.
    offsets = np.empty((len(groups), 8), np.int32)
    position = groups + 1
    code = stream[groups]
    for index in range(8):
        offsets[:, index] = position
        position = position + np.where(code & (0x80 >> index), 1, _REFERENCE_BYTES[stream[position]])
    literals = np.unpackbits(code).astype(bool)
    offsets = offsets.ravel()
    first = stream[offsets].astype(np.int32)
    second = stream[offsets + 1].astype(np.int32)
    nibble = first >> 4
    long = ~literals & (nibble == 0)
    lengths = np.where(literals, 1, nibble + 2)
    lengths[long] = stream[offsets[long] + 2].astype(np.int32) + 0x12
    distances = np.where(literals, 0, ((first & 0xF) << 8 | second) + 1)
    count = _tokens_needed(lengths, size)
    token_end = offsets[count - 1] + (1 if literals[count - 1] else 2 + long[count - 1]) if count else 0
    if token_end > n or count == len(lengths) and int(lengths.sum()) < size:
        ends = offsets[:count] + np.where(literals[:count], 1, 2 + long[:count])
        inside = int(np.searchsorted(ends, n, "right"))
        if prefix:  # keep the tokens that fit
            return _cut(offsets, lengths, distances, first, literals, inside, None)
        made = int(lengths[:inside].sum())
        raise FormatError(filename, n, f"Yaz0 stream ends after {made} of {size} bytes")
    return _cut(offsets, lengths, distances, first, literals, count, size)


def _tokens_needed(lengths: np.ndarray, size: int) -> int:
    """How many tokens make ``size`` bytes (all of them when they make fewer)."""
    if size == 0:
        return 0
    total = np.cumsum(lengths)
    return min(int(np.searchsorted(total, size, "left")) + 1, len(lengths))


def _cut(offsets, lengths, distances, values, literals, count, size):
    lengths = lengths[:count]
    made = int(lengths.sum())
    return (
        offsets[:count],
        lengths,
        distances[:count],
        values[:count],
        literals[:count],
        made if size is None else size,
    )


def _yay0_tokens(data: bytes, size: int, filename: str, prefix: bool):
    n = len(data)
    link, chunk = struct.unpack_from(">II", data, 8)
    if prefix:  # the streams of a file cut short may start past the cut: they hold nothing here
        link, chunk = min(link, n), min(chunk, n)
    for offset, value, what in ((8, link, "back-reference"), (12, chunk, "literal")):
        if not HEADER_SIZE <= value <= n:
            raise FormatError(
                filename, offset, f"Yay0 {what} stream offset {value} is outside the file ({n} bytes)"
            )
    buf = np.frombuffer(data, np.uint8)
    # The code words run up to the next stream; at most one token per output byte.
    code_end = min([value for value in (link, chunk) if value > HEADER_SIZE] or [n])
    bits = np.unpackbits(buf[HEADER_SIZE : min(code_end, HEADER_SIZE + -(-size // 8))])
    literals = bits.astype(bool)
    reference_index = np.cumsum(~literals, dtype=np.int32) - 1
    pairs = buf[link : link + (n - link) // 2 * 2].view(">u2").astype(np.int32)
    available = len(pairs)
    reference = np.zeros(len(bits), np.int32)
    if available:
        reference[~literals] = pairs[np.minimum(reference_index[~literals], available - 1)]
    nibble = reference >> 12
    long = ~literals & (nibble == 0)
    chunk_index = np.cumsum(literals | long, dtype=np.int32) - 1
    chunk_bytes = buf[chunk:]
    chunk_value = np.zeros(len(bits), np.int32)
    if len(chunk_bytes):
        chunk_value[:] = chunk_bytes[np.clip(chunk_index, 0, len(chunk_bytes) - 1)]
    lengths = np.where(literals, 1, np.where(long, chunk_value + 0x12, nibble + 2))
    distances = np.where(literals, 0, (reference & 0xFFF) + 1)
    count = _tokens_needed(lengths, size)
    missing_reference = ~literals[:count] & (reference_index[:count] >= available)
    missing_chunk = (literals[:count] | long[:count]) & (chunk_index[:count] >= len(chunk_bytes))
    short = count == len(lengths) and int(lengths.sum()) < size
    if missing_reference.any() or missing_chunk.any() or short:
        bad = [int(np.argmax(m)) for m in (missing_reference, missing_chunk) if m.any()]
        fit = min(bad) if bad else count
        if prefix:
            return _cut(_yay0_offsets(count), lengths, distances, chunk_value, literals, fit, None)
        made = int(lengths[:fit].sum())
        raise FormatError(filename, n, f"Yay0 streams end after {made} of {size} bytes")
    return _cut(_yay0_offsets(count), lengths, distances, chunk_value, literals, count, size)


def _yay0_offsets(count: int) -> np.ndarray:
    """Where a Yay0 token's code bit is (errors name it)."""
    return HEADER_SIZE + np.arange(count, dtype=np.int64) // 8


def _expand(offsets, lengths, distances, values, literals, size, filename) -> bytes:
    """The output of the tokens: every byte traced back to the literal it copies."""
    if size == 0:
        return b""
    starts = np.cumsum(lengths, dtype=np.int64) - lengths
    early = ~literals & (distances > starts)
    if early.any():
        index = int(np.argmax(early))
        raise FormatError(
            filename,
            int(offsets[index]),
            f"back-reference {int(distances[index])} bytes back at output byte {int(starts[index])}",
        )
    index_type = np.int32 if size < 1 << 31 else np.int64
    lengths = lengths.astype(index_type)
    distance = np.repeat(distances.astype(index_type), lengths)[:size]
    copied = distance > 0
    source = np.arange(size, dtype=index_type)
    source -= distance
    del distance
    # A copy longer than its distance repeats its first ``distance`` bytes: point those bytes
    # before the copy too, so that every step of the chase below crosses a token.
    overlapping = np.flatnonzero(~literals & (distances < lengths))
    if len(overlapping):
        spans = lengths[overlapping]
        first = starts[overlapping].astype(index_type)
        step = distances[overlapping].astype(index_type)
        within = np.arange(int(spans.sum()), dtype=index_type) - np.repeat(np.cumsum(spans) - spans, spans)
        where = np.repeat(first, spans) + within
        keep = where < size
        source[where[keep]] = (np.repeat(first - step, spans) + within % np.repeat(step, spans))[keep]
    output = np.zeros(size, np.uint8)
    output[starts[literals]] = values[literals]  # every token needed starts inside the output
    # Pointer jumping: rounds over every byte while many are not yet on a literal (cheap
    # gathers), then rounds over the few left (costly per byte).
    # (The share still pending is estimated on every 16th byte.)
    while np.count_nonzero(copied[source[::16]]) * 8 * 16 >= size:
        source = source[source]
    pending = np.flatnonzero(copied[source])
    while len(pending):
        through = source[source[pending]]
        source[pending] = through
        pending = pending[copied[through]]
    return output[source].tobytes()


# -- encoding ---------------------------------------------------------------------------------


def _longest_match(data: bytes, i: int, source: int) -> tuple[int, int]:
    """(length, distance) of the longest earlier copy of the bytes at ``i`` in the window, given
    ``source``, the nearest earlier start of their first three bytes."""
    longest = min(MAX_MATCH, len(data) - i)
    low = max(0, i - WINDOW)
    length = MIN_MATCH
    while True:
        while (
            length + 16 <= longest
            and data[source + length : source + length + 16] == data[i + length : i + length + 16]
        ):
            length += 16
        while length < longest and data[source + length] == data[i + length]:
            length += 1
        best, distance = length, i - source
        if length == longest:
            return best, distance
        length += 1
        source = data.rfind(data[i : i + length], low, i + length - 1)  # the nearest longer one
        if source < 0:
            return best, distance


def _previous_starts(data: bytes) -> list[int]:
    """For each position, the last earlier one where the same three bytes start (-1: none)."""
    if len(data) < MIN_MATCH:
        return []
    b = np.frombuffer(data, np.uint8).astype(np.int32)
    keys = b[:-2] << 16 | b[1:-1] << 8 | b[2:]
    order = np.argsort(keys, kind="stable")  # by key, then by position
    same = keys[order[1:]] == keys[order[:-1]]
    previous = np.full(len(keys), -1, np.int64)
    previous[order[1:][same]] = order[:-1][same]
    return previous.tolist()


def tokens(data: bytes) -> list[tuple[int, int]]:
    """The LZ77 parse: (0, byte) for a literal, (length, distance) for a copy.

    Greedy with one step of lazy matching; the previous start of every position's first
    three bytes (found for all positions at once) answers "no copy" without scanning.
    """
    end = len(data)
    previous = _previous_starts(data)

    def match(i: int) -> tuple[int, int]:
        source = previous[i] if i < len(previous) else -1
        if source < 0 or source < i - WINDOW:
            return 0, 0
        return _longest_match(data, i, source)

    out = []
    i = 0
    pending = match(0)
    while i < end:
        length, distance = pending
        if length:
            following = match(i + 1)
            if following[0] > length:  # lazy: a literal now buys a longer copy next
                out.append((0, data[i]))
                i += 1
                pending = following
                continue
            out.append((length, distance))
            i += length
        else:
            out.append((0, data[i]))
            i += 1
        pending = match(i)
    return out


def compress(data: bytes, magic: bytes = YAZ0, reserved: bytes = bytes(8)) -> bytes:
    """``data`` as a Yaz0 (or Yay0) file; Yaz0 keeps ``reserved`` (8 bytes) in its header
    (Yay0 has stream offsets there instead, computed here)."""
    return pack(tokens(bytes(data)), len(data), magic, reserved)


def pack(parse: list[tuple[int, int]], size: int, magic: bytes = YAZ0, reserved: bytes = bytes(8)) -> bytes:
    """The file holding the tokens of ``parse`` (see ``tokens``) for ``size`` output bytes."""
    if magic == YAY0:
        return _pack_yay0(parse, size)
    if magic != YAZ0 or len(reserved) != 8:
        raise ValueError(f"compress makes Yaz0 (with 8 reserved bytes) or Yay0, not {magic!r}")
    out = bytearray(YAZ0 + struct.pack(">I", size) + reserved)
    for group in range(0, len(parse), 8):
        code_at = len(out)
        out.append(0)
        code = 0
        for bit, (length, value) in enumerate(parse[group : group + 8]):
            if length == 0:
                code |= 0x80 >> bit
                out.append(value)
            else:
                out += _reference(length, value)
        out[code_at] = code
    return bytes(out)


def _reference(length: int, distance: int) -> bytes:
    back = distance - 1
    if length < 0x12:
        return struct.pack(">H", (length - 2) << 12 | back)
    return struct.pack(">HB", back, length - 0x12)


def _pack_yay0(parse: list[tuple[int, int]], size: int) -> bytes:
    codes = bytearray()
    references = bytearray()
    chunks = bytearray()
    for group in range(0, len(parse), 32):
        code = 0
        for bit, (length, value) in enumerate(parse[group : group + 32]):
            if length == 0:
                code |= 0x80000000 >> bit
                chunks.append(value)
            else:
                encoded = _reference(length, value)
                references += encoded[:2]
                chunks += encoded[2:]
        codes += struct.pack(">I", code)
    link = HEADER_SIZE + len(codes)
    chunk = link + len(references)
    return YAY0 + struct.pack(">III", size, link, chunk) + codes + references + chunks
