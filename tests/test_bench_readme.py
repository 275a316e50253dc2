"""README's speed table is the one `make bench` writes (bench/bench.py --readme README.md): between its
two markers, a row for every measure of every workload the bench runs, in the bench's order."""

import sys

from support import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import bench  # noqa: E402


def table_rows(text: str) -> list[tuple[str, str]]:
    start, end = (text.index(marker) for marker in bench.MARKERS)
    lines = [line for line in text[start:end].splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| workload | measure | value | goal |")
    return [tuple(c.strip() for c in line.strip().strip("|").split("|"))[:2] for line in lines[1:]]


def test_the_speed_table_has_a_row_for_every_measure_of_the_bench():
    rows = table_rows((ROOT / "README.md").read_text(encoding="utf-8"))
    assert rows == bench.every_row()
    # Every workload shows (the floor of ten million keys in the keys10m row's ratio).
    assert set(bench.WORKLOADS) - {workload for workload, _ in rows} == {"keys10m-floor"}


def test_a_run_rewrites_its_rows_and_keeps_the_others(tmp_path):
    readme = tmp_path / "README.md"
    old = bench.table_line(bench.Row("toshi", "import/floor", 2.5, "old"), "earlier")
    readme.write_text(
        f"# Speed\n\n{bench.MARKERS[0]}\n{old}\n{bench.MARKERS[1]}\n\nAfter.\n", encoding="utf-8"
    )
    ran = {"batch": {"load": [1.0, 2.0]}}
    rows = [bench.Row("batch", "speed-up, wall", 1.7, "-j 1: 10 s, -j 2: 5.9 s")]
    bench.write_readme(readme, rows, ran, "the machine")
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# Speed\n\n") and text.endswith("\n\nAfter.\n") and "the machine" in text
    assert table_rows(text) == bench.every_row()
    assert old in text  # not run this time: kept
    assert "| batch | speed-up, wall | 1.7 | ≥ 1.6 meets | -j 1: 10 s, -j 2: 5.9 s |" in text
    assert "| j3d | import/floor | — | ≤ 1.25 | not measured yet | |" in text
