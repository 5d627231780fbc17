"""Grading a submission directory instead of labs/ (``kit.py grade --submission DIR``).

A submission holds the files a student edits, in any of three layouts, tried in this order for
each file: ``DIR/labs/<lab>/<file>`` (a copy of the kit's layout), ``DIR/<lab>/<file>``, and
``DIR/<file>`` (only when exactly one lab is graded, since file names could clash between labs).

How it is built: the files found are copied into one staging folder inside the build
directory, ``<build-dir>/submission/<lab>/<file>``, and CMake's cache variable
KIT_SUBMISSION_DIR points there (common/cmake/KitLab.cmake then takes each student file from it
before labs/). The staging folder always holds every student file of every lab, the submission's
for the labs graded and a copy of the stub for the others, so that every configure resolves the
same paths whichever submission came before. Files are rewritten only when their content changes,
with a fresh modification time, so the build recompiles exactly what changed. Only the student
files are copied: anything else in the submission (an extra header, a symlink to the reference
solution) is not on any include path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import bans
from .context import UsageError
from .manifest import Lab

STAGING = "submission"
"""The staging folder's name inside the build directory."""


class SubmissionError(UsageError):
    """The submission directory cannot be graded as asked; one line, exit code 2 (a usage error
    wherever a command meets it; batch catches it per submission)."""


@dataclass(frozen=True)
class Submission:
    root: Path
    labs: tuple[Lab, ...]
    files: dict[str, dict[str, Path]]
    """lab id -> student file name -> where it is in the submission."""

    def sources(self, lab: Lab) -> tuple[bans.SourceFile, ...]:
        """The submission's files of `lab`, named relative to the submission, for the ban scan."""
        return tuple(bans.SourceFile(path, _shown(path, self.root))
                     for path in self.files[lab.id].values())


def locate(root: Path, labs: Sequence[Lab], explicit: bool) -> Submission:
    """Finds the student files of `labs` in the submission `root`.

    With `explicit` (the labs were named on the command line) every one of them must be complete.
    Otherwise `labs` are candidates: the labs with at least one file in the submission are graded,
    and each of those must be complete.
    """
    root = root.absolute()
    if not root.exists():
        raise SubmissionError(f"submission directory does not exist: {root}")
    if not root.is_dir():
        raise SubmissionError(f"submission is not a directory: {root}")
    flat = len(labs) == 1
    found = {lab.id: _find_files(root, lab, flat) for lab in labs}
    chosen = list(labs) if explicit else [lab for lab in labs if found[lab.id]]
    if not explicit and not chosen:
        # Files at the top of the submission: accepted when they belong to one lab only.
        top = [lab for lab in labs if _find_files(root, lab, True)]
        if len(top) == 1:
            chosen = top
            found[top[0].id] = _find_files(root, top[0], True)
        elif len(top) > 1:
            raise SubmissionError(
                f"the files at the top of {root} belong to several labs "
                f"({', '.join(lab.id for lab in top)}); name the lab: kit.py grade LAB --submission DIR")
    if len(chosen) == 1:  # one lab graded: its files may also lie at the top of the submission
        found[chosen[0].id] = _find_files(root, chosen[0], True)
    if not any(found[lab.id] for lab in chosen):
        names = ", ".join(lab.id for lab in labs)
        raise SubmissionError(f"{root} holds no student file of {names} (looked for "
                              f"labs/<lab>/<file>, <lab>/<file>"
                              f"{' and <file>' if flat else ''})")
    for lab in chosen:
        missing = [name for name in lab.student_files if name not in found[lab.id]]
        if missing:
            places = ", ".join(str(p) for p in _candidate_dirs(root, lab, len(chosen) == 1))
            raise SubmissionError(f"submission lacks {lab.id}'s {', '.join(missing)} "
                                  f"(looked in {places})")
    real_root = root.resolve()
    for lab in chosen:
        for path in found[lab.id].values():
            if path.is_symlink() or not path.resolve().is_relative_to(real_root):
                raise SubmissionError(f"{path} is a symbolic link (or lies behind one); "
                                      "submit the file itself")
    return Submission(root, tuple(chosen), {lab.id: found[lab.id] for lab in chosen})


def _candidate_dirs(root: Path, lab: Lab, flat: bool) -> list[Path]:
    return [root / "labs" / lab.id, root / lab.id] + ([root] if flat else [])


def _find_files(root: Path, lab: Lab, flat: bool) -> dict[str, Path]:
    found = {}
    for name in lab.student_files:
        for folder in _candidate_dirs(root, lab, flat):
            if (folder / name).is_file():
                found[name] = folder / name
                break
    return found


def stage(submission: Submission, all_labs: Sequence[Lab], kit_root: Path, build_dir: Path) -> Path:
    """Writes the staging folder (see the module docstring) and returns it."""
    staging = build_dir / STAGING
    for lab in all_labs:
        for name in lab.student_files:
            source = submission.files.get(lab.id, {}).get(name, kit_root / "labs" / lab.id / name)
            if source.is_file():
                _write_if_changed(source.read_bytes(), staging / lab.id / name)
    return staging


def _write_if_changed(content: bytes, target: Path) -> None:
    if target.is_file() and not target.is_symlink() and target.read_bytes() == content:
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(content)  # a new file: its modification time is now, newer than any object
    tmp.replace(target)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
