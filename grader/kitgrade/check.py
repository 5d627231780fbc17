"""``kit.py check``: are the kit's labs, graders, manifests and handouts consistent?

Host only, and done in seconds: it reads grader/labs.json and every lab's lab.json and wrong.json,
the stubs, the grader sources in grader/<lab>/, grader/thresholds.conf, the handouts, and
each grader's ``--kit_list`` listing from the build directory (when a grader is missing it builds
the grade_* and reference_* targets first, quietly, unless --no-build). It prints one line per
problem, the file and what to do, then ``check: N problems``.

What it checks, lab by lab:

1. Steps. Every ``TODO(<id>)`` region of a stub in labs/<lab>/ (in a student edition, of the
   pristine copy in grader/stubs/<lab>/) names a step of the lab's lab.json; every step but a
   performance step (``<name>.perf``) or a sanitizer step (every KIT_TEST of it in grader/<lab>/
   of kind memcheck, racecheck, synccheck or initcheck: it checks the code of other steps) has
   at least one TODO region; every step has at least one test in the grader's listing, and every
   listed test belongs to a step of the lab.
2. Thresholds. Every key of grader/thresholds.conf is used by a grader, and every key a grader
   uses is in the file. A grader uses a key when a C++ string literal of the form
   ``"<prefix>.<snake_case>"`` appears in a source of grader/<lab>/ (``*.cu``, ``*.cpp``, ``*.h``,
   ``*.cuh``, in any folder below it, hidden/ included), where <prefix> is the lab's step
   prefix: the part of its step ids before the dot, "indexing" for lab 01. The lab's step ids
   ("indexing.1", "indexing.perf") are not keys, and neither are literals on an ``#include``
   line ("indexing.h") or text inside comments. So write every key out whole, as the literal
   argument of ``expect_ratio_at_least`` or ``expect_counters``, never assembled from pieces.
   Every reference bar is stricter than its student bar: at least it for a speed ratio, at most
   it for a counter bar (a key ``<prefix>.<counter>``, kitgrade.counters: the most its counter
   may read), which has no floor either, and no line in grader/plausible.conf (which every other
   key used needs).
3. Filters. Every GoogleTest pattern of a lab.json ``sanitize_skip`` entry, and every
   ``racecheck`` filter of a wrong.json entry, matches at least one test of the lab's listing
   (GoogleTest's semantics: ``:``-separated patterns with ``*`` and ``?``, and a ``-`` before the
   patterns to leave out).
4. Known-wrong submissions (instructor copy only): every entry of grader/<lab>/wrong.json is
   valid, and its edits still apply to the reference solution; every entry of
   grader/<lab>/equivalent.json still fits the solution: each marked mutant is still made, each
   tuning choice is still a line of a DONE region (kitgrade.mutate.stale_marks).
5. Agreement. grader/labs.json lists exactly the folders grader/NN_name/ that have a
   CMakeLists.txt; each lab has labs/<lab>/, grader/<lab>/lab.json with its id (the manifest
   loader insists), and its id in docs/mainpage.md and README.md; in the instructor copy it
   has solutions/<lab>/, and each solution is its stub with the TODO regions filled in
   (kitgrade.regions).
6. Handouts (kitgrade.handout.problems). Every handout includes the tables generated from its
   lab.json, listing and thresholds, holds no hand-copied table or hint, and the generated
   fragments in the build directory are up to date; a missing handout is reported here.

Exit codes: 0 no problem, 1 some problem, 2 usage error.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from . import counters, handout, protocol, regions, runner, thresholds, wrong
from .build import BuildError, ensure_built
from .context import Context, ExitCode, default_build_dir
from .manifest import Lab, Manifest, ManifestError, load_manifest
from .model import SANITIZER_TOOLS

Listings = dict[str, list[protocol.TestSpec]]
"""Lab id -> the tests its grader lists (``grade_<lab> --kit_list``)."""

GRADER_SOURCE_SUFFIXES = (".cu", ".cpp", ".h", ".cuh")
_LAB_FOLDER = re.compile(r"^\d{2}_")
_SNAKE = r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*"
_CPP_TOKEN = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)
"""A comment, a string literal or a character literal, whichever starts first."""
_INCLUDE = re.compile(r"^\s*#\s*include\b")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds the `check` subcommand (see cli.SUBCOMMANDS)."""
    parser = subparsers.add_parser(
        "check", help="check that labs, graders, manifests and handouts agree (host only)",
        description=__doc__)
    parser.add_argument("--build-dir", type=Path,
                        help="CMake build directory whose graders list their tests "
                             "(default: <repo>/build)")
    parser.add_argument("--no-build", action="store_true",
                        help="never build: a missing grader is a problem")
    parser.set_defaults(handler=_cmd_check)


