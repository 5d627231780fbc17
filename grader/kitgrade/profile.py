"""What the hardware says about your kernels: ``python3 grader/kit.py profile LAB``.

Runs the lab's benchmark program twice under NVIDIA Nsight Compute (``ncu``), once built from your
files and once from the reference solution (the same inputs: the benchmarks draw them from a fixed
seed), reads the counters the lab teaches, and prints one table per kernel: the counter in plain
words, your value, the reference's, and what a difference means. For example lab 03's transpose:
global-load sectors per request, 4 when a warp reads 32 neighbouring floats, 32 when each lane
reads its own sector.

Only kernels compiled from the lab's files are shown (the worker's kernel list, when the build
wrote one); the benchmark's own ceilings (copies, cuBLAS, CUB) are left out. Without ``ncu``,
without a GPU, or where the driver does not let this user read the counters
(``ERR_NVGPUCTRPERM``), it says so in one line, with what to do, and exits 4: never a table of
made-up numbers.

Exit codes: 0 tables printed, 2 usage error, 3 the build failed or a benchmark did not run,
4 not run (no ncu, no GPU, counters not permitted).
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import re
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import protocol, runner, submission
from .build import BuildError, ensure_built
from .context import SUBMISSION_BUILD, UsageError, default_build_dir, find_lab
from .ncu import (GLOBAL_VS_IDEAL, NO_KERNEL_REASON, SHARED_VS_IDEAL, Counter, demangled,
                  find_ncu, own_kernels, parse_launches, refusal_reason)

NOT_RUN_EXIT = 4


_LD = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum/l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
_ST = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum/l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
_DRAM = Counter("dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput, % of peak",
                "near the reference's: the kernel streams memory as fast as the copy does")
_SECTORS_LD = Counter(_LD, "global-load sectors per request",
                      "4 is a warp reading 32 neighbouring floats; 32 is every lane in its own "
                      "32-byte sector (strided or scattered addresses)")
_SECTORS_ST = Counter(_ST, "global-store sectors per request",
                      "as for loads: 4 is coalesced, up to 32 is one sector per lane")
_OCCUPANCY = Counter("sm__warps_active.avg.pct_of_peak_sustained_active",
                     "achieved occupancy, % of the SM's warps",
                     "lower than the theoretical: blocks end unevenly or too few are launched")
_THEORETICAL = Counter("sm__maximum_warps_per_active_cycle_pct", "theoretical occupancy, %",
                       "what registers, shared memory and block size allow (lab 06's model)")

ALL_KERNELS = {"06_occupancy"}
"""Labs whose student code launches no kernel of its own: every kernel of the benchmark is shown,
once per block size (lab 06's benchmark runs its kernels at the student's chosen block size)."""

COUNTERS: dict[str, tuple[Counter, ...]] = {
    "01_indexing": (
        Counter("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
                "memory throughput, % of peak",
                "far below the reference: a mapping that wastes sectors or too few threads"),
        _DRAM, _SECTORS_LD),
    "02_bounds": (_DRAM, _SECTORS_LD, _SECTORS_ST),
    "03_coalescing": (
        _SECTORS_LD, _SECTORS_ST, GLOBAL_VS_IDEAL, _DRAM,
        Counter("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                "shared-memory bank conflicts on loads",
                "0 with a padded tile; a column read of an unpadded 32 x 32 tile conflicts "
                "32 ways"),
        SHARED_VS_IDEAL),
    "04_tiling": (
        Counter("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                "shared-memory bank conflicts on loads",
                "reads of a tile row by a warp should not conflict; many conflicts mean a "
                "column walk or a stride that is a multiple of 32"),
        SHARED_VS_IDEAL,
        Counter("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
                "FMA pipe busy, % of peak",
                "higher is more of the time spent on arithmetic rather than waiting on memory"),
        _OCCUPANCY,
        Counter("dram__bytes_read.sum", "bytes read from DRAM",
                "tiling reuses each loaded value: far fewer bytes than the naive kernel reads")),
    "05_divergence": (
        Counter("smsp__thread_inst_executed_per_inst_executed.ratio",
                "active threads per warp instruction (of 32)",
                "below 32: lanes of a warp took different branches and waited for each other"),
        Counter("smsp__sass_average_branch_targets_threads_uniform.pct",
                "branches taken the same way by the whole warp, %",
                "100 is no divergence; tid % 2 splits every warp"),
        _DRAM),
    "06_occupancy": (_OCCUPANCY, _THEORETICAL),
    "07_streams": (_DRAM,),
}


MODEL_OCCUPANCY = Counter(
    "kit_model_occupancy", "your model's occupancy, % (occupancy())",
    "what your step 2 occupancy() predicts for this launch: it should equal the theoretical "
    "occupancy above (the reference's does); achieved is lower when blocks end unevenly")
"""Not an ncu metric: the lab's benchmark reports the model's answer for each launch it times
(model_rows). Shown in lab 06's tables after the counters ncu read."""

