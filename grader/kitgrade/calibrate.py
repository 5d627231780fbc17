"""Performance bars for this GPU: ``python3 grader/kit.py calibrate``.

Grades the reference solution N times (default 10) on this machine's GPU, on the binaries as they
are (build first), and proposes, for every performance threshold key, the bars of a section of
``grader/thresholds.conf`` for this GPU model:

- the reference bar: the lowest ratio the reference reached, less a margin of three times the
  spread observed (max - min), and at least 2% of the lowest ratio;
- the student bar: the reference bar times the default section's student/reference proportion,
  unless ``--student KEY=RATIO`` sets it.

It prints the table (min, median, max, the bars in use, the bars proposed) and writes the section
``[<CUDA device name>]`` into the thresholds file in use, replacing one of that name. It writes
nothing when a correctness test of the reference failed in any run (the reference is not right
on this GPU: fix that first), or with ``--check``, which only says whether the bars in use hold
here: each key's lowest ratio at or above its reference bar.

Runs accumulate in ``--out`` (``run-01``, ...), as for ``kit.py noise``; runs already there count.
"""

from __future__ import annotations

import argparse
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import noise, thresholds

MARGIN_SPREADS = 3.0
"""The reference bar sits this many observed spreads below the lowest ratio..."""
MARGIN_FLOOR = 0.02
"""...and at least this fraction of the lowest ratio below it."""


@dataclass
class Row:
    key: str
    ratios: list[float]
    in_use: tuple[float, float]       # (student, reference) the graders use here now
    section: str                      # where in_use comes from ("default" or a header)
    proposed: tuple[float, float]     # (student, reference) this GPU's section would hold

    @property
    def low(self) -> float:
        return min(self.ratios)

    @property
    def holds(self) -> bool:
        """The bars in use hold here: every run's ratio reached the reference bar."""
        return self.low >= self.in_use[1]


def section_for(sections: dict[str, dict[str, tuple[float, float]]], key: str, device: str,
                cc: str) -> str:
    """Mirrors kit::ThresholdTable::section_for: the longest GPU-model header the device name
    starts with that lists the key, else `sm_<cc>` if it lists the key, else the default ("")."""
    models = [name for name, keys in sections.items()
              if name and not name.startswith("sm_") and key in keys and device.startswith(name)]
    if models:
        return max(models, key=len)
    by_cc = "sm_" + cc.replace(".", "")
    return by_cc if key in sections.get(by_cc, {}) else ""


def propose(ratios: list[float], default: tuple[float, float],
            student: float | None = None) -> tuple[float, float]:
    """(student bar, reference bar) for a key whose reference reached `ratios` here."""
    low, high = min(ratios), max(ratios)
    margin = max(MARGIN_SPREADS * (high - low), MARGIN_FLOOR * low)
    reference = _floor3(low - margin)
    if student is None:
        student = _floor3(reference * default[0] / default[1])
    return min(student, reference), reference


def _floor3(value: float) -> float:
    return max(0.001, math.floor(value * 1000) / 1000)


def rows_of(study: noise.Study, sections: dict[str, dict[str, tuple[float, float]]],
            device: str, cc: str, students: dict[str, float]) -> list[Row]:
    by_key: dict[str, list[float]] = {}
    for series in study.perf.values():
        if series.key and series.ratios:
            by_key.setdefault(series.key, []).extend(series.ratios)
    rows = []
    for key in sorted(by_key):
        if key not in sections[""]:
            continue
        section = section_for(sections, key, device, cc)
        rows.append(Row(key, by_key[key], sections[section][key], section or "default",
                        propose(by_key[key], sections[""][key], students.get(key))))
    return rows


def table(rows: list[Row], device: str, runs: int) -> str:
    lines = [f"calibrate: {device}, {runs} runs of the reference", "",
             f"{'key':38} {'min':>6} {'median':>6} {'max':>6}  {'in use':>13}  {'proposed':>13}"]
    for r in rows:
        lines.append(f"{r.key[:38]:38} {r.low:6.3f} {statistics.median(r.ratios):6.3f} "
                     f"{max(r.ratios):6.3f}  "
                     f"{r.in_use[0]:6.3f} {r.in_use[1]:6.3f}  "
                     f"{r.proposed[0]:6.3f} {r.proposed[1]:6.3f}"
                     + ("" if r.holds else "  (in use fails here)"))
    lines.append("")
    lines.append("in use / proposed: student bar, reference bar. The bars in use come from "
                 "sections: " + ", ".join(sorted({f"{r.key.split('.')[0]}: {r.section}"
                                                  for r in rows})))
    return "\n".join(lines) + "\n"


