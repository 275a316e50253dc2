"""Batch import: many files into .blend files, on every core.

    blender -b -c retro_import [options] INPUT...          (the installed extension)
    python tools/batch_import.py [options] INPUT...         (a source checkout, with the bpy module)

INPUTs are files, folders (searched recursively) and glob patterns. Each file's family is
found by its content (formats/registry.py); files found in folders or by globs that are not
models (textures, companion files, archives without models) are skipped and listed. A file that applies to a selection
(J3D animations, TMRF animation-only files) goes onto the armature of the model imported just
before it from its folder, as the import operator puts it on the selected armature.

Worker processes (``-j``, every core by default) each run their own Blender (one BLAS thread each:
the cores are the workers'), the longest jobs first; this process only plans, prints and, for
``--out``, joins the workers' .blend files into one. An archive of several models is one job: its
models are imported together, as File > Import does (appending one model's .blend to another's in
Blender costs more than importing it there). A job that would still finish long after the others is
split into parts (``split_counts``, formats/parts.py): each imports the model with its share of the
animations, and the worker of part 0, its import still open, appends the others' actions to it: the
file the unsplit import would have made (``join_parts``). Exit status: 0 when every file imported, 1
when some failed, 2 for a wrong command line.

Module-level imports are the standard library only: worker processes load the add-on by path.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import math
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..formats.parts import Part

COMMAND = "retro_import"  # blender -c retro_import
RESULT = "\x1eretro-batch "  # marks the workers' result lines among Blender's own output
_SINGULAR = {"armatures": "armature", "meshes": "mesh", "materials": "material", "images": "image"}
_SINGULAR["actions"] = "action"


def plural(n: int, kind: str) -> str:
    """``"1 armature"``, ``"2 armatures"``: ``kind`` is the plural (a datablock collection's name)."""
    return f"{n} {_SINGULAR.get(kind, kind) if n == 1 else kind}"


def counts_text(counts: dict[str, int]) -> str:
    return ", ".join(plural(n, kind) for kind, n in counts.items() if n) or "nothing imported"


# -- the command line ---------------------------------------------------------------------------


class UsageError(Exception):
    """A wrong command line (exit status 2)."""


def _families():
    from ..formats import registry

    return [f for f in registry.FAMILIES if f.importer]


def _options_help() -> str:
    from ..formats.options import describe

    lines = ["import options (--option NAME=VALUE; each applies to the families that have it):"]
    for family in _families():
        lines.append(f"  {family.name} ({family.label}):")
        for f in dataclasses.fields(family.importer.options):
            shown = describe(f)
            values = "|".join(c[0] for c in shown.choices) if isinstance(shown.choices, tuple) else ""
            kind = values or type(f.default).__name__
            lines.append(f"    {f.name}={kind} (default {f.default!r}): {shown.description}")
    return "\n".join(lines)


class _Parser(argparse.ArgumentParser):
    """Lists the import options only in its help: they come from the registry, whose import (half a
    second) the workers' start-up need not wait for."""

    def format_help(self) -> str:
        self.epilog = _options_help()
        return super().format_help()


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=f"blender -b -c {COMMAND}",
        description="Import game model files into .blend files, on every core.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        exit_on_error=False,
    )
    p.add_argument("inputs", nargs="+", help="files, folders (searched recursively) or glob patterns")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", help="one .blend holding every imported file")
    target.add_argument("--out-dir", help="one .blend per model, named after it, in this folder")
    p.add_argument(
        "-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: every core)"
    )
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an import option (listed below); repeat for several",
    )
    p.add_argument("--json", help="write a machine-readable summary to this file")
    return p


def _value(text: str, default):
    """The command line's text as the option's type (that of its default)."""
    if isinstance(default, bool):
        lowered = text.lower()
        if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
            raise ValueError(f"{text!r} is not true or false")
        return lowered in ("1", "true", "yes", "on")
    return type(default)(text)


