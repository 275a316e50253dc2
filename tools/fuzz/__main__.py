"""Fuzz every file reader (read + to_scene) and the Blender import with mutated files.

    PYTHONPATH=tools python -m fuzz --minutes 30            # a campaign: time split among targets
    PYTHONPATH=tools python -m fuzz --inputs 500 --seed 1   # a fixed, reproducible budget

Anything but a FormatError (for the Blender import: anything but a reported error that leaves
bpy.data as it was) is a defect: another exception, a hang past --time-limit, an allocation past
the memory limit, a crash. Each new defect is shrunk and saved under --findings. The exit status
is 1 when a defect is not in the --known list. ``make fuzz`` and ``make fuzz-ci`` run the
project's two campaigns.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from .campaign import Budget, Options, fuzz_target, load_targets
from .pool import Worker
from .report import load_known, report

BLENDER_SHARE = 0.25  # of a timed campaign: imports are slow, and each covers a whole family


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n\n")[0])
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument("--minutes", type=float, help="campaign length, split among the targets")
    budget.add_argument("--inputs", type=int, help="inputs per file-reader target")
    parser.add_argument(
        "--blender-inputs", type=int, help="inputs for the Blender import (default: inputs / 5)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="campaign seed: the same seed makes the same inputs"
    )
    parser.add_argument("--targets", help="comma-separated target names (default: all)")
    parser.add_argument("--no-blender", action="store_true", help="leave out the Blender import")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--time-limit", type=float, default=5.0, help="seconds per input")
    parser.add_argument(
        "--memory-factor", type=int, default=10, help="address space an input may add, × its size"
    )
    parser.add_argument(
        "--memory-floor-mb", type=int, help="… and at least this much (default: 32, Blender import 256)"
    )
    parser.add_argument("--findings", type=Path, default=Path("build/fuzz-findings"))
    parser.add_argument("--known", type=Path, help="known-defects list: those do not fail the run")
    parser.add_argument("--module", default="fuzz.targets", help="module providing TARGETS and OK_ERRORS")
    parser.add_argument("--path", action="append", default=[], help="extra import path for --module")
    return parser.parse_args(argv)


def plan(targets: dict, args: argparse.Namespace) -> list[tuple[object, Budget]]:
    chosen = [targets[name] for name in args.targets.split(",")] if args.targets else list(targets.values())
    chosen = [t for t in chosen if not (args.no_blender and t.blender)]
    if args.inputs is not None:
        blender_inputs = args.blender_inputs if args.blender_inputs is not None else args.inputs // 5
        return [(t, Budget(inputs=blender_inputs if t.blender else args.inputs)) for t in chosen]
    seconds = args.minutes * 60
    pure = [t for t in chosen if not t.blender]
    blender_seconds = seconds * BLENDER_SHARE if len(pure) < len(chosen) else 0.0
    pure_seconds = (seconds - blender_seconds) / max(len(pure), 1)
    return [(t, Budget(seconds=blender_seconds if t.blender else pure_seconds)) for t in chosen]


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    known = load_known(args.known)
    options = Options(
        seed=args.seed,
        time_limit=args.time_limit,
        memory_factor=args.memory_factor,
        memory_floor=None if args.memory_floor_mb is None else args.memory_floor_mb << 20,
        findings=args.findings,
        module=args.module,
        python_path=[str(Path(p).resolve()) for p in args.path],
        known=set(known),
    )
    module = load_targets(options)
    corpus = getattr(module, "CORPUS", None)
    if corpus is not None and not corpus.is_dir():
        print(f"note: {corpus} is absent: seeds are the project's own files only", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="retro_models_fuzz_") as logs:
        workers = [
            Worker(options.module, options.python_path, Path(logs) / f"worker{i}.log")
            for i in range(args.workers)
        ]
        try:
            for target, budget in plan(module.TARGETS, args):
                result = fuzz_target(target, workers, options, budget)
                print(
                    f"{target.name}: {result.inputs} inputs, {len(result.findings)} defects ({result.seconds:.0f} s)",
                    flush=True,
                )
                results.append(result)
        finally:
            for worker in workers:
                worker.stop()
    lines, new = report(results, known)
    print("\n".join(lines))
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
