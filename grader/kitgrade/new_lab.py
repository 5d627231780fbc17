"""``kit.py new-lab NN_name "Title"``: the skeleton of a new lab, complete and consistent.

It writes everything a lab is made of (docs/writing_labs.md, "Adding a lab"), so that the kit
builds, ``kit.py check`` finds nothing to say and the selftest passes before the author has
written a line of the real exercise:

    labs/NN_name/name.h            the interface the grader calls
    labs/NN_name/name.cu           the stub: one TODO(name.1) region that compiles and fails
    solutions/NN_name/name.cu      the same file with the region filled in, DONE(name.1)
    grader/NN_name/CMakeLists.txt  one kit_add_lab() call
    grader/NN_name/lab.json        steps name.1 and name.perf, their titles and hints
    grader/NN_name/test_name.cu    a host test, a GPU test (guarded, poisoned output, seeded
                                   inputs) and a perf test against the device copy bandwidth
    grader/NN_name/remote.h        the student functions the judge calls in the worker
                                   (kit/remote.h), so the lab is graded by a judge from the start
    grader/NN_name/wrong.json      one known-wrong submission (a missing bounds check)
    grader/thresholds.conf         the perf test's key, with bars to measure and set
    grader/plausible.conf          the most that key can plausibly reach (flags for review)
    docs/labs/NN_name.md           the handout: page anchor, step sections, generated tables
    grader/labs.json, docs/mainpage.md, README.md   the lab's entries

The exercise it writes (out[i] = 2 in[i] + 1, one thread per element) is a placeholder to replace;
every file says so. Instructor only: a student edition leaves this module out.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path

from . import thresholds
from .context import Context, ExitCode, UsageError
from .manifest import _LAB_ID, Manifest, lab_name, lab_number

THRESHOLD_BARS = ("0.25", "0.40")
PLAUSIBLE_RATIO = 1.3
"""grader/plausible.conf's line for a new lab's copy-bound perf test (above its bars)."""
"""The skeleton's bars (student, reference): one thread per element reaches 0.6 to 0.9 of the
device copy on current GPUs, so both hold until the author measures and sets the real ones."""

_BAD_TITLE = re.compile(r'["\\|`\n\r]')


@dataclass(frozen=True)
class NewLab:
    """The names a new lab's files use, all derived from its id."""

    id: str
    title: str

    @property
    def number(self) -> str:
        return lab_number(self.id)

    @property
    def name(self) -> str:
        return lab_name(self.id)

    @property
    def namespace(self) -> str:
        return f"lab{self.number}"

    @property
    def pascal(self) -> str:
        """my_lab -> MyLab: the prefix of the grader's fixture names."""
        return "".join(part[:1].upper() + part[1:] for part in self.name.split("_") if part)

    @property
    def key(self) -> str:
        return f"{self.name}.transform_vs_device_copy"


def validate(root: Path, manifest: Manifest, lab_id: str, title: str) -> NewLab:
    """The new lab, or UsageError (exit 2) for a malformed or taken id or a bad title."""
    if not _LAB_ID.match(lab_id):
        raise UsageError(f"new-lab: {lab_id!r} is not a lab id: two digits, an underscore and a "
                         "lowercase name (letters, digits, underscores), e.g. 08_reductions")
    if not title.strip() or _BAD_TITLE.search(title):
        raise UsageError("new-lab: the title must be one line of text without \", \\, | or `")
    lab = NewLab(lab_id, title.strip())
    for other in manifest.labs:
        if other.id == lab.id:
            raise UsageError(f"new-lab: lab {lab.id} exists already")
        if other.number == lab.number:
            raise UsageError(f"new-lab: number {lab.number} is taken by {other.id}")
        if other.name == lab.name:
            raise UsageError(f"new-lab: name {lab.name!r} is taken by {other.id} (step ids "
                             f"start with it and must be unique)")
    taken = [path for path in (root / "labs" / lab.id, root / "solutions" / lab.id,
                               root / "grader" / lab.id, root / "docs" / "labs" / f"{lab.id}.md")
             if path.exists()]
    if taken:
        raise UsageError(f"new-lab: {taken[0].relative_to(root)} exists already; remove it or "
                         "choose another id")
    return lab


