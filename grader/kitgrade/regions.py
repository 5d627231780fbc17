"""Checks that each solution is its stub with the TODO regions filled in, and nothing else changed.

A region in a stub reads

    // TODO(indexing.1): what to do
    ...placeholder...
    // END(indexing.1)

and the same region in the solution reads `// DONE(indexing.1): what to do`, the body filled in.
Outside the regions the two files must be identical, so `diff labs/X solutions/X` shows exactly the
exercise, and a solution cannot quietly change code the student never sees as theirs to edit.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .manifest import Lab

_OPEN = re.compile(r"^\s*//\s*(TODO|DONE)\(([\w.]+)\):")
_CLOSE = re.compile(r"^\s*//\s*END\(([\w.]+)\)")


@dataclass
class Skeleton:
    """A file with its region bodies removed: the lines outside regions, openers normalised."""

    lines: list[str]
    regions: list[str]


class RegionError(ValueError):
    """A malformed region (unclosed, mismatched END)."""


def skeleton(text: str, path: str) -> Skeleton:
    """The lines of `text` outside region bodies; a region's opener is kept with TODO/DONE unified."""
    kept: list[str] = []
    regions: list[str] = []
    open_id: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        opener, closer = _OPEN.match(line), _CLOSE.match(line)
        if open_id is None:
            if closer:
                raise RegionError(f"{path}:{number}: END({closer.group(1)}) without an open region")
            if opener:
                open_id = opener.group(2)
                regions.append(open_id)
                kept.append(line.replace(f"{opener.group(1)}({open_id})", f"REGION({open_id})", 1))
            else:
                kept.append(line)
        elif closer:
            if closer.group(1) != open_id:
                raise RegionError(f"{path}:{number}: END({closer.group(1)}) closes region {open_id}")
            kept.append(line)
            open_id = None
        elif opener:
            raise RegionError(f"{path}:{number}: region {opener.group(2)} opens inside {open_id}")
    if open_id is not None:
        raise RegionError(f"{path}: region {open_id} is never closed with // END({open_id})")
    return Skeleton(kept, regions)


def compare_pair(stub_path: Path, solution_path: Path) -> list[str]:
    """Problems found comparing one stub with its solution (empty when they match)."""
    stub_text, solution_text = stub_path.read_text(), solution_path.read_text()
    problems = []
    if "TODO(" not in stub_text:
        problems.append(f"{stub_path}: the stub has no TODO( region for the student")
    if "TODO(" in solution_text:
        problems.append(f"{solution_path}: the solution still has a TODO( marker")
    try:
        stub, solution = skeleton(stub_text, str(stub_path)), skeleton(solution_text, str(solution_path))
    except RegionError as error:
        return problems + [str(error)]
    if stub.regions != solution.regions:
        problems.append(f"{solution_path}: regions {solution.regions} differ from the stub's {stub.regions}")
    for number, (a, b) in enumerate(zip(stub.lines, solution.lines), 1):
        if a != b:
            problems.append(
                f"{solution_path}: differs from {stub_path} outside the TODO regions "
                f"(line {number} of the region-stripped text):\n  stub:     {a}\n  solution: {b}")
            break
    else:
        if len(stub.lines) != len(solution.lines):
            problems.append(f"{solution_path}: differs from {stub_path} in length outside the regions")
    return problems


def check_tree(root: Path, labs: Iterable[Lab]) -> list[str]:
    """Checks every lab's student files: present in labs/ and solutions/, equal outside regions."""
    problems = []
    for lab in labs:
        for name in lab.student_files:
            stub = root / "labs" / lab.id / name
            solution = root / "solutions" / lab.id / name
            missing = [str(p) for p in (stub, solution) if not p.is_file()]
            if missing:
                problems.extend(f"{p}: missing" for p in missing)
                continue
            problems.extend(compare_pair(stub, solution))
        extra_dir = root / "solutions" / lab.id
        if extra_dir.is_dir():
            for path in sorted(extra_dir.iterdir()):
                if path.name not in lab.student_files:
                    problems.append(f"{path}: solutions/ holds only the files a student edits")
    return problems