def family_options(pairs: list[str]) -> dict[str, dict]:
    """``--option`` values per family name, checked against each family's options dataclass."""
    from ..formats.options import describe, make

    given = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--option {pair!r}: write NAME=VALUE")
        given[name] = text
    per_family, known = {}, set()
    for family in _families():
        values = {}
        for f in dataclasses.fields(family.importer.options):
            if f.name in given:
                known.add(f.name)
                try:
                    value = _value(given[f.name], f.default)
                except ValueError as e:
                    raise UsageError(f"--option {f.name}: {e}") from None
                values[f.name] = os.path.abspath(value) if describe(f).path and value else value
        try:
            make(family.importer.options, values)
        except (TypeError, ValueError) as e:
            raise UsageError(f"--option for {family.name}: {e}") from None
        per_family[family.name] = values
    unknown = sorted(set(given) - known)
    if unknown:
        raise UsageError(f"no family has the option(s) {', '.join(unknown)} (see --help)")
    return per_family


# -- what to import -------------------------------------------------------------------------------


@dataclass
class Entry:
    """One input file and what became of it."""

    path: str
    status: str = "pending"  # ok, failed, skipped
    family: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str = ""
    blend: str = ""

    def line(self) -> str:
        if self.status == "ok":
            return f"ok {self.path}: {counts_text(self.counts)}" + "".join(
                f"\n  warning: {w}" for w in self.warnings
            )
        if self.status == "skipped":
            return f"skipped {self.path}: {self.error}"
        return f"FAILED {self.path}: {self.error}"


def expand(inputs: list[str]) -> list[tuple[str, bool]]:
    """Every file the inputs name, in order, once: (path, named explicitly)."""
    found: list[tuple[str, bool]] = []
    for given in inputs:
        if glob.has_magic(given):
            matches = sorted(glob.glob(given, recursive=True))
            found += [p for m in matches for p in _walk(m)] if matches else [(given, True)]
        else:
            found += _walk(given) if os.path.isdir(given) else [(given, True)]
    seen, unique = set(), []
    for path, explicit in found:
        key = os.path.abspath(path)
        if key not in seen:
            seen.add(key)
            unique.append((key, explicit))
    return unique


def _walk(path: str) -> list[tuple[str, bool]]:
    if not os.path.isdir(path):
        return [(path, False)]
    files = []
    for folder, dirs, names in os.walk(path):
        dirs.sort()
        files += [(os.path.join(folder, n), False) for n in sorted(names)]
    return files


def classify(entry: Entry, explicit: bool, options: dict[str, dict]) -> bool | None:
    """Find the entry's family. True: the file applies to a selection; False: a model; None: not
    imported (the entry says why: skipped, or failed when it was named explicitly)."""
    from ..formats import options as described
    from ..formats import registry
    from ..formats.errors import RetroError

    try:
        family = registry.family_for(entry.path)
    except (RetroError, OSError) as e:
        entry.status, entry.error = ("failed" if explicit or isinstance(e, OSError) else "skipped"), str(e)
        return None
    entry.family = family.name
    extension = os.path.splitext(os.path.basename(entry.path))[1].lower()
    if family.importer is None or extension not in family.extensions:  # textures, TKL / TML…
        entry.status, entry.error = "skipped", f"not a model file ({family.label} files import it with them)"
        return None
    applies = family.importer.applies_to_selection
    if applies is None:
        return False
    try:  # the format layer alone tells (no Blender): the worker reports a file that fails to load
        scene = family.importer.load(
            entry.path, described.make(family.importer.options, options[family.name])
        )
    except (RetroError, OSError):
        return False
    return applies(scene)


def holds_no_model(entry: Entry, explicit: bool) -> bool:
    """Whether the model file is an archive without models (``Importer.models``): then skipped, or failed
    when it was named."""
    from ..formats import registry
    from ..formats.errors import RetroError

    listed = next(f for f in registry.FAMILIES if f.name == entry.family).importer.models
    try:
        if listed is None or listed(entry.path) != []:
            return False
    except (RetroError, OSError):
        return False  # the worker reports the file's error
    entry.status, entry.error = ("failed" if explicit else "skipped"), "an archive that holds no model"
    return True