def create(root: Path, lab: NewLab) -> list[Path]:
    """Writes the new lab's files and entries; returns the paths written or changed."""
    written: list[Path] = []

    def write(rel: str, text: str) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)

    n = lab.name
    write(f"labs/{lab.id}/{n}.h", _header(lab))
    write(f"labs/{lab.id}/{n}.cu", _source(lab, solved=False))
    write(f"solutions/{lab.id}/{n}.cu", _source(lab, solved=True))
    write(f"grader/{lab.id}/CMakeLists.txt",
          f"kit_add_lab({lab.id} SOURCES {n}.cu TESTS test_{n}.cu)\n")
    write(f"grader/{lab.id}/lab.json", json.dumps(_manifest(lab), indent=2) + "\n")
    write(f"grader/{lab.id}/test_{n}.cu", _tests(lab))
    write(f"grader/{lab.id}/remote.h", _remote(lab))
    write(f"grader/{lab.id}/wrong.json", json.dumps(_wrong(lab), indent=2) + "\n")
    write(f"docs/labs/{lab.id}.md", _handout(lab))

    labs_json = root / "grader" / "labs.json"
    data = json.loads(labs_json.read_text(encoding="utf-8"))
    data["labs"] = sorted([*data["labs"], lab.id], key=lambda i: i if isinstance(i, str) else i["id"])
    labs_json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    written.append(labs_json)

    for name, line in (
            ("thresholds.conf", f"# {lab.id}: the skeleton's bars, to measure and set "
                                f"(docs/writing_labs.md, Thresholds)\n"
                                f"{lab.key:<39} {THRESHOLD_BARS[0]:<9} {THRESHOLD_BARS[1]}\n"),
            ("plausible.conf", f"# {lab.id}: a copy-bound skeleton cannot beat the device copy "
                               f"by much; set it with the bars\n{lab.key:<39} {PLAUSIBLE_RATIO}\n")):
        conf = root / "grader" / name
        conf.write_text(thresholds.with_default_lines(conf.read_text(encoding="utf-8"), line),
                        encoding="utf-8")
        written.append(conf)

    mainpage = root / "docs" / "mainpage.md"
    text = mainpage.read_text(encoding="utf-8")
    text = _after_last(text, re.compile(r"^\| \d{2} \| \\ref lab\d{2}_"),
                       f'| {lab.number} | \\ref lab{lab.number}_{n} "{lab.title}" | '
                       f"(to be written) | in progress |", mainpage)
    text = _after_last(text, re.compile(r"^- \\subpage lab\d{2}_"),
                       f"- \\subpage lab{lab.number}_{n}", mainpage)
    mainpage.write_text(text, encoding="utf-8")
    written.append(mainpage)

    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    text = _after_last(text, re.compile(r"^\| `\d{2}_\w+` \|"),
                       f"| `{lab.id}` | {lab.title} (to be written) | in progress |", readme)
    readme.write_text(text, encoding="utf-8")
    written.append(readme)
    return written


def _after_last(text: str, pattern: re.Pattern[str], line: str, path: Path) -> str:
    """`text` with `line` after the last line matching `pattern` (a table row, a list item)."""
    lines = text.split("\n")
    hits = [i for i, existing in enumerate(lines) if pattern.match(existing)]
    if not hits:
        raise UsageError(f"new-lab: {path.name} has no lab table or list to add {line!r} to")
    lines.insert(hits[-1] + 1, line)
    return "\n".join(lines)


# ---------------------------------------------------------------- the files

def _header(lab: NewLab) -> str:
    return f"""/// @file {lab.name}.h
/// @brief Lab {lab.number}, {lab.title}: the interface the grader calls. Do not edit this file.
///
/// You edit {lab.name}.cu. The handout is docs/labs/{lab.id}.md; grade with
/// `python3 grader/kit.py grade {lab.number}`.
///
/// (A skeleton written by `kit.py new-lab`: replace its placeholder exercise with the lab's own.)
#pragma once

#include <cuda_runtime.h>

#include "kit/launch.h"

namespace {lab.namespace} {{

/// Threads per block of transform().
constexpr unsigned kBlock = 256;

/// Step 1: the number of blocks of `block` threads that cover `n` elements.
unsigned blocks_for(unsigned n, unsigned block);

/// Step 1: out[i] = 2 * in[i] + 1 for every i < n, one thread per element. Runs on `stream`,
/// checks the launch, and returns the grid and block it used.
kit::Launch transform(unsigned n, const float* d_in, float* d_out, cudaStream_t stream = 0);

}}  // namespace {lab.namespace}
"""