def _cmd_check(args: argparse.Namespace, ctx: Context) -> int:
    build_dir = default_build_dir(ctx, args.build_dir)
    problems = check_tree(ctx.root, build_dir, build=not args.no_build, out=ctx.stdout)
    ctx.stdout.writelines(f"{problem}\n" for problem in problems)
    ctx.stdout.write(f"check: {len(problems)} problem{'' if len(problems) == 1 else 's'}\n")
    return ExitCode.TESTS_FAILED if problems else ExitCode.OK


def check_tree(root: Path, build_dir: Path, *, build: bool, out: TextIO) -> list[str]:
    """Every problem of the kit at `root`, the graders' listings read from `build_dir` (built
    first when a grader is missing and `build`; the build's output goes to `out` only if it
    fails)."""
    try:
        manifest = load_manifest(root / "grader" / "labs.json")
    except ManifestError as err:
        return [f"grader/labs.json: {err}; fix it: every command of the kit refuses to start "
                "until it loads"]
    listings, problems = read_listings(root, manifest, build_dir, build=build, out=out)
    return problems + find_problems(root, manifest, listings)


def read_listings(root: Path, manifest: Manifest, build_dir: Path, *, build: bool,
                  out: TextIO) -> tuple[Listings, list[str]]:
    """Each lab's tests as its student grader lists them, and the problems met reading them (a
    lab that could not be listed is left out of the listings)."""
    binaries = {lab.id: runner.lab_target(root, build_dir, lab, "student").binary
                for lab in manifest.labs}
    problems: list[str] = []
    built = build and not all(binary.is_file() for binary in binaries.values())
    if built:
        variants = ["student"] + (["reference"] if (root / "solutions").is_dir() else [])
        targets = [runner.target_name(lab, variant)
                   for variant in variants for lab in manifest.labs]
        out.write(f"check: a grader is missing; building the grade_* "
                  f"{'and reference_* ' if len(variants) > 1 else ''}targets in {build_dir}\n")
        out.flush()
        try:
            ensure_built(root, build_dir, targets, out=out, quiet=True)
        except BuildError as err:
            problems.append(f"{_shown(build_dir, root)}: the graders do not build ({err}); "
                            f"fix the errors above (`python3 grader/kit.py grade` explains "
                            f"the ones it knows)")
            return {}, problems
        binaries = {lab.id: runner.lab_target(root, build_dir, lab, "student").binary
                    for lab in manifest.labs}
    listings: Listings = {}
    for lab in manifest.labs:
        binary = binaries[lab.id]
        shown = _shown(binary, root)
        if not binary.is_file():
            how = ("the build did not make it; look for its target in "
                   f"grader/{lab.id}/CMakeLists.txt" if built else
                   f"build it (cmake --build {_shown(build_dir, root)} --target {binary.name}), "
                   "or run `kit.py check` without --no-build")
            problems.append(f"{shown}: missing, so its tests cannot be checked; {how}")
            continue
        try:
            listings[lab.id] = protocol.list_tests(binary, lab.id, "student",
                                                   [step.id for step in lab.steps])
        except protocol.ProtocolError as err:
            problems.append(f"grader/{lab.id}/: {shown} --kit_list: {err}; fix the grader's "
                            f"KIT_TEST declarations (steps are those of grader/{lab.id}/lab.json)")
    return listings, problems


