"""A ranking of a batch's performance ratios: ``python3 grader/kit.py leaderboard OUT``.

Reads every submission's ``kit-results.json`` under ``OUT`` (what ``kit.py batch ... --report-dir
OUT`` wrote: ``OUT/<name>/kit-results.json``) and ranks, for each performance threshold key, the
submissions by their measured ratio, best first. A submission ranks for a key only when every
correctness test of that lab passed (a fast wrong answer ranks nowhere). Writes
``OUT/leaderboard.md`` and ``OUT/leaderboard.csv`` and prints the Markdown. Gradescope builds its
own leaderboard from the ``leaderboard`` field the kit writes into each ``results.json``
(reports.leaderboard_entries), with the same rule.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .context import UsageError
from .model import is_correctness


@dataclass(frozen=True)
class Entry:
    name: str      # the submission (its folder under OUT)
    key: str       # the threshold key
    ratio: float
    passed: bool   # the perf test itself passed (reached the student bar)


def entries(lab_tests: Iterable[dict[str, Any]]) -> list[tuple[str, float, bool]]:
    """(key, ratio, passed) of each perf result of one lab whose correctness tests all passed."""
    tests = list(lab_tests)
    if any(is_correctness(t["kind"]) and t["status"] != "passed" for t in tests):
        return []
    found = []
    for t in tests:
        m = t.get("measurements", {})
        if t["kind"] == "perf" and "ratio" in m and "threshold_key" in m:
            try:
                found.append((m["threshold_key"], float(m["ratio"]), t["status"] == "passed"))
            except ValueError:
                continue
    return found


def collect(out_dir: Path) -> list[Entry]:
    found = []
    for results in sorted(out_dir.glob("*/kit-results.json")):
        data = json.loads(results.read_text())
        for lab in data.get("labs", []):
            if lab.get("error"):
                continue
            found += [Entry(results.parent.name, key, ratio, passed)
                      for key, ratio, passed in entries(lab["tests"])]
    return found


def ranked(found: list[Entry]) -> dict[str, list[Entry]]:
    by_key: dict[str, list[Entry]] = {}
    for entry in found:
        by_key.setdefault(entry.key, []).append(entry)
    return {key: sorted(rows, key=lambda e: (-e.ratio, e.name)) for key, rows in sorted(by_key.items())}


def markdown(boards: dict[str, list[Entry]]) -> str:
    lines = ["# Leaderboard", ""]
    if not boards:
        return "\n".join(lines + ["No submission passed a lab's correctness tests."]) + "\n"
    for key, rows in boards.items():
        lines += [f"## {key}", "", "| rank | submission | ratio | bar reached |",
                  "| ---: | --- | ---: | --- |"]
        lines += [f"| {i} | {e.name} | {e.ratio:.3f} | {'yes' if e.passed else 'no'} |"
                  for i, e in enumerate(rows, start=1)]
        lines.append("")
    return "\n".join(lines)


def csv_text(boards: dict[str, list[Entry]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["key", "rank", "submission", "ratio", "bar_reached"])
    for key, rows in boards.items():
        for i, e in enumerate(rows, start=1):
            writer.writerow([key, i, e.name, f"{e.ratio:.3f}", int(e.passed)])
    return out.getvalue()


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "leaderboard", help="rank a batch's performance ratios (correct submissions only)",
        description=__doc__)
    parser.add_argument("out", type=Path, metavar="OUT", help="a batch's report directory")
    parser.set_defaults(handler=_cmd_leaderboard)


def _cmd_leaderboard(args: argparse.Namespace, ctx: Any) -> int:
    out_dir = args.out.absolute()
    if not out_dir.is_dir():
        raise UsageError(f"not a directory: {out_dir}")
    boards = ranked(collect(out_dir))
    text = markdown(boards)
    (out_dir / "leaderboard.md").write_text(text)
    (out_dir / "leaderboard.csv").write_text(csv_text(boards))
    ctx.stdout.write(text)
    return 0
