#!/usr/bin/env python3
"""Measure the handouts' measured figures on this machine's GPU:
`python3 docs/figures/measure.py [--build-dir build] [--out docs/figures/data] [--slug NAME]`.

Builds the reference solution's benchmarks (bench_NN_name_reference), runs each once with
only the benchmarks the figures need (Google Benchmark's --benchmark_filter, results written
with --benchmark_out_format=json), and writes one CSV per data set, `<gpu>_<set>.csv` in --out,
where <gpu> is a short name of the CUDA device (`h100` for "NVIDIA H100 80GB HBM3", `h200`,
`rtx4090`; --slug sets it). The first line of each file is a comment: the day, the GPU as the
benchmark named it, the program and filter that measured it and the kit's commit. make_figures.py
plots every <gpu> it finds, a bar (or a block of lanes) per GPU. Nothing is written unless every
data set was measured.

Data sets (columns; every rate is a median of event-timed runs with the L2 flushed before each):

  bandwidth         kernel,lab,gbps,ratio_to_memcpy   the performance steps of labs 01 to 03
                    against a device-to-device cudaMemcpy of the same bytes
  stride            stride,gbps,memcpy_gbps,ratio_to_memcpy   lab 03's BM_StridedCopy: 2^24
                    floats read `stride` floats apart; gbps counts the bytes used
  lab04_ladder      kernel,tflops,ratio_to_cublas   lab 04 at 4096^3, cuBLAS FP32 (no TF32)
  reduction         kernel,gbps,ratio_to_cub   lab 05's reductions of 2^28 floats and
                    cub::DeviceReduce::Sum (BM_CubSum)
  streams_timeline  run,stream,chunk,stage,start_ms,end_ms   lab 07: perf_config()'s chunks
                    on one stream ("serial") and over its streams ("pipelined"), as the
                    pipeline's events recorded them (bench_07_streams --kit_timeline_csv), and
                    the ideal pipeline time (run "ideal")

Exit codes: 0 written, 2 usage error, 3 a build failed or a benchmark did not run, 4 not run
(no GPU, or a copy of the kit without solutions/): one line says why, and nothing is written.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader"))

from kitgrade.build import BuildError, ensure_built  # noqa: E402  (needs the path above)

NOT_RUN_EXIT = 4
TIMEOUT_S = 600

Row = dict[str, str]
Results = Mapping[str, Sequence[dict]]
"""The benchmarks of each program's JSON output ("benchmarks"), by program name."""


class NotRun(Exception):
    """No GPU to measure on (exit 4)."""


class MeasureError(Exception):
    """A benchmark did not run or did not report what was asked (exit 3)."""


@dataclass(frozen=True)
class DataSet:
    name: str                      # the file is <gpu>_<name>.csv
    columns: tuple[str, ...]
    sources: tuple[str, ...]       # the programs it is measured with
    rows: Callable[[Results], list[Row]]


# What each program runs: a Google Benchmark filter (a regex on the names).
FILTERS = {
    "bench_01_indexing_reference": "^BM_Saxpy/67108864/",
    "bench_02_bounds_reference": "^BM_ScaleShiftFast/67108864/",
    "bench_03_coalescing_reference": "^BM_Transpose/padded/|^BM_StridedCopy/",
    "bench_04_tiling_reference": "^BM_Matmul/[a-z_0-9]+/4096/",
    "bench_05_divergence_reference": "^reduce_benchmark/|^BM_CubSum/",
}
TIMELINE_PROGRAM = "bench_07_streams_reference"
TIMELINE_COLUMNS = ("run", "stream", "chunk", "stage", "start_ms", "end_ms")


def find(results: Results, program: str, prefix: str) -> dict:
    """The benchmark of `program` whose name starts with `prefix`."""
    for bench in results.get(program, ()):
        if bench.get("name", "").startswith(prefix):
            return bench
    raise MeasureError(f"{program} reported no benchmark {prefix}...")


def counter(bench: dict, name: str) -> float:
    try:
        return float(bench[name])
    except (KeyError, TypeError, ValueError):
        raise MeasureError(f"{bench.get('name')} has no counter {name}") from None


def bandwidth_rows(results: Results) -> list[Row]:
    refs = (("saxpy_fast", "01", "bench_01_indexing_reference", "BM_Saxpy/67108864/"),
            ("scale_shift_fast", "02", "bench_02_bounds_reference",
             "BM_ScaleShiftFast/67108864/"),
            ("transpose_padded", "03", "bench_03_coalescing_reference", "BM_Transpose/padded/"))
    rows = []
    for kernel, lab, program, prefix in refs:
        bench = find(results, program, prefix)
        rows.append({"kernel": kernel, "lab": lab, "gbps": f"{counter(bench, 'GB/s'):.1f}",
                     "ratio_to_memcpy": f"{counter(bench, 'copy_ratio'):.3f}"})
    return rows