def find_problems(root: Path, manifest: Manifest, listings: Listings) -> list[str]:
    """Every problem of the kit at `root`, given the graders' listings (a lab missing from
    `listings` skips the checks that need its tests)."""
    instructor = (root / "solutions").is_dir()
    problems = _agreement(root, manifest, instructor)
    table: dict[str, tuple[float, float]] | None
    try:
        table = thresholds.load(root / "grader" / "thresholds.conf")
    except thresholds.ThresholdsError as err:
        problems.append(f"{_relative(str(err), root)}; each line of grader/thresholds.conf is "
                        "'key student_ratio reference_ratio'")
        table = None
    used: dict[str, list[str]] = {}
    for lab in manifest.labs:
        listing = listings.get(lab.id)
        problems += _steps(root, lab, listing)
        for key, where in threshold_keys(root, lab):
            used.setdefault(key, []).append(where)
        subs: list[wrong.WrongSubmission] = []
        if instructor:
            subs, found = _wrong_submissions(root, lab)
            problems += found
            # mutate (an instructor command) is not in the student edition; nor is this check.
            from . import mutate
            problems += mutate.stale_marks(root, lab)
        if listing is not None:
            problems += _filters(lab, subs, listing)
    if table is not None:  # the handout check needs the thresholds too
        problems += _thresholds(root, table, used)
        problems += _plausible(root, table, used)
        problems += handout.problems(root, manifest, listings)
    return problems


def _plausible(root: Path, table: dict[str, tuple[float, float]],
               used: dict[str, list[str]]) -> list[str]:
    """grader/plausible.conf names the keys of thresholds.conf (those the graders use: an unused
    one is reported by _thresholds), and only those, each above its bars."""
    try:
        plausible = thresholds.load_plausible(root / "grader" / thresholds.PLAUSIBLE_FILE)
    except thresholds.ThresholdsError as err:
        return [_relative(str(err), root)]
    problems = [f"grader/plausible.conf: no line for '{key}' (grader/thresholds.conf has it)"
                for key in table if key not in plausible and key in used
                and not counters.is_counter_key(key)]
    problems += [f"grader/plausible.conf: '{key}' is not a key of grader/thresholds.conf"
                 for key in plausible if key not in table]
    problems += [f"grader/plausible.conf: '{key}' is a counter bar (the most a counter may read): "
                 f"remove its line" for key in plausible if counters.is_counter_key(key)]
    problems += [f"grader/plausible.conf: '{key}' {value:g} is not above its bars "
                 f"{table[key][0]:g} / {table[key][1]:g}"
                 for key, value in plausible.items() if key in table and value <= max(table[key])]
    return problems


# ---------------------------------------------------------------- 1. steps

def _steps(root: Path, lab: Lab, listing: list[protocol.TestSpec] | None) -> list[str]:
    problems = []
    steps = [step.id for step in lab.steps]
    marked: set[str] = set()
    for path in _files(_stub_dir(root, lab)):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            regions.skeleton(text, _shown(path, root))
        except regions.RegionError as err:
            problems.append(f"{err}; close every region with // END(<id>) of the same id")
        for number, line in enumerate(text.splitlines(), 1):
            opener = regions._OPEN.match(line)
            if opener is None or opener.group(1) != "TODO":
                continue
            region = opener.group(2)
            marked.add(region)
            if region not in steps:
                problems.append(f"{_shown(path, root)}:{number}: TODO({region}) names no step of "
                                f"{lab.id} ({', '.join(steps)}); use one of them, or add the step "
                                f"to grader/{lab.id}/lab.json")
    checked_elsewhere = sanitizer_steps(root, lab)
    for step in lab.steps:
        if step.suffix != "perf" and step.id not in marked and step.id not in checked_elsewhere:
            problems.append(f"{_shown(_stub_dir(root, lab), root)}/: no TODO({step.id}) region "
                            f"in any stub; mark the code a student writes for step {step.id} "
                            f"with one")
    if listing is None:
        return problems
    tested = {spec.step for spec in listing}
    for step in lab.steps:
        if step.id not in tested:
            problems.append(f"grader/{lab.id}/: no test of step {step.id} in grade_{lab.id} "
                            f"--kit_list; give a KIT_TEST the step \"{step.id}\"")
    for spec in listing:
        if spec.step not in steps:
            problems.append(f"grader/{lab.id}/: test {spec.id} is of step {spec.step!r}, not a "
                            f"step of {lab.id} ({', '.join(steps)}); fix its KIT_TEST step or "
                            f"add the step to grader/{lab.id}/lab.json")
    return problems


_DECLARED = re.compile(r"\bKIT_(?:HIDDEN_)?TEST(?:_P)?\(\s*\w+\s*,\s*\w+\s*,\s*\"([^\"]+)\"\s*,"
                       r"\s*(\w+)\s*,")
"""A test's declaration in a grader source: its step and its kind."""


