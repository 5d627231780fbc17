"""How noisy are the performance verdicts? ``python3 grader/kit.py noise``.

Grades the reference solution (or the student's code) again and again, on the binaries as they
are (build first), each run with a fresh seed, and reports for every performance test the min,
median and max of its measured ratio across the runs, next to its threshold, and every verdict
that was not a pass. A threshold an instructor can trust sits well below the minimum.

Runs accumulate in the output directory (``run-01``, ``run-02``, ... each holding that run's
reports), so a long study can be split over several invocations, e.g. on a machine that limits
how long one command may take; ``--max-seconds`` stops starting new runs after a time budget.
The summary (``noise.md`` and ``noise.json``) always covers every run in the directory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RUN_PREFIX = "run-"


@dataclass
class PerfSeries:
    """One performance test's ratios across runs."""

    lab: str
    test: str
    threshold: str = ""
    key: str = ""
    """The threshold key the test compares against (its measurement threshold_key)."""
    ratios: list[float] = field(default_factory=list)

    def spread(self) -> tuple[float, float, float]:
        """min, median and max of the ratios (at least one)."""
        return min(self.ratios), statistics.median(self.ratios), max(self.ratios)


@dataclass
class Study:
    runs: int = 0
    tests_per_run: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """One line per verdict that was not a pass: run, lab, test, status and reason."""
    perf_problems: list[str] = field(default_factory=list)
    """Those of `problems` that are perf tests (a bar missed: what calibration is for)."""
    perf: dict[str, PerfSeries] = field(default_factory=dict)
    gpus: set[str] = field(default_factory=set)
    ccs: set[str] = field(default_factory=set)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "noise", help="grade many times and report each performance ratio's spread",
        description=__doc__)
    parser.add_argument("labs", nargs="*", metavar="LAB", help="labs to grade (default: all)")
    parser.add_argument("--runs", type=int, default=20, help="runs wanted in OUT in all (default 20)")
    parser.add_argument("--out", type=Path, required=True, help="directory for the runs and summary")
    parser.add_argument("--variant", choices=("reference", "student"), default="reference")
    parser.add_argument("--build-dir", type=Path, help="CMake build directory (default: <repo>/build)")
    parser.add_argument("--jobs", type=int, help="tests graded in parallel (kit.py grade's default)")
    parser.add_argument("--max-seconds", type=float,
                        help="start no new run after this many seconds (the summary is still written)")
    parser.set_defaults(handler=_cmd_noise)


def _cmd_noise(args: argparse.Namespace, ctx: Any) -> int:
    out_dir: Path = args.out.absolute()
    done = grade_runs(ctx, out_dir, args.runs, args.labs, args.variant, args.build_dir, args.jobs,
                      args.max_seconds, "noise")
    if done is None:
        return 3
    study = collect(out_dir)
    (out_dir / "noise.json").write_text(json.dumps(to_json(study), indent=2) + "\n")
    text = markdown(study)
    (out_dir / "noise.md").write_text(text)
    ctx.stdout.write(text)
    return 0 if study.runs >= args.runs and not study.problems else 1


def grade_runs(ctx: Any, out_dir: Path, runs: int, labs: list[str], variant: str,
               build_dir: Path | None, jobs: int | None, max_seconds: float | None,
               command: str, full_sampling: bool = False) -> int | None:
    """Grades until `out_dir` holds `runs` runs (run-01, run-02, ..., each a report directory;
    runs already there count). Returns how many there are, or None when a run wrote no results
    (the reason is on ctx.stderr). `full_sampling`: perf tests measure every batch instead of
    stopping once their verdict is clear (KIT_PERF_FULL=1), so each ratio is a median of as many
    pairs as a close call gets (calibration); off, runs are graded exactly as a student is."""
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    done = len(_run_dirs(out_dir))
    kit = ctx.root / "grader" / "kit.py"
    while done < runs:
        if max_seconds is not None and time.monotonic() - start > max_seconds:
            ctx.stdout.write(f"{command}: time budget spent after {done} of {runs} runs\n")
            break
        run_dir = out_dir / f"{RUN_PREFIX}{done + 1:02d}"
        argv = [sys.executable, str(kit), "grade", *labs, "--variant", variant,
                "--no-build", "--quiet", "--report-dir", str(run_dir)]
        if build_dir:
            argv += ["--build-dir", str(build_dir)]
        if jobs:
            argv += ["--jobs", str(jobs)]
        t0 = time.monotonic()
        env = dict(os.environ, **({"KIT_PERF_FULL": "1"} if full_sampling else {}))
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace", check=False,
                              env=env)
        if not (run_dir / "kit-results.json").is_file():
            ctx.stderr.write(f"{command}: run {done + 1} wrote no results (exit "
                             f"{proc.returncode}):\n{proc.stdout[-2000:]}")
            return None
        done += 1
        ctx.stdout.write(f"{command}: run {done}/{runs} exit {proc.returncode} "
                         f"({time.monotonic() - t0:.0f} s)\n")
        ctx.stdout.flush()
    return done


