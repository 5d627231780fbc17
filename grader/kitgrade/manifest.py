"""The lab manifest (grader/labs.json): which labs exist, their steps and hints.

labs.json lists the labs in order; a lab given by its id is described in grader/<id>/lab.json.

The manifest is the only place the runner learns about labs, so adding a lab is one entry
there plus its CMake targets. A lab may also ban libraries (``banned_libraries``: cuBLAS in a lab
about writing a GEMM, CUB in a lab about writing a reduction); kitgrade.bans enforces them.
It may leave tests out of ``kit.py sanitize`` under one tool (``sanitize_skip``: lab 04's
2048^3 products under racecheck), and say how Gradescope shows its hidden tests, the
instructor-only ones in grader/<id>/hidden/ (``hidden_visibility``, default "after_due_date"),
and give the student's worker more hardware work queues than the judges' default
(``worker_queues``: lab 07, whose pipeline runs on four streams).
It is validated strictly on load: a typo in a field name or
a step whose id does not belong to its lab would otherwise surface much later as a
confusing grading result, so every error names the offending field, e.g.
``labs.json: labs[0].steps[2].hints: expected a non-empty list of strings``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .model import SANITIZER_TOOLS, step_suffix

VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
"""Gradescope's visibility values; a step's value is passed through to results.json."""

DEFAULT_HIDDEN_VISIBILITY = "after_due_date"
"""How a lab's hidden tests are shown unless its lab.json says otherwise: students see them,
and what they lost to them, once the assignment is over."""

MAX_WORKER_QUEUES = 32
"""The most CUDA_DEVICE_MAX_CONNECTIONS the driver takes."""

_LAB_ID = re.compile(r"^(\d{2})_([a-z][a-z0-9_]*)$")


def lab_number(lab_id: str) -> str:
    """The two-digit prefix, "01" for "01_indexing"."""
    return lab_id.split("_", 1)[0]


def lab_name(lab_id: str) -> str:
    """The id without its number, "indexing" for "01_indexing"; step ids start with it."""
    return lab_id.split("_", 1)[1]


class ManifestError(Exception):
    """The manifest is missing, not JSON, or has a field of the wrong shape."""


@dataclass(frozen=True)
class Step:
    id: str
    title: str
    hints: tuple[str, ...]
    visibility: str = "visible"

    @property
    def suffix(self) -> str:
        """The part after the lab name: "1" for "indexing.1", "perf" for "indexing.perf"."""
        return step_suffix(self.id)


@dataclass(frozen=True)
class BannedLibrary:
    """A library a lab's student code must not use, and how to recognise it.

    `patterns` are regular expressions searched in each line of the student's files with
    comments and string literals blanked out; `symbols` are regular expressions searched in
    the demangled names ``nm -C`` lists for the student's compiled library. `steps` are the
    steps whose tests the ban fails (empty: every step of the lab).
    """

    name: str
    patterns: tuple[str, ...]
    symbols: tuple[str, ...]
    steps: tuple[str, ...]
    why: str

    def applies_to(self, step_id: str) -> bool:
        return not self.steps or step_id in self.steps


@dataclass(frozen=True)
class SanitizeSkip:
    """Tests `kit.py sanitize` leaves out under `tool` unless given a --filter (GoogleTest
    patterns), and why: too slow under that tool, with their code paths run by smaller tests."""

    tool: str
    tests: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class Lab:
    id: str
    title: str
    timeout_s: float
    student_files: tuple[str, ...]
    steps: tuple[Step, ...]
    banned_libraries: tuple[BannedLibrary, ...] = ()
    sanitize_skip: tuple[SanitizeSkip, ...] = ()
    hidden_visibility: str = DEFAULT_HIDDEN_VISIBILITY
    """The Gradescope visibility of every hidden test (KIT_HIDDEN_TEST) of the lab."""
    worker_queues: int | None = None
    """The hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS) of the student's worker, where the
    judge's default (2, common/src/remote_judge.cpp) is too few: a lab whose student code runs
    several streams side by side. Fewer queues make a context faster to create."""

    def sanitize_skipped(self, tool: str) -> list[SanitizeSkip]:
        return [s for s in self.sanitize_skip if s.tool == tool]

    @property
    def number(self) -> str:
        return lab_number(self.id)

    @property
    def name(self) -> str:
        return lab_name(self.id)

    def find_step(self, query: str) -> Step | None:
        """A step by full id ("indexing.1") or by suffix ("1", "perf")."""
        for step in self.steps:
            if query in (step.id, step.suffix):
                return step
        return None


@dataclass(frozen=True)
class Manifest:
    labs: tuple[Lab, ...]

    def find_lab(self, query: str) -> Lab | None:
        """A lab by id ("01_indexing"), number ("01" or "1") or name ("indexing")."""
        query = query.strip().lower()
        for lab in self.labs:
            if query in (lab.id, lab.number, lab.name):
                return lab
            if query.isdigit() and int(query) == int(lab.number):
                return lab
        return None

    def lab_ids(self) -> list[str]:
        return [lab.id for lab in self.labs]


def load_manifest(path: Path) -> Manifest:
    """Reads and validates the manifest; raises ManifestError naming the bad field."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ManifestError(f"cannot read lab manifest {path}: {err.strerror}") from err
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ManifestError(f"{path.name}: not valid JSON: {err}") from err
    if isinstance(data, dict) and isinstance(data.get("labs"), list):
        data["labs"] = [_include(item, path.parent, f"{path.name}: labs[{i}]")
                        for i, item in enumerate(data["labs"])]
    return parse_manifest(data, source=path.name)


