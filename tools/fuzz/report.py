"""The campaign's report, and the known-defects list that lets CI pass while they wait for a fix.

The list (tests/fuzz/known_defects.txt) holds one defect signature per line, with a comment
after "  # "; lines starting with "#" are comments. A defect whose signature is listed is
reported as known; any other is new and fails the run.
"""

from __future__ import annotations

from pathlib import Path

from .campaign import Finding, TargetResult

MB = 1 << 20


def load_known(path: Path | None) -> dict[str, str]:
    """Signature → comment."""
    if path is None:
        return {}
    known = {}
    for line in path.read_text().splitlines():
        signature, _, comment = line.partition("  #")
        if signature.strip() and not line.startswith("#"):
            known[signature.strip()] = comment.strip()
    return known


def peak_text(result: TargetResult) -> str:
    if not result.peak_input_size:
        return "+0.0 MB" if result.inputs else "-"
    ratio = result.peak_bytes / result.peak_input_size
    return (
        f"+{result.peak_bytes / MB:.1f} MB on {result.peak_input_size} B ({ratio:.0f}×, {result.peak_origin})"
    )


def table(results: list[TargetResult]) -> list[str]:
    lines = [
        f"{'target':16} {'inputs':>7} {'accepted':>8} {'defects':>7} {'inputs/s':>8} {'base MB':>9}  peak memory"
    ]
    for r in results:
        accepted = f"{100 * r.accepted / r.inputs:.0f}%" if r.inputs else "-"
        rate = r.inputs / r.seconds if r.seconds else 0.0
        lines.append(
            f"{r.name:16} {r.inputs:7} {accepted:>8} {len(r.findings):7} {rate:8.1f} "
            f"{r.baseline_rss / MB:4.0f}/{r.baseline_address_space / MB:<4.0f}  {peak_text(r)}"
        )
    total = sum(r.inputs for r in results)
    lines.append(f"{'total':16} {total:7}   (base MB: resident/address space of a loaded worker)")
    return lines


def finding_lines(finding: Finding, status: str, comment: str) -> list[str]:
    lines = [f"  {status:5} {finding.signature} (×{finding.count})", f"        {finding.message}"]
    lines += [f"        {frame}" for frame in reversed(finding.frames)]
    if finding.path is not None:
        lines.append(f"        input: {finding.path} ({len(finding.minimal)} bytes; {finding.origin})")
    if comment:
        lines.append(f"        known: {comment}")
    return lines


def report(results: list[TargetResult], known: dict[str, str]) -> tuple[list[str], int]:
    """The report's lines, and how many defects are new."""
    lines = table(results)
    for r in results:
        if r.refused_seeds:
            lines.append(f"note: {r.name} refuses its seeds {', '.join(sorted(r.refused_seeds))}")
    findings = [f for r in results for f in r.findings.values()]
    new = [f for f in findings if f.signature not in known]
    if findings:
        lines.append(f"defects: {len(new)} new, {len(findings) - len(new)} known")
        for finding in sorted(findings, key=lambda f: (f.signature in known, f.signature)):
            status = "known" if finding.signature in known else "NEW"
            lines += finding_lines(finding, status, known.get(finding.signature, ""))
    else:
        lines.append("defects: none")
    return lines, len(new)
