"""A worker process: runs the inputs of fuzz targets one at a time, each under a wall-time limit
and an address-space limit, and says what happened and how much memory it took.

    python -m fuzz.worker TARGETS_MODULE

TARGETS_MODULE provides ``TARGETS`` (name → Target) and ``OK_ERRORS`` (the right answers to a
bad file). Messages are on stdin and stdout (``protocol``); whatever the code under test prints
goes to stderr, where faulthandler also writes the stack of a crash or a hang the alarm cannot
interrupt (both read by the pool). Linux only: limits and peaks come from /proc and setrlimit.
"""

from __future__ import annotations

import ctypes
import faulthandler
import importlib
import os
import resource
import signal
import sys
import time
import traceback

from .protocol import (
    OperatorTraceback,
    Outcome,
    Prepare,
    Prepared,
    Request,
    describe,
    project_frames,
    receive,
    send,
)

WATCHDOG_SECONDS = 1.0  # after the limit: dump the stacks and exit, if the alarm found no Python to stop
_, UNLIMITED = resource.getrlimit(resource.RLIMIT_AS)
LIBC = ctypes.CDLL("libc.so.6")


class InputTimeout(BaseException):
    """Raised by the alarm; a BaseException so that code under test catching Exception lets it through."""


class Alarm:
    armed = False

    @classmethod
    def ring(cls, signum, frame):
        if cls.armed:
            raise InputTimeout("the input ran past its time limit")


def status(field: str) -> int:
    """A /proc/self/status memory figure, in bytes."""
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def reset_peak() -> int:
    """Start a new resident-memory peak (Linux clear_refs 5); returns the resident bytes now.

    Free heap memory goes back to the system first, or an input would reuse pages that earlier
    ones left resident and its peak would read as nothing."""
    LIBC.malloc_trim(0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return status("VmRSS")


def final_exception(text: str) -> tuple[str, str]:
    """(type, message) of the exception a traceback's text ends with."""
    lines = text.splitlines()
    last_frame = max((i for i, line in enumerate(lines) if line.startswith('  File "')), default=-1)
    line = next((line for line in lines[last_frame + 1 :] if not line[:1].isspace()), "?")
    what, _, message = line.partition(": ")
    return what.rsplit(".", 1)[-1], message


def defect_kind(exception_type: str) -> str:
    if exception_type == InputTimeout.__name__:
        return "timeout"
    if exception_type.endswith("MemoryError"):  # numpy's _ArrayMemoryError too
        return "memory"
    return "exception"


def classify(target: str, error: BaseException) -> Outcome:
    if isinstance(error, OperatorTraceback):
        text = str(error)
        what, message = final_exception(text)
    else:
        text = "".join(traceback.format_exception(error))
        what, message = type(error).__name__, str(error)
    return describe(
        target,
        defect_kind(what),
        "" if defect_kind(what) == "timeout" else what,
        f"{what}: {message}",
        project_frames(text),
        getattr(error, "where", None),
    )


def run_limited(targets, request: Request, seed) -> Outcome:
    """One input under the limits; the resident memory it added at its peak."""
    targets.TARGETS[request.target].set_up(seed)
    # The watchdog thread first: under the address-space limit its stack might not fit.
    faulthandler.dump_traceback_later(request.time_limit + WATCHDOG_SECONDS, exit=True)
    rss = reset_peak()
    resource.setrlimit(resource.RLIMIT_AS, (status("VmSize") + request.memory_allowance, UNLIMITED))
    start = time.perf_counter()
    Alarm.armed = True
    signal.setitimer(signal.ITIMER_REAL, request.time_limit)
    try:
        targets.TARGETS[request.target].run(request.data, seed)
        outcome = Outcome("accepted")
    except targets.OK_ERRORS:
        outcome = Outcome("rejected")
    except BaseException as error:  # whatever else escapes is what the fuzzer is looking for
        outcome = classify(request.target, error)
    finally:
        Alarm.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        resource.setrlimit(resource.RLIMIT_AS, (UNLIMITED, UNLIMITED))
        faulthandler.cancel_dump_traceback_later()
    outcome.seconds = time.perf_counter() - start
    outcome.peak_bytes = max(status("VmHWM") - rss, 0)
    return outcome


def prepare(targets, name: str) -> Prepared:
    targets.TARGETS[name].load()
    seeds_of(targets, name)
    return Prepared(status("VmRSS"), status("VmSize"))


SEEDS: dict[str, list] = {}


def seeds_of(targets, name: str) -> list:
    if name not in SEEDS:
        SEEDS[name] = targets.TARGETS[name].seeds()
    return SEEDS[name]


def main() -> None:
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the code under test prints must not mix with the messages
    faulthandler.enable()
    targets = importlib.import_module(sys.argv[1])
    signal.signal(signal.SIGALRM, Alarm.ring)
    while (message := receive(sys.stdin.buffer)) is not None:
        if isinstance(message, Prepare):
            send(protocol, prepare(targets, message.target))
        else:
            seed = seeds_of(targets, message.target)[message.seed_index]
            send(protocol, run_limited(targets, message, seed))


if __name__ == "__main__":
    main()
