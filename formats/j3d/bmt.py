"""BMT: an alternate material set (``J3D2bmt3``): a MAT3 section and optionally TEX1.

``cut_from_model`` makes one from any BMD/BDL by keeping its MAT3 and TEX1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import FormatError
from .container import MODEL_MAGIC, Framing, RawSection, read_container, write_container
from .mat3 import MAT3, read_mat3, write_mat3
from .tex1 import TEX1, read_tex1, write_tex1

KIND = b"bmt3"
MODEL_KINDS = (b"bmd3", b"bdl4", b"bmd2")
DEFAULT_TAG = b"SVR3" + b"\xff" * 12


@dataclass
class BMT:
    sections: list[MAT3 | TEX1 | RawSection]  # in file order; other sections are kept verbatim
    framing: Framing = field(default_factory=lambda: Framing(tag=DEFAULT_TAG))

    @property
    def mat3(self) -> MAT3:
        return next(s for s in self.sections if isinstance(s, MAT3))

    @property
    def tex1(self) -> TEX1 | None:
        return next((s for s in self.sections if isinstance(s, TEX1)), None)


def _parse(data: bytes, sections: list[RawSection], filename: str) -> list[MAT3 | TEX1 | RawSection]:
    parsed: list[MAT3 | TEX1 | RawSection] = []
    for section in sections:
        if section.magic == b"MAT3":
            parsed.append(read_mat3(data, section.offset, len(section.data), filename))
        elif section.magic == b"TEX1":
            parsed.append(read_tex1(data, section.offset, len(section.data), filename))
        else:
            parsed.append(section)
    if not any(isinstance(s, MAT3) for s in parsed):
        raise FormatError(filename, 0x20, "expected a MAT3 section")
    return parsed


def read(data: bytes, filename: str = "<bytes>") -> BMT:
    container = read_container(data, filename, MODEL_MAGIC, (KIND,))
    return BMT(_parse(data, container.sections, filename), container.framing)


def cut_from_model(data: bytes, filename: str = "<bytes>") -> BMT:
    """The materials and textures of a BMD/BDL model as a BMT."""
    container = read_container(data, filename, MODEL_MAGIC, MODEL_KINDS)
    kept = [s for s in container.sections if s.magic in (b"MAT3", b"TEX1")]
    return BMT(_parse(data, kept, filename), Framing(tag=container.framing.tag))


def write(bmt: BMT) -> bytes:
    sections = []
    for section in bmt.sections:
        if isinstance(section, MAT3):
            sections.append(write_mat3(section))
        elif isinstance(section, TEX1):
            sections.append(write_tex1(section))
        else:
            sections.append(section.data)
    return write_container(MODEL_MAGIC, KIND, sections, bmt.framing)