def _include(item: Any, grader_dir: Path, where: str) -> Any:
    """A lab given by id is described in grader/<id>/lab.json, next to its tests."""
    if not isinstance(item, str):
        return item
    lab_file = grader_dir / item / "lab.json"
    try:
        data = json.loads(lab_file.read_text(encoding="utf-8"))
    except OSError as err:
        raise ManifestError(f"{where}: cannot read {item}/lab.json: {err.strerror}") from err
    except json.JSONDecodeError as err:
        raise ManifestError(f"{where}: {item}/lab.json is not valid JSON: {err}") from err
    if isinstance(data, dict) and data.get("id") != item:
        raise ManifestError(f"{where}: {item}/lab.json has id {data.get('id')!r}, expected {item!r}")
    return data


def parse_manifest(data: Any, source: str = "labs.json") -> Manifest:
    """Validates already-decoded manifest JSON."""
    top = _Fields(data, source, required={"labs"}, optional=set())
    labs_data = top.get("labs", list)
    if not labs_data:
        raise ManifestError(f"{source}: labs: expected at least one lab")
    labs = tuple(_parse_lab(item, f"{source}: labs[{i}]") for i, item in enumerate(labs_data))
    _check_unique([lab.id for lab in labs], f"{source}: labs", "lab id")
    return Manifest(labs)


def _parse_lab(data: Any, where: str) -> Lab:
    fields = _Fields(
        data, where, required={"id", "title", "timeout_s", "student_files", "steps"},
        optional={"banned_libraries", "sanitize_skip", "hidden_visibility", "worker_queues"}
    )
    lab_id = fields.get("id", str)
    if not _LAB_ID.match(lab_id):
        raise ManifestError(f"{where}.id: {lab_id!r} is not of the form NN_name (e.g. 01_indexing)")
    timeout = fields.get("timeout_s", (int, float))
    if timeout <= 0:
        raise ManifestError(f"{where}.timeout_s: expected a positive number of seconds")
    files = fields.get("student_files", list)
    if not all(isinstance(f, str) and f for f in files):
        raise ManifestError(f"{where}.student_files: expected a list of file names")
    steps_data = fields.get("steps", list)
    if not steps_data:
        raise ManifestError(f"{where}.steps: expected at least one step")
    name = lab_id.split("_", 1)[1]
    steps = tuple(
        _parse_step(item, f"{where}.steps[{i}]", name) for i, item in enumerate(steps_data)
    )
    _check_unique([s.id for s in steps], f"{where}.steps", "step id")
    bans_data = fields.get("banned_libraries", list, default=[])
    bans = tuple(_parse_ban(item, f"{where}.banned_libraries[{i}]", [s.id for s in steps])
                 for i, item in enumerate(bans_data))
    _check_unique([b.name for b in bans], f"{where}.banned_libraries", "library name")
    skips = tuple(_parse_sanitize_skip(item, f"{where}.sanitize_skip[{i}]")
                  for i, item in enumerate(fields.get("sanitize_skip", list, default=[])))
    hidden_visibility = _visibility(
        fields.get("hidden_visibility", str, default=DEFAULT_HIDDEN_VISIBILITY),
        f"{where}.hidden_visibility")
    queues = fields.get("worker_queues", int)
    if queues is not None and not 1 <= queues <= MAX_WORKER_QUEUES:
        raise ManifestError(f"{where}.worker_queues: expected 1 to {MAX_WORKER_QUEUES} "
                            "(hardware work queues)")
    return Lab(lab_id, _non_empty(fields.get("title", str), f"{where}.title"), float(timeout),
               tuple(files), steps, bans, skips, hidden_visibility, queues)