def _source(lab: NewLab, *, solved: bool) -> str:
    marker = "DONE" if solved else "TODO"
    if solved:
        body = """unsigned blocks_for(unsigned n, unsigned block) {
  return (n + block - 1) / block;
}

__global__ void transform_kernel(unsigned n, const float* in, float* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i] + 1.0f;
}"""
    else:
        body = """unsigned blocks_for(unsigned n, unsigned block) {
  return 0;
}

__global__ void transform_kernel(unsigned n, const float* in, float* out) {}"""
    return f"""// Lab {lab.number}, {lab.title}: one kernel that gives every element of an array one thread.
// (A skeleton written by `kit.py new-lab`: replace its placeholder exercise with the lab's own.)
//
// Edit the TODO region, then grade:
//     python3 grader/kit.py grade {lab.number}
// The handout (docs/labs/{lab.id}.md) explains the steps; `python3 grader/kit.py hint {lab.number} 1`
// gives hints one at a time.
#include "{lab.name}.h"
#include "kit/check.h"

namespace {lab.namespace} {{

// ---- Step 1: one thread per element ------------------------------------------------------------

// {marker}({lab.name}.1): blocks_for says how many blocks of `block` threads cover n elements
// (rounded up); transform_kernel computes out[i] = 2 * in[i] + 1 for every i < n, one thread per
// element, and the threads past the end of the arrays do nothing.
{body}
// END({lab.name}.1)

kit::Launch transform(unsigned n, const float* d_in, float* d_out, cudaStream_t stream) {{
  const kit::Launch launch{{dim3(blocks_for(n, kBlock)), dim3(kBlock)}};
  transform_kernel<<<launch.grid, launch.block, 0, stream>>>(n, d_in, d_out);
  KIT_CHECK_LAUNCH("transform_kernel");
  return launch;
}}

}}  // namespace {lab.namespace}
"""


def _manifest(lab: NewLab) -> dict:
    n = lab.name
    return {
        "id": lab.id,
        "title": lab.title,
        "timeout_s": 60,
        "student_files": [f"{n}.cu"],
        "steps": [
            {
                "id": f"{n}.1",
                "title": "One thread per element: blocks_for and transform_kernel",
                "hints": [
                    "A launch of B blocks of T threads has B * T threads, and every element "
                    "needs one. What does integer division do when n is not a multiple of the "
                    "block size?",
                    "blocks_for is a division that rounds up. In transform_kernel, a thread's "
                    "element is the offset of its block plus its position inside the block; the "
                    "last block usually has threads with no element.",
                    "Round up by adding block - 1 to n before dividing. In the kernel, i is "
                    "blockIdx.x * blockDim.x + threadIdx.x, and only a thread with i < n reads "
                    "in[i] and writes out[i].",
                ],
            },
            {
                "id": f"{n}.perf",
                "title": "Performance: transform near copy bandwidth",
                "hints": [
                    "transform reads one float and writes one per element and does almost no "
                    "arithmetic, so memory bandwidth decides its speed: once step 1 is right, "
                    "it already clears the bar.",
                    "If it does not, check that neighbouring threads touch neighbouring "
                    "elements, so that a warp's 32 loads fall in 128 contiguous bytes.",
                    "The bar compares your bytes per second with a device-to-device cudaMemcpy "
                    "of the same size, in the same run; nothing but the kernel is timed.",
                ],
            },
        ],
    }


def _remote(lab: NewLab) -> str:
    ns = lab.namespace
    return f"""// Lab {lab.number}'s student functions as the judge calls them (kit/remote.h): every function
// of {lab.name}.h that a test calls, with its exact signature. A function the real exercise adds
// goes here too; docs/writing_labs.md, "Grading through a judge and a worker", says how.
#pragma once

#include "{lab.name}.h"

#define KIT_LAB_REMOTE(X)                                                                \\
  X({ns}, blocks_for, unsigned, (unsigned, unsigned))                                    \\
  X({ns}, transform, kit::Launch, (unsigned, const float*, float*, cudaStream_t))
"""


def _wrong(lab: NewLab) -> dict:
    return {
        "_comment": f"Known-wrong submissions of lab {lab.number}: plausible mistakes, each an edit "
                    "of the reference solution, that the selftest grades (docs/writing_labs.md, "
                    "Known-wrong submissions). Add the mistakes students of this lab make.",
        "lab": lab.id,
        "submissions": [{
            "name": "no_bounds_check",
            "mistake": "transform_kernel writes out[i] without checking i < n",
            "edits": [{"file": f"{lab.name}.cu", "find": "if (i < n) out[i] = 2.0f * in[i] + 1.0f;",
                       "replace": "out[i] = 2.0f * in[i] + 1.0f;"}],
            "loses": [f"{lab.name}.1"],
            "message": "outside the output",
        }],
    }