MODEL_ROWS: dict[str, tuple[Counter, ...]] = {"06_occupancy": (MODEL_OCCUPANCY,)}
"""Rows a lab's own benchmark fills in (no ncu): the student's model next to the hardware."""


@dataclass
class KernelCounters:
    name: str
    values: dict[str, float]


class ProfileError(Exception):
    """A reason the profile was not taken, for one line of output."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "profile", help="hardware counters of your kernels next to the reference's (ncu)",
        description=__doc__)
    parser.add_argument("lab", metavar="LAB", help='a lab: "03", "03_coalescing" or "coalescing"')
    parser.add_argument("--launches", type=int, default=100,
                        help="kernel launches profiled per program (default: %(default)s)")
    parser.add_argument("--submission", type=Path, metavar="DIR",
                        help="profile the student files in DIR (the layouts of grade "
                             "--submission) instead of labs/; builds in <repo>/"
                             f"{SUBMISSION_BUILD} unless --build-dir says otherwise")
    parser.add_argument("--build-dir", type=Path, help="CMake build directory (default: <repo>/build)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries as they are")
    parser.set_defaults(handler=_cmd_profile)


def _cmd_profile(args: argparse.Namespace, ctx: Any) -> int:
    lab = find_lab(ctx.manifest(), args.lab)
    counters = COUNTERS.get(lab.id)
    if not counters:
        ctx.stdout.write(f"profile: {lab.id} has no counters to show\n")
        return NOT_RUN_EXIT
    ncu = find_ncu()
    if ncu is None:
        return _not_run(ctx, "Nsight Compute (ncu) is not installed; it comes with the CUDA "
                             "toolkit (/usr/local/cuda/bin/ncu): install it and put it on PATH")
    sub = None
    if args.submission is not None:
        if args.no_build:
            raise UsageError("--submission builds the submission; it cannot be combined with "
                             "--no-build")
        sub = submission.locate(args.submission, [lab], explicit=True)
    build_dir = default_build_dir(ctx, args.build_dir, SUBMISSION_BUILD if sub else "build")
    # A student edition has no solutions/: then only the student's column is measured.
    variants = ("student", "reference") if (ctx.root / "solutions").is_dir() else ("student",)
    programs = {variant: build_dir / "bin" / bench_name(lab.id, variant) for variant in variants}
    if not args.no_build:
        staging = (submission.stage(sub, ctx.manifest().labs, ctx.root, build_dir)
                   if sub else None)
        try:
            ensure_built(ctx.root, build_dir, [p.name for p in programs.values()]
                         + [runner.target_name(lab, v) for v in programs],
                         out=ctx.stdout, quiet=True, submission_dir=staging)
        except BuildError as err:
            ctx.stderr.write(f"build failed: {err}\n")
            return 3
    device = protocol.query_device(runner.lab_target(ctx.root, build_dir, lab, "student").binary)
    if not device.get("available"):
        return _not_run(ctx, f"no CUDA device ({device.get('reason', 'none found')})")
    found: dict[str, list[KernelCounters]] = {}
    for variant, program in programs.items():
        # Only the lab's own kernels are profiled (matched by function name: ncu's filter),
        # so that the benchmark's ceilings (cuBLAS, CUB, copies) use no launch of the count.
        own = (set() if lab.id in ALL_KERNELS else
               {demangled(n) for n in own_kernels(build_dir / "bin" / worker_name(lab.id, variant))})
        try:
            text = run_ncu(ncu, program, counters, args.launches, own)
        except ProfileError as err:
            return _not_run(ctx, str(err))
        except OSError as err:
            ctx.stderr.write(f"profile: {program} did not run: {err}\n")
            return 3
        found[variant] = parse_csv(text, counters, by_block=lab.id in ALL_KERNELS)
        if lab.id in MODEL_ROWS:
            add_model_rows(found[variant], model_rows(program))
    if not any(found.values()):
        return _not_run(ctx, NO_KERNEL_REASON)
    shown_rows = counters + MODEL_ROWS.get(lab.id, ())
    ctx.stdout.write(render(lab.id, shown_rows, found["student"], found.get("reference", [])))
    if "reference" not in found:
        ctx.stdout.write("(no reference column: this copy of the kit has no solutions)\n")
    if lab.id in TIMELINES:
        ctx.stdout.write(draw_timeline(ctx.root, build_dir, programs) + "\n")
    return 0


TIMELINES = {"07_streams"}
"""Labs whose benchmark writes a measured timeline (--kit_timeline_csv): profile draws it."""


def draw_timeline(root: Path, build_dir: Path, programs: dict[str, Path]) -> str:
    """Runs each build's benchmark for its timeline (its pipeline's own CUDA events) and draws
    them, yours above the reference's, with the figure code of the course site; returns the
    line that says where the picture is, or why there is none."""
    code = root / "docs" / "figures" / "make_figures.py"
    spec = importlib.util.spec_from_file_location("make_figures", code)
    if not code.is_file() or spec is None or spec.loader is None:
        return "timeline: not drawn (docs/figures/make_figures.py is missing)"
    figures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figures)
    out = build_dir / "profile"
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for variant, program in programs.items():
        data = out / f"{variant}_streams_timeline.csv"
        data.unlink(missing_ok=True)
        subprocess.run([str(program), f"--kit_timeline_csv={data}"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300,
                       check=False)
        if data.is_file():
            stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
            data.write_text(f"# measured {stamp} from {program.name} by: kit.py profile 07\n"
                            + data.read_text())
            runs.append(figures.Measured(str(data), variant,
                                         "yours" if variant == "student" else "reference"))
    if not runs or runs[0].gpu != "student":
        return "timeline: not drawn (your pipeline did not run: is run() still the stub's?)"
    svg = out / "lab07_timeline.svg"
    figures.lab07_measured_timeline(str(svg), runs, whose="Your pipeline (then the reference's)")
    return f"timeline: {svg} (open it in a browser)"


def _not_run(ctx: Any, why: str) -> int:
    ctx.stdout.write("\n".join(textwrap.wrap("profile: not run: " + why, 80,
                                              subsequent_indent="  ")) + "\n")
    return NOT_RUN_EXIT


def bench_name(lab_id: str, variant: str) -> str:
    return f"bench_{lab_id}" + ("" if variant == "student" else f"_{variant}")


def worker_name(lab_id: str, variant: str) -> str:
    return f"worker_{lab_id}" + ("" if variant == "student" else f"_{variant}")


def command(ncu: str, program: Path, counters: tuple[Counter, ...], launches: int,
            functions: set[str] = frozenset()) -> list[str]:
    """ncu's command line; `functions`, when given, are the only kernels profiled."""
    metrics = sorted({m for c in counters for m in c.raw})
    only = (["--kernel-name-base", "function", "--kernel-name",
             "regex:^(" + "|".join(sorted(re.escape(f) for f in functions)) + ")$"]
            if functions else [])
    # Each benchmark runs for about a millisecond (Google Benchmark's --benchmark_min_time in
    # seconds), so that the launches profiled reach every benchmark's kernels, not only the first.
    # Metrics under their names (ncu prints a label where one exists) and in base units (it
    # scales a value to Mbyte, say, where it sees fit), as the table's ratios and names need.
    return [ncu, "--csv", "--print-kernel-base", "mangled", "--print-metric-name", "name",
            "--print-units", "base", *only, "--launch-count", str(launches),
            "--metrics", ",".join(metrics), str(program), "--benchmark_min_time=0.001"]


