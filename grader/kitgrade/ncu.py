"""Nsight Compute's vocabulary, shared by ``kit.py profile`` (kitgrade.profile) and the graded
counter tests (kitgrade.counters): a counter as ncu metrics, the launches of ncu's CSV, why ncu
read nothing, and kernels' names (a build's own kernels, as cuobjdump listed them).

It imports no command of the kit, so the runner can use it without importing the commands.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from . import sanitizer


def find_ncu() -> str | None:
    """Nsight Compute's command line: on PATH, else in the CUDA toolkit's usual folder."""
    return sanitizer.find_cuda_tool("ncu")


@dataclass(frozen=True)
class Counter:
    """A counter: `metric` is an ncu metric, or "A/B" for the ratio of two; `words` name it in a
    line of a profile table or a failure, `meaning` says how to read its number."""

    metric: str
    words: str
    meaning: str

    @property
    def raw(self) -> tuple[str, ...]:
        return tuple(self.metric.split("/"))

    def value(self, raw: dict[str, float | None]) -> float | None:
        """The counter from one launch's metric values: the metric, or A divided by B; None when
        a part has no value or B is 0."""
        parts = [raw.get(part) for part in self.raw]
        if any(part is None for part in parts):
            return None
        if len(parts) == 1:
            return parts[0]
        return parts[0] / parts[1] if parts[1] else None


# Nsight Compute's source counters, from the kernel's own instructions (deterministic): what the
# accesses took against the fewest their bytes need (its rules on uncoalesced accesses read the
# same). kitgrade.counters grades them; kit.py profile shows them.
GLOBAL_VS_IDEAL = Counter(
    "memory_l2_theoretical_sectors_global/memory_l2_theoretical_sectors_global_ideal",
    "global sectors per ideal sector",
    "1.00: each warp's loads and stores touch only the 32-byte sectors their bytes fill; 4: "
    "lanes 16 bytes apart (an array of structs); 8: a sector per lane")
SHARED_VS_IDEAL = Counter(
    "memory_l1_wavefronts_shared/memory_l1_wavefronts_shared_ideal",
    "shared wavefronts per ideal wavefront",
    "1.00: no bank conflict; a warp reading a column of an unpadded 32 x 32 float tile takes "
    "32 wavefronts where 1 would do")


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


@dataclass
class Launch:
    """One profiled kernel launch of ncu's --csv output: the kernel's name as ncu printed it,
    and each metric's value (None where ncu printed none, e.g. "n/a")."""

    name: str
    raw: dict[str, float | None]
    block: str = ""
    """The launch's block size as ncu printed it, "(256, 1, 1)"."""


def parse_launches(text: str) -> list[Launch]:
    """Every launch of ncu's --csv output (one row per kernel launch and metric, after its own
    log lines), in order, told apart by process and launch ID."""
    start = text.find('"ID","Process ID"')
    if start < 0:
        return []
    launches: dict[tuple[str, str], Launch] = {}
    for row in csv.DictReader(io.StringIO(text[start:])):
        # ncu's log lines may follow the table: they have no metric.
        launch, name = row.get("ID") or "", row.get("Kernel Name") or ""
        metric = row.get("Metric Name") or ""
        if not launch or not name or not metric:
            continue
        found = launches.setdefault((row.get("Process ID") or "", launch),
                                    Launch(name, {}, row.get("Block Size") or ""))
        found.raw[metric] = _number(row.get("Metric Value") or "")
    return list(launches.values())


def foreign_rows(text: str) -> str:
    """Why ncu's --csv log cannot be all ncu's own, or "" when nothing says so: a NUL byte, a
    second table header, or a launch's metric given twice. ncu writes each once; a log with more
    was written to by someone else (code that ran before the worker's sandbox was complete could
    open the log by its name), and later rows would replace a launch's real readings."""
    if "\0" in text:
        return "ncu's log holds NUL bytes"
    if text.count('"ID","Process ID"') > 1:
        return "ncu's log holds more than one table"
    start = text.find('"ID","Process ID"')
    if start < 0:
        return ""
    seen: set[tuple[str, str, str]] = set()
    for row in csv.DictReader(io.StringIO(text[start:])):
        key = (row.get("Process ID") or "", row.get("ID") or "", row.get("Metric Name") or "")
        if not key[1] or not key[2]:
            continue
        if key in seen:
            return f"ncu's log gives metric {key[2]} of launch {key[1]} twice"
        seen.add(key)
    return ""


NO_KERNEL_REASON = "ncu profiled no kernel (did the benchmark run any?)"


def refusal_reason(text: str) -> str:
    """One line for an ncu run that read no counters, or "" when it read some."""
    if "ERR_NVGPUCTRPERM" in text:
        return ("this user may not read the GPU's performance counters (ERR_NVGPUCTRPERM): run "
                "as root, or load the driver with NVreg_RestrictProfilingToAdminUsers=0 "
                "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
    if "No kernels were profiled" in text:
        return NO_KERNEL_REASON
    return ""


def own_kernels(worker: Path) -> set[str]:
    """The kernels compiled from the lab's files (cuobjdump's list beside the worker), or an
    empty set when the build wrote none (then every kernel is shown)."""
    listing = worker.with_name(worker.name + ".kernels")
    if not listing.is_file():
        return set()
    return {line.split()[-1] for line in listing.read_text(errors="replace").splitlines()
            if "STO_ENTRY" in line and line.split()}


def demangled(name: str) -> str:
    """A kernel's own function name, out of an Itanium mangled name (``_Z22transpose_naive_
    kerneljjPKfPf``, ``_ZN5lab036kernelEv``) or a demangled one (``void k<32>(float *)``)."""
    if name.startswith("_Z"):
        i, nested, last = 2, name[2:3] == "N", None
        i += nested
        while (match := re.match(r"\d+", name[i:])) is not None:
            i += match.end()
            last = name[i:i + int(match.group())]
            i += int(match.group())
            if not nested or name[i:i + 1] in ("E", "I"):
                break
        return last or name
    head = re.sub(r"^void\s+", "", name.split("(")[0]).split("<")[0]
    return head.split("::")[-1].strip() or name
