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

Encoding is vectorised too: every position's longest copy in the 4 KB window is searched for
all positions of a block at once, among the earlier starts of its first three bytes (nearest
first, up to ``SEARCH_DEPTH`` of them), comparing eight bytes per step; the greedy parse with
one step of lazy matching is then a chain of "next token" steps, and the tokens pack into
either layout in numpy.
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
    groups = _chain(following, last)
    groups = groups + HEADER_SIZE
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


def _chain(following: np.ndarray, last: int) -> np.ndarray:
    """The positions visited from 0 by ``following`` (one step each) before reaching ``last``.

    ``following`` has ``last + 1`` entries, each larger than its index (``following[last] ==
    last``). The walk goes 16 steps at a time in Python; the steps between are filled in numpy.
    """
    ahead = following
    for _ in range(4):
        ahead = ahead[ahead]
    jumps = memoryview(ahead)
    every_16th = []
    position = 0
    while position < last:
        every_16th.append(position)
        position = jumps[position]
    chain = np.empty((len(every_16th), 16), following.dtype)
    chain[:, 0] = every_16th
    for index in range(1, 16):
        chain[:, index] = following[chain[:, index - 1]]
    chain = chain.ravel()
    return chain[chain < last]


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

SEARCH_DEPTH = 16  # earlier starts of the same three bytes tried per position, nearest first
_ENCODE_BLOCK = 1 << 18  # positions whose matches are searched together
# Thresholds for counting a 64-bit difference's leading zero bytes with one searchsorted.
_BYTE_THRESHOLDS = np.array([1 << (8 * k) for k in range(1, 8)], np.uint64)


def tokens(data: bytes) -> np.ndarray:
    """The LZ77 parse as an (n, 2) array: (0, byte) for a literal, (length, distance) for a copy.

    Greedy with one step of lazy matching (a literal when the next position has a longer copy).
    Every position's longest copy is found at once (``_longest_matches``); the parse is the
    chain of "next token" steps from the start.
    """
    size = len(data)
    if size == 0:
        return np.zeros((0, 2), np.int32)
    lengths, distances = _longest_matches(data)
    lengths = np.append(lengths, 0)
    take = (lengths[:-1] >= MIN_MATCH) & (lengths[1:] <= lengths[:-1])
    following = np.append(np.arange(1, size + 1, dtype=np.int32), size)
    following[:-1][take] += lengths[:-1][take] - 1
    starts = _chain(following, size)
    copies = take[starts]
    parse = np.empty((len(starts), 2), np.int32)
    parse[:, 0] = np.where(copies, lengths[starts], 0)
    parse[:, 1] = np.where(copies, distances[starts], np.frombuffer(data, np.uint8)[starts])
    return parse