def _run_dirs(out_dir: Path) -> list[Path]:
    return sorted(p for p in out_dir.glob(f"{RUN_PREFIX}*") if (p / "kit-results.json").is_file())


def collect(out_dir: Path) -> Study:
    """Reads every run's kit-results.json under out_dir."""
    study = Study()
    for run_dir in _run_dirs(out_dir):
        data = json.loads((run_dir / "kit-results.json").read_text())
        study.runs += 1
        count = 0
        device = data.get("device", {})
        if device.get("available"):
            study.gpus.add(str(device.get("name", "?")))
            study.ccs.add(str(device.get("cc", "?")))
        for lab in data["labs"]:
            if lab.get("error"):
                study.problems.append(f"{run_dir.name}: {lab['lab']}: not graded: {lab['error']}")
            for test in lab["tests"]:
                count += 1
                if test["status"] != "passed":
                    line = (f"{run_dir.name}: {lab['lab']} {test['id']}: "
                            f"{test['status']} {test['reason']}".rstrip())
                    study.problems.append(line)
                    if test["kind"] == "perf":
                        study.perf_problems.append(line)
                m = test.get("measurements", {})
                if test["kind"] == "perf" and "ratio" in m:
                    key = f"{lab['lab']} {test['id']}"
                    series = study.perf.setdefault(key, PerfSeries(lab["lab"], test["id"]))
                    series.threshold = m.get("threshold", series.threshold)
                    series.key = m.get("threshold_key", series.key)
                    series.ratios.append(float(m["ratio"]))
        study.tests_per_run.append(count)
    return study


def to_json(study: Study) -> dict[str, Any]:
    return {
        "runs": study.runs, "tests_per_run": study.tests_per_run, "problems": study.problems,
        "gpus": sorted(study.gpus),
        "perf": [{"lab": s.lab, "test": s.test, "threshold": s.threshold, "ratios": s.ratios,
                  **dict(zip(("min", "median", "max"), s.spread()))}
                 for s in study.perf.values() if s.ratios],
    }


def markdown(study: Study) -> str:
    lines = [f"# Noise study: {study.runs} runs", ""]
    if study.gpus:
        lines += [f"GPU: {', '.join(sorted(study.gpus))}", ""]
    total = sum(study.tests_per_run)
    lines += [f"Verdicts: {total} in all ({', '.join(map(str, sorted(set(study.tests_per_run))))} per run), "
              f"{len(study.problems)} not passed.", ""]
    lines += ["| lab | test | threshold | min | median | max | runs | min - threshold |",
              "|---|---|---|---|---|---|---|---|"]
    for s in study.perf.values():
        if not s.ratios:
            continue
        lo, med, hi = s.spread()
        try:
            margin = f"{lo - float(s.threshold):+.3f}"
        except ValueError:
            margin = "?"
        lines.append(f"| {s.lab} | {s.test} | {s.threshold} | {lo:.3f} | {med:.3f} | {hi:.3f} | "
                     f"{len(s.ratios)} | {margin} |")
    if study.problems:
        lines += ["", "Verdicts that were not a pass:", ""]
        lines += [f"- {p}" for p in study.problems]
    return "\n".join(lines) + "\n"

