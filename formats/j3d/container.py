"""The J3D container and the pieces every J3D section shares.

A J3D file is a 0x20-byte header (magic ``J3D1``/``J3D2``, a type such as
``bck1``, the file size, the section count and a 16-byte version tag) followed
by sections (``char[4]`` magic, ``u32`` size), each 32-byte aligned. Inside a
section a fixed header holds offsets (relative to the section start) of blocks
that follow it; blocks are aligned with the ASCII padding text below.

Shared pieces: keyframe track tables (``count, first, tangent mode``), name
tables with their hash, and the block layout used to rebuild a section byte
for byte. Everything is big-endian.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..binary import Reader, Writer
from ..errors import FormatError

ANIMATION_MAGIC = b"J3D1"
MODEL_MAGIC = b"J3D2"
FILE_HEADER_SIZE = 0x20
SECTION_ALIGN = 32
PADDING_TEXT = b"This is padding data to align"
DEFAULT_TAG = b"SVR1" + b"\xff" * 12
NO_OFFSET = 0xFFFFFFFF
# A few real files declare a last section slightly longer than the data that is there.
MAX_SECTION_OVERRUN = 32

# One keyframe track: key count, index of its first entry in the bank, tangent mode.
TRACK_DTYPE = np.dtype([("count", ">u2"), ("first", ">u2"), ("mode", ">u2")])
TANGENT_SHARED = 0  # time, value, tangent (both sides)
TANGENT_SPLIT = 1  # time, value, in tangent, out tangent


def padding(size: int) -> bytes:
    """``size`` bytes of the padding text, restarted for every gap as the game's tools do."""
    return (PADDING_TEXT * (size // len(PADDING_TEXT) + 1))[:size]


def aligned_padding(position: int, boundary: int) -> bytes:
    return padding(-position % boundary)


# -- the file --------------------------------------------------------------------


@dataclass
class Framing:
    """Everything around a file's content that an exact rewrite needs; defaults describe a fresh file."""

    tag: bytes = DEFAULT_TAG  # 0x10..0x1F kept verbatim (the BCK sound offset at 0x1C is rewritten)
    trailer: bytes = b""  # bytes after the last section (and after a BCK sound block)
    section_count_delta: int = 0  # declared section count minus the real one (a known BMT is off)
    file_size_delta: int = 0  # declared file size minus the real one
    size_overrun: int = 0  # bytes the last section declares beyond the end of the file


@dataclass
class RawSection:
    magic: bytes
    offset: int  # in the file
    data: bytes  # the whole section, its 8-byte header included (clamped to the file)


@dataclass
class Container:
    magic: bytes
    kind: bytes
    sections: list[RawSection]
    framing: Framing = field(default_factory=Framing)

    def section(self, magic: bytes, filename: str) -> RawSection:
        for section in self.sections:
            if section.magic == magic:
                return section
        raise FormatError(filename, FILE_HEADER_SIZE, f"expected a {magic.decode()} section")


def _looks_like_section(data: bytes, pos: int) -> bool:
    magic = data[pos : pos + 4]
    return len(data) - pos >= 8 and len(magic) == 4 and all(48 <= c <= 57 or 65 <= c <= 90 for c in magic)


def read_container(data: bytes, filename: str, magic: bytes, kinds: tuple[bytes, ...]) -> Container:
    """Split a file into its sections; ``kinds`` lists the accepted type fields."""
    r = Reader(data, ">", filename)
    r.magic(magic, "J3D magic")
    kind = r.bytes(4, "file type")
    if kind not in kinds:
        raise r.error(f"expected a file type of {b', '.join(kinds).decode()}, found {kind!r}", 4)
    file_size, count = r.unpack("II", "file size and section count")
    tag = r.bytes(16, "version tag")
    sections: list[RawSection] = []
    pos = FILE_HEADER_SIZE
    overrun = 0
    # The declared count is not trusted (a known BMT gets it wrong): sections run while the
    # bytes look like one; anything after them is kept as the trailer.
    while _looks_like_section(data, pos):
        section_magic = data[pos : pos + 4]
        size = int.from_bytes(data[pos + 4 : pos + 8], "big")
        if size < 8:
            raise FormatError(filename, pos + 4, f"{section_magic.decode()} section size {size} is below 8")
        end = pos + size
        if end > len(data):
            overrun = end - len(data)
            if overrun > MAX_SECTION_OVERRUN:
                raise FormatError(
                    filename,
                    pos + 4,
                    f"{section_magic.decode()} section of {size} bytes runs {overrun} bytes past the end of the file",
                )
            end = len(data)
        sections.append(RawSection(section_magic, pos, data[pos:end]))
        pos = end
    if not sections:
        raise FormatError(filename, FILE_HEADER_SIZE, "expected at least one section")
    framing = Framing(
        tag=tag,
        trailer=data[pos:],
        section_count_delta=count - len(sections),
        file_size_delta=file_size - len(data),
        size_overrun=overrun,
    )
    return Container(magic, kind, sections, framing)


def read_animation(
    data: bytes, filename: str, kind: bytes, tag: bytes
) -> tuple[Container, RawSection, Reader]:
    """An animation file's container, its one section, and a reader over it placed after the section header."""
    container = read_container(data, filename, ANIMATION_MAGIC, (kind,))
    section = container.section(tag, filename)
    r = Reader(data, ">", filename, section.offset, section.offset + len(section.data))
    r.seek(section.offset + 8)
    return container, section, r


def write_container(
    magic: bytes, kind: bytes, sections: list[bytes], framing: Framing, tail: bytes = b""
) -> bytes:
    """Header + sections + ``tail`` (e.g. a sound block) + the framing's trailer.

    Each section's size field is already set; a last section that ran past the end of the file
    gets its declared size back.
    """
    body = bytearray(b"".join(sections))
    if framing.size_overrun:
        last = len(body) - len(sections[-1])
        body[last + 4 : last + 8] = (len(sections[-1]) + framing.size_overrun).to_bytes(4, "big")
    total = FILE_HEADER_SIZE + len(body) + len(tail) + len(framing.trailer)
    w = Writer(">")
    w.bytes(magic)
    w.bytes(kind)
    w.u32(total + framing.file_size_delta)
    w.u32(len(sections) + framing.section_count_delta)
    w.bytes(framing.tag)
    return w.getvalue() + bytes(body) + tail + framing.trailer


# -- blocks inside a section -------------------------------------------------------


class SectionBuilder:
    """Lays out one section: its header, then blocks, each aligned with the padding text.

    ``gaps`` (from ``read_gaps``) replays the original bytes between blocks instead.
    """

    def __init__(self, magic: bytes, header_size: int, gaps: list[bytes] | None = None):
        self.magic = magic
        self.header_size = header_size
        self.body = bytearray(header_size)
        self.gaps = gaps
        self.count = 0

    def _gap(self, boundary: int) -> bytes:
        if self.gaps is not None and self.count < len(self.gaps):
            gap = self.gaps[self.count]
        else:
            gap = aligned_padding(len(self.body), boundary)
        self.count += 1
        return gap

    def block(self, data: bytes, align: int = 4) -> int:
        """Append ``data``; returns its offset from the section start."""
        self.body += self._gap(align)
        offset = len(self.body)
        self.body += data
        return offset

    def finish(self, header_fields: bytes) -> bytes:
        """The finished section; ``header_fields`` are the header bytes after magic and size."""
        if len(header_fields) != self.header_size - 8:
            raise ValueError(
                f"{self.magic!r} header needs {self.header_size - 8} bytes, got {len(header_fields)}"
            )
        self.body += self._gap(SECTION_ALIGN)
        self.body[:8] = self.magic + len(self.body).to_bytes(4, "big")
        self.body[8 : self.header_size] = header_fields
        return bytes(self.body)


def read_gaps(
    section: bytes, header_size: int, blocks: list[tuple[int, int]], aligns: list[int]
) -> list[bytes] | None:
    """The bytes between consecutive blocks (offset, size) in the order a writer places them.

    None when they are exactly what ``SectionBuilder`` writes anyway, or when the blocks are
    not in that order (such a file is rewritten in the usual order).
    """
    gaps: list[bytes] = []
    standard = True
    end = header_size
    for (offset, size), align in zip(blocks, aligns, strict=True):
        if offset < end:
            return None
        gap = section[end:offset]
        standard = standard and gap == aligned_padding(end, align)
        gaps.append(gap)
        end = offset + size
    if end > len(section):
        return None
    gap = section[end:]
    standard = standard and gap == aligned_padding(end, SECTION_ALIGN)
    gaps.append(gap)
    return None if standard else gaps


def block_reader(r: Reader, base: int, offset: int, size: int, what: str) -> Reader:
    """A reader over ``size`` bytes at a section-relative ``offset``."""
    return r.sub(base + offset, size, what)


# -- joint sections (BCK's ANK1, BCA's ANF1) ---------------------------------------------

JOINT_HEADER_SIZE = 0x24
JOINT_ALIGN = 32
JOINT_COMPONENTS = ("scale", "rotation", "translation")


@dataclass
class JointSection:
    """What ANK1 and ANF1 share: loop mode, the byte after it, length, the track table (joints, 3
    axes, 3 components) and the scale (f32), rotation (s16) and translation (f32) banks."""

    loop_mode: int
    byte: int  # ANK1: the rotation exponent; ANF1: a byte the game ignores
    length: int
    tracks: np.ndarray
    banks: tuple[np.ndarray, np.ndarray, np.ndarray]
    gaps: list[bytes] | None


def read_joint_section(r: Reader, section, tag: str, track_dtype: np.dtype, check) -> JointSection:
    """A joint section at ``r`` (after the file header); ``check(r, tracks, bank size, what, offset)``
    validates one component's tracks against its bank."""
    base = section.offset
    loop_mode, byte, length, joints = r.unpack("BBhH", f"{tag} header")
    counts = r.unpack("HHH", f"{tag} bank counts")
    offsets = r.unpack("IIII", f"{tag} block offsets")
    sizes = (joints * 9 * track_dtype.itemsize, counts[0] * 4, counts[1] * 2, counts[2] * 4)
    blocks = list(zip(offsets, sizes, strict=True))
    what = tuple(
        f"{tag} {name}" for name in ("track table", "scale bank", "rotation bank", "translation bank")
    )
    readers = [block_reader(r, base, o, s, w) for (o, s), w in zip(blocks, what, strict=True)]
    tracks = readers[0].array(track_dtype, joints * 9, what[0]).reshape(joints, 3, 3)
    banks = (
        readers[1].array(">f4", counts[0], what[1]),
        readers[2].array(">i2", counts[1], what[2]),
        readers[3].array(">f4", counts[2], what[3]),
    )
    for component, bank in enumerate(banks):
        check(
            r, tracks[:, :, component], len(bank), f"{tag} {JOINT_COMPONENTS[component]}", base + offsets[0]
        )
    gaps = read_gaps(section.data, JOINT_HEADER_SIZE, blocks, [JOINT_ALIGN] * 4)
    return JointSection(loop_mode, byte, length, tracks, banks, gaps)


def write_joint_section(tag: bytes, joint: JointSection, track_dtype: np.dtype) -> bytes:
    tracks = np.ascontiguousarray(joint.tracks, track_dtype)
    builder = SectionBuilder(tag, JOINT_HEADER_SIZE, joint.gaps)
    scale, rotation, translation = joint.banks
    offsets = (
        builder.block(tracks.tobytes(), JOINT_ALIGN),
        builder.block(np.asarray(scale, ">f4").tobytes(), JOINT_ALIGN),
        builder.block(np.asarray(rotation, ">i2").tobytes(), JOINT_ALIGN),
        builder.block(np.asarray(translation, ">f4").tobytes(), JOINT_ALIGN),
    )
    header = Writer(">")
    header.pack("BBhH", joint.loop_mode, joint.byte, joint.length, len(tracks))
    header.pack("HHH", len(scale), len(rotation), len(translation))
    header.pack("IIII", *offsets)
    return builder.finish(header.getvalue())


# -- keyframe tracks ---------------------------------------------------------------


def track_widths(tracks: np.ndarray) -> np.ndarray:
    """Bank entries each track uses: 0, 1 (a single value), or 3/4 per key."""
    count = tracks["count"].astype(np.int64)
    per_key = np.where(tracks["mode"] == TANGENT_SPLIT, 4, 3)
    return np.where(count >= 2, count * per_key, count)


def check_tracks(r: Reader, tracks: np.ndarray, bank_size: int, what: str, offset: int) -> None:
    """Every track's tangent mode is known and its keys lie inside its bank."""
    bad_mode = tracks["mode"] > TANGENT_SPLIT
    if bad_mode.any():
        raise r.error(
            f"{what} track has tangent mode {int(tracks['mode'][bad_mode][0])}, expected 0 or 1", offset
        )
    end = tracks["first"].astype(np.int64) + track_widths(tracks)
    outside = end > bank_size
    if outside.any():
        raise r.error(
            f"{what} track needs bank entries up to {int(end[outside][0])} but the bank holds {bank_size}",
            offset,
        )


@dataclass
class Keys:
    """Decoded keys of one track (all float64); single-value tracks have one key at time 0."""

    times: np.ndarray
    values: np.ndarray
    in_tangents: np.ndarray
    out_tangents: np.ndarray


def track_keys(track, bank: np.ndarray) -> Keys:
    return tracks_keys(np.asarray(track).reshape(1), bank)[0]


def tracks_keys(tracks: np.ndarray, bank: np.ndarray) -> tuple[Keys, np.ndarray]:
    """The keys of every track of ``tracks`` (M,) reading one bank, concatenated in track order, and
    each track's key count: ``track_keys`` of all at once."""
    counts = tracks["count"].astype(np.int64)
    stride = np.where(tracks["mode"] == TANGENT_SPLIT, 4, 3)
    track = np.repeat(np.arange(len(tracks)), counts)
    key = np.arange(len(track)) - np.repeat(np.cumsum(counts) - counts, counts)  # within its track
    at = tracks["first"].astype(np.int64)[track] + key * stride[track]
    keyed = np.flatnonzero(counts[track] >= 2)  # time, value, tangents; a single value alone
    times, in_tangents, out_tangents = np.zeros(len(track)), np.zeros(len(track)), np.zeros(len(track))
    values = bank[at].astype(np.float64)
    values[keyed] = bank[at[keyed] + 1]
    times[keyed] = bank[at[keyed]]
    in_tangents[keyed] = bank[at[keyed] + 2]
    out_tangents[keyed] = bank[at[keyed] + stride[track[keyed]] - 1]
    return Keys(times, values, in_tangents, out_tangents), counts


def key_entries(keys: Keys, mode: int) -> np.ndarray:
    """The bank entries of a track (float64): the inverse of ``track_keys``."""
    if len(keys.times) == 1:
        return keys.values.copy()
    columns = [keys.times, keys.values, keys.in_tangents]
    if mode == TANGENT_SPLIT:
        columns.append(keys.out_tangents)
    return np.stack(columns, axis=1).reshape(-1)


class BankBuilder:
    """A value bank built the way the game's files are: runs already present are shared."""

    def __init__(self, dtype: str, default: float | None, original: np.ndarray | None = None):
        """A bank starting with ``default`` (None: empty), or with ``original``'s entries as they are."""
        self.dtype = np.dtype(dtype)
        start = np.asarray(original if original is not None else [] if default is None else [default])
        self.data = bytearray(start.astype(self.dtype).tobytes())

    def add(self, entries: np.ndarray) -> int:
        """Index of ``entries`` in the bank, appending them when no identical run exists: entries
        already in the bank never change."""
        needle = np.asarray(entries, self.dtype).tobytes()
        size = self.dtype.itemsize
        at = self._find(needle)
        if at < 0:
            at = len(self.data) // size
            self.data += needle
            if len(self.data) // size > 0xFFFF:
                raise ValueError("a J3D bank holds at most 65535 entries: the animation is too long")
        return at

    def _find(self, needle: bytes) -> int:
        size = self.dtype.itemsize
        at = self.data.find(needle)
        while at >= 0 and at % size:
            at = self.data.find(needle, at + 1)
        return at // size if at >= 0 else -1

    def array(self) -> np.ndarray:
        return np.frombuffer(bytes(self.data), self.dtype).copy()


# -- name tables -------------------------------------------------------------------


def name_hash(name: bytes) -> int:
    h = 0
    for byte in name:
        h = (h * 3 + byte) & 0xFFFF
    return h


def read_names(r: Reader, offset: int, what: str = "name table") -> tuple[list[str], int]:
    """The names of the table at file offset ``offset`` and the bytes the table occupies.

    Strings follow the entries in order; hashes are checked (the game looks names up by them).
    """
    r.seek(offset, what)
    count, marker = r.unpack("HH", f"{what} header")
    if marker != 0xFFFF:
        raise r.error(f"{what} header expected 0xFFFF after the count, found 0x{marker:04X}", offset + 2)
    entries = r.array([("hash", "u2"), ("offset", "u2")], count, f"{what} entries")
    names = []
    size = 4 + 4 * count
    for index, entry in enumerate(entries):
        if int(entry["offset"]) != size:
            raise r.error(
                f"{what} string expected at +{size}, found +{int(entry['offset'])}", offset + 6 + 4 * index
            )
        start = offset + size
        end = r.data.find(b"\0", start, r.end)
        if end < 0:
            raise r.error(f"{what} string has no terminating NUL before the end of its section", start)
        raw = r.data[start:end]
        if name_hash(raw) != int(entry["hash"]):
            raise r.error(f"{what} hash of {raw!r} expected 0x{name_hash(raw):04X}", offset + 4 + 4 * index)
        names.append(raw.decode("shift_jis", errors="surrogateescape"))
        size += len(raw) + 1
    return names, size


def write_names(names: list[str]) -> bytes:
    encoded = [name.encode("shift_jis", errors="surrogateescape") for name in names]
    w = Writer(">")
    w.u16(len(encoded))
    w.u16(0xFFFF)
    offset = 4 + 4 * len(encoded)
    for raw in encoded:
        if offset > 0xFFFF:
            raise ValueError("name table strings exceed 64 KiB")
        w.u16(name_hash(raw))
        w.u16(offset)
        offset += len(raw) + 1
    for raw in encoded:
        w.bytes(raw + b"\0")
    return w.getvalue()


def identity_remap(count: int) -> np.ndarray:
    return np.arange(count, dtype=">u2")