def paired(entries: list[Entry], applied: list[bool | None], options: dict[str, dict]) -> list[int]:
    """The applied files a model import of their folder loads itself (``Importer.pairs``, its
    Animations option on), so that they are not applied to a model a second time."""
    from ..formats import options as described
    from ..formats import registry

    families = {f.name: f for f in registry.FAMILIES}
    pairing: dict[str, set[str]] = {}  # folder → the extensions its models' imports pair
    for entry, applies in zip(entries, applied, strict=True):
        importer = families[entry.family].importer if applies is False else None
        if importer is None or not importer.pairs:
            continue
        if described.make(importer.options, options[entry.family]).import_animations:
            pairing.setdefault(os.path.dirname(entry.path), set()).update(importer.pairs)
    return [
        i
        for i, (entry, applies) in enumerate(zip(entries, applied, strict=True))
        if applies and os.path.splitext(entry.path)[1].lower() in pairing.get(os.path.dirname(entry.path), ())
    ]


def plan(entries: list[Entry], applied: list[bool]) -> tuple[list[list[int]], list[int]]:
    """Jobs (lists of entry indices imported into one scene: a model, then the files applied to it:
    to the last model before them from their folder, else the first after) and the applied files
    no model of their folder takes."""
    jobs: list[list[int]] = []
    first: dict[str, int] = {}  # folder → the job of its first model
    for i, entry in enumerate(entries):
        if not applied[i]:
            first.setdefault(os.path.dirname(entry.path), len(jobs))
            jobs.append([i])
    last: dict[str, int] = {}  # folder → the job of its last model so far
    orphans, n = [], 0
    for i, entry in enumerate(entries):
        folder = os.path.dirname(entry.path)
        if not applied[i]:
            last[folder], n = n, n + 1
        elif folder in last or folder in first:
            jobs[last.get(folder, first.get(folder))].append(i)
        else:
            orphans.append(i)
    return jobs, orphans


# A job's seconds, estimated from what is cheap to know (fitted to the CPU seconds of the corpus's jobs,
# one worker): a model's import reads about BYTES_PER_SECOND of its files; each animation it may share
# out takes about SECONDS_PER_ANIMATION more to build. Saving its .blend takes about as long as reading
# its files.
BYTES_PER_SECOND = 1_000_000
SECONDS_PER_ANIMATION = 0.09
# The fewest such animations worth a part of its own: fewer do not repay the part's import of the model
# and its join (about a second for SunshineMario.arc's 26 models).
MIN_SHARED = 16


def cost(paths: list[str], paired_bytes: dict[str, int], shared: int) -> float:
    """A job's estimated seconds: from the bytes it reads (its files and those its model's import loads
    with it) and the animations its import may share out between parts (``Importer.shared_animations``).
    The batch starts the longest jobs first, so that the last to finish is short."""
    read = sum(os.path.getsize(p) for p in paths) + paired_bytes.get(os.path.dirname(paths[0]), 0)
    return read / BYTES_PER_SECOND + shared * SECONDS_PER_ANIMATION


