"""Texture CATs: named resources in payloads that bundle several textures (measured on a PC pair).

The name list has one line per *resource*: ``TYPE,package,resource`` opens the next payload and
``,,resource`` adds a resource to the current one. A payload is

- a Tamsoft bundle: u32 header size (12 + 4·count rounded up to 16), u32 count, u32 data size, one
  u32 offset per resource counted from the end of the header; a resource runs to the next offset,
  the last one to the data size; anything after the data block is padding. Resources are DDS files
  on PC (the type "GXT" is only a label) and presumably Sony GXT files on the Vita;
- or a bare DDS file (one resource), or a bare GXT file whose textures take the payload's names in
  order.

``read_bundle`` / ``write_bundle`` keep every byte (the header's padding, the padding after the data
block), so an unchanged payload is written back as it was; ``rebuild`` puts new resources in (each
new one padded to 16 bytes) and recomputes the offsets and the data size.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace

from ..errors import FormatError
from ..textures import dds, gxt
from . import cat, tmd0

BUNDLE_HEAD = struct.Struct("<3I")
ALIGN = 16


@dataclass
class Entry:
    """The name-list lines of one payload."""

    type: str
    package: str
    names: list[str] = field(default_factory=list)


@dataclass
class Bundle:
    header_size: int
    resources: list[bytes]  # each up to the next offset (the last one to the data size)
    header_padding: bytes = b""  # between the offsets and the header size
    tail: bytes = b""  # after the data block


@dataclass
class Resource:
    """One named texture of a texture CAT."""

    name: str
    payload: int
    slot: int  # the resource within a bundle, or the texture within a bare GXT
    kind: str  # "bundle", "dds" (a bare DDS payload), "gxt" (a texture of a bare GXT payload), "other"
    data: bytes  # the resource's file (a bare GXT: the whole payload)

    @property
    def format(self) -> str:
        """What the resource's bytes are: "DDS", "GXT" or their first four bytes."""
        if self.data[:4] == dds.MAGIC:
            return "DDS"
        if self.data[:4] == gxt.MAGIC:
            return "GXT"
        return repr(self.data[:4])


def entries(container: cat.CAT) -> list[Entry]:
    """One entry per payload from the name list (a line with a type or package opens the next one)."""
    out: list[Entry] = []
    for fields in container.lines():
        kind, package, name = (fields[0], "", fields[-1]) if len(fields) < 3 else fields[:3]
        kind, package, name = kind.strip(), package.strip(), name.strip()
        if kind or package or not out:
            out.append(Entry(kind, package, [name]))
        else:
            out[-1].names.append(name)
    return out


def resource_names(container: cat.CAT) -> list[str]:
    """Every resource name of the name list, in order (a model CAT names the model's textures so)."""
    return [name for entry in entries(container) for name in entry.names]


def package_name(container: cat.CAT) -> str:
    """The package of the first line ("" when the list has none)."""
    found = entries(container)
    return found[0].package if found else ""


def is_bundle(payload: bytes) -> bool:
    """Whether ``payload`` starts with a consistent bundle header (not a DDS or GXT file)."""
    if len(payload) < BUNDLE_HEAD.size or payload[:4] in (dds.MAGIC, gxt.MAGIC):
        return False
    header_size, count, data_size = BUNDLE_HEAD.unpack_from(payload)
    if count == 0 or BUNDLE_HEAD.size + 4 * count > header_size or header_size + data_size > len(payload):
        return False
    offsets = struct.unpack_from(f"<{count}I", payload, BUNDLE_HEAD.size)
    return offsets[0] == 0 and all(a <= b for a, b in zip(offsets, (*offsets[1:], data_size), strict=True))


def read_bundle(payload: bytes, filename: str = "<bytes>", base: int = 0) -> Bundle:
    """The bundle in ``payload``; ``base``: where the payload starts in ``filename`` (for errors)."""
    if not is_bundle(payload):
        raise FormatError(
            filename, base, "expected a texture bundle header (size, count, data size, offsets)"
        )
    header_size, count, data_size = BUNDLE_HEAD.unpack_from(payload)
    offsets = struct.unpack_from(f"<{count}I", payload, BUNDLE_HEAD.size)
    ends = (*offsets[1:], data_size)
    resources = [payload[header_size + a : header_size + b] for a, b in zip(offsets, ends, strict=True)]
    return Bundle(
        header_size,
        resources,
        payload[BUNDLE_HEAD.size + 4 * count : header_size],
        payload[header_size + data_size :],
    )


def write_bundle(bundle: Bundle) -> bytes:
    offsets, position = [], 0
    for resource in bundle.resources:
        offsets.append(position)
        position += len(resource)
    head = BUNDLE_HEAD.pack(bundle.header_size, len(bundle.resources), position)
    head += struct.pack(f"<{len(offsets)}I", *offsets) + bundle.header_padding
    return head + b"".join(bundle.resources) + bundle.tail


def rebuild(bundle: Bundle, changed: dict[int, bytes]) -> Bundle:
    """``bundle`` with the resources in ``changed`` (index → new file) replaced, each padded to 16."""
    resources = [
        changed[i] + bytes(-len(changed[i]) % ALIGN) if i in changed else r
        for i, r in enumerate(bundle.resources)
    ]
    return replace(bundle, resources=resources)


def resources(container: cat.CAT, filename: str = "<bytes>") -> list[Resource]:
    """Every resource of a texture CAT, named from its name list (``texture_<payload>_<n>`` when unnamed);
    a tmd0 payload is a model, not a resource."""
    found = entries(container)
    out = []
    for index, payload in enumerate(container.payloads):
        names = found[index].names if index < len(found) else []

        def name(k: int, names=names, index=index) -> str:
            return names[k] if k < len(names) and names[k] else f"texture_{index}_{k}"

        if is_bundle(payload):
            bundle = read_bundle(payload, filename, container.payload_offset(index))
            out += [Resource(name(k), index, k, "bundle", r) for k, r in enumerate(bundle.resources)]
        elif payload[:4] == gxt.MAGIC and _gxt_count(payload) > 1:
            out += [Resource(name(k), index, k, "gxt", payload) for k in range(_gxt_count(payload))]
        elif payload and payload[:4] not in tmd0.MAGICS:
            kind = {dds.MAGIC: "dds", gxt.MAGIC: "gxt"}.get(payload[:4], "other")
            out.append(Resource(name(0), index, 0, kind, payload))
    return out


def find(found: list[Resource], name: str) -> Resource | None:
    """The first resource called ``name`` (names compare without case, as the game's files do on PC)."""
    wanted = name.lower()
    return next((r for r in found if r.name.lower() == wanted), None)


def _gxt_count(data: bytes) -> int:
    """The textures of a bare GXT payload (1 for one that does not read: its image says why)."""
    try:
        return len(gxt.read(data).textures)
    except FormatError:
        return 1


def model_textures(
    count: int, names: list[str], found: list[Resource]
) -> tuple[list[tuple[str, Resource | None]], list[str]]:
    """(name, resource) per model texture, and warnings. Texture *i* is the *i*-th resource named by
    the model's CAT (``names``), looked up by name among ``found`` (the texture CAT's resources); a
    texture the model's CAT does not name takes the *i*-th resource."""
    out, missing = [], []
    for i in range(count):
        if i < len(names) and names[i]:
            resource = find(found, names[i])
            if resource is None:
                missing.append(names[i])
            out.append((names[i], resource))
        elif i < len(found):
            out.append((found[i].name, found[i]))
        else:
            out.append((f"texture_{i}", None))
    warnings = [f"not in the texture CAT: {', '.join(missing)}"] if missing else []
    return out, warnings