def write_section(path: Path, name: str, rows: list[Row], runs: int) -> None:
    """Writes `[name]` with the proposed bars into the thresholds file at `path`, replacing a
    section of that name (its header, comment lines right above it, and its lines)."""
    lines = path.read_text().splitlines()
    kept: list[str] = []
    skipping = False
    for line in lines:
        stripped = line.split("#", 1)[0].strip()
        if stripped.startswith("["):
            skipping = stripped == f"[{name}]"
            if skipping:
                while kept and kept[-1].startswith("# calibrate:"):
                    kept.pop()
                continue
        if not skipping:
            kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    kept += ["", f"# calibrate: {runs} runs of the reference on this GPU (kit.py calibrate)",
             f"[{name}]"]
    kept += [f"{r.key:39} {r.proposed[0]:<9g} {r.proposed[1]:g}" for r in rows]
    path.write_text("\n".join(kept) + "\n")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "calibrate", help="measure the reference on this GPU and write its performance bars",
        description=__doc__)
    parser.add_argument("labs", nargs="*", metavar="LAB", help="labs to grade (default: all)")
    parser.add_argument("--runs", type=int, default=10, help="runs of the reference (default 10)")
    parser.add_argument("--out", type=Path, help="directory for the runs (default: "
                        "<build dir>/calibrate)")
    parser.add_argument("--check", action="store_true",
                        help="only report whether the bars in use hold on this GPU")
    parser.add_argument("--student", action="append", default=[], metavar="KEY=RATIO",
                        help="the student bar of KEY, instead of the default's proportion")
    parser.add_argument("--build-dir", type=Path, help="CMake build directory (default: <repo>/build)")
    parser.set_defaults(handler=_cmd_calibrate)


def _cmd_calibrate(args: argparse.Namespace, ctx: Any) -> int:
    students: dict[str, float] = {}
    for item in args.student:
        key, _, value = item.partition("=")
        try:
            students[key] = float(value)
        except ValueError:
            ctx.stderr.write(f"calibrate: --student {item}: expected KEY=RATIO\n")
            return 2
    path = thresholds.thresholds_path(ctx.root)
    try:
        sections = thresholds.load_sections(path)
    except thresholds.ThresholdsError as err:
        ctx.stderr.write(f"calibrate: {err}\n")
        return 2
    out_dir = (args.out or (args.build_dir or ctx.root / "build") / "calibrate").absolute()
    # Every batch measured (no early stop): a bar is set from medians of full samples.
    if noise.grade_runs(ctx, out_dir, args.runs, args.labs, "reference", args.build_dir, None,
                        None, "calibrate", full_sampling=not args.check) is None:
        return 3
    study = noise.collect(out_dir)
    if len(study.gpus) != 1:
        ctx.stderr.write("calibrate: the runs in " + str(out_dir) + " are from "
                         + (", ".join(sorted(study.gpus)) or "no GPU")
                         + ": calibrate needs runs on one GPU model\n")
        return 4 if not study.gpus else 2
    device, cc = next(iter(study.gpus)), next(iter(study.ccs), "")
    rows = rows_of(study, sections, device, cc, students)
    ctx.stdout.write(table(rows, device, study.runs))
    wrong = [p for p in study.problems if p not in study.perf_problems]
    if args.check:
        failing = [r.key for r in rows if not r.holds]
        ctx.stdout.write("calibrate: the bars in use hold on this GPU\n" if not failing else
                         "calibrate: the bars in use fail here for " + ", ".join(failing) + "\n")
        return 0 if not failing and not wrong else 1
    if wrong:
        ctx.stderr.write("calibrate: not written: the reference failed correctness tests "
                         "here:\n" + "\n".join(f"  {p}" for p in wrong[:10]) + "\n")
        return 1
    write_section(path, device, rows, study.runs)
    ctx.stdout.write(f"calibrate: wrote section [{device}] of {path}\n")
    return 0