def _longest_matches(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(length, distance) of the longest earlier copy in the window for every position (length 0
    when there is none of three bytes or more; the nearest of equally long ones).

    Candidates are the earlier starts of the same three bytes (up to ``SEARCH_DEPTH``, nearest
    first), compared eight bytes at a time for all positions of a block together.
    """
    size = len(data)
    lengths = np.zeros(size, np.int32)
    distances = np.zeros(size, np.int32)
    previous = _previous_starts(data)
    padded = np.zeros(size + MAX_MATCH + 16, np.uint8)
    padded[:size] = np.frombuffer(data, np.uint8)
    for low in range(0, size, _ENCODE_BLOCK):
        high = min(size, low + _ENCODE_BLOCK)
        base = max(0, low - WINDOW)  # words of the block's window and of its longest copies
        words = np.lib.stride_tricks.sliding_window_view(padded[base : high + MAX_MATCH + 8], 8)
        words = np.ascontiguousarray(words).view(">u8").ravel()
        position = np.arange(low, high, dtype=np.int32)
        cap = np.minimum(MAX_MATCH, size - position)
        best = np.zeros(high - low, np.int32)
        nearest = np.zeros(high - low, np.int32)
        open_ = np.arange(high - low)  # the positions still searching, and their next candidates
        source = previous[low:high]
        for _ in range(SEARCH_DEPTH):
            at = position[open_]
            going = (source >= 0) & (at - source <= WINDOW) & (best[open_] < cap[open_])
            open_, source, at = open_[going], source[going], at[going]
            if not len(open_):
                break
            # Only a candidate that also matches the byte just past the best so far can beat it.
            reach = best[open_]
            hopeful = np.flatnonzero(padded[source + reach] == padded[at + reach])
            tried, start = open_[hopeful], source[hopeful]
            found = _match_lengths(words, at[hopeful] - base, start - base, cap[tried])
            longer = found > best[tried]
            best[tried[longer]] = found[longer]
            nearest[tried[longer]] = at[hopeful][longer] - start[longer]
            source = previous[source]
        lengths[low:high] = best
        distances[low:high] = nearest
    return lengths, distances


def _match_lengths(words: np.ndarray, at: np.ndarray, source: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """How many bytes from ``at`` equal those from ``source`` (at most ``cap``), eight at a time;
    ``words[p]`` holds bytes p … p+7 as a big-endian integer."""
    length = np.zeros(len(at), np.int32)
    going = np.arange(len(at))
    while len(going):
        difference = words[at[going] + length[going]] ^ words[source[going] + length[going]]
        same = difference == 0
        stopped = going[~same]
        length[stopped] += 7 - np.searchsorted(_BYTE_THRESHOLDS, difference[~same], "right").astype(np.int32)
        going = going[same]
        length[going] += 8
        going = going[length[going] < cap[going]]
    return np.minimum(length, cap)


def _previous_starts(data: bytes) -> np.ndarray:
    """For each position, the last earlier one where the same three bytes start (-1: none)."""
    previous = np.full(len(data), -1, np.int32)
    if len(data) < MIN_MATCH:
        return previous
    b = np.frombuffer(data, np.uint8)
    # Positions by key, then by position: two stable sorts of small integers (numpy sorts those
    # by radix), the last two bytes first.
    rest = b[1:-1].astype(np.uint16) << 8 | b[2:]
    order = np.argsort(rest, kind="stable")
    order = order[np.argsort(b[:-2][order], kind="stable")]
    keys = (b[:-2].astype(np.int32) << 16 | rest)[order]
    same = keys[1:] == keys[:-1]
    previous[order[1:][same]] = order[:-1][same]
    return previous


def compress(data: bytes, magic: bytes = YAZ0, reserved: bytes = bytes(8)) -> bytes:
    """``data`` as a Yaz0 (or Yay0) file; Yaz0 keeps ``reserved`` (8 bytes) in its header
    (Yay0 has stream offsets there instead, computed here)."""
    return pack(tokens(bytes(data)), len(data), magic, reserved)


def pack(parse, size: int, magic: bytes = YAZ0, reserved: bytes = bytes(8)) -> bytes:
    """The file holding the tokens of ``parse`` ((length, value) pairs, see ``tokens``) for
    ``size`` output bytes."""
    parse = np.asarray(parse, np.int32).reshape(-1, 2)
    lengths, values = parse[:, 0], parse[:, 1]
    literal = lengths == 0
    long = lengths >= 0x12
    back = values - 1
    # A reference's first two bytes (NDDD, N = 0 for a long one) and the byte after: the
    # length's excess for a long reference, the value for a literal.
    pair = np.where(long, back, (lengths - 2) << 12 | back)
    extra = np.where(literal, values, lengths - 0x12)
    if magic == YAY0:
        codes = np.packbits(np.append(literal, np.zeros(-len(parse) % 32, bool)))
        references = pair[~literal].astype(">u2").tobytes()
        chunks = extra[literal | long].astype(np.uint8).tobytes()
        link = HEADER_SIZE + len(codes)
        chunk = link + len(references)
        return YAY0 + struct.pack(">III", size, link, chunk) + codes.tobytes() + references + chunks
    if magic != YAZ0 or len(reserved) != 8:
        raise ValueError(f"compress makes Yaz0 (with 8 reserved bytes) or Yay0, not {magic!r}")
    token_size = np.where(literal, 1, np.where(long, 3, 2))
    before = np.cumsum(token_size) - token_size  # token bytes before each token
    group = np.arange(len(parse)) // 8
    at = before + group + 1  # each group's code byte precedes its tokens
    out = np.zeros(int(token_size.sum()) + -(-len(parse) // 8), np.uint8)
    out[at[::8] - 1] = np.packbits(np.append(literal, np.zeros(-len(parse) % 8, bool)))
    reference = ~literal
    out[at[reference]] = pair[reference] >> 8
    out[at[reference] + 1] = pair[reference] & 0xFF
    out[at[literal]] = extra[literal]
    out[at[long] + 2] = extra[long]
    return YAZ0 + struct.pack(">I", size) + reserved + out.tobytes()
