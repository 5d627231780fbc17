"""Handout tables generated from the sources, never copied by hand.

A handout (docs/labs/NN_name.md) explains; the facts it would otherwise restate live elsewhere:
the steps, their titles and hints in grader/NN_name/lab.json, the tests and their points in the
grader itself (``grade_NN_name --kit_list``, where a parameterised test scores per instance), and
the performance bars in grader/thresholds.conf. ``kit.py handout-tables`` writes them as Markdown
fragments, which the docs target builds first and the handouts include with Doxygen's
``\\include{doc}``:

    <lab>_steps.md              step, TODO id, title, points (the sum of its visible tests)
    <lab>_tests_<step>.md       per step: test, what it checks (its title), kind, points
    <lab>_hints_<step>.md       per step: the hints, in order
    <lab>_thresholds.md         the lab's keys in thresholds.conf: student and reference bar,
                                and whether a bar is a least (a speed ratio) or a most (a counter)
    thresholds.md               every key of every lab (docs/grading.md)

Hidden tests (KIT_HIDDEN_TEST) never appear: a handout is for students. problems() is what
``kit.py check`` asks: a handout that does not include its fragments, still holds a table or hint
list the generator owns, or whose fragments in the build are older than their sources.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import counters, protocol, runner, thresholds
from .context import Context, ExitCode, UsageError, default_build_dir
from .manifest import Lab, Manifest, Step

GENERATED_DIR = Path("docs") / "generated"
"""Where the fragments go, below the build directory (the docs target's EXAMPLE_PATH)."""

STAMP = "handout-tables.stamp"
"""Written last, so the build knows the fragments are complete."""

ALL_THRESHOLDS = "thresholds.md"
GRADING_PAGE = Path("docs") / "grading.md"

INCLUDE = re.compile(r"^\s*\\include(?:\{doc\}|doc)\s+(\S+)\s*$")
"""How a page includes a fragment: `\\include{doc} 01_indexing_steps.md` on a line of its own
(`\\includedoc` is the same command under its older name)."""


# ---------------------------------------------------------------- listings

def as_tests(listing: Iterable[Any]) -> list[protocol.TestSpec]:
    """protocol.TestSpecs (what `kit.py check` reads) or dicts (--kit_list's JSON) alike."""
    def field(item: Any, key: str, default: Any = None) -> Any:
        return item.get(key, default) if isinstance(item, Mapping) else getattr(item, key, default)

    return [protocol.TestSpec(field(t, "id"), field(t, "step"), field(t, "kind"), field(t, "points"),
                       field(t, "title"), bool(field(t, "hidden", False))) for t in listing]


def read_listings(build_dir: Path, manifest: Manifest, root: Path) -> dict[str, list[protocol.TestSpec]]:
    """`--kit_list` of every lab's grade_ binary (the one a student edition has too)."""
    listings = {}
    for lab in manifest.labs:
        binary = runner.lab_target(root, build_dir, lab, "student").binary
        if not binary.is_file():
            raise FileNotFoundError(f"{binary} is not built (cmake --build {build_dir} --target "
                                    f"{runner.target_name(lab, 'student')})")
        specs = protocol.list_tests(binary, lab.id, "student", [s.id for s in lab.steps])
        listings[lab.id] = as_tests(specs)
    return listings


@dataclass(frozen=True)
class Row:
    """A row of a tests table: one test, or every instance of a parameterised one."""

    id: str
    title: str
    kind: str
    points: float
    instances: tuple[str, ...] = ()

    @property
    def total(self) -> float:
        return self.points * max(1, len(self.instances))


_INSTANCE = re.compile(r"^(?P<base>[^/]+/[^/.]+\.[^/]+)/(?P<param>[^/]+)$")
"""Instantiation/Fixture.Test/param: one instance of a value-parameterised test."""


def rows(tests: Sequence[protocol.TestSpec]) -> list[Row]:
    """The visible tests in listing order, the instances of a parameterised test in one row
    (each instance scores its own points, so the row is worth points x instances)."""
    grouped: dict[str, list[protocol.TestSpec]] = {}
    order: list[str] = []
    for test in tests:
        if test.hidden:
            continue
        match = _INSTANCE.match(test.id)
        key = match.group("base") if match else test.id
        if key not in grouped:
            grouped[key] = []
            order.append(key)
        grouped[key].append(test)
    out: list[Row] = []
    for key in order:
        group = grouped[key]
        first = group[0]
        params = [_INSTANCE.match(t.id).group("param") for t in group] if _INSTANCE.match(first.id) else []
        titles = {_strip_param(t.title, p) for t, p in zip(group, params)} if params else set()
        if params and len(titles) == 1 and len({(t.kind, t.points) for t in group}) == 1:
            out.append(Row(f"{key}/*", titles.pop(), first.kind, first.points, tuple(params)))
        else:  # instances that differ in kind or points are worth a row each
            out += [Row(t.id, t.title, t.kind, t.points) for t in group]
    return out


def _strip_param(title: str, param: str) -> str:
    suffix = f" [{param}]"
    return title[:-len(suffix)] if title.endswith(suffix) else title


def step_points(tests: Sequence[protocol.TestSpec], step: Step) -> float:
    return sum(t.points for t in tests if t.step == step.id and not t.hidden)


# ---------------------------------------------------------------- Markdown

_SPECIAL = re.compile(r"(::|--|[\\@&$#<>%_*|])")
_CALL_START = re.compile(r"^\(?[A-Za-z_][\w.:]*[(\[]")
_CODE = re.compile(r"\w_|_\w|^_|\w\(.*\)$|\w\[.*\]|[A-Za-z_]\w*\.[A-Za-z_]\w*|::|->")
_NOT_CODE = frozenset({"e.g", "i.e", "etc"})


def doc_text(text: str, *, table: bool = False) -> str:
    """Plain text (a hint, a title) made safe and readable in Doxygen's Markdown. `Code spans`
    are kept; words that are code (`saxpy_fast`, `blockDim.x`, `grid_size_1d(n, block)`, `x[i]`)
    become code spans; everything else that Doxygen or Markdown would read as a command, a link
    request, HTML or emphasis is escaped, so `__restrict__` stays itself and `Vec4<T>::type` is no
    link. In a table cell, code with a `|` in it is escaped text instead (a `|` would end the cell)."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unbalanced backtick: no code spans at all
        parts = [text.replace("`", "'")]
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 1 and not (table and "|" in part):
            out.append(f"`{part}`")
        else:
            out.append(_plain(part, table))
    return " ".join("".join(out).split())


def _plain(text: str, table: bool) -> str:
    words = text.split(" ")
    out = []
    i = 0
    while i < len(words):
        j = i + 1
        if _CALL_START.match(words[i]):  # a call or subscript with spaces inside: one piece of code
            while j < len(words) and j - i < 12 and _unbalanced(" ".join(words[i:j])):
                j += 1
            if _unbalanced(" ".join(words[i:j])):
                j = i + 1
        out.append(_word(" ".join(words[i:j]), table))
        i = j
    return " ".join(out)


def _unbalanced(text: str) -> bool:
    return text.count("(") > text.count(")") or text.count("[") > text.count("]")


def _word(word: str, table: bool) -> str:
    lead = len(word) - len(word.lstrip("(\"'"))
    core = word[lead:].rstrip(".,;:!?\"'")
    while core.endswith(")") and core.count(")") > core.count("("):
        core = core[:-1]
    tail = word[lead + len(core):]
    if core and _CODE.search(core) and core.lower() not in _NOT_CODE and not (table and "|" in core) \
            and "`" not in core:
        return _escape(word[:lead]) + f"`{core}`" + _escape(tail)
    return _escape(word)


def _escape(text: str) -> str:
    return _SPECIAL.sub(lambda m: "\\" + m.group(1), text)


def points_text(points: float) -> str:
    return f"{points:g}"


def ratio_text(value: float) -> str:
    """0.6 -> "0.60", 0.165 -> "0.165", 5.0 -> "5.00": bars read as the file writes them."""
    text = f"{value:g}"
    if "e" in text:
        return text
    whole, _, decimals = text.partition(".")
    return f"{whole}.{decimals.ljust(2, '0')}"


def step_anchor(lab: Lab, step: Step) -> str:
    """lab01_step1, lab01_step_perf: the section of the handout that a step's row links to."""
    suffix = step.suffix
    return f"lab{lab.number}_step{suffix}" if suffix.isdigit() else f"lab{lab.number}_step_{suffix}"


def step_label(step: Step) -> str:
    if step.suffix.isdigit():
        return f"Step {step.suffix}"
    if step.suffix == "perf":
        return "Performance step"
    return f"Step {step.suffix}"


def page_anchor(lab: Lab) -> str:
    return f"lab{lab.number}_{lab.name}"


def fragment_names(lab: Lab, keys: Sequence[str]) -> list[str]:
    """Every fragment a lab's handout must include."""
    names = [f"{lab.id}_steps.md"]
    for step in lab.steps:
        names += [f"{lab.id}_tests_{step.suffix}.md", f"{lab.id}_hints_{step.suffix}.md"]
    if keys:
        names.append(f"{lab.id}_thresholds.md")
    return names


def lab_keys(lab: Lab, bars: Mapping[str, tuple[float, float]]) -> list[str]:
    """The thresholds of a lab: the keys named after it (`indexing.` for 01_indexing)."""
    return [key for key in bars if key.startswith(f"{lab.name}.")]


def todo_ids(root: Path, lab: Lab) -> set[str]:
    """The step ids the stubs mark with TODO(...): grader/stubs/ in a student edition (pristine),
    labs/ in the instructor's copy."""
    found: set[str] = set()
    for folder in (root / "grader" / "stubs" / lab.id, root / "labs" / lab.id):
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file():
                    found.update(re.findall(r"\bTODO\(([\w.]+)\)",
                                            path.read_text(encoding="utf-8", errors="replace")))
            break
    return found


def _table(header: Sequence[str], body: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines) + "\n"


def steps_fragment(lab: Lab, tests: Sequence[protocol.TestSpec], todos: set[str]) -> str:
    body = []
    for step in lab.steps:
        todo = f"`TODO({step.id})`" if step.id in todos else "none"
        body.append([f'\\ref {step_anchor(lab, step)} "{step_label(step)}"', todo,
                     doc_text(step.title, table=True), points_text(step_points(tests, step))])
    total = sum(step_points(tests, step) for step in lab.steps)
    body.append(["**Total**", "", "", f"**{points_text(total)}**"])
    return _table(["Step", "TODO id", "What it is about", "Points"], body)


def tests_fragment(lab: Lab, step: Step, tests: Sequence[protocol.TestSpec]) -> str:
    mine = [t for t in tests if t.step == step.id]
    step_rows = rows(mine)
    if not step_rows:
        return "No visible test belongs to this step.\n"
    body = []
    for row in step_rows:
        title = doc_text(row.title, table=True)
        if row.instances:
            names = ", ".join(f"`{name}`" for name in row.instances)
            title += f" (one test each: {names})"
            points = f"{points_text(row.points)} each, {points_text(row.total)} in all"
        else:
            points = points_text(row.points)
        body.append([f"`{row.id}`", title, row.kind, points])
    body.append(["**Total**", "", "", f"**{points_text(sum(r.total for r in step_rows))}**"])
    return _table(["Test", "What it checks", "Kind", "Points"], body)


def hints_fragment(lab: Lab, step: Step) -> str:
    """The hints folded, one per level like `kit.py hint`: the page shows "Hint 1", "Hint 2", ...
    closed, and a click opens one. HTML <details> that Doxygen passes through, each on its own
    lines with no blank line inside (Doxygen 1.9 ends a <details> at a paragraph break, and does
    not nest them); the hint is one line, so its Markdown (code spans) is still read."""
    return "".join(f"<details>\n<summary>Hint {i}</summary>\n{doc_text(hint)}\n</details>\n"
                   for i, hint in enumerate(step.hints, 1))


def bar_kind(key: str) -> str:
    """What a bar of `key` is: the least speed ratio (a perf test), or the most a hardware
    counter may read (a counter test, kitgrade.counters)."""
    return "the most a counter reads" if counters.is_counter_key(key) else "the least ratio"


def thresholds_fragment(keys: Sequence[str], bars: Mapping[str, tuple[float, float]]) -> str:
    body = [[f"`{key}`", ratio_text(bars[key][0]), ratio_text(bars[key][1]), bar_kind(key)]
            for key in keys]
    return _table(["Key in `grader/thresholds.conf`", "Student bar", "Reference bar", "A bar is"],
                  body)


def all_thresholds_fragment(manifest: Manifest, bars: Mapping[str, tuple[float, float]]) -> str:
    owner = {key: lab.id for lab in manifest.labs for key in lab_keys(lab, bars)}
    body = [[f"`{owner[key]}`" if key in owner else "(no lab)", f"`{key}`",
             ratio_text(student), ratio_text(reference), bar_kind(key)]
            for key, (student, reference) in bars.items()]
    return _table(["Lab", "Key", "Student bar", "Reference bar", "A bar is"], body)


def fragments(root: Path, manifest: Manifest, listings: Mapping[str, Sequence[Any]],
              bars: Mapping[str, tuple[float, float]]) -> dict[str, str]:
    """Every fragment, by file name, for the labs that `listings` has."""
    out: dict[str, str] = {}
    for lab in manifest.labs:
        if lab.id not in listings:
            continue
        tests = as_tests(listings[lab.id])
        out[f"{lab.id}_steps.md"] = steps_fragment(lab, tests, todo_ids(root, lab))
        for step in lab.steps:
            out[f"{lab.id}_tests_{step.suffix}.md"] = tests_fragment(lab, step, tests)
            out[f"{lab.id}_hints_{step.suffix}.md"] = hints_fragment(lab, step)
        keys = lab_keys(lab, bars)
        if keys:
            out[f"{lab.id}_thresholds.md"] = thresholds_fragment(keys, bars)
    out[ALL_THRESHOLDS] = all_thresholds_fragment(manifest, bars)
    return out


def write_fragments(out_dir: Path, texts: Mapping[str, str]) -> list[Path]:
    """Writes every fragment (each one, so its time says when it was made) and the stamp last."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in texts.items():
        path = out_dir / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    (out_dir / STAMP).write_text("".join(f"{name}\n" for name in texts), encoding="utf-8")
    return written


# ---------------------------------------------------------------- problems (kit.py check)

def handout_path(root: Path, lab: Lab) -> Path:
    return root / "docs" / "labs" / f"{lab.id}.md"


def included(text: str) -> list[str]:
    return [m.group(1) for m in map(INCLUDE.match, text.splitlines()) if m]


def problems(root: Path, manifest: Manifest, listings: Mapping[str, Sequence[Any]]) -> list[str]:
    """What is wrong with the handouts (empty: nothing). For each lab: (a) a fragment it does not
    include; (b) a hand-written table the generator owns (a Points column, threshold bars) or a
    hint written out, a point figure in the prose, a step without its anchor. The fragments
    themselves cannot go stale: the docs target writes them anew from the sources every time it
    builds. `listings` are the graders' --kit_list tests per lab id (TestSpecs or dicts): they
    name the fragments a handout must include."""
    found: list[str] = []
    try:
        bars = thresholds.load(thresholds.thresholds_path(root))
    except thresholds.ThresholdsError as err:
        return [str(err)]
    for lab in manifest.labs:
        path = handout_path(root, lab)
        shown = _rel(path, root)
        if not path.is_file():
            found.append(f"{shown}: missing (the handout of {lab.id})")
            continue
        text = path.read_text(encoding="utf-8")
        names = fragment_names(lab, lab_keys(lab, bars))
        found += _missing_includes(shown, text, names)
        found += _hand_written(shown, text, lab, bars)
        found += _anchors(shown, text, lab)
    grading = root / GRADING_PAGE
    if grading.is_file():
        text = grading.read_text(encoding="utf-8")
        found += _missing_includes(_rel(grading, root), text, [ALL_THRESHOLDS])
        found += [f"{_rel(grading, root)}:{n}: {what}"
                  for n, what in _owned_tables(text, bars, points=False)]
    return found


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _missing_includes(shown: str, text: str, names: Sequence[str]) -> list[str]:
    have = set(included(text))
    return [f"{shown}: does not include its generated fragment {name} "
            f"(add a line `\\include{{doc}} {name}`)" for name in names if name not in have]


_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_POINT_FIGURES = (
    re.compile(r"\bworth \d+(?:\.\d+)? points?\b"),
    re.compile(r"\(\d+(?:\.\d+)? points?\b"),
    re.compile(r"\bScore:? (?:\d+|X)/\d+"),
)


def _cells(line: str) -> list[str]:
    return [c.strip().strip("*`").strip().lower() for c in line.strip().strip("|").split("|")]


def _owned_tables(text: str, bars: Mapping[str, tuple[float, float]], *,
                  points: bool = True) -> list[tuple[int, str]]:
    """(line, what) for each Markdown table the generator owns: one with a Points column, one
    with student and reference bars, one whose rows name a threshold key."""
    lines = text.splitlines()
    found = []
    fence = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if fence or i + 1 >= len(lines) or "|" not in line or not _TABLE_SEPARATOR.match(lines[i + 1]):
            continue
        header = _cells(line)
        body = []
        for row in lines[i + 2:]:
            if "|" not in row or not row.strip():
                break
            body.append(row)
        if points and "points" in header:
            found.append((i + 1, "a hand-written table with a Points column; include the "
                                 "generated tests or steps fragment instead"))
        elif ({"student", "student bar"} & set(header) and any(c.startswith("reference") for c in header)) \
                or any(f"`{key}`" in row for row in body for key in bars):
            found.append((i + 1, "a hand-written table of thresholds; include the generated "
                                 "thresholds fragment instead"))
    return found


def _hand_written(shown: str, text: str, lab: Lab, bars: Mapping[str, tuple[float, float]]) -> list[str]:
    found = [f"{shown}:{n}: {what}" for n, what in _owned_tables(text, bars)]
    for number, line in enumerate(text.splitlines(), 1):
        for pattern in _POINT_FIGURES:
            match = pattern.search(line)
            if match:
                found.append(f"{shown}:{number}: a point figure written by hand ({match.group(0)!r}); "
                             "the generated tables give the points")
    paragraphs = _list_items(text)
    for step in lab.steps:
        for n, hint in enumerate(step.hints, 1):
            where = _written_out(hint, paragraphs)
            if where is not None:
                found.append(f"{shown}:{where}: hint {n} of {step.id} is written out; include "
                             f"{lab.id}_hints_{step.suffix}.md instead")
    return found


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*+])\s+")


def _list_items(text: str) -> list[tuple[int, list[str]]]:
    """(first line, words) of each item of a Markdown list: where a hint list would be. Prose is
    not searched: a concept section may well say what a hint says."""
    out: list[tuple[int, list[str]]] = []
    start, item = 0, []
    for number, line in enumerate(text.splitlines() + [""], 1):
        if _ITEM.match(line):
            if item:
                out.append((start, _words(" ".join(item))))
            start, item = number, [_ITEM.sub("", line, count=1)]
        elif item and line.startswith((" ", "\t")) and line.strip():
            item.append(line)
        elif item:
            out.append((start, _words(" ".join(item))))
            item = []
    return out


HINT_WINDOW = 6
"""Words in a row that a hint and a paragraph must share to count as a copy..."""
HINT_SHARE = 0.5
"""...over at least this share of the hint's words: rewording a hint does not hide it."""


def _written_out(hint: str, paragraphs: Sequence[tuple[int, list[str]]]) -> int | None:
    words = _words(hint)
    if len(words) < HINT_WINDOW:
        return None
    for start, para in paragraphs:
        grams = {tuple(para[i:i + HINT_WINDOW]) for i in range(len(para) - HINT_WINDOW + 1)}
        covered = [False] * len(words)
        for i in range(len(words) - HINT_WINDOW + 1):
            if tuple(words[i:i + HINT_WINDOW]) in grams:
                covered[i:i + HINT_WINDOW] = [True] * HINT_WINDOW
        if sum(covered) >= HINT_SHARE * len(words):
            return start
    return None


def _anchors(shown: str, text: str, lab: Lab) -> list[str]:
    found = []
    for anchor in [page_anchor(lab)] + [step_anchor(lab, s) for s in lab.steps]:
        if "{#" + anchor + "}" not in text:
            found.append(f"{shown}: has no section {{#{anchor}}} (the generated tables link to it)")
    return found








# ---------------------------------------------------------------- command

def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "handout-tables", help="write the handouts' generated tables (the docs build runs it)",
        description="Writes the Markdown fragments the handouts include: steps and points, tests "
                    "per step, hints, thresholds; from lab.json, the grade_ binaries' --kit_list "
                    "(hidden tests left out) and grader/thresholds.conf.")
    parser.add_argument("--build-dir", type=Path,
                        help="CMake build directory with the grade_ binaries (default: <repo>/build)")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="where the fragments go (default: <build-dir>/docs/generated)")
    parser.set_defaults(handler=_cmd_handout_tables)


def _cmd_handout_tables(args: argparse.Namespace, ctx: Context) -> int:
    manifest = ctx.manifest()
    build_dir = default_build_dir(ctx, args.build_dir)
    out_dir = (args.out or build_dir / GENERATED_DIR).absolute()
    try:
        bars = thresholds.load(thresholds.thresholds_path(ctx.root))
    except thresholds.ThresholdsError as err:
        raise UsageError(str(err)) from err
    try:
        listings = read_listings(build_dir, manifest, ctx.root)
    except (FileNotFoundError, protocol.ProtocolError) as err:
        ctx.stderr.write(f"handout-tables: {err}\n")
        return ExitCode.BUILD_OR_BINARY
    written = write_fragments(out_dir, fragments(ctx.root, manifest, listings, bars))
    ctx.stdout.write(f"handout-tables: {len(written)} fragments in {out_dir}\n")
    return ExitCode.OK
