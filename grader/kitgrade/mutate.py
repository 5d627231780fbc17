"""``kit.py mutate LAB``: how many mistakes nobody listed does a lab's grader catch?

Takes the reference solution's student code (only the lines inside its DONE regions) and makes
mutants, one small change each: a relational operator swapped (``<`` and ``<=``, ``>`` and ``>=``,
``==`` and ``!=``), an arithmetic one (``+`` and ``-``, ``*`` and ``/``), an integer constant ``c``
made ``c+1``, ``c-1`` or ``0``, ``threadIdx``/``blockIdx``/``blockDim``/``gridDim`` swapped or
their ``.x``/``.y`` swapped, a term dropped from an index expression (``+ b`` or ``- b`` on a line
that indexes), a bounds ``if`` removed (its statement kept), a ``__syncthreads()``
removed, a ``size_t`` index narrowed to ``unsigned``, a stream argument replaced by ``0``, a
synchronisation (``cudaStreamSynchronize``, ``cudaEventSynchronize``, ``cudaStreamWaitEvent``,
``cudaDeviceSynchronize``) dropped, a pinned allocation (``cudaMallocHost``, ``cudaHostAlloc``)
replaced by ``malloc``. The set is deterministic; ``--sample N`` draws N of them with
``--seed``, so two runs with the same seed grade the same mutants.

Each mutant is built like a known-wrong submission (its own student library and worker, in the
build directory ``build-mutate/``; the judge and ``common/`` are built once, and the mutants
build in parallel) and graded by the lab's grader beside the reference, with one seed: the host
tests of every mutant first, then, with a GPU, the rest for the mutants still alive, each mutant
stopping at its first failure, the tests of the step it changed first (runner.RunOptions.fail_fast,
kinds, LabTarget.first_step). A mutant is *killed* when a test the reference passes fails,
crashes or times out; it *survives* otherwise. One that does not compile is counted apart. A
survivor that cannot change any result (an *equivalent* mutant: ``x < n`` and ``x != n`` where x
only counts up to n, say) is marked in ``grader/NN_name/equivalent.json`` with a one-line reason,
and is listed, not counted.
A line that holds a tuning choice (lab 07's chunk and stream counts: the values next to the
reference's are right answers too) is named in the same file's ``choices`` with its reason; its
constants become only the degenerate ``0`` and ``1`` (one chunk, one stream), and the report lists
it.

After a change to the grader, ``--recheck build-mutate/mutation.json`` grades only the survivors of
that earlier run (found again by their line's text, so moved lines do not lose them): the "after"
of a before-and-after, in minutes rather than a whole run's time.

Without a GPU only the host steps can kill a mutant; the score line says so. Exit codes: 0 the run
finished (whatever the score), 2 usage error, 3 the build of the grader failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import runner
from .build import BuildError, configure, ensure_built
from .context import UsageError, find_lab
from .manifest import Lab
from .model import RunResult, Status, TestResult

MUTANTS_VARIABLE = "KIT_MUTANTS_DIR"
"""CMake cache variable: the folder of mutants (common/cmake/KitLab.cmake builds each one)."""
DEFAULT_SAMPLE = 60
EQUIVALENT_FILE = "equivalent.json"
PREFIX = "mutant_"

_OPEN = re.compile(r"^\s*//\s*DONE\(([\w.]+)\):")
_CLOSE = re.compile(r"^\s*//\s*END\(([\w.]+)\)")

# (name, pattern, replacement) applied at each match on a line of code (comments and strings left
# out). Binary operators are matched with the spaces the kit's style puts around them, so template
# brackets, `<<<` and `->` are never mistaken for comparisons.
_SWAPS: tuple[tuple[str, str, str], ...] = (
    ("relational", r" < ", " <= "), ("relational", r" <= ", " < "),
    ("relational", r" > ", " >= "), ("relational", r" >= ", " > "),
    ("relational", r" == ", " != "), ("relational", r" != ", " == "),
    ("arithmetic", r" \+ ", " - "), ("arithmetic", r" - ", " + "),
    ("arithmetic", r" \* ", " / "), ("arithmetic", r" / ", " * "),
    ("cuda index", r"\bthreadIdx\b", "blockIdx"), ("cuda index", r"\bblockIdx\b", "threadIdx"),
    ("cuda index", r"\bblockDim\b", "gridDim"), ("cuda index", r"\bgridDim\b", "blockDim"),
    ("cuda axis", r"\b((?:threadIdx|blockIdx|blockDim|gridDim)\.)x\b", r"\1y"),
    ("cuda axis", r"\b((?:threadIdx|blockIdx|blockDim|gridDim)\.)y\b", r"\1x"),
    ("stream", r", stream\)", ", 0)"), ("stream", r"\bstream>>>", "0>>>"),
)
_CONSTANT = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
_NARROW = re.compile(r"\b(?:std::)?size_t\b")
# cudaMallocHost(PTR, BYTES) / cudaHostAlloc(PTR, BYTES, FLAGS) -> pageable memory from malloc.
_PINNED = re.compile(r"\bcuda(?:MallocHost|HostAlloc)\((.+?), ([^,()]+(?:\([^()]*\))?[^,()]*)"
                     r"(?:, [^()]+)?\)")
# A term of an index expression: a name (with members, a call's parentheses or a subscript).
_TERM = r"[A-Za-z_][\w.]*(?:\([^()]*\)|\[[^\[\]]*\])?"
_DROP_TERM = re.compile(rf" [+-] {_TERM}(?![\w.(\[])")
_INDEXING = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim)\b|\w\[")
_INDEX_CODE = re.compile(r"\b(threadIdx|blockIdx|blockDim|gridDim|thread_idx|block_idx|block_dim|"
                         r"grid_dim)\b|\w\[")
_BOUNDS_IF = re.compile(r"^(\s*)if \((.*)\) (?!\{)(.+;)\s*$")
_BRACED_IF = re.compile(r"^\s*if \(.*\) \{\s*$")
_DROPPED = re.compile(r"__syncthreads\(\)|cuda(StreamSynchronize|EventSynchronize|StreamWaitEvent|"
                      r"DeviceSynchronize)\(")


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    region: str
    line: int
    """1-based line in the solution file (the first, for a change of several lines)."""
    operator: str
    before: str
    after: str
    """The line(s) as they are and as mutated (several joined by newlines, as many after as
    before)."""

    def diff(self) -> str:
        return f"{self.file}:{self.line}: {_flat(self.before)}  ->  {_flat(self.after)}"

    def key(self) -> tuple[str, str, str]:
        return (self.file, _flat(self.before), _flat(self.after))


def _flat(lines: str) -> str:
    """Lines joined as one, for a report line and for equivalent.json ("a / b")."""
    return " / ".join(part.strip() for part in lines.split("\n") if part.strip())


def _code_part(line: str) -> tuple[str, str]:
    """(code, comment) of a line: the comment from `//` on, outside string literals."""
    in_string = False
    for i, c in enumerate(line):
        if c == '"' and (i == 0 or line[i - 1] != "\\"):
            in_string = not in_string
        elif not in_string and line.startswith("//", i):
            return line[:i], line[i:]
    return line, ""


def _strings(code: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r'"(?:\\.|[^"\\])*"', code)]


def line_mutants(line: str, choice: bool = False) -> Iterator[tuple[str, str]]:
    """(operator, mutated line) for every change the operators make to one line of code. On a
    `choice` line (a tuning choice, equivalent.json's "choices") an integer constant becomes only
    the degenerate 0 and 1: its neighbours c+1 and c-1 are right answers too."""
    code, comment = _code_part(line)
    if not code.strip() or code.strip().startswith("#"):
        return
    quoted = _strings(code)

    def outside(at: int) -> bool:
        return not any(a <= at < b for a, b in quoted)

    for operator, pattern, replacement in _SWAPS:
        for m in re.finditer(pattern, code):
            if outside(m.start()):
                yield operator, code[:m.start()] + m.expand(replacement) + code[m.end():] + comment
    if _INDEX_CODE.search(code):
        # An index narrowed: only in index code (a CUDA index variable, the kit's host-side
        # mirror of one, or a subscript), where an
        # element count can pass 2^32; a byte count or a size of a few KiB narrows harmlessly.
        for m in _NARROW.finditer(code):
            if outside(m.start()):
                yield "narrowing", code[:m.start()] + "unsigned" + code[m.end():] + comment
    for m in _CONSTANT.finditer(code):
        if not outside(m.start()):
            continue
        value = int(m.group(1))
        values = {0, 1} if choice else {value + 1, value - 1, 0}
        for new in sorted(values - {value} - ({-1} if value == 0 else set())):
            yield ("choice" if choice else "constant",
                   code[:m.start()] + str(new) + code[m.end():] + comment)
    if _INDEXING.search(code):
        for m in _DROP_TERM.finditer(code):
            if outside(m.start()):
                yield "term dropped", code[:m.start()] + code[m.end():] + comment
    for m in _PINNED.finditer(code):
        pointer, size = m.group(1), m.group(2)
        malloc = f"(*reinterpret_cast<void**>({pointer}) = std::malloc({size}), cudaSuccess)"
        yield "pageable", code[:m.start()] + malloc + code[m.end():] + comment
    bounds = _BOUNDS_IF.match(code)
    if bounds:
        yield "bounds if", f"{bounds.group(1)}{bounds.group(3)}{comment}"
    if _DROPPED.search(code) and code.rstrip().endswith(";"):
        indent = code[:len(code) - len(code.lstrip())]
        what = "barrier" if "__syncthreads" in code else "synchronisation"
        yield f"{what} dropped", f"{indent}// (mutant: dropped) {code.strip()}{comment}"


def enumerate_mutants(root: Path, lab: Lab) -> list[Mutant]:
    """Every mutant of the reference solution's DONE regions, in a stable order."""
    found: list[Mutant] = []
    choices = load_choices(root, lab)
    for file in lab.student_files:
        path = root / "solutions" / lab.id / file
        if not path.is_file():
            continue
        region: str | None = None
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if _OPEN.match(line):
                region = _OPEN.match(line).group(1)  # type: ignore[union-attr]
                continue
            if _CLOSE.match(line):
                region = None
                continue
            if region is None:
                continue
            for operator, after in line_mutants(line, (file, _flat(line)) in choices):
                found.append(Mutant("", file, region, number, operator, line, after))
            moved = _barrier_into_branch(lines, number - 1)
            if moved is not None:
                first, before, after = moved
                found.append(Mutant("", file, region, first + 1, "barrier into the branch",
                                    before, after))
    return [Mutant(f"{PREFIX}{i:04d}", m.file, m.region, m.line, m.operator, m.before, m.after)
            for i, m in enumerate(found, 1)]


def _barrier_into_branch(lines: Sequence[str], at: int) -> tuple[int, str, str] | None:
    """A `__syncthreads();` right after a one-line `if (cond) statement;` or a braced
    `if (cond) { ... }` (comments between allowed), moved into that branch: the barrier only some
    threads reach. (first index, the lines as they are, the lines as mutated), or None where the
    pattern is not there."""
    if lines[at].strip().split("//")[0].strip() != "__syncthreads();":
        return None
    above = at - 1
    while above >= 0 and (not lines[above].strip() or lines[above].strip().startswith("//")):
        above -= 1
    if above >= 0 and _code_part(lines[above])[0].strip() == "}":
        # A braced branch: `if (cond) {` ... `}`; the barrier goes in before its closing brace.
        opening = _opening_of(lines, above)
        if opening is None or not _BRACED_IF.match(_code_part(lines[opening])[0]):
            return None
        closing = lines[above]
        moved = f"{closing[:len(closing) - len(closing.lstrip())]}__syncthreads(); }}"
    else:
        branch = _BOUNDS_IF.match(_code_part(lines[above])[0]) if above >= 0 else None
        if branch is None:
            return None
        indent, condition, statement = branch.groups()
        moved = f"{indent}if ({condition}) {{ {statement} __syncthreads(); }}"
    gone = lines[at][:len(lines[at]) - len(lines[at].lstrip())] + "// (mutant: moved into the branch above)"
    before = lines[above:at + 1]
    after = [moved, *lines[above + 1:at], gone]
    return above, "\n".join(before), "\n".join(after)


def _opening_of(lines: Sequence[str], closing: int) -> int | None:
    """The line that opens the block the `}` on line `closing` ends (None if there is none)."""
    depth = 0
    for i in range(closing, -1, -1):
        code = _code_part(lines[i])[0]
        depth += code.count("}") - code.count("{")
        if depth == 0:
            return i
    return None


def sample(mutants: Sequence[Mutant], n: int | None, seed: int) -> list[Mutant]:
    """`n` of the mutants drawn with `seed` (all when n is None or not smaller), in their order."""
    if n is None or n >= len(mutants):
        return list(mutants)
    chosen = sorted(random.Random(seed).sample(range(len(mutants)), n))
    return [mutants[i] for i in chosen]


def _marks(root: Path, lab: Lab, section: str, fields: tuple[str, ...]) -> dict[tuple, str]:
    """The entries of one list of grader/NN_name/equivalent.json, each a dict of `fields` (all
    non-empty strings) plus "reason": reason by the tuple of `fields` (lines flattened)."""
    path = root / "grader" / lab.id / EQUIVALENT_FILE
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    marks = {}
    for i, item in enumerate(data.get(section, [])):
        if not all(isinstance(item.get(k), str) and item[k] for k in (*fields, "reason")):
            raise UsageError(f"{path}: {section}[{i}] needs {', '.join(fields)} and reason")
        key = tuple(item[k] if k == "file" else _flat(item[k]) for k in fields)
        marks[key] = item["reason"]
    return marks


def load_equivalent(root: Path, lab: Lab) -> dict[tuple[str, str, str], str]:
    """equivalent.json's "equivalent": [{"file", "line", "mutant", "reason"}] -> reason by key."""
    return _marks(root, lab, "equivalent", ("file", "line", "mutant"))


def load_choices(root: Path, lab: Lab) -> dict[tuple[str, str], str]:
    """equivalent.json's "choices": [{"file", "line", "reason"}], the lines that hold a tuning
    choice (any value near the reference's is a right answer) -> reason by (file, line)."""
    return _marks(root, lab, "choices", ("file", "line"))


def stale_marks(root: Path, lab: Lab) -> list[str]:
    """Entries of grader/NN_name/equivalent.json that no longer fit the solution (kit.py check):
    an equivalent mutant the operators no longer make, a choice line no DONE region holds. Either
    would stop applying without a word when the solution's line changes."""
    where = f"grader/{lab.id}/{EQUIVALENT_FILE}"
    try:
        equivalent, choices = load_equivalent(root, lab), load_choices(root, lab)
    except (UsageError, ValueError) as err:
        return [f"{where}: {err}"]
    if not equivalent and not choices:
        return []
    mutants = enumerate_mutants(root, lab)
    made = {m.key() for m in mutants}
    lines = {(m.file, _flat(m.before)) for m in mutants}
    problems = [f"{where}: the mutant {file}: {after} (of {line}) is no longer made; update the "
                "entry to the solution's line, or remove it"
                for (file, line, after) in equivalent if (file, line, after) not in made]
    problems += [f"{where}: the choice {file}: {line} is no line of a DONE region of the "
                 "solution; update the entry to the solution's line, or remove it"
                 for (file, line) in choices if (file, line) not in lines]
    return problems


def write_mutants(root: Path, lab: Lab, mutants: Sequence[Mutant], out_dir: Path) -> None:
    """out_dir/<lab>/<name>/<file> for each mutant (only the mutated file; the others come from
    the solution through the lab's folders) and out_dir/<lab>/names.txt, read by CMake."""
    lab_dir = out_dir / lab.id
    if lab_dir.exists():
        shutil.rmtree(lab_dir)
    lab_dir.mkdir(parents=True)
    for m in mutants:
        lines = (root / "solutions" / lab.id / m.file).read_text(encoding="utf-8").split("\n")
        span = m.before.split("\n")
        assert lines[m.line - 1:m.line - 1 + len(span)] == span
        lines[m.line - 1:m.line - 1 + len(span)] = m.after.split("\n")
        target = lab_dir / m.name / m.file
        target.parent.mkdir(parents=True)
        target.write_text("\n".join(lines), encoding="utf-8")
        # The other student files: the solution's, so the mutant differs in one line only.
        for other in lab.student_files:
            source = root / "solutions" / lab.id / other
            if other != m.file and source.is_file():
                shutil.copyfile(source, lab_dir / m.name / other)
    (lab_dir / "names.txt").write_text("".join(f"{m.name}\n" for m in mutants), encoding="utf-8")


@dataclass
class Verdict:
    mutant: Mutant
    status: str
    """killed, survived, equivalent or not compiled."""
    why: str = ""


@dataclass
class Report:
    lab: Lab
    verdicts: list[Verdict] = field(default_factory=list)
    gpu: bool = False
    total_mutants: int = 0
    choices: dict[tuple[str, str], str] = field(default_factory=dict)
    """The lab's tuning-choice lines (load_choices): listed, their constants mutated to 0, 1."""

    def count(self, status: str, step: str | None = None) -> int:
        return sum(1 for v in self.verdicts if v.status == status and
                   (step is None or v.mutant.region == step))

    @property
    def score_line(self) -> str:
        killed, survived = self.count("killed"), self.count("survived")
        n = killed + survived
        pct = f"{100.0 * killed / n:.0f}%" if n else "n/a"
        where = "" if self.gpu else " (no GPU: only host steps could kill)"
        return f"mutation score: {killed}/{n} killed ({pct}){where}"

    def table(self) -> str:
        rows = ["| step | mutants | killed | survived | equivalent | not compiled |",
                "| --- | --- | --- | --- | --- | --- |"]
        for step in sorted({v.mutant.region for v in self.verdicts}):
            counts = [self.count(s, step) for s in ("killed", "survived", "equivalent",
                                                    "not compiled")]
            rows.append(f"| {step} | {sum(counts)} | " + " | ".join(map(str, counts)) + " |")
        return "\n".join(rows)

    def markdown(self) -> str:
        lines = [f"# Mutation run of {self.lab.id}", "",
                 f"{len(self.verdicts)} of {self.total_mutants} mutants graded.", "",
                 self.table(), "", self.score_line, ""]
        for status, title in (("survived", "Survivors"), ("equivalent", "Marked equivalent"),
                              ("not compiled", "Not compiled")):
            chosen = [v for v in self.verdicts if v.status == status]
            if chosen:
                lines += [f"## {title}", ""]
                lines += [f"- `{v.mutant.diff()}` ({v.mutant.operator})"
                          f"{': ' + v.why if v.why else ''}" for v in chosen]
                lines.append("")
        if self.choices:
            lines += ["## Tuning choices (their constants become only 0 and 1)", ""]
            lines += [f"- `{file}: {line}`: {why}" for (file, line), why in self.choices.items()]
            lines.append("")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"lab": self.lab.id, "gpu": self.gpu, "score": self.score_line,
                "mutants": self.total_mutants,
                "choices": [{"file": f, "line": line, "reason": why}
                            for (f, line), why in self.choices.items()],
                "verdicts": [{"name": v.mutant.name, "file": v.mutant.file, "line": v.mutant.line,
                              "step": v.mutant.region, "operator": v.mutant.operator,
                              "diff": v.mutant.diff(), "before": _flat(v.mutant.before),
                              "after": _flat(v.mutant.after), "status": v.status, "why": v.why}
                             for v in self.verdicts]}


