"""Long-lived worker processes for the campaign, started again after a crash, a hang or a
memory defect (the state of a process after those is not to be trusted)."""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import subprocess
import sys
from pathlib import Path
from time import monotonic

from .protocol import HARNESS, LENGTH, Outcome, Prepare, Prepared, Request, describe, project_frames, send

GRACE_SECONDS = 3.0  # past the limit and the worker's own watchdog: the pool kills it
PREPARE_SECONDS = 300.0  # loading a target (bpy takes seconds) and making its seeds
LOG_LIMIT = 1 << 20  # bytes of worker output kept; only the tail after the last input matters
RESTART_VERDICTS = ("timeout", "memory")


class WorkerFailed(RuntimeError):
    """A worker could not load a target: the harness, not an input, is at fault."""


class Worker:
    """One worker process and its log (stderr): what it runs, it runs one input at a time."""

    def __init__(self, module: str, python_path: list[str], log: Path):
        self.module = module
        self.python_path = python_path
        self.log = log
        self.process: subprocess.Popen | None = None
        self.prepared: dict[str, Prepared] = {}
        self.timed_out = False  # the last exchange ended at its deadline, not at an answer or exit

    def start(self) -> None:
        paths = [str(HARNESS.parent), *self.python_path, os.environ.get("PYTHONPATH", "")]
        # One BLAS thread: workers run side by side, and each thread would reserve address space.
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, paths)),
            "OPENBLAS_NUM_THREADS": "1",
            # A fixed threshold: large blocks are unmapped when freed instead of staying in the heap,
            # where they would let a later input allocate past its address-space limit unnoticed.
            "MALLOC_MMAP_THRESHOLD_": "131072",
            "FUZZ_SCRATCH": str(self.log.with_suffix(".files")),  # where a target may write files
        }
        with open(self.log, "ab") as log:  # append mode: the pool may truncate it between inputs
            self.process = subprocess.Popen(
                [sys.executable, "-m", "fuzz.worker", self.module],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                start_new_session=True,  # Ctrl-C stops the campaign, which stops its workers
            )
        self.prepared = {}

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()
        self.process = None

    def read_exactly(self, size: int, deadline: float) -> bytes | None:
        chunks, remaining = [], size
        fd = self.process.stdout.fileno()
        while remaining:
            ready, _, _ = select.select([fd], [], [], max(deadline - monotonic(), 0))
            chunk = os.read(fd, remaining) if ready else b""
            if not chunk:
                return None
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)

    def exchange(self, message, seconds: float):
        """The worker's reply, or None when it died or did not answer in time."""
        deadline = monotonic() + seconds
        self.timed_out = False
        try:
            send(self.process.stdin, message)
        except BrokenPipeError:
            return None
        head = self.read_exactly(LENGTH.size, deadline)
        payload = head and self.read_exactly(LENGTH.unpack(head)[0], deadline)
        self.timed_out = monotonic() >= deadline
        return pickle.loads(payload) if payload else None

    def prepare(self, target: str) -> Prepared:
        if self.process is None:
            self.start()
        if target not in self.prepared:
            log_start = self.log_position()
            reply = self.exchange(Prepare(target), PREPARE_SECONDS)
            if reply is None:
                self.stop()
                tail = self.log.read_bytes()[log_start:].decode(errors="replace")
                raise WorkerFailed(f"worker could not prepare {target}:\n{tail[-3000:]}")
            self.prepared[target] = reply
        return self.prepared[target]

    def log_position(self) -> int:
        if self.log.stat().st_size > LOG_LIMIT:
            os.truncate(self.log, 0)
        return self.log.stat().st_size

    def run(self, request: Request) -> Outcome:
        self.prepare(request.target)
        log_start = self.log_position()
        outcome = self.exchange(request, request.time_limit + GRACE_SECONDS)
        if outcome is None:
            return self.death(request.target, log_start)
        if outcome.verdict in RESTART_VERDICTS:
            self.stop()
        return outcome

    def death(self, target: str, log_start: int) -> Outcome:
        """What killed the worker, from its exit status and what faulthandler wrote."""
        process = self.process
        if not self.timed_out:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(GRACE_SECONDS)  # it closed its pipe: let it finish dying, for its status
        self.stop()
        text = self.log.read_bytes()[log_start:].decode(errors="replace")
        frames = project_frames(text, innermost_first=True)  # faulthandler prints the innermost first
        if self.timed_out or "Timeout (" in text:
            return describe(
                target, "timeout", "", "no answer within the time limit (stuck outside Python)", frames
            )
        code = process.returncode
        what = signal.Signals(-code).name if code < 0 else f"exit-{code}"
        fatal = next((line for line in text.splitlines() if line.startswith("Fatal Python error")), "")
        return describe(target, "crash", what, fatal or f"the worker died ({what})", frames)