def sanitizer_steps(root: Path, lab: Lab) -> set[str]:
    """The steps of `lab` whose every test, as grader/<lab>/ declares them, runs under a
    compute-sanitizer tool: they grade the code of other steps and have no TODO region."""
    kinds: dict[str, set[str]] = {}
    for path in _files(root / "grader" / lab.id):
        if path.suffix in GRADER_SOURCE_SUFFIXES:
            for step, kind in _DECLARED.findall(path.read_text(encoding="utf-8", errors="replace")):
                kinds.setdefault(step, set()).add(kind)
    return {step for step, found in kinds.items() if found <= set(SANITIZER_TOOLS)}


def _stub_dir(root: Path, lab: Lab) -> Path:
    """Where the lab's stubs are as handed out: labs/<lab>/, or in a student edition, whose
    labs/ a student edits, the pristine copies in grader/stubs/<lab>/ (kitgrade.release)."""
    pristine = root / "grader" / "stubs" / lab.id
    return pristine if pristine.is_dir() else root / "labs" / lab.id


# ---------------------------------------------------------------- 2. thresholds

def threshold_keys(root: Path, lab: Lab) -> list[tuple[str, str]]:
    """The thresholds keys the sources of grader/<lab>/ use, each with "file:line" (the rule is in
    this module's docstring)."""
    key = re.compile(rf"{re.escape(lab.name)}\.{_SNAKE}")
    steps = {step.id for step in lab.steps}
    found = []
    for path in _files(root / "grader" / lab.id):
        if path.suffix not in GRADER_SOURCE_SUFFIXES:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for token in _CPP_TOKEN.finditer(text):
            literal = token.group()
            if not literal.startswith('"') or not key.fullmatch(literal[1:-1]):
                continue
            if literal[1:-1] in steps:
                continue
            line_start = text.rfind("\n", 0, token.start()) + 1
            if _INCLUDE.match(text[line_start:token.start()]):
                continue
            number = text.count("\n", 0, token.start()) + 1
            found.append((literal[1:-1], f"{_shown(path, root)}:{number}"))
    return found


def _thresholds(root: Path, table: dict[str, tuple[float, float]],
                used: dict[str, list[str]]) -> list[str]:
    file = "grader/thresholds.conf"
    problems = []
    for key, places in used.items():
        if key not in table:
            problems.append(f"{places[0]}: threshold key \"{key}\" is not in {file}; add a line "
                            f"'{key}  STUDENT_RATIO  REFERENCE_RATIO' there")
    lines = (root / "grader" / "thresholds.conf").read_text().splitlines()
    problems += _bar_order(root)
    for key in table:
        if key not in used:
            number = next(i for i, line in enumerate(lines, 1)
                          if line.split("#", 1)[0].split()[:1] == [key])
            problems.append(f"{file}:{number}: key {key} is used by no grader source "
                            f"(grader/<lab>/); remove the line, or fix the key's spelling")
    return problems


def _bar_order(root: Path) -> list[str]:
    """A speed ratio's reference bar is at least its student bar (the reference must do better);
    a counter bar's is at most (a counter bar is the most its counter may read), and it has no
    floor (graded speed)."""
    file = root / "grader" / "thresholds.conf"
    problems = []
    for section, keys in thresholds.load_sections(file).items():
        where = f"grader/thresholds.conf [{section or 'default'}]"
        for key, (student, reference) in keys.items():
            if counters.is_counter_key(key) and reference > student:
                problems.append(f"{where}: '{key}' is a counter bar (the most its counter may "
                                f"read): its reference bar {reference:g} must not be above its "
                                f"student bar {student:g}")
            elif not counters.is_counter_key(key) and reference < student:
                problems.append(f"{where}: '{key}': its reference bar {reference:g} must not be "
                                f"below its student bar {student:g} (the reference must do better)")
    problems += [f"grader/thresholds.conf: '{key}' is a counter bar: a floor (graded speed) "
                 f"means nothing for it" for section in thresholds.floors(file).values()
                 for key in section if counters.is_counter_key(key)]
    return problems


# ---------------------------------------------------------------- 3. filters

def filter_matches(test_filter: str, test_id: str) -> bool:
    """Whether GoogleTest's --gtest_filter=`test_filter` selects the test `test_id`."""
    positive, _, negative = test_filter.partition("-")
    return (any(pattern_matches(p, test_id) for p in (positive or "*").split(":"))
            and not any(pattern_matches(p, test_id) for p in negative.split(":") if p))


