"""``kit.py reset LAB [FILE]``: puts a lab's student files back to the stub, keeping yours.

Each file is asked about first ("Reset labs/01_indexing/indexing.cu to the stub? ... [y/N]");
--yes answers yes for every file, and without a terminal to ask on (and no --yes) nothing is
touched. Your version stays beside the stub as ``indexing.cu.backup-YYYYMMDD-HHMMSS`` (an
existing backup is never overwritten). A file that already is the stub is left alone.

The stub comes from ``grader/stubs/<lab>/<file>`` when that folder exists (a student edition
ships pristine copies there), otherwise from the repository's last commit
(``git show HEAD:labs/<lab>/<file>``), where labs/ holds the stubs.

Exit codes: 0 done (or nothing to do, or you answered no), 2 usage error (unknown lab or file,
no stub to be found, no terminal and no --yes).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from . import reports
from .manifest import Lab
from .context import UsageError, find_lab

BACKUP_SUFFIX = ".backup-"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reset", help="put a lab's files back to the stub (yours are kept as backups)",
        description=__doc__)
    parser.add_argument("lab", metavar="LAB", help='lab: "01", "01_indexing" or "indexing"')
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="one of the lab's student files (default: all of them)")
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    parser.set_defaults(handler=_cmd_reset)


def _cmd_reset(args: argparse.Namespace, ctx: Any, stdin: TextIO | None = None) -> int:

    stdin = stdin or sys.stdin
    lab = find_lab(ctx.manifest(), args.lab)
    names = [_student_file(lab, args.file, UsageError)] if args.file else list(lab.student_files)
    try:
        stubs = {name: stub_text(ctx.root, lab, name) for name in names}
    except StubError as err:
        raise UsageError(str(err)) from err

    lab_dir = ctx.root / "labs" / lab.id
    todo = [name for name in names if _read(lab_dir / name) != stubs[name]]
    for name in names:
        if name not in todo:
            ctx.stdout.write(f"labs/{lab.id}/{name} is already the stub; nothing to do.\n")
    asking = [name for name in todo if (lab_dir / name).exists()]
    if asking and not args.yes and not _interactive(stdin):
        raise UsageError(f"reset asks before it replaces your files and there is no terminal to "
                         f"ask on: add --yes to reset {', '.join(asking)} without asking")

    for name in todo:
        path, shown = lab_dir / name, f"labs/{lab.id}/{name}"
        if not path.exists():
            reports.write_atomic(path, stubs[name])
            ctx.stdout.write(f"{shown} was missing: restored the stub.\n")
            continue
        backup = backup_path(path)
        if not args.yes and not _confirm(ctx.stdout, stdin,
                                         f"Reset {shown} to the stub? Your version is kept as "
                                         f"{backup.name}.  [y/N] "):
            ctx.stdout.write(f"{shown}: left as it is.\n")
            continue
        _copy_new(path, backup)
        reports.write_atomic(path, stubs[name])
        ctx.stdout.write(f"{shown}: reset to the stub; your version is "
                         f"labs/{lab.id}/{backup.name}\n")
    return 0


class StubError(Exception):
    """No pristine copy of a student file could be found."""


def stub_text(root: Path, lab: Lab, name: str) -> str:
    """The stub of labs/<lab>/<name>: grader/stubs/<lab>/<name> when grader/stubs/<lab>/
    exists, else the file as committed at HEAD."""
    stubs = root / "grader" / "stubs" / lab.id
    if stubs.is_dir():
        try:
            return (stubs / name).read_text(encoding="utf-8")
        except OSError as err:
            raise StubError(f"no stub of {name}: cannot read grader/stubs/{lab.id}/{name}: "
                            f"{err.strerror}") from err
    where = f"labs/{lab.id}/{name}"
    if shutil.which("git") is None:
        raise StubError(f"no stub of {where}: grader/stubs/{lab.id}/ does not exist and git is "
                        "not installed to read it from the repository")
    proc = subprocess.run(["git", "-C", str(root), "show", f"HEAD:{where}"],
                          stdin=subprocess.DEVNULL, capture_output=True)
    if proc.returncode != 0:
        why = proc.stderr.decode(errors="replace").strip().splitlines()
        raise StubError(f"no stub of {where}: grader/stubs/{lab.id}/ does not exist and "
                        f"`git show HEAD:{where}` failed ({why[0] if why else proc.returncode})")
    return proc.stdout.decode("utf-8", errors="replace")


def backup_path(path: Path, now: datetime | None = None) -> Path:
    """`<path>.backup-YYYYMMDD-HHMMSS`, or with -2, -3... when that name is taken."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    candidate = path.with_name(f"{path.name}{BACKUP_SUFFIX}{stamp}")
    n = 2
    while candidate.exists():
        candidate = path.with_name(f"{path.name}{BACKUP_SUFFIX}{stamp}-{n}")
        n += 1
    return candidate


def _copy_new(source: Path, target: Path) -> None:
    """Copies source to target, which must not exist yet (never overwrites a backup)."""
    with open(source, "rb") as src, open(target, "xb") as dst:
        shutil.copyfileobj(src, dst)
    shutil.copystat(source, target)


def _student_file(lab: Lab, query: str, usage_error: type[Exception]) -> str:
    """A student file by name ("indexing.cu") or path ("labs/01_indexing/indexing.cu")."""
    path = Path(query)
    if path.name in lab.student_files and (len(path.parts) == 1 or path.parent.name == lab.id):
        return path.name
    raise usage_error(f"lab {lab.id} has no student file {query!r}; its files: "
                      + ", ".join(lab.student_files))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _interactive(stdin: TextIO) -> bool:
    try:
        return stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _confirm(out: TextIO, stdin: TextIO, question: str) -> bool:
    out.write(question)
    out.flush()
    answer = stdin.readline()
    if not answer:
        out.write("\n")
    return answer.strip().lower() in ("y", "yes")