def stride_rows(results: Results) -> list[Row]:
    rows = []
    for bench in results.get("bench_03_coalescing_reference", ()):
        match = re.match(r"BM_StridedCopy/stride:(\d+)/", bench.get("name", ""))
        if match:
            rows.append({"stride": match.group(1), "gbps": f"{counter(bench, 'GB/s'):.1f}",
                         "memcpy_gbps": f"{counter(bench, 'copy_GB/s'):.1f}",
                         "ratio_to_memcpy": f"{counter(bench, 'copy_ratio'):.3f}"})
    if not rows:
        raise MeasureError("bench_03_coalescing_reference reported no BM_StridedCopy")
    return sorted(rows, key=lambda r: int(r["stride"]))


def ladder_rows(results: Results) -> list[Row]:
    program = "bench_04_tiling_reference"
    rungs = (("naive", "naive"), ("tiled", "tiled"), ("register-blocked", "blocked"),
             ("cuBLAS", "cublas_fp32"))
    rows = []
    for kernel, name in rungs:
        bench = find(results, program, f"BM_Matmul/{name}/4096/")
        rows.append({"kernel": kernel, "tflops": f"{counter(bench, 'TFLOP/s'):.2f}",
                     "ratio_to_cublas": f"{counter(bench, 'vs_cublas'):.3f}"})
    return rows


def reduction_rows(results: Results) -> list[Row]:
    program = "bench_05_divergence_reference"
    rows = []
    for kernel in ("interleaved", "sequential", "shuffle", "grid_stride", "best"):
        bench = find(results, program, f"reduce_benchmark/{kernel}/")
        rows.append({"kernel": kernel, "gbps": f"{counter(bench, 'GB/s'):.1f}",
                     "ratio_to_cub": f"{counter(bench, 'cub_ratio'):.3f}"})
    cub = find(results, program, "BM_CubSum/")
    rows.append({"kernel": "CUB", "gbps": f"{counter(cub, 'GB/s'):.1f}",
                 "ratio_to_cub": "1.000"})
    return rows


def timeline_rows(results: Results) -> list[Row]:
    rows = []
    for row in results.get(TIMELINE_PROGRAM, ()):
        out = dict(row)
        for key in ("start_ms", "end_ms"):
            out[key] = f"{float(row[key]):.3f}"
        rows.append(out)
    if not rows:
        raise MeasureError(f"{TIMELINE_PROGRAM} --kit_timeline_csv wrote no row")
    return rows


DATASETS = (
    DataSet("bandwidth", ("kernel", "lab", "gbps", "ratio_to_memcpy"),
            ("bench_01_indexing_reference", "bench_02_bounds_reference",
             "bench_03_coalescing_reference"), bandwidth_rows),
    DataSet("stride", ("stride", "gbps", "memcpy_gbps", "ratio_to_memcpy"),
            ("bench_03_coalescing_reference",), stride_rows),
    DataSet("lab04_ladder", ("kernel", "tflops", "ratio_to_cublas"),
            ("bench_04_tiling_reference",), ladder_rows),
    DataSet("reduction", ("kernel", "gbps", "ratio_to_cub"),
            ("bench_05_divergence_reference",), reduction_rows),
    DataSet("streams_timeline", TIMELINE_COLUMNS, (TIMELINE_PROGRAM,), timeline_rows),
)


def gpu_slug(name: str) -> str:
    """A short file-name part for a CUDA device name: the words up to the first with a digit,
    without the maker's and the product line's names ("NVIDIA H100 80GB HBM3" -> "h100",
    "NVIDIA GeForce RTX 4090" -> "rtx4090", "NVIDIA A100-SXM4-80GB" -> "a100")."""
    words = [w for w in re.split(r"[\s_-]+", name)
             if w and w.lower() not in ("nvidia", "geforce", "tesla", "quadro")]
    picked = []
    for word in words:
        picked.append(word)
        if re.search(r"\d", word):
            break
    return re.sub(r"[^a-z0-9]", "", "".join(picked).lower()) or "gpu"


