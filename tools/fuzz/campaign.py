"""A campaign: every target in turn, its inputs shared among the workers, each new defect
shrunk to a small input that still fails the same way and saved with a one-line description."""

from __future__ import annotations

import hashlib
import importlib
import itertools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .mutate import make_input
from .pool import Worker
from .protocol import Outcome, Request

MINIMISE_ATTEMPTS = {"exception": 300, "memory": 100, "crash": 10, "timeout": 6}  # by the cost of one try


@dataclass
class Options:
    seed: int = 0
    time_limit: float = 5.0  # seconds of wall time per input
    memory_factor: int = 10  # an input may add this many times its size of address space…
    memory_floor: int | None = None  # …and at least this much (None: the target's own floor)
    findings: Path = Path("build/fuzz-findings")
    module: str = "fuzz.targets"
    python_path: list[str] = field(default_factory=list)
    known: set[str] = field(default_factory=set)  # signatures of known defects: saved as found, not shrunk

    def request(self, target, seed_index: int, data: bytes) -> Request:
        floor = target.memory_floor if self.memory_floor is None else self.memory_floor
        allowance = max(self.memory_factor * len(data), floor)
        return Request(target.name, seed_index, data, self.time_limit, allowance)


@dataclass
class Budget:
    """Inputs per target (a fixed, reproducible budget) or seconds per target (a campaign)."""

    inputs: int | None = None
    seconds: float | None = None

    def spent(self, index: int, started: float) -> bool:
        if self.inputs is not None and index >= self.inputs:
            return True
        return self.seconds is not None and time.monotonic() - started >= self.seconds


@dataclass
class Finding:
    signature: str
    message: str
    frames: list[str]
    origin: str  # which input of which seed found it first ("input 12 of seed demo.tmd")
    found_size: int
    minimal: bytes = b""
    path: Path | None = None
    count: int = 1


@dataclass
class TargetResult:
    name: str
    refused_seeds: list[str] = field(default_factory=list)  # they still fuzz the reader, not what follows
    baseline_rss: int = 0  # of a worker with the target loaded
    baseline_address_space: int = 0
    inputs: int = 0
    accepted: int = 0
    seconds: float = 0.0
    peak_bytes: int = 0  # the most resident memory one input added…
    peak_input_size: int = 0  # …that input's size…
    peak_origin: str = ""  # …and which input it was
    findings: dict[str, Finding] = field(default_factory=dict)

    def record(self, outcome: Outcome, size: int, origin: str) -> None:
        self.inputs += 1
        self.accepted += outcome.verdict == "accepted"
        if outcome.peak_bytes > self.peak_bytes:
            self.peak_bytes, self.peak_input_size, self.peak_origin = outcome.peak_bytes, size, origin


def load_targets(options: Options):
    sys.path[:0] = [p for p in options.python_path if p not in sys.path]
    return importlib.import_module(options.module)


def minimise(data: bytes, still_fails: Callable[[bytes], bool], attempts: int) -> bytes:
    """Drop halves, then quarters, … then single bytes (the tail first) while the input still fails."""
    chunk = max(len(data) // 2, 1)
    while attempts > 0:
        end = len(data)
        while end > 0 and attempts > 0:
            start = max(end - chunk, 0)
            attempts -= 1
            if still_fails(data[:start] + data[end:]):
                data = data[:start] + data[end:]
            end = start
        if chunk == 1:
            break
        chunk //= 2
    return data


def save(finding: Finding, target: str, folder: Path) -> None:
    digest = hashlib.sha1(finding.signature.encode()).hexdigest()[:10]
    kind = finding.signature.split()[1]
    finding.path = folder / target / f"{kind}-{digest}.bin"
    finding.path.parent.mkdir(parents=True, exist_ok=True)
    finding.path.write_bytes(finding.minimal)
    sizes = f"{finding.found_size} bytes, {len(finding.minimal)} minimised"
    finding.path.with_suffix(".txt").write_text(
        f"{finding.signature}: {finding.message} ({finding.origin}; {sizes})\n"
    )


class TargetRun:
    """One target's share of the campaign, driven by one thread per worker."""

    def __init__(self, target, options: Options, budget: Budget):
        self.target, self.options, self.budget = target, options, budget
        self.name, self.seeds = target.name, target.seeds()
        self.seed_bytes = [seed.data for seed in self.seeds]
        self.result = TargetResult(self.name)
        self.lock = threading.Lock()
        self.counter = itertools.count()
        self.started = time.monotonic()
        self.failed = False  # a worker failed to prepare: the other stops too

    def drive(self, worker: Worker) -> None:
        prepared = worker.prepare(self.name)
        with self.lock:
            self.result.baseline_rss = max(self.result.baseline_rss, prepared.rss)
            self.result.baseline_address_space = max(
                self.result.baseline_address_space, prepared.address_space
            )
        while True:
            with self.lock:
                index = next(self.counter)
            if self.failed or self.budget.spent(index, self.started):
                return
            seed_index, data = make_input(self.seed_bytes, self.options.seed, self.name, index)
            outcome = worker.run(self.options.request(self.target, seed_index, data))
            if index < len(self.seeds) and outcome.verdict == "rejected":
                with self.lock:
                    self.result.refused_seeds.append(self.seeds[index].name)
            origin = f"input {index} of seed {self.seeds[seed_index].name}"
            if self.note(outcome, len(data), origin):
                self.shrink(worker, outcome, seed_index, data)

    def note(self, outcome: Outcome, size: int, origin: str) -> bool:
        """Count the outcome; True when it is a defect not met before in this run."""
        with self.lock:
            self.result.record(outcome, size, origin)
            if not outcome.defect:
                return False
            if outcome.signature in self.result.findings:
                self.result.findings[outcome.signature].count += 1
                return False
            self.result.findings[outcome.signature] = Finding(
                outcome.signature, outcome.message, outcome.frames, origin, size
            )
            return True

    def shrink(self, worker: Worker, outcome: Outcome, seed_index: int, data: bytes) -> None:
        def still_fails(candidate: bytes) -> bool:
            request = self.options.request(self.target, seed_index, candidate)
            return worker.run(request).signature == outcome.signature

        attempts = 0 if outcome.signature in self.options.known else MINIMISE_ATTEMPTS[outcome.verdict]
        minimal = minimise(data, still_fails, attempts)
        finding = self.result.findings[outcome.signature]
        finding.minimal = minimal
        save(finding, self.name, self.options.findings)


def fuzz_target(target, workers: list[Worker], options: Options, budget: Budget) -> TargetResult:
    run = TargetRun(target, options, budget)
    errors: list[BaseException] = []

    def drive(worker: Worker) -> None:
        try:
            run.drive(worker)
        except BaseException as error:  # re-raised in the campaign's thread
            run.failed = True
            errors.append(error)

    threads = [threading.Thread(target=drive, args=(worker,)) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    run.result.seconds = time.monotonic() - run.started
    return run.result