def _parse_sanitize_skip(data: Any, where: str) -> SanitizeSkip:
    fields = _Fields(data, where, required={"tool", "tests", "why"}, optional=set())
    tool = fields.get("tool", str)
    if tool not in SANITIZER_TOOLS:
        raise ManifestError(f"{where}.tool: {tool!r} is not one of {', '.join(SANITIZER_TOOLS)}")
    tests = fields.get("tests", list)
    if not tests or not all(isinstance(p, str) and p and not set(p) & set(":-\n\0 ")
                            for p in tests):
        raise ManifestError(f"{where}.tests: expected a non-empty list of GoogleTest patterns "
                            "(no ':', '-' or spaces)")
    return SanitizeSkip(tool, tuple(tests), _non_empty(fields.get("why", str), f"{where}.why"))


def _parse_ban(data: Any, where: str, step_ids: list[str]) -> BannedLibrary:
    fields = _Fields(data, where, required={"name", "why"}, optional={"patterns", "symbols", "steps"})
    name = _non_empty(fields.get("name", str), f"{where}.name")
    patterns = _regex_list(fields.get("patterns", list, default=[]), f"{where}.patterns")
    symbols = _regex_list(fields.get("symbols", list, default=[]), f"{where}.symbols")
    if not patterns and not symbols:
        raise ManifestError(f"{where}: give at least one of 'patterns' (source) or 'symbols' (nm)")
    steps = fields.get("steps", list, default=[])
    for i, step in enumerate(steps):
        if step not in step_ids:
            raise ManifestError(f"{where}.steps[{i}]: {step!r} is not a step of this lab "
                                f"(steps: {', '.join(step_ids)})")
    _check_unique(steps, f"{where}.steps", "step")
    return BannedLibrary(name, patterns, symbols, tuple(steps),
                         _non_empty(fields.get("why", str), f"{where}.why"))


def _regex_list(items: list[Any], where: str) -> tuple[str, ...]:
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item:
            raise ManifestError(f"{where}[{i}]: expected a non-empty string (a regular expression)")
        try:
            re.compile(item)
        except re.error as err:
            raise ManifestError(f"{where}[{i}]: {item!r} is not a valid regular expression: {err}") from err
    return tuple(items)


def _parse_step(data: Any, where: str, lab_name: str) -> Step:
    fields = _Fields(data, where, required={"id", "title", "hints"}, optional={"visibility"})
    step_id = fields.get("id", str)
    prefix, _, suffix = step_id.partition(".")
    if prefix != lab_name or not suffix:
        raise ManifestError(f"{where}.id: {step_id!r} must look like '{lab_name}.<n>'")
    hints = fields.get("hints", list)
    if not hints or not all(isinstance(h, str) and h.strip() for h in hints):
        raise ManifestError(f"{where}.hints: expected a non-empty list of strings")
    visibility = _visibility(fields.get("visibility", str, default="visible"), f"{where}.visibility")
    return Step(step_id, _non_empty(fields.get("title", str), f"{where}.title"), tuple(hints),
                visibility)


class _Fields:
    """Typed access to one JSON object that rejects unknown and missing keys."""

    def __init__(self, data: Any, where: str, required: set[str], optional: set[str]):
        if not isinstance(data, dict):
            raise ManifestError(f"{where}: expected an object")
        unknown = sorted(set(data) - required - optional)
        if unknown:
            raise ManifestError(f"{_field(where, unknown[0])}: unknown field")
        missing = sorted(required - set(data))
        if missing:
            raise ManifestError(f"{_field(where, missing[0])}: missing")
        self._data = data
        self._where = where

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        if key not in self._data:
            return default
        value = self._data[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise ManifestError(
                f"{_field(self._where, key)}: expected {names}, got {type(value).__name__}")
        return value


def _field(where: str, key: str) -> str:
    """ "labs.json" + "labs" -> "labs.json: labs"; "labs.json: labs[0]" + "id" -> "...labs[0].id"."""
    return f"{where}.{key}" if ":" in where else f"{where}: {key}"


def _visibility(value: str, where: str) -> str:
    if value not in VISIBILITIES:
        raise ManifestError(f"{where}: {value!r} is not one of {', '.join(VISIBILITIES)}")
    return value


def _non_empty(text: str, where: str) -> str:
    if not text.strip():
        raise ManifestError(f"{where}: must not be empty")
    return text


def _check_unique(ids: list[str], where: str, what: str) -> None:
    seen: set[str] = set()
    for value in ids:
        if value in seen:
            raise ManifestError(f"{where}: duplicate {what} {value!r}")
        seen.add(value)