def pattern_matches(pattern: str, test_id: str) -> bool:
    """One GoogleTest pattern: `*` any text, `?` one character, everything else itself."""
    return fnmatch.fnmatchcase(test_id, pattern.replace("[", "[[]"))


def _filters(lab: Lab, subs: list[wrong.WrongSubmission],
             listing: list[protocol.TestSpec]) -> list[str]:
    ids = [spec.id for spec in listing]
    problems = []
    for i, skip in enumerate(lab.sanitize_skip):
        for pattern in skip.tests:
            if not any(pattern_matches(pattern, test) for test in ids):
                problems.append(f"grader/{lab.id}/lab.json: sanitize_skip[{i}] ({skip.tool}) "
                                f"pattern '{pattern}' matches no test of grade_{lab.id}; fix it "
                                f"to name the tests to leave out, or remove it")
    for sub in subs:
        if sub.racecheck is None:
            continue
        positive = sub.racecheck.partition("-")[0]
        dead = [p for p in positive.split(":") if p and not any(pattern_matches(p, t) for t in ids)]
        if dead or not any(filter_matches(sub.racecheck, t) for t in ids):
            what = f"pattern '{dead[0]}' of " if dead else ""
            problems.append(f"grader/{lab.id}/wrong.json: {sub.name}: {what}racecheck filter "
                            f"'{sub.racecheck}' matches no test of grade_{lab.id}; name a small "
                            f"test that runs the broken kernel")
    return problems


# ---------------------------------------------------------------- 4. known-wrong submissions

def _wrong_submissions(root: Path, lab: Lab) -> tuple[list[wrong.WrongSubmission], list[str]]:
    try:
        subs = wrong.load(root, lab)
    except wrong.WrongError as err:
        return [], [f"{err}; fix the entry"]
    problems = []
    for sub in subs:
        try:
            wrong.apply(root, lab, sub)
        except wrong.WrongError as err:
            problems.append(f"{err}; make the edit's find text match the solution again")
        except OSError as err:
            problems.append(f"grader/{lab.id}/wrong.json: {sub.name}: cannot read a file of the "
                            f"solution ({err}); restore solutions/{lab.id}/")
    return subs, problems


# ---------------------------------------------------------------- 5. agreement

def _agreement(root: Path, manifest: Manifest, instructor: bool) -> list[str]:
    problems = []
    listed = manifest.lab_ids()
    grader = root / "grader"
    for folder in sorted(p.name for p in grader.iterdir() if p.is_dir()):
        if (_LAB_FOLDER.match(folder) and (grader / folder / "CMakeLists.txt").is_file()
                and folder not in listed):
            problems.append(f"grader/{folder}/: has a CMakeLists.txt but grader/labs.json does "
                            f"not list it; add \"{folder}\" to grader/labs.json, or remove the "
                            f"folder")
    texts = {name: _read(root / name) for name in ("docs/mainpage.md", "README.md")}
    for lab in manifest.labs:
        must_exist = [(f"grader/{lab.id}/CMakeLists.txt", "its one kit_add_lab() line"),
                      (f"labs/{lab.id}/", "the stubs a student edits")]
        if instructor:
            must_exist.append((f"solutions/{lab.id}/", "the reference solution"))
        for path, what in must_exist:
            if not (root / path).exists():
                problems.append(f"{path}: missing, but grader/labs.json lists {lab.id}; add "
                                f"{what}")
        for name, text in texts.items():
            if lab.id not in text:
                problems.append(f"{name}: does not mention {lab.id}; add the lab to its list "
                                f"of labs")
    if instructor:
        problems += [_relative(problem, root) + "; keep the solution equal to its stub outside "
                     "the TODO regions" for problem in regions.check_tree(root, manifest.labs)]
    return problems


# ---------------------------------------------------------------- helpers

def _files(folder: Path) -> Iterable[Path]:
    """Every file below `folder`, sorted (none when it does not exist)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _shown(path: Path, root: Path) -> str:
    """`path` relative to the repository root when it is inside it."""
    try:
        return str(path.absolute().relative_to(root.absolute()))
    except ValueError:
        return str(path)


def _relative(problem: str, root: Path) -> str:
    """A kitgrade.regions message with the root's absolute prefix taken off its paths."""
    return problem.replace(f"{root.absolute()}/", "").replace(f"{root}/", "")
