"""Fuzz targets with planted defects: the harness must call each a defect, and a FormatError right."""

import ctypes
import signal
import time

from fuzz.targets import Seed, Target
from retro_models.formats.errors import FormatError

SLEEP_SECONDS = 30  # far past any limit the tests give


def refuse(data: bytes, seed: Seed):
    raise FormatError(seed.name, 0, "a bad file")


def index_error(data: bytes, seed: Seed):
    return data[len(data) + 1]


def sleep(data: bytes, seed: Seed):
    time.sleep(SLEEP_SECONDS)


def hang_without_alarm(data: bytes, seed: Seed):
    """Stuck where the alarm cannot reach, as in a long C call: the worker's watchdog must act."""
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
    time.sleep(SLEEP_SECONDS)


def allocate(data: bytes, seed: Seed):
    return bytearray(1 << 30)


def crash(data: bytes, seed: Seed):
    return ctypes.string_at(0)


def fake(name, run) -> Target:
    # An empty seed: the first input is the seed itself, which leaves nothing to minimise.
    return Target(name, run, lambda: [Seed("empty.bin", b"")])


TARGETS = {
    t.name: t
    for t in (
        fake("fake.format_error", refuse),
        fake("fake.index_error", index_error),
        fake("fake.sleep", sleep),
        fake("fake.hang", hang_without_alarm),
        fake("fake.allocate", allocate),
        fake("fake.crash", crash),
    )
}
OK_ERRORS = (FormatError,)