def run_ncu(ncu: str, program: Path, counters: tuple[Counter, ...], launches: int,
            functions: set[str] = frozenset()) -> str:
    if not program.is_file():
        raise OSError(f"{program} is not built")
    proc = subprocess.run(command(ncu, program, counters, launches, functions),
                          stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", timeout=900)
    refusal = refusal_reason(proc.stdout)
    # A benchmark that launched none of the kernels profiled (a stub's) is an empty column, not
    # a reason to show nothing: the other build's kernels are still worth a table.
    if refusal and refusal != NO_KERNEL_REASON:
        raise ProfileError(refusal)
    return proc.stdout


def parse_csv(text: str, counters: tuple[Counter, ...],
              by_block: bool = False) -> list[KernelCounters]:
    """The kernels of ncu's --csv output in order of first launch, each with the counters of its
    first profiled launch; a ratio counter "A/B" is A divided by B (absent when B is 0). With
    `by_block`, one kernel at several block sizes is a kernel per size (lab 06)."""
    kernels: dict[str, KernelCounters] = {}
    for launch in parse_launches(text):
        name = launch.name + (f" <<<{launch.block or '?'}>>>" if by_block else "")
        if name not in kernels:
            values = {c.metric: c.value(launch.raw) for c in counters}
            kernels[name] = KernelCounters(
                name, {metric: v for metric, v in values.items() if v is not None})
    return list(kernels.values())


def model_rows(program: Path) -> dict[tuple[str, int], float]:
    """Lab 06: the model's occupancy (%) for each kernel and block size the benchmark's timed rows
    launch, from the benchmark's own JSON output ({} when it did not run or reports none: the
    rows then read "-")."""
    try:
        proc = subprocess.run([str(program), "--benchmark_filter=BM_ChosenBlock",
                               "--benchmark_format=json"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                              errors="replace", timeout=300, check=False)
        data, _ = json.JSONDecoder().raw_decode(proc.stdout[proc.stdout.find("{"):])
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return {}
    return parse_model_rows(data)


def parse_model_rows(data: object) -> dict[tuple[str, int], float]:
    """(kernel function, block size) -> occupancy in % from Google Benchmark's JSON of lab 06's
    BM_ChosenBlock rows (counters block / model_occupancy, api_block / api_block_model_occupancy)."""
    rows: dict[tuple[str, int], float] = {}
    benchmarks = data.get("benchmarks", []) if isinstance(data, dict) else []
    for row in benchmarks if isinstance(benchmarks, list) else []:
        if not isinstance(row, dict) or not str(row.get("name", "")).startswith("BM_ChosenBlock/"):
            continue
        # "BM_ChosenBlock/<kernel>/iterations:3/manual_time": Google Benchmark appends the
        # row's options to the name it was registered with.
        kernel = str(row["name"]).split("/")[1]
        for block, value in (("block", "model_occupancy"),
                             ("api_block", "api_block_model_occupancy")):
            try:
                rows[(kernel, int(float(row[block])))] = 100.0 * float(row[value])
            except (KeyError, TypeError, ValueError):
                continue
    return rows


def add_model_rows(kernels: list[KernelCounters], rows: dict[tuple[str, int], float]) -> None:
    """Puts the model's occupancy into each profiled launch of the same kernel and block size
    (kernels named by parse_csv's by_block: "<name> <<<(256, 1, 1)>>>")."""
    for kernel in kernels:
        base, _, block = kernel.name.partition(" <<<")
        size = re.match(r"\(?\s*(\d+)", block)
        value = rows.get((demangled(base), int(size.group(1)))) if size else None
        if value is not None:
            kernel.values[MODEL_OCCUPANCY.metric] = value


def shown(name: str) -> str:
    """The name a table shows: the function, its integer template arguments (two instances of
    one kernel template are two kernels) and the block size where parse_csv added it."""
    base, _, block = name.partition(" <<<")
    function = demangled(base)
    rest = base[base.find(function) + len(function):] if base.startswith("_Z") else ""
    match = re.match(r"I((?:L[a-z]+-?\d+E)+)E", rest)
    args = re.findall(r"L[a-z]+(-?\d+)E", match.group(1)) if match else []
    if not base.startswith("_Z") and "<" in base.split("(")[0]:
        args = [base.split("(")[0].split("<", 1)[1].rsplit(">", 1)[0]]
    text = function + (f"<{', '.join(args)}>" if args else "")
    return text + (f" <<<{block}" if block else "")


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1e6:
        return f"{value:.3g}"
    return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"


def render(lab_id: str, counters: tuple[Counter, ...], student: list[KernelCounters],
           reference: list[KernelCounters]) -> str:
    """One table per kernel, in 80 columns: counter, yours, the reference's, then what it means."""
    # The same kernel in both builds: the same name, else the same name as shown (a student's
    # kernel may differ from the reference's in its parameter types).
    ref = {shown(k.name): k for k in reference} | {k.name: k for k in reference}
    lines = [f"profile {lab_id}: your kernels next to the reference's (Nsight Compute)", ""]
    launched = {n for k in student for n in (k.name, shown(k.name))}
    missing = [k for k in reference if k.name not in launched and shown(k.name) not in launched]
    # Yours first, each beside the reference's kernel of the same name; then the reference's
    # kernels that your build did not launch, with "-" as yours (what there is to reach).
    pairs = [(kernel, ref.get(kernel.name) or ref.get(shown(kernel.name))) for kernel in student]
    pairs += [(None, kernel) for kernel in missing]
    for yours, other in pairs:
        name = (yours or other).name
        lines.append(f"{shown(name)[:78]}")
        lines.append(f"  {'counter':44} {'yours':>14} {'reference':>14}")
        for counter in counters:
            mine = yours.values.get(counter.metric) if yours else None
            theirs = other.values.get(counter.metric) if other else None
            lines.append(f"  {counter.words[:44]:44} {_fmt(mine):>14} {_fmt(theirs):>14}")
            lines += textwrap.wrap(counter.meaning, 78, initial_indent="    ",
                                   subsequent_indent="    ")
        lines.append("")
    if missing:
        lines += textwrap.wrap("kernels of the reference that your build did not launch: "
                               + ", ".join(shown(k.name) for k in missing), 80,
                               subsequent_indent="  ")
    if not student:
        lines += textwrap.wrap("none of your kernels was profiled: the lab's benchmark did "
                               "not launch them (are its functions still the stub's?)", 80)
    return "\n".join(lines) + "\n"
