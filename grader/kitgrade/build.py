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

FAILURE_TAIL_LINES = 60


class BuildError(Exception):
    """Configuring or building failed; the message says which command."""


def ensure_built(root: Path, build_dir: Path, targets: Sequence[str], *, out: TextIO,
                 quiet: bool = False) -> None:
    """Configures build_dir if it has no CMakeCache.txt, then builds `targets`.

    Build output is streamed to `out`; with quiet it is held back and only its tail is
    shown when the build fails.
    """
    if shutil.which("cmake") is None:
        raise BuildError("cmake not found on PATH")
    if not (build_dir / "CMakeCache.txt").is_file():
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        _run(["cmake", "-S", str(root), "-B", str(build_dir), *generator,
              "-DCMAKE_BUILD_TYPE=Release"], out, quiet)
    _run(["cmake", "--build", str(build_dir), "--target", *targets, "-j", str(os.cpu_count() or 1)],
         out, quiet)


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
        raise BuildError(f"`{' '.join(argv)}` exited with code {proc.returncode}")
