"""``kit.py sanitize [LAB ...]``: runs labs' graders under NVIDIA compute-sanitizer.

memcheck finds out-of-bounds and misaligned accesses and leaks, racecheck shared-memory data races
(a missing __syncthreads()), synccheck barriers used wrongly (a __syncthreads() inside a branch),
initcheck reads of uninitialised device memory. Performance tests are left out: under a sanitizer
they are slow and their timings mean nothing. So are the tests a lab's lab.json lists under
"sanitize_skip" for a tool (each with its reason), unless --filter names the tests to run.

Several labs (none named: every lab) and several tools (--tool repeated) run one after the other,
and a summary lists each run's verdict and time; `sanitize --variant reference --tool memcheck
--tool racecheck --tool synccheck` checks every reference solution.

Exit codes: 0 the sanitizer found nothing, 1 it reported errors, a test failed or a run timed
out, 2 usage error, 3 the build failed or compute-sanitizer / the grader binary is missing.
"""
from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

from . import protocol, runner
from .build import BuildError, ensure_built
from .context import UsageError, default_build_dir, find_lab
from .model import SANITIZER_TOOLS
from .sanitizer import ERROR_EXIT, command, find_sanitizer


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sanitize", help="run labs' graders under compute-sanitizer",
        description=__doc__)
    parser.add_argument("labs", nargs="*", metavar="LAB",
                        help='labs: "01", "01_indexing" or "indexing" (default: all)')
    parser.add_argument("--tool", choices=SANITIZER_TOOLS, action="append",
                        help="repeat for several tools, run one after the other (default: memcheck)")
    parser.add_argument("--variant", choices=tuple(runner.VARIANT_PREFIX), default="student")
    parser.add_argument("--filter", default="", help="GoogleTest filter (default: every test but perf)")
    parser.add_argument("--timeout", type=float, default=0,
                        help="seconds one lab may run under one tool (default: no limit)")
    parser.add_argument("--build-dir", type=Path, help="CMake build directory (default: <repo>/build)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries as they are")
    parser.set_defaults(handler=_cmd_sanitize)


def _cmd_sanitize(args: argparse.Namespace, ctx) -> int:

    manifest = ctx.manifest()
    labs = [find_lab(manifest, name) for name in args.labs] or list(manifest.labs)
    tools = list(dict.fromkeys(args.tool or ["memcheck"]))
    if any(c in args.filter for c in "\n\0"):
        raise UsageError("--filter must be one line")
    if args.timeout < 0:
        raise UsageError("--timeout must be 0 (no limit) or more")
    build_dir = default_build_dir(ctx, args.build_dir)
    sanitizer = find_sanitizer()
    if sanitizer is None:
        ctx.stderr.write("compute-sanitizer not found (it ships with the CUDA toolkit)\n")
        return 3
    if not args.no_build:
        try:
            ensure_built(ctx.root, build_dir, [runner.target_name(lab, args.variant) for lab in labs],
                         out=ctx.stdout, quiet=True)
        except BuildError as err:
            ctx.stderr.write(f"build failed: {err}\n")
            return 3
    rows = []
    for lab in labs:
        target = runner.lab_target(ctx.root, build_dir, lab, args.variant)
        binary, extra = target.binary, target.judge_args(args.variant)
        perf: list[str] = []
        if not args.filter:
            try:
                specs = protocol.list_tests(binary, lab.id, args.variant, [s.id for s in lab.steps],
                                            extra)
            except protocol.ProtocolError as err:
                ctx.stderr.write(f"could not list tests of {binary}: {err}\n")
                return 3
            perf = [s.id for s in specs if s.kind == "perf"]
        for tool in tools:
            test_filter = args.filter
            if not test_filter:
                left_out = perf[:]
                for skip in lab.sanitize_skipped(tool):
                    ctx.stdout.write(f"{lab.id} under {tool} leaves out {', '.join(skip.tests)}: "
                                     f"{skip.why}\n")
                    left_out += skip.tests
                test_filter = "*" + ("-" + ":".join(left_out) if left_out else "")
            argv = command(sanitizer, tool, binary, test_filter, extra)
            ctx.stdout.write("$ " + " ".join(argv) + "\n")
            ctx.stdout.flush()
            started = time.monotonic()
            try:
                code = subprocess.run(argv, stdin=subprocess.DEVNULL,
                                      timeout=args.timeout or None).returncode
                verdict = {0: "clean", ERROR_EXIT: f"{tool} reported errors"}.get(
                    code, f"tests failed (exit {code})")
            except subprocess.TimeoutExpired:
                code, verdict = None, f"timed out after {args.timeout:g} s"
            seconds = time.monotonic() - started
            ctx.stdout.write(f"sanitize {lab.id} ({args.variant}, {tool}): {verdict}\n")
            rows.append((lab.id, tool, verdict, seconds, code == 0))
    if len(rows) > 1:
        ctx.stdout.write(f"\nsanitize summary ({args.variant})\n")
        width = max(len(r[0]) for r in rows)
        for lab_id, tool, verdict, seconds, _ in rows:
            ctx.stdout.write(f"  {lab_id:<{width}}  {tool:<9}  {seconds:7.1f} s  {verdict}\n")
        clean = sum(r[4] for r in rows)
        ctx.stdout.write(f"  {clean} of {len(rows)} runs clean\n")
    return 0 if all(r[4] for r in rows) else 1
