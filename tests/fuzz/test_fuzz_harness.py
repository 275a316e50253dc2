"""The fuzz harness (tools/fuzz) tells right answers from defects: a FormatError is right; an
exception of another type, a hang, an allocation past the limit and a crash are defects, planted
in fake targets. A short run on two real readers finds nothing outside the known-defects list."""

from pathlib import Path

from fuzz import campaign, mutate, report
from fuzz.__main__ import main
from fuzz.pool import Worker

HERE = Path(__file__).resolve().parent
KNOWN = HERE / "known_defects.txt"
PLANTED = {
    "fake.index_error": "exception IndexError",
    "fake.sleep": "timeout",
    "fake.hang": "timeout",
    "fake.allocate": "memory MemoryError",
    "fake.crash": "crash SIGSEGV",
}


def fuzz(tmp_path, names, inputs, module="fake_targets", **options):
    settings = campaign.Options(
        module=module, python_path=[str(HERE)], findings=tmp_path / "found", **options
    )
    targets = campaign.load_targets(settings).TARGETS
    workers = [Worker(settings.module, settings.python_path, tmp_path / f"worker{i}.log") for i in range(2)]
    try:
        budget = campaign.Budget(inputs=inputs)
        return {name: campaign.fuzz_target(targets[name], workers, settings, budget) for name in names}
    finally:
        for worker in workers:
            worker.stop()


def test_a_format_error_is_right_and_planted_defects_are_found(tmp_path):
    results = fuzz(tmp_path, ["fake.format_error", *PLANTED], inputs=1, time_limit=0.5)
    refused = results["fake.format_error"]
    assert (refused.inputs, refused.accepted, refused.findings) == (1, 0, {})
    for name, what in PLANTED.items():
        (finding,) = results[name].findings.values()
        assert finding.signature.startswith(f"{name} {what} at tests/fuzz/fake_targets.py:"), (
            finding.signature
        )
        assert finding.path.exists()
        assert finding.path.with_suffix(".txt").read_text().startswith(finding.signature)


def test_real_readers_fail_only_in_known_ways(tmp_path):
    known = report.load_known(KNOWN)
    for result in fuzz(tmp_path, ["toshi.tkl", "j3d.btp"], inputs=150, module="fuzz.targets").values():
        assert result.inputs == 150 and 0 < result.accepted < result.inputs
        assert set(result.findings) <= set(known), sorted(result.findings)


def test_a_campaign_seed_makes_the_same_inputs_and_seeds_come_first():
    seeds = [bytes(64), bytes(range(200))]
    inputs = [mutate.make_input(seeds, 7, "target", i) for i in range(300)]
    assert inputs == [mutate.make_input(seeds, 7, "target", i) for i in range(300)]
    assert inputs != [mutate.make_input(seeds, 8, "target", i) for i in range(300)]
    assert inputs[:2] == [(0, seeds[0]), (1, seeds[1])]
    assert len({data for _, data in inputs}) > 250


def test_known_defects_pass_and_new_ones_fail(tmp_path):
    run = ["--inputs", "1", "--workers", "1", "--module", "fake_targets", "--path", str(HERE)]
    run += ["--targets", "fake.index_error", "--findings", str(tmp_path / "found")]
    assert main(run) == 1
    listed = tmp_path / "known.txt"
    listed.write_text(
        "fake.index_error exception IndexError at tests/fuzz/fake_targets.py:index_error  # planted\n"
    )
    assert main([*run, "--known", str(listed)]) == 0


def test_every_known_defect_says_why_it_is_listed():
    lines = [line for line in KNOWN.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert all("  # " in line for line in lines)
    assert len(report.load_known(KNOWN)) == len(lines)