def _tests(lab: NewLab) -> str:
    n, ns, p = lab.name, lab.namespace, lab.pascal
    return f"""// Grader of lab {lab.number}, {lab.title}.
// (A skeleton written by `kit.py new-lab`: replace its placeholder exercise with the lab's own.)
//
//   python3 grader/kit.py grade {lab.number}          every test, each in its own process, with a score
//   build/bin/grade_{lab.id}             the same tests in one process (quick, no score)
//   KIT_SEED=1234 build/bin/grade_{lab.id} --gtest_filter='*Transform*'   replay one failure
//
// Steps: 1 blocks_for (host) and transform (GPU, every element, nothing outside the output), perf
// transform against the device copy bandwidth.
#include <string>
#include <vector>

#include "{n}.h"
#include "kit/check.h"
#include "kit/test.h"

namespace {{

// Inputs are uniform in [-1, 1]; 2 * x + 1 is at most 3 in magnitude and takes one rounding (a
// fused multiply-add) or two, each at most 2^-22 ~ 2.4e-7, while a wrong element is off by ~1.
const kit::Tolerance kTolerance{{1e-6, 0.0,
                               "2 * x + 1 for x in [-1, 1]: at most two roundings of 2.4e-7"}};

using {p}Host = kit::HostTest;

// ---- Step 1 ------------------------------------------------------------------------------------

KIT_TEST({p}Host, BlocksForRoundsUp, "{n}.1", host, 2,
         "blocks_for rounds up: 1000 elements in blocks of 256 need 4 blocks") {{
  EXPECT_EQ({ns}::blocks_for(1000, 256), 4u) << "1000 elements, blocks of 256";
  EXPECT_EQ({ns}::blocks_for(256, 256), 1u) << "an exact multiple needs no extra block";
  EXPECT_EQ({ns}::blocks_for(257, 256), 2u) << "one element over needs one more block";
  EXPECT_EQ({ns}::blocks_for(1, 1024), 1u) << "one element still needs a block";
}}

std::string size_name(const ::testing::TestParamInfo<unsigned>& info) {{
  return "n_" + std::to_string(info.param);
}}

std::vector<float> expected_of(const std::vector<float>& in) {{
  std::vector<float> out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = static_cast<float>(2.0 * in[i] + 1.0);
  return out;
}}

class Transform : public kit::GpuTestWithParam<unsigned> {{}};

KIT_TEST_P(Transform, WritesEveryElementAndNothingElse, "{n}.1", gpu, 1,
           "transform writes 2*in+1 to every element, none outside the output") {{
  const unsigned n = GetParam();
  auto rng = kit::test_random();  // seeded from the run's seed: KIT_SEED replays it
  const auto in = rng.floats(n, -1, 1);
  kit::DeviceBuffer<float> d_in(in);
  kit::GuardedBuffer<float> d_out(n);  // poisoned, with guard regions on both sides
  const kit::Launch launch = {ns}::transform(n, d_in.data(), d_out.data());
  KIT_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(kit::output_matches("out", expected_of(in), d_out, kTolerance, kit::Shape::d1(n),
                                  launch));
  EXPECT_TRUE(kit::input_unchanged("in", d_in, in));
}}

// Around the warp and the block size, and one large size with a ragged last block.
INSTANTIATE_TEST_SUITE_P(Sizes, Transform, ::testing::Values(1u, 31u, 33u, 1000u, (1u << 20) + 7),
                         size_name);

// ---- Performance -------------------------------------------------------------------------------

using {p}Perf = kit::PerfTest;

KIT_TEST({p}Perf, TransformRunsNearCopyBandwidth, "{n}.perf", perf, 10,
         "transform moves its bytes at a fraction of the device copy bandwidth, same run") {{
  const unsigned n = 1u << 26;  // 2 x 256 MiB: far larger than any L2 cache
  auto rng = kit::test_random();
  auto in = rng.floats(n, -1, 1);
  kit::DeviceBuffer<float> d_in(in), d_copy(n);
  kit::GuardedBuffer<float> d_out(n);

  // The timed kernel must be right at this size too, before timing and after it on a fresh input
  // (a kernel that skips work it has "already done" is caught there).
  auto check = [&](const char* when) {{
    d_out.poison();
    const kit::Launch launch = {ns}::transform(n, d_in.data(), d_out.data());
    KIT_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(kit::output_matches(std::string("out (") + when + ")", expected_of(in), d_out,
                                    kTolerance, kit::Shape::d1(n), launch));
  }};
  check("before timing");
  if (HasFailure()) return;

  const kit::Timed student{{"transform", 2.0 * sizeof(float) * n, [&](cudaStream_t stream) {{
                             {ns}::transform(n, d_in.data(), d_out.data(), stream);
                           }}}};
  expect_ratio_at_least(student, kit::device_copy_ceiling(d_in.data(), d_copy.data(), n * 4ull),
                        "{lab.key}", "GB/s", 1e-9);

  in = rng.floats(n, -1, 1);
  d_in.upload(in);
  check("after timing, fresh input");
}}

}}  // namespace
"""