def split_counts(costs: list[float], shared: list[int], workers: int) -> list[int]:
    """Into how many parts each job is split: a job estimated above the batch's total over the workers
    would finish last however the others are spread, so it is split into as many parts as bring each
    under that share, at most one per worker and each with MIN_SHARED animations to build; the others
    stay whole (1)."""
    fair = sum(costs) / workers
    return [
        max(1, min(workers, math.ceil(c / fair), n // MIN_SHARED)) if workers > 1 and c > fair else 1
        for c, n in zip(costs, shared, strict=True)
    ]


def first_share(cost: float, total: float, workers: int, count: int, join: float) -> float:
    """Part 0's share of a job split ``count`` ways (``Part.first``): its worker also does the ``join``
    (estimated seconds) once the other parts are in, while their workers go on to the other jobs; so that
    every worker has the batch's total and the join over the workers to do, part 0 is that less the join
    (at least an even share)."""
    return max(1 / count, min(1.0, ((total + join) / workers - join) / cost))


def shared_animations(entry: Entry, options: dict[str, dict]) -> int:
    """How many animations the import of a model file may share out between parts
    (``Importer.shared_animations``; 0 when its family cannot split an import, or the file does not read)."""
    from ..formats import options as described
    from ..formats import registry
    from ..formats.errors import RetroError

    importer = next(f for f in registry.FAMILIES if f.name == entry.family).importer
    if importer.shared_animations is None:
        return 0
    try:
        return importer.shared_animations(entry.path, described.make(importer.options, options[entry.family]))
    except (RetroError, OSError):
        return 0  # the worker reports the file's error


def blend_names(jobs: list[list[int]], entries: list[Entry], out_dir: str) -> list[str]:
    """One .blend per job named after its first file; a name taken gets -2, -3… (never overwritten)."""
    taken: set[str] = set()
    names = []
    for job in jobs:
        stem = os.path.splitext(os.path.basename(entries[job[0]].path))[0] or "import"
        name, n = stem, 1
        while name.lower() in taken:
            n += 1
            name = f"{stem}-{n}"
        taken.add(name.lower())
        names.append(os.path.join(os.path.abspath(out_dir), name + ".blend"))
    return names


# -- workers --------------------------------------------------------------------------------------

# A worker loads the add-on from its folder under a name of its own (no clash with an installed
# copy), then serves jobs: one JSON line in, result lines out.
_WORKER = (
    "import importlib.util, sys; root, name = sys.argv[sys.argv.index('--') + 1:][:2]; "
    "spec = importlib.util.spec_from_file_location(name, root + '/__init__.py', "
    "submodule_search_locations=[root]); m = importlib.util.module_from_spec(spec); "
    "sys.modules[name] = m; spec.loader.exec_module(m); "
    "import importlib; importlib.import_module(name + '.operators.batch').serve()"
)


def worker_command() -> list[str]:
    """How to start a worker: Blender itself (headless, factory settings) when this runs inside it, else
    this Python with the bpy module (not imported here: a second of start-up that only workers need)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tail = ["--", root, "retro_models_worker"]
    blender = sys.modules["bpy"].app.binary_path if "bpy" in sys.modules else ""
    if blender:
        return [blender, "-b", "--factory-startup", "--python-expr", _WORKER, *tail]
    return [sys.executable, "-c", _WORKER, *tail]


def serve() -> None:
    """A worker's loop: import each job's files into a fresh scene, save it, report every file."""
    import bpy

    from .. import register, unregister
    from ..formats.parts import Part

    bpy.ops.wm.read_factory_settings(use_empty=True)
    register()
    opened = None  # the part 0 of a split import this worker has made: open, not saved
    try:
        for line in sys.stdin:
            job = json.loads(line)
            reply = {}
            if "join" in job:
                if job["first"] != opened:  # a worker started anew: ending reports the join failed
                    raise RuntimeError("the part 0 to join is not open in this worker")
                join_parts(job["join"], job["blend"], job["attached"])
            else:
                part = Part(*job["part"]) if "part" in job else None
                reply["results"] = run_job(
                    bpy, job["paths"], job["families"], job["options"], job["blend"], part
                )
                if part is not None:
                    reply["attached"] = attached()
            opened = job["blend"] if job.get("part", [None])[0] == 0 else None
            print(RESULT + json.dumps({**reply, "cpu": time.process_time()}), flush=True)
    finally:
        unregister()  # the bpy 4.2 module crashes on exit while an add-on is registered


def run_job(
    bpy, paths: list[str], families: list[str], options: dict, blend: str, part: Part | None = None
) -> list[dict]:
    """Import ``paths`` (a model, then the files applied to it; ``part``: that part of the model's import)
    into an empty scene; save it to ``blend`` when anything was imported."""
    from ..formats import registry
    from ..formats.errors import RetroError
    from ..formats.options import make
    from .import_export import import_path

    # An empty factory scene; unlike read_factory_settings, this keeps the add-ons (five times faster).
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    results = []
    for path, name in zip(paths, families, strict=True):
        family = next(f for f in registry.FAMILIES if f.name == name)
        entry = Entry(path, family=name)
        try:
            report = import_path(
                bpy.context, family, path, make(family.importer.options, options[name]), part=part
            )
        except (RetroError, OSError) as e:
            entry.status, entry.error = "failed", str(e)
        except Exception as e:  # a defect: report it against this file and go on with the batch
            entry.status, entry.error = "failed", f"{type(e).__name__}: {e}"
        else:
            entry.status, entry.counts = "ok", report.counts
            entry.warnings, entry.notes = report.warnings, report.notes
        results.append(dataclasses.asdict(entry))
    if any(r["status"] == "ok" for r in results) and (part is None or part.number):
        os.makedirs(os.path.dirname(blend), exist_ok=True)
        if part is None:
            bpy.ops.wm.save_as_mainfile(filepath=blend, compress=False)
        else:  # only its actions join part 0 (``join_parts``), which stays open and is saved joined
            bpy.data.libraries.write(blend, set(bpy.data.actions), fake_user=True)
        for r in results:
            r["blend"] = blend
    return results


class Pool:
    """``n`` worker processes fed from one queue of jobs.

    The workers start when the pool is made: their start-up (a Blender each) overlaps the planning."""

    def __init__(self, n: int):
        self.jobs: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.processes = [self._start() for _ in range(n)]
        self.cpu: dict[int, float] = {}  # worker process → the CPU seconds it has used

    def run(self, jobs: list[dict], done) -> None:
        """Every job through the workers; ``done(job, reply)`` runs for each as it finishes (``reply``: the
        worker's, None when it died) and may return a job for the same worker to do next, or a function
        that returns it (or None) once it can be made: the worker waits for it."""
        self.done = done
        for job in jobs:
            self.jobs.put(job)
        threads = [threading.Thread(target=self._feed, args=(p,), daemon=True) for p in self.processes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def stop(self) -> None:
        """End the workers at once: there is nothing for them to do."""
        for process in self.processes:
            process.kill()
            process.wait()

    def _start(self) -> subprocess.Popen:
        return subprocess.Popen(
            worker_command(),
            env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )

    def _feed(self, process: subprocess.Popen) -> None:
        while True:
            try:
                job = self.jobs.get_nowait()
            except queue.Empty:
                break
            while job is not None:
                process = process if process.poll() is None else self._start()
                reply = self._ask(process, job)
                with self.lock:
                    job = self.done(job, reply)
                if callable(job):
                    job = job()
        process.stdin.close()
        process.wait()

    def _ask(self, process: subprocess.Popen, job: dict) -> dict | None:
        """The worker's reply to one job; None when it died on the way."""
        try:
            process.stdin.write(json.dumps(job) + "\n")
            process.stdin.flush()
            for line in process.stdout:
                if line.startswith(RESULT):
                    reply = json.loads(line[len(RESULT) :])
                    self.cpu[process.pid] = reply["cpu"]
                    return reply
        except (OSError, ValueError):
            pass
        process.kill()
        process.wait()
        return None


# -- joining the parts of a split import ----------------------------------------------------------


def attached() -> dict:
    """What ties the actions of the import in this worker's scene to its model, for ``join_parts``: per
    owner (its kind of datablock, its name) its list of action groups (an import collection's record,
    the ``props.ANIMATIONS`` of armature data, materials and objects), and the order the import made
    each group's actions in: (its model's place among the import's, its place among the model's
    animations)."""
    import bpy

    from .blender import props, records

    imports = {c.name: n for n, c in enumerate(bpy.context.scene.collection.children)}
    model = {("collections", name): n for name, n in imports.items()}  # owner → its import's place
    for obj in bpy.data.objects:
        record = props.import_record([obj])
        n = imports.get(record.name, -1) if record is not None else -1
        model["objects", obj.name] = n
        model.update({("materials", m.name): n for m in getattr(obj.data, "materials", ()) if m})
        if obj.type == "ARMATURE":
            model["armatures", obj.data.name] = n
    lists = [
        ["collections", c.name, props.to_python(c[props.SCENE])["animations"]]
        for c in bpy.data.collections
        if props.SCENE in c
    ]
    for kind in ("armatures", "materials", "objects"):
        lists += [
            [kind, owner.name, props.to_python(owner[props.ANIMATIONS])]
            for owner in getattr(bpy.data, kind)
            if props.ANIMATIONS in owner
        ]
    known = {
        records.record_group(a): records.record_index(a) for a in bpy.data.actions if records.is_primary(a)
    }
    places = {}
    for kind, name, groups in lists:
        place = -1  # a group that made no action (nothing it animates was built): the place before it
        for group in groups:
            place = known.get(group, place)
            places[group] = [model.get((kind, name), -1), place]
    return {"lists": lists, "places": places}


def join_parts(later: list[str], out: str, attached: list[dict]) -> None:
    """The parts of a split import (formats/parts.py; ``attached()`` of each) as the unsplit import makes
    it, saved to ``out``: part 0's import (open), the actions of the ``later`` parts' files (``run_job``
    writes only those) appended, and every owner's list of action groups merged in the order of the
    groups' places.
    Where a name was taken in another part, the actions sharing it are numbered (``.001``…) in the
    order of their places, as Blender numbered them making them one after the other."""
    import bpy

    from .blender import props, records

    places = {group: place for a in attached for group, place in a["places"].items()}

    def order(action, number: int, name: str) -> tuple:
        return *places.get(records.record_group(action), (-1, -1)), number, _numbered(name)[1]

    made = {a.as_pointer(): order(a, 0, a.name) for a in bpy.data.actions}
    taken = set()  # names a later part had too
    for number, part in enumerate(later, 1):
        with bpy.data.libraries.load(part, link=False) as (source, target):
            names = list(source.actions)
            target.actions = list(names)
        for name, action in zip(names, target.actions, strict=True):
            action.use_fake_user = True  # kept in the part by its fake user, which append drops
            made[action.as_pointer()] = order(action, number, name)
            if action.name != name:
                taken.add(_numbered(name)[0])
    for stem in taken:
        sharing = [a for a in bpy.data.actions if _numbered(a.name)[0] == stem]
        names = sorted((a.name for a in sharing), key=lambda n: _numbered(n)[1])
        sharing.sort(key=lambda a: made[a.as_pointer()])
        for i, action in enumerate(sharing):
            action.name = f"{stem} (numbering {i})"  # out of the way of the names given next
        for action, name in zip(sharing, names, strict=True):
            action.name = name
    lists: dict[tuple[str, str], list[str]] = {}
    for a in attached:
        for kind, name, groups in a["lists"]:
            lists.setdefault((kind, name), []).extend(groups)
    for (kind, name), groups in lists.items():
        groups.sort(key=places.__getitem__)
        owner = getattr(bpy.data, kind)[name]
        if kind == "collections":
            owner[props.SCENE] = {**props.to_python(owner[props.SCENE]), "animations": groups}
        else:
            owner[props.ANIMATIONS] = groups
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(out), compress=False)


def _numbered(name: str) -> tuple[str, int]:
    """A datablock name without the number Blender gives a name taken (``walk.002`` → ``walk``, 2)."""
    found = re.fullmatch(r"(.*)\.(\d{3,})", name)
    return (found.group(1), int(found.group(2))) if found else (name, 0)


def merged_result(parts: list[dict]) -> dict:
    """One file's result from its parts' (``Entry`` fields): the first part's, with the actions of all and
    each warning and note once."""
    first = parts[0]
    counts = {**first["counts"], "actions": sum(p["counts"].get("actions", 0) for p in parts)}
    warnings = list(dict.fromkeys(w for p in parts for w in p["warnings"]))
    notes = list(dict.fromkeys(n for p in parts for n in p["notes"]))
    return {**first, "counts": counts, "warnings": warnings, "notes": notes}


# -- joining the workers' files for --out -----------------------------------------------------------


def join_blends(parts: list[str], out: str) -> None:
    """One .blend holding everything the parts hold: the first opened, the others' collections,
    actions and images appended (unused actions and images too: a model keeps its other animations).
    An appended material or image renamed for a name taken is renamed in its import's record too."""
    import bpy

    from .blender import props

    bpy.ops.wm.open_mainfile(filepath=parts[0], load_ui=False)
    for part in parts[1:]:
        with bpy.data.libraries.load(part, link=False) as (source, target):
            target.collections = list(source.collections)
            target.actions = list(source.actions)
            target.images, target.materials = list(source.images), list(source.materials)
            named = {"images": list(source.images), "materials": list(source.materials)}
        for id_ in [*target.actions, *target.images]:
            if id_ is not None and id_.users == 0:  # kept in the part by a fake user, which append drops
                id_.use_fake_user = True
        renamed = {
            kind: {
                old: new.name
                for old, new in zip(names, getattr(target, kind), strict=True)
                if new is not None
            }
            for kind, names in named.items()
        }
        children = {c.name for col in target.collections for c in col.children}
        for collection in target.collections:
            if collection is None:
                continue
            if props.SCENE in collection:
                record = props.to_python(collection[props.SCENE])
                for kind, names in renamed.items():
                    record[kind] = [names.get(name, name) for name in record[kind]]
                collection[props.SCENE] = record
            if collection.name not in children:
                bpy.context.scene.collection.children.link(collection)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(out), compress=False)


# -- the command ----------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    """Run the batch; returns the exit status (0 all imported, 1 some failed, 2 usage)."""
    started = time.perf_counter()
    pool = None
    try:
        args = parser().parse_args(argv)
        if args.jobs < 1:
            raise UsageError("-j needs at least one worker")
        found = expand(args.inputs)
        pool = Pool(min(args.jobs, len(found)))  # their start-up overlaps the rest of the planning
        options = family_options(args.option)
    except SystemExit as e:  # --help, or argparse's own usage message
        return int(e.code or 0)
    except (argparse.ArgumentError, UsageError) as e:
        if pool is not None:
            pool.stop()
        print(f"{COMMAND}: {e}", file=sys.stderr)
        return 2
    entries, applied, explicit = [], [], []
    for path, named in found:
        entry = Entry(path)
        applies = classify(entry, named, options)
        if applies is False and holds_no_model(entry, named):
            applies = None
        if applies is None:
            print(entry.line())
        entries.append(entry)
        applied.append(applies)
        explicit.append(named)
    paired_bytes: dict[str, int] = {}  # folder → the bytes of the files its models' imports load
    for i in paired(entries, applied, options):
        applied[i] = None
        entries[i].status, entries[i].error = (
            "skipped",
            "the model import of its folder loads it with the model it fits",
        )
        print(entries[i].line())
        folder = os.path.dirname(entries[i].path)
        paired_bytes[folder] = paired_bytes.get(folder, 0) + os.path.getsize(entries[i].path)
    todo = [i for i, a in enumerate(applied) if a is not None]
    jobs, orphans = plan([entries[i] for i in todo], [applied[i] for i in todo])
    jobs = [[todo[i] for i in job] for job in jobs]
    for i in (todo[o] for o in orphans):  # found in a folder: not a model; named: a failure
        entries[i].status = "failed" if explicit[i] else "skipped"
        entries[i].error = "it applies to a model, and no model from its folder was imported"
        print(entries[i].line())
    todo = [i for job in jobs for i in job]

    with tempfile.TemporaryDirectory(prefix="retro_batch_") as scratch:
        blends = (
            blend_names(jobs, entries, args.out_dir)
            if args.out_dir
            else [os.path.join(scratch, f"{n}.blend") for n in range(len(jobs))]
        )
        finished = [0]

        def report(job: dict, results: list[dict] | None) -> None:
            for i, result in zip(job["entries"], results or [None] * len(job["entries"]), strict=True):
                if result is None:
                    entries[i].status, entries[i].error = "failed", "the worker process ended unexpectedly"
                else:
                    entries[i] = Entry(**result)
                finished[0] += 1
                print(f"[{finished[0]}/{len(todo)}] {entries[i].line()}", flush=True)

        arrived: dict[int, list[tuple[dict, dict | None]]] = {}  # split job → its parts and their replies
        joined: dict[int, list[dict]] = {}  # split job → its file's result, once its parts are joined
        joins: dict[int, dict] = {}  # split job → the join to do once its parts are in (none: one failed)
        ready: dict[int, threading.Event] = {}  # split job → set once its parts are in

        def done(job: dict, reply: dict | None) -> dict | Callable[[], dict | None] | None:
            """Report a job's files. A split job's part 0 imported: its join, for the same worker, once every
            part is in."""
            if "join" in job:
                report(job, joined[job["job"]] if reply is not None else None)
                return None
            if "part" not in job:
                report(job, reply and reply["results"])
                return None
            number = job["job"]
            parts = arrived.setdefault(number, [])
            parts.append((job, reply))
            if len(parts) == job["part"][1]:
                parts.sort(key=lambda p: p[0]["part"][0])
                replies = [r for _, r in parts]
                failed = next((r for r in replies if r is None or r["results"][0]["status"] != "ok"), False)
                if failed is not False:
                    report(job, failed and failed["results"])
                else:
                    joined[number] = [
                        {**merged_result([r["results"][0] for r in replies]), "blend": job["final"]}
                    ]
                    joins[number] = {
                        "first": parts[0][0]["blend"],
                        "join": [p["blend"] for p, _ in parts[1:]],
                        "attached": [r["attached"] for r in replies],
                        "blend": job["final"],
                        "job": number,
                        "entries": job["entries"],
                    }
                ready[number].set()
            if job["part"][0] or reply is None or reply["results"][0]["status"] != "ok":
                return None
            # Part 0 is taken after the others (``work``): they are running or done, so this waits for no
            # worker that may itself wait.
            return lambda: ready[number].wait() and joins.get(number)

        workers = len(pool.processes)
        shared = [
            shared_animations(entries[job[0]], options) if workers > 1 and len(job) == 1 else 0
            for job in jobs
        ]
        costs = [
            cost([entries[i].path for i in job], paired_bytes, n) for job, n in zip(jobs, shared, strict=True)
        ]
        work = []  # (estimated seconds, job)
        total = sum(costs)
        for number, (job, blend, count) in enumerate(
            zip(jobs, blends, split_counts(costs, shared, workers), strict=True)
        ):
            files = {
                "entries": job,
                "paths": [entries[i].path for i in job],
                "families": [entries[i].family for i in job],
                "options": options,
            }
            if count == 1:
                work.append((costs[number], {**files, "blend": blend}))
                continue
            ready[number] = threading.Event()
            join = os.path.getsize(files["paths"][0]) / BYTES_PER_SECOND  # saving the joined model
            first = first_share(costs[number], total, workers, count, join)
            for k in [*range(1, count), 0]:  # part 0 last: its worker waits for the others to join them
                part = {"part": [k, count, first], "job": number, "final": blend}
                work.append(
                    (
                        costs[number] / count,
                        {**files, **part, "blend": os.path.join(scratch, f"{number}-{k}.blend")},
                    )
                )
        pool.run([job for _, job in sorted(work, key=lambda w: -w[0])], done)
        written = sorted({e.blend for e in entries if e.blend}, key=blends.index)
        if args.out and written:
            join_blends(written, args.out)
            written = [os.path.abspath(args.out)]
            for e in entries:
                e.blend = written[0] if e.blend else ""

    tally = {s: sum(e.status == s for e in entries) for s in ("ok", "failed", "skipped")}
    seconds = time.perf_counter() - started
    print(
        f"{tally['ok']} imported, {tally['failed']} failed, {tally['skipped']} skipped in {seconds:.1f} s"
        f" with {args.jobs} {'process' if args.jobs == 1 else 'processes'}; "
        + (_written_text(written) if written else "no .blend written")
    )
    if args.json:
        summary = {
            "files": [dataclasses.asdict(e) for e in entries],
            "blends": written,
            "imported": tally["ok"],
            "failed": tally["failed"],
            "skipped": tally["skipped"],
            "jobs": args.jobs,
            "seconds": round(seconds, 3),
            "worker_cpu_seconds": [round(s, 3) for s in pool.cpu.values()],
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
    return 1 if tally["failed"] else 0


def _written_text(written: list[str]) -> str:
    if len(written) == 1:
        return f"wrote {written[0]}"
    return f"wrote {len(written)} .blend files in {os.path.commonpath(written)}"


def cli(argv: list[str]) -> int:
    """The ``blender -c retro_import`` command (registered by the add-on)."""
    return main(list(argv))
