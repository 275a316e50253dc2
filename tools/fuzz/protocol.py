"""What the campaign and its workers say to each other, and how a defect is named.

Messages are length-prefixed pickles over the worker's stdin and stdout (both ends run this code).
A defect's signature (target, kind, exception type, innermost add-on frame) is what makes two
defects the same one: the minimiser keeps an input only while it fails with the same signature,
and the known-defects list holds signatures.
"""

from __future__ import annotations

import os
import pickle
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).resolve().parent
LENGTH = struct.Struct("<Q")
FRAME = re.compile(r'File "([^"]+)", line (\d+),? in (\S+)')
DEFECT_KINDS = ("exception", "timeout", "memory", "crash")


class OperatorTraceback(Exception):
    """An exception escaped a Blender operator; the message is the traceback Blender reports."""


@dataclass
class Prepare:
    """Load a target and make its seeds (slow imports happen outside the time limit)."""

    target: str


@dataclass
class Prepared:
    rss: int  # resident bytes once the target is loaded: the interpreter's baseline for it
    address_space: int


@dataclass
class Request:
    target: str
    seed_index: int
    data: bytes
    time_limit: float  # seconds of wall time
    memory_allowance: int  # bytes of address space the input may add to the worker's


@dataclass
class Outcome:
    verdict: str  # "accepted", "rejected" (a FormatError: right), or one of DEFECT_KINDS
    signature: str = ""
    message: str = ""  # one line: exception type and message
    frames: list[str] = field(default_factory=list)  # innermost add-on frames, "file:line function"
    peak_bytes: int = 0  # resident memory the input added at its peak
    seconds: float = 0.0

    @property
    def defect(self) -> bool:
        return self.verdict in DEFECT_KINDS


def send(stream, message) -> None:
    payload = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    stream.write(LENGTH.pack(len(payload)) + payload)
    stream.flush()


def receive(stream):
    """The next message, or None at the end of the stream."""
    head = stream.read(LENGTH.size)
    if len(head) < LENGTH.size:
        return None
    return pickle.loads(stream.read(LENGTH.unpack(head)[0]))


def project_frames(text: str, innermost_first: bool = False) -> list[tuple[str, int, str]]:
    """(file relative to the add-on, line, function) of each add-on frame in a traceback's text,
    innermost last. The harness's own frames count only when no other add-on frame is there."""
    frames = []
    for path, line, function in FRAME.findall(text):
        resolved = Path(path).resolve()
        inside = Path(path).is_absolute() and resolved.is_relative_to(ROOT)
        if inside and not any(part.startswith(".venv") for part in resolved.relative_to(ROOT).parts):
            frames.append((resolved, int(line), function))  # the add-on's, not a package in its venv
    if innermost_first:
        frames.reverse()
    code_under_test = [frame for frame in frames if not frame[0].is_relative_to(HARNESS)]
    return [
        (os.path.relpath(path, ROOT), line, function) for path, line, function in code_under_test or frames
    ]


def describe(target: str, kind: str, what: str, message: str, frames: list[tuple[str, int, str]], where=None):
    """The Outcome of a defect: ``what`` is the exception type (or the signal), ``where`` overrides
    the innermost add-on frame as the place the signature names."""
    if where is None:
        where = f"{frames[-1][0]}:{frames[-1][2]}" if frames else "?"
    signature = " ".join(part for part in (target, kind, what, "at", where) if part)
    shown = [f"{path}:{line} {function}" for path, line, function in frames[-3:]]
    return Outcome(kind, signature, " ".join(message.split())[:300], shown)
