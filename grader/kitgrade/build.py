"""Configures (once) and builds only the grader targets a grading run needs.

Building just the requested targets keeps `kit.py grade 01` fast while other labs are
unfinished or do not even compile yet.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from .manifest import Lab
from .runner import target_name

FAILURE_TAIL_LINES = 60
SUBMISSION_VARIABLE = "KIT_SUBMISSION_DIR"
"""CMake cache variable: where the student build takes student files from before labs/."""


class BuildError(Exception):
    """Configuring or building failed; the message says which command, `output` holds the tail
    of what it printed (kitgrade.diagnose_build explains the errors it knows)."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


def ensure_built(root: Path, build_dir: Path, targets: Sequence[str], *, out: TextIO,
                 quiet: bool = False, submission_dir: Path | None = None,
                 nice: int = 0) -> None:
    """Configures build_dir if it has no CMakeCache.txt, then builds `targets`.

    `submission_dir` is the staging folder of a submission (kitgrade.submission), or None for
    labs/. It becomes the cache variable KIT_SUBMISSION_DIR; a build directory configured with
    another value is reconfigured first, so it never builds a previous submission, and never
    builds a submission when labs/ is asked for.

    Build output is streamed to `out`; with quiet it is held back and only its tail is
    shown when the build fails. With `nice` the build runs at that lower CPU priority (the
    selftest's build beside its gradings), where the `nice` command exists.
    """
    if shutil.which("cmake") is None:
        raise BuildError("cmake not found on PATH")
    wanted = str(submission_dir) if submission_dir is not None else ""
    submission_flag = [f"-D{SUBMISSION_VARIABLE}={wanted}"] if wanted else []
    cache = build_dir / "CMakeCache.txt"
    if not cache.is_file():
        configure(root, build_dir, *submission_flag, out=out, quiet=quiet)
    elif cached_value(cache, SUBMISSION_VARIABLE) != wanted:
        configure(root, build_dir, f"-D{SUBMISSION_VARIABLE}={wanted}", out=out, quiet=quiet)
    argv = ["cmake", "--build", str(build_dir), "--target", *targets, "-j",
            str(os.cpu_count() or 1)]
    _run(niced(argv, nice), out, quiet)


def grading_targets(root: Path, labs: Sequence[Lab], variant: str) -> list[str]:
    """The targets a grading run of `labs` builds: each lab's grader in `variant`, and for the
    student's the reference grader too, which lists the tests (runner.LabTarget.listed_by: a
    student's binary could forge its own list). Built once per build directory; a student
    edition has none."""
    names = [target_name(lab, variant) for lab in labs]
    names += [target_name(lab, "reference") for lab in labs
              if variant == "student" and (root / "solutions" / lab.id).is_dir()]
    return names


def configure(root: Path, build_dir: Path, *flags: str, out: TextIO, quiet: bool = False,
              nice: int = 0) -> None:
    """The one way the kit configures a build directory: a Release build, with Ninja when it is
    installed (chosen only the first time: a build directory keeps its generator), plus `flags`;
    with `nice`, at that lower CPU priority (as ensure_built)."""
    first = not (build_dir / "CMakeCache.txt").is_file()
    generator = ["-G", "Ninja"] if first and shutil.which("ninja") else []
    release = ["-DCMAKE_BUILD_TYPE=Release"] if first else []
    _run(niced(["cmake", "-S", str(root), "-B", str(build_dir), *generator, *release, *flags],
                nice), out, quiet)


def niced(argv: list[str], nice: int) -> list[str]:
    """`argv` run at niceness `nice`, where the `nice` command exists (it execs the command)."""
    return ["nice", "-n", str(nice), *argv] if nice and shutil.which("nice") else argv


def cached_value(cache: Path, name: str) -> str:
    """The value of `name` in a CMakeCache.txt ("" when it is not there)."""
    try:
        lines = cache.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    for line in lines:
        key, _, value = line.partition("=")
        if key.split(":", 1)[0] == name:
            return value
    return ""


def _run(argv: list[str], out: TextIO, quiet: bool) -> None:
    if not quiet:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
    tail: deque[str] = deque(maxlen=FAILURE_TAIL_LINES)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace")
    except OSError as err:
        raise BuildError(f"cannot run {argv[0]}: {err.strerror}") from err
    with proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail.append(line)
            if not quiet:
                out.write(line)
                out.flush()
    if proc.returncode != 0:
        if quiet:
            out.writelines(tail)
        raise BuildError(f"`{' '.join(argv)}` exited with code {proc.returncode}",
                         output="".join(tail))