def source_line(day: str, gpu: str, commit: str, dataset: DataSet) -> str:
    """'# measured DAY on NAME (sm_90, ...) by: python3 docs/figures/measure.py (PROGRAM
    --benchmark_filter='...'), kit COMMIT', from the benchmarks' `gpu` context."""
    name, _, details = gpu.partition(", ")
    how = "; ".join(
        f"{p} --kit_timeline_csv" if p == TIMELINE_PROGRAM
        else f"{p} --benchmark_filter='{FILTERS[p]}'" for p in dataset.sources)
    return (f"# measured {day} on {name}" + (f" ({details})" if details else "")
            + f" by: python3 docs/figures/measure.py ({how}), kit {commit}")


def kit_commit() -> str:
    """The kit's commit ("+" when its files differ from it), or "unknown" outside git."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty else "")


def write_dataset(path: Path, comment: str, dataset: DataSet, rows: Sequence[Row]) -> None:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=dataset.columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(comment + "\n" + text.getvalue(), encoding="utf-8")


def run_program(program: Path, args: Sequence[str]) -> str:
    """Runs a benchmark program; returns its stdout. NotRun when it found no GPU."""
    if not program.is_file():
        raise MeasureError(f"{program} is not built")
    proc = subprocess.run([str(program), *args], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, errors="replace", timeout=TIMEOUT_S)
    if proc.stdout.startswith("not run:"):
        raise NotRun(proc.stdout.splitlines()[0][len("not run:"):].strip())
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise MeasureError(f"{program.name} exited with {proc.returncode}: {tail}")
    return proc.stdout


def measure(bin_dir: Path, tmp: Path) -> tuple[dict[str, list[dict]], str, str]:
    """Every program's results, the GPU (the benchmarks' `gpu` context) and the day measured."""
    results: dict[str, list[dict]] = {}
    gpu = day = ""
    for name, pattern in FILTERS.items():
        out = tmp / f"{name}.json"
        run_program(bin_dir / name, [f"--benchmark_filter={pattern}",
                                     f"--benchmark_out={out}", "--benchmark_out_format=json"])
        try:
            data = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise MeasureError(f"{name} wrote no JSON results: {err}") from None
        results[name] = data.get("benchmarks", [])
        gpu = gpu or data.get("context", {}).get("gpu", "")
        day = day or data.get("context", {}).get("date", "")[:10]
    out = tmp / "timeline.csv"
    run_program(bin_dir / TIMELINE_PROGRAM, [f"--kit_timeline_csv={out}"])
    with out.open(encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != TIMELINE_COLUMNS:
            raise MeasureError(f"{TIMELINE_PROGRAM} wrote columns {reader.fieldnames}, "
                               f"not {','.join(TIMELINE_COLUMNS)}")
        results[TIMELINE_PROGRAM] = list(reader)
    if not gpu:
        raise MeasureError("the benchmarks did not name their GPU")
    return results, gpu, day


def write_all(out_dir: Path, slug: str, gpu: str, day: str, commit: str,
              results: Results) -> list[Path]:
    """Every data set's file; all rows are made before the first file is written."""
    made = [(ds, ds.rows(results)) for ds in DATASETS]
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for dataset, rows in made:
        path = out_dir / f"{slug}_{dataset.name}.csv"
        write_dataset(path, source_line(day, gpu, commit, dataset), dataset, rows)
        written.append(path)
    return written


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="measure.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build",
                        help="CMake build directory (default: <repo>/build)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "figures" / "data",
                        help="folder for the CSV files (default: docs/figures/data)")
    parser.add_argument("--slug", help="the <gpu> part of the file names (default: from the "
                                       "device name)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries as they are")
    args = parser.parse_args(argv)
    if args.slug is not None and not re.fullmatch(r"[a-z0-9]+", args.slug):
        parser.error("--slug: lower-case letters and digits only (it is split off at '_')")
    if not (ROOT / "solutions").is_dir():
        print("measure: not run: this copy of the kit has no solutions/ (the figures measure "
              "the reference solution)")
        return NOT_RUN_EXIT
    build_dir = args.build_dir.absolute()
    programs = [*FILTERS, TIMELINE_PROGRAM]
    try:
        if not args.no_build:
            ensure_built(ROOT, build_dir, programs, out=sys.stdout, quiet=True)
        with tempfile.TemporaryDirectory() as tmp:
            results, gpu, day = measure(build_dir / "bin", Path(tmp))
        slug = args.slug or gpu_slug(gpu.split(",")[0])
        written = write_all(args.out, slug, gpu, day, kit_commit(), results)
    except NotRun as err:
        print(f"measure: not run: {err}")
        return NOT_RUN_EXIT
    except (BuildError, MeasureError, subprocess.TimeoutExpired, OSError) as err:
        print(f"measure: {err}", file=sys.stderr)
        return 3
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