def judge(mutant: Mutant, reference: dict[str, Status], graded: dict[str, TestResult] | None,
          error: str | None) -> Verdict:
    """Killed when a test the reference passes fails, crashes or times out for the mutant. Tests
    not run (not selected, no GPU, after a failure when failing fast) decide nothing."""
    if graded is None:
        return Verdict(mutant, "killed", f"not graded: {error}")
    for test_id, status in reference.items():
        test = graded.get(test_id)
        if status is Status.PASSED and test is not None and test.status.is_problem:
            return Verdict(mutant, "killed", f"{test.step}: {test.id} {test.status.value}")
    return Verdict(mutant, "survived")


def test_results(run: RunResult, index: int) -> dict[str, TestResult] | None:
    lab = run.labs[index]
    return None if lab.error is not None else {t.id: t for t in lab.tests}


def _around_change(mutant: Mutant, width: int) -> str:
    """The mutated line, cut to `width` characters around where it differs from the original
    (on a long line the change may be at its end: `..., 0>>>`)."""
    before, after = _flat(mutant.before).strip(), _flat(mutant.after).strip()
    if len(after) <= width:
        return after
    at = next((i for i, (a, b) in enumerate(zip(before, after)) if a != b),
              min(len(before), len(after)))
    start = max(0, min(at - width // 3, len(after) - (width - 3)))
    text = after[start:start + width - 6 if start else width - 3]
    return ("..." if start else "") + text + ("..." if start + len(text) < len(after) else "")


def survivors_of(report: dict[str, Any], mutants: Sequence[Mutant]
                 ) -> tuple[list[Mutant], list[str]]:
    """The mutants among `mutants` that survived in `report` (an earlier run's mutation.json),
    and the diffs of its survivors that are no longer mutants of the solution (their line
    changed since). A survivor is matched by file and line text, not line number, so a grader
    change that moved lines still finds it."""
    by_key = {m.key(): m for m in mutants}
    found: list[Mutant] = []
    gone: list[str] = []
    for verdict in report.get("verdicts", []):
        if verdict.get("status") != "survived":
            continue
        before, after = verdict.get("before"), verdict.get("after")
        if before is None or after is None:  # a report from before these fields: its diff line
            text = verdict.get("diff", "").split(": ", 1)[-1]
            before, _, after = text.partition("  ->  ")
        mutant = by_key.get((verdict.get("file", ""), before, after))
        if mutant is None:
            gone.append(verdict.get("diff", ""))
        elif mutant not in found:
            found.append(mutant)
    return found, gone


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mutate", help="mutation score of a lab's grader (instructors)", description=__doc__)
    parser.add_argument("lab", metavar="LAB", help='a lab: "06", "06_occupancy" or "occupancy"')
    parser.add_argument("--sample", type=int, default=DEFAULT_SAMPLE,
                        help=f"mutants to grade, drawn with --seed (default {DEFAULT_SAMPLE}; "
                             "0: all)")
    parser.add_argument("--seed", type=int, default=1, help="draws the sample and seeds the tests")
    parser.add_argument("--steps", nargs="+", metavar="STEP",
                        help="only mutants of these steps' DONE regions (e.g. tiling.1: a host "
                             "step's pass without a GPU, or one step after its tests changed)")
    parser.add_argument("--recheck", type=Path, metavar="MUTATION_JSON",
                        help="grade only the survivors of an earlier run (its mutation.json), "
                             "instead of a sample: after a grader change, are they killed now?")
    parser.add_argument("--jobs", type=int, default=8, help="tests run side by side")
    parser.add_argument("--build-dir", type=Path, help="default: <repo>/build-mutate")
    parser.add_argument("--report-dir", type=Path,
                        help="writes mutation.md and mutation.json there (default: the build dir)")
    parser.set_defaults(handler=_cmd_mutate)


def _cmd_mutate(args: argparse.Namespace, ctx: Any) -> int:
    lab = find_lab(ctx.manifest(), args.lab)
    root: Path = ctx.root
    if not (root / "solutions" / lab.id).is_dir():
        raise UsageError("mutate needs the reference solutions (the instructor's copy of the kit)")
    build_dir = (args.build_dir or root / "build-mutate").absolute()
    mutants_dir = build_dir / "mutants"
    everything = enumerate_mutants(root, lab)
    if args.steps:
        unknown = sorted(set(args.steps) - {step.id for step in lab.steps})
        if unknown:
            raise UsageError(f"{lab.id} has no step {', '.join(unknown)} (its steps: "
                             f"{', '.join(step.id for step in lab.steps)})")
        everything = [m for m in everything if m.region in args.steps]
    out = ctx.stdout
    of_steps = f" of {', '.join(args.steps)}" if args.steps else ""
    if args.recheck:
        try:
            earlier = json.loads(args.recheck.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise UsageError(f"--recheck {args.recheck}: cannot read it ({err})") from err
        if earlier.get("lab") != lab.id:
            raise UsageError(f"--recheck {args.recheck}: a report of {earlier.get('lab')}, "
                             f"not of {lab.id}")
        chosen, gone = survivors_of(earlier, everything)
        drawn = f"{len(chosen)} survivors of {args.recheck} rechecked"
        for diff in gone:
            out.write(f"  no longer a mutant (its line changed): {diff[:70]}\n")
    else:
        chosen = sample(everything, args.sample or None, args.seed)
        drawn = f"{len(chosen)} drawn with seed {args.seed}"
    equivalent = load_equivalent(root, lab)
    report = Report(lab, total_mutants=len(everything), choices=load_choices(root, lab))
    marked = [m for m in chosen if m.key() in equivalent]
    to_build = [m for m in chosen if m.key() not in equivalent]
    out.write(f"mutate {lab.id}: {len(everything)} mutants{of_steps}, {drawn}, "
              f"{len(marked)} marked equivalent\n")
    start = time.monotonic()
    write_mutants(root, lab, to_build, mutants_dir)
    try:
        configure(root, build_dir, f"-D{MUTANTS_VARIABLE}={mutants_dir}", "-DKIT_BUILD_DOCS=OFF",
                  "-DKIT_BUILD_BENCHMARKS=OFF", out=out, quiet=True)
        ensure_built(root, build_dir, [f"grade_{lab.id}", f"reference_{lab.id}"], out=out,
                     quiet=True)
    except BuildError as err:
        ctx.stderr.write(f"mutate: the grader of {lab.id} does not build: {err}\n")
        return 3
    # The mutants, all at once and side by side; one that does not compile does not stop the rest.
    subprocess.run(["cmake", "--build", str(build_dir), "--target",
                    *[f"wrong_{lab.id}_{m.name}" for m in to_build], "--", "-k", "0"],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    built_at = time.monotonic()
    # Each mutant's own step runs its tests first: the likeliest to kill it (first_step).
    targets = {m.name: dataclasses.replace(
                   runner.lab_target(root, build_dir, lab, "student", wrong=m.name),
                   first_step=m.region)
               for m in to_build}
    compiled = [m for m in to_build
                if targets[m.name].worker is None or targets[m.name].worker.is_file()]
    reference = runner.run([runner.lab_target(root, build_dir, lab, "reference")],
                           runner.RunOptions("reference", args.seed, args.jobs))
    report.gpu = reference.gpu_available
    if reference.labs[0].error is not None:
        ctx.stderr.write(f"mutate: the reference of {lab.id} could not be graded: "
                         f"{reference.labs[0].error}\n")
        return 3
    ref_status = {t.id: t.status for t in reference.labs[0].tests}
    # A test the reference does not pass decides nothing: left out, it cannot stop a mutant at
    # its first failure before the tests that would kill it.
    unpassed = frozenset(i for i, status in ref_status.items() if status is not Status.PASSED)
    failing = sorted(i for i in unpassed if ref_status[i] is not Status.NOT_RUN)
    if failing:
        out.write(f"  the reference does not pass {len(failing)} test(s), left out: "
                  f"{', '.join(failing[:3])}{' ...' if len(failing) > 3 else ''}\n")
    # Host tests first, every mutant, stopping each at its first failure; only the mutants they
    # leave alive go on to the GPU tests (with a GPU), again stopping at the first failure.
    verdict_of: dict[str, Verdict] = {}
    alive = compiled
    passes = [frozenset({"host"})] + ([None] if reference.gpu_available else [])
    for kinds in passes:
        if not alive:
            break
        graded = runner.run([targets[m.name] for m in alive],
                            runner.RunOptions("student", args.seed, args.jobs, fail_fast=True,
                                              kinds=kinds, leave_out=unpassed))
        for i, m in enumerate(alive):
            verdict_of[m.name] = judge(m, ref_status, test_results(graded, i),
                                       graded.labs[i].error)
        still = [m for m in alive if verdict_of[m.name].status == "survived"]
        # Where a pass's time went (runner phases, in seconds): what to speed up next.
        out.write(f"  {'host' if kinds else 'GPU'} pass: {len(alive)} mutants, "
                  f"{len(alive) - len(still)} killed; "
                  + ", ".join(f"{phase} {seconds:.0f} s" for phase, seconds in
                              graded.timings.items() if seconds >= 0.5) + "\n")
        alive = still
    for m in chosen:
        if m.key() in equivalent:
            report.verdicts.append(Verdict(m, "equivalent", equivalent[m.key()]))
        elif m.name in verdict_of:
            report.verdicts.append(verdict_of[m.name])
        else:
            report.verdicts.append(Verdict(m, "not compiled"))
    report_dir = (args.report_dir or build_dir).absolute()
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "mutation.md").write_text(report.markdown(), encoding="utf-8")
    (report_dir / "mutation.json").write_text(json.dumps(report.to_json(), indent=2) + "\n",
                                              encoding="utf-8")
    out.write(report.table() + "\n")
    for v in report.verdicts:
        if v.status == "survived":
            where = f"  survived: {v.mutant.file}:{v.mutant.line} ({v.mutant.operator}): "
            out.write(where + _around_change(v.mutant, 80 - len(where)) + "\n")
    out.write(f"built in {built_at - start:.0f} s, graded in {time.monotonic() - built_at:.0f} s; "
              f"report: {report_dir / 'mutation.md'}\n")
    out.write(report.score_line + "\n")
    return 0