def _handout(lab: NewLab) -> str:
    n, num = lab.name, lab.number
    return f"""# Lab {num}: {lab.title} {{#lab{num}_{n}}}

[TOC]

## Goal {{#lab{num}_goal}}

(A skeleton written by `kit.py new-lab`: replace its placeholder exercise, one thread per element
computing `2 * in[i] + 1`, with the lab's own, and this paragraph with what the lab teaches.)

You edit one file, and only inside its `TODO({n}.1)` region:

| File | What it holds |
| --- | --- |
| `labs/{lab.id}/{n}.cu` | `blocks_for` and `transform_kernel`. The launcher is written. |
| `labs/{lab.id}/{n}.h` | The interface the grader calls. Read it; do not edit it. |

The steps, and the points each is worth (the sum of its tests' points, as the grader lists them):

\\include{{doc}} {lab.id}_steps.md

## Step 1: one thread per element, TODO({n}.1) {{#lab{num}_step1}}

**Write** `blocks_for`, the number of blocks that cover n elements, and the body of
`transform_kernel`, which computes `out[i] = 2 * in[i] + 1` for every `i < n`.

**The grader checks:**

\\include{{doc}} {lab.id}_tests_1.md

**Hints** (`python3 grader/kit.py hint {num} 1 --level N`):

\\include{{doc}} {lab.id}_hints_1.md

## Performance step {{#lab{num}_step_perf}}

Nothing new to write: the perf test times `transform` on 2^26 elements against a device-to-device
`cudaMemcpy` in the same run. It runs only when every correctness test of the lab has passed.

\\include{{doc}} {lab.id}_tests_perf.md

The bars, in `grader/thresholds.conf`:

\\include{{doc}} {lab.id}_thresholds.md

**Hints** (`python3 grader/kit.py hint {num} perf --level N`):

\\include{{doc}} {lab.id}_hints_perf.md

## How to run it {{#lab{num}_running}}

```
python3 grader/kit.py grade {num}
build/bin/grade_{lab.id} --gtest_filter='{lab.pascal}Host.*'      # the host test: no GPU needed
```
"""


# ---------------------------------------------------------------- command

NEW_LAB_HELP = """Writes the skeleton of a new lab NN_name: its stub and interface header in labs/,
the solution in solutions/, the grader (CMakeLists.txt, lab.json, a host, a GPU and a perf test,
one known-wrong submission) in grader/, a thresholds.conf line, the handout in docs/labs/, and its
entries in grader/labs.json, docs/mainpage.md and README.md. The kit then builds, `kit.py check`
passes and the selftest passes; replace the placeholder exercise with the lab's own
(docs/writing_labs.md, "Adding a lab").

Exit codes: 0 written, 2 a malformed or taken id, or a bad title."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "new-lab", help="write the skeleton of a new lab (instructors, authors)",
        description=NEW_LAB_HELP)
    parser.add_argument("lab", metavar="NN_name", help="the new lab's id, e.g. 08_reductions")
    parser.add_argument("title", help='its title, e.g. "Parallel reductions"')
    parser.set_defaults(handler=_cmd_new_lab)


def _cmd_new_lab(args: argparse.Namespace, ctx: Context) -> int:
    lab = validate(ctx.root, ctx.manifest(), args.lab, args.title)
    written = create(ctx.root, lab)
    ctx.stdout.write(f"new-lab: {lab.id} written ({len(written)} files written or changed):\n")
    ctx.stdout.writelines(f"  {path.relative_to(ctx.root).as_posix()}\n" for path in written)
    ctx.stdout.write(
        "Next: python3 grader/kit.py check, then replace the placeholder exercise "
        "(docs/writing_labs.md, \"Adding a lab\").\n")
    return ExitCode.OK
