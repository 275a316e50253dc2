"""The CAT container that ships tmd0 models and their textures on PC.

Layout: u32 header size (0x40 seen), u32 payload offsets (from the start of the
CAT) ended by 0xFFFFFFFF, then a text name list with one comma-separated line
per resource (``TMD_TOON,<package>,<resource>`` opens a payload, ``,,<resource>``
adds to it; see ``texture_cat``) and padding, then the payloads. A model CAT
holds one tmd0 and names its textures; the texture CAT next to it (same name
with ``_tex_`` for ``_mdl_``) holds them by name.

The reader keeps the bytes between the offset table and the first payload
(the name list and its padding) and each payload up to the next one, so
``write(read(b)) == b``; the writer derives the offsets from the payload sizes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..binary import Reader, Writer
from ..errors import FormatError
from ..files import find_file, search_folders
from . import tmd0

END_OF_OFFSETS = 0xFFFFFFFF
ALIGN = 16
DETECT_BYTES = 4096  # what detection looks at: the offsets, the name list and the first payload's magic


@dataclass
class CAT:
    endian: str = "<"
    header_size: int = 0x40
    name_block: bytes = b""  # the text name list and padding before the first payload
    payloads: list[bytes] = field(default_factory=list)  # each up to the next payload

    def lines(self) -> list[list[str]]:
        """The name list: one list of comma-separated fields per line."""
        text = self.name_block.replace(b"\0", b"\n").decode("utf-8", errors="replace")
        return [line.strip().split(",") for line in text.splitlines() if line.strip()]

    def names(self) -> list[str]:
        """One readable name per line of the name list (its last field)."""
        return [fields[-1].strip() for fields in self.lines()]

    def payload_offset(self, index: int) -> int:
        """Where payload ``index`` starts in the file: after the header word, the offsets and the name list."""
        start = 4 + 4 * (len(self.payloads) + 1) + len(self.name_block)
        return start + sum(len(p) for p in self.payloads[:index])


def detect(data: bytes) -> bool:
    """A CAT, told from its first ``DETECT_BYTES``: offsets that rise and end with 0xFFFFFFFF, then a
    tmd0 model or a readable name list."""
    head = bytes(data[:DETECT_BYTES])
    if len(head) < 8:
        return False
    order = "little" if int.from_bytes(head[:4], "little") <= int.from_bytes(head[:4], "big") else "big"
    words = [int.from_bytes(head[i : i + 4], order) for i in range(4, len(head) - 3, 4)]
    if END_OF_OFFSETS not in words:
        return False
    offsets = words[: words.index(END_OF_OFFSETS)]
    table_end = 8 + 4 * len(offsets)
    if (
        not offsets
        or offsets[0] < table_end
        or any(b < a for a, b in zip(offsets, offsets[1:], strict=False))
    ):
        return False
    if head[offsets[0] : offsets[0] + 4] in tmd0.MAGICS:
        return True
    text = head[table_end : offsets[0]].split(b"\0", 1)[0]
    return b"," in text and all(c >= 32 or c in b"\r\n\t" for c in text)  # text (UTF-8 names allowed)


def read(data: bytes, filename: str = "<bytes>") -> CAT:
    data = bytes(data)
    if len(data) < 8:
        raise FormatError(filename, len(data), "expected a CAT header (8 bytes at least)")
    # The header size (0x40) is a small number in the file's byte order.
    endian = "<" if int.from_bytes(data[:4], "little") <= int.from_bytes(data[:4], "big") else ">"
    r = Reader(data, endian, filename)
    header_size = r.u32("header size")
    offsets = []
    while (value := r.u32("payload offset or 0xFFFFFFFF")) != END_OF_OFFSETS:
        offsets.append(value)
    table_end = r.pos
    previous = table_end
    for i, offset in enumerate(offsets):
        if not previous <= offset <= len(data):
            raise r.error(f"payload {i} starts at {offset}, outside {previous}..{len(data)}", 4 + 4 * i)
        previous = offset
    ends = offsets[1:] + [len(data)] if offsets else []  # a CAT may hold no payload at all
    first = offsets[0] if offsets else len(data)
    payloads = [data[start:end] for start, end in zip(offsets, ends, strict=True)]
    return CAT(endian, header_size, data[table_end:first], payloads)


def write(cat: CAT) -> bytes:
    w = Writer(cat.endian)
    w.u32(cat.header_size)
    for index in range(len(cat.payloads)):
        w.u32(cat.payload_offset(index))
    w.u32(END_OF_OFFSETS)
    w.bytes(cat.name_block)
    for payload in cat.payloads:
        w.bytes(payload)
    return w.getvalue()


def model_index(cat: CAT, filename: str = "<bytes>") -> int:
    """The payload holding the tmd0 model."""
    for i, payload in enumerate(cat.payloads):
        if payload[:4] in tmd0.MAGICS:
            return i
    raise FormatError(filename, 0, "the CAT holds no tmd0 model")


def replace_payload(cat: CAT, index: int, data: bytes) -> CAT:
    """A copy of ``cat`` with payload ``index`` replaced (a changed payload is padded to 16 bytes)."""
    payloads = list(cat.payloads)
    data = bytes(data)
    payloads[index] = data if data == payloads[index] else data + bytes(-len(data) % ALIGN)
    return CAT(cat.endian, cat.header_size, cat.name_block, payloads)


def texture_cat_name(model_path: Path) -> Path | None:
    """Where the texture CAT of a model CAT is (``_mdl_`` → ``_tex_``); None when the name has no ``_mdl_``."""
    name = model_path.name
    at = name.lower().rfind("_mdl_")
    if at < 0:
        return None
    return model_path.with_name(
        name[:at] + name[at : at + 5].replace("mdl", "tex").replace("MDL", "TEX") + name[at + 5 :]
    )


def texture_cat_path(model_path: Path, texture_folder: str = "") -> Path | None:
    """The texture CAT of a model CAT, next to it, else in ``texture_folder`` (any case); None when
    there is none."""
    candidate = texture_cat_name(model_path)
    found = candidate and find_file(search_folders(str(model_path), texture_folder), candidate.name)
    return Path(found) if found else None
