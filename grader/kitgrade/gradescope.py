"""The Gradescope autograder zip: ``python3 grader/kit.py gradescope OUT.zip [LAB ...]``.

Writes the zip Gradescope asks for when an assignment's autograder is configured:

- ``setup.sh`` (Gradescope runs it once, as root, when it builds the autograder image): installs
  NVIDIA's CUDA toolkit from NVIDIA's apt repository when the image has no ``nvcc``, then the
  kit's own dependencies (``kit/setup.sh``);
- ``run_autograder`` (Gradescope runs it for each submission): grades
  ``/autograder/submission`` on the labs given here (every lab when none is given) through
  ``kit/ci/gradescope/run_autograder``, and hands Gradescope ``results.json``;
- ``kit/``: the grading copy of the kit, the instructor's copy without ``solutions/``, the
  known-wrong submissions (``grader/*/wrong.json``), the equivalent mutants
  (``grader/*/equivalent.json``), the documentation and the kit's own CI. Hidden tests stay: the
  autograder's files are not shown to students. Before the zip is written, every line of the
  reference solutions is looked for in it (as ``kit.py release`` does), and a hit stops it.

A submission needs an NVIDIA GPU to be graded, and Gradescope's own runners have none: without
one, every submission gets 0 and the message says why (see docs/instructors.md, "Grading
platforms", for how a GPU gets into the loop).
"""

from __future__ import annotations

import argparse
import fnmatch
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from . import release
from .context import UsageError, find_lab

LEFT_OUT = ("solutions/*", "grader/*/wrong.json", "grader/*/equivalent.json", ".ci/*",
            "grader/edition.json", "docs/*")
"""Paths of the instructor's copy that the grading copy leaves out (fnmatch patterns)."""

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (kit.py gradescope).
set -euo pipefail
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  # NVIDIA's CUDA toolkit from NVIDIA's apt repository (Gradescope's Ubuntu images have none).
  . /etc/os-release
  repo="https://developer.download.nvidia.com/compute/cuda/repos/ubuntu${VERSION_ID//./}/x86_64"
  apt-get update -qq && apt-get install -y -qq curl ca-certificates >/dev/null
  curl -fsSL -o /tmp/cuda-keyring.deb "$repo/cuda-keyring_1.1-1_all.deb"
  dpkg -i /tmp/cuda-keyring.deb
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cuda-toolkit-13-0 >/dev/null
fi
export PATH="/usr/local/cuda/bin:$PATH"
cd /autograder/source/kit
bash setup.sh
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission (kit.py gradescope wrote it, for the labs below).
export KIT="${{KIT:-/autograder/source/kit}}"
export LABS="${{LABS-{labs}}}"
export PATH="/usr/local/cuda/bin:$PATH"
exec "$KIT/ci/gradescope/run_autograder"
"""


def grading_files(root: Path) -> list[str]:
    """The files of the grading copy (relative POSIX paths)."""
    return [rel for rel in release.source_files(root)
            if not any(fnmatch.fnmatch(rel, pattern) for pattern in LEFT_OUT)]


def write_zip(root: Path, out: Path, labs: list[str], secrets: list[release.Secret]) -> int:
    """Writes the autograder zip for `labs` to `out`; returns the number of files in it. Raises
    UsageError when a solution line is found in what would be zipped."""
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp)
        for rel in grading_files(root):
            target = stage / "kit" / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, target)
        (stage / "setup.sh").write_text(SETUP_SH)
        (stage / "run_autograder").write_text(RUN_AUTOGRADER.format(labs=" ".join(labs)))
        for name in ("setup.sh", "run_autograder"):
            (stage / name).chmod(0o755)
        leaks, _ = release.find_leaks(secrets, stage)
        if leaks:
            raise UsageError("gradescope: solution lines in the grading copy:\n  "
                             + "\n  ".join(release.describe_leaks(leaks)))
        files = sorted(p for p in stage.rglob("*") if p.is_file())
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                info = zipfile.ZipInfo.from_file(path, path.relative_to(stage).as_posix())
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, path.read_bytes())
        return len(files)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "gradescope", help="write the Gradescope autograder zip (no answers in it)",
        description=__doc__)
    parser.add_argument("out", type=Path, metavar="OUT.zip", help="the zip to write")
    parser.add_argument("labs", nargs="*", metavar="LAB",
                        help="the assignment's labs (default: every lab the submission has)")
    parser.set_defaults(handler=_cmd_gradescope)


def _cmd_gradescope(args: argparse.Namespace, ctx: Any) -> int:
    manifest = ctx.manifest()
    if not (ctx.root / "solutions").is_dir():
        raise UsageError("this copy of the kit has no solutions/: build the zip from the "
                         "instructor's copy")
    labs = [find_lab(manifest, name).id for name in args.labs]
    out = args.out.absolute()
    count = write_zip(ctx.root, out, labs, release.secrets_of(ctx.root, manifest))
    ctx.stdout.write(f"Gradescope autograder written to {out} ({count} files; labs: "
                     f"{' '.join(labs) or 'every lab the submission has'}); no solution line "
                     "is in it.\nUpload it as the assignment's autograder; its image needs an "
                     "NVIDIA GPU to grade (docs/instructors.md, \"Grading platforms\").\n")
    return 0
