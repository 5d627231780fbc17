"""kit.py mutate: the mutants made from a line, the stable sample, and what kills a mutant."""

from __future__ import annotations

import json
import shutil
import tempfile
import unittest
from pathlib import Path

from kitgrade import mutate
from kitgrade.manifest import load_manifest
from kitgrade.model import Status, TestResult

ROOT = Path(__file__).resolve().parents[2]


def mutants_of(line: str) -> list[tuple[str, str]]:
    return list(mutate.line_mutants(line))


class LineMutantsTest(unittest.TestCase):
    def test_relational_and_arithmetic_operators_swap(self) -> None:
        got = mutants_of("  if (k < m) v[k] = b * p[k] + q[k];")
        self.assertIn(("relational", "  if (k <= m) v[k] = b * p[k] + q[k];"), got)
        self.assertIn(("arithmetic", "  if (k < m) v[k] = b / p[k] + q[k];"), got)
        self.assertIn(("arithmetic", "  if (k < m) v[k] = b * p[k] - q[k];"), got)
        self.assertIn(("bounds if", "  v[k] = b * p[k] + q[k];"), got)

    def test_templates_launches_and_arrows_are_not_comparisons(self) -> None:
        got = mutants_of("  kernel<<<grid, block, 0, stream>>>(p->n, static_cast<int>(k));")
        self.assertFalse([m for op, m in got if op == "relational"], got)
        self.assertIn(("stream", "  kernel<<<grid, block, 0, 0>>>(p->n, static_cast<int>(k));"),
                      got)

    def test_constants_become_plus_one_minus_one_and_zero(self) -> None:
        got = [m for op, m in mutants_of("  return (n + 255) / 256;") if op == "constant"]
        self.assertEqual(sorted(got), sorted([
            "  return (n + 256) / 256;", "  return (n + 254) / 256;", "  return (n + 0) / 256;",
            "  return (n + 255) / 257;", "  return (n + 255) / 255;", "  return (n + 255) / 0;"]))

    def test_a_tuning_choice_keeps_only_the_degenerate_constants(self) -> None:
        line = "  return {4, 4};"
        got = [(op, m) for op, m in mutate.line_mutants(line, choice=True)]
        self.assertEqual(sorted(got), sorted([
            ("choice", "  return {0, 4};"), ("choice", "  return {1, 4};"),
            ("choice", "  return {4, 0};"), ("choice", "  return {4, 1};")]))
        self.assertIn(("constant", "  return {5, 4};"), mutants_of(line))

    def test_cuda_builtins_and_axes_swap(self) -> None:
        got = [m for _, m in mutants_of("  const int i = blockIdx.x * blockDim.x + threadIdx.x;")]
        self.assertIn("  const int i = threadIdx.x * blockDim.x + threadIdx.x;", got)
        self.assertIn("  const int i = blockIdx.x * gridDim.x + threadIdx.x;", got)
        self.assertIn("  const int i = blockIdx.y * blockDim.x + threadIdx.x;", got)

    def test_a_term_of_an_index_expression_is_dropped(self) -> None:
        got = [m for op, m in mutants_of("  out[row * cols + col] = in[i] + bias[col];")
               if op == "term dropped"]
        self.assertEqual(sorted(got), sorted(["  out[row * cols] = in[i] + bias[col];",
                                              "  out[row * cols + col] = in[i];"]))
        self.assertEqual([m for op, m in mutants_of("  total = a + b;") if op == "term dropped"],
                         [])  # not an index expression

    def test_barriers_and_synchronisations_are_dropped(self) -> None:
        self.assertEqual(mutants_of("    __syncthreads();"),
                         [("barrier dropped", "    // (mutant: dropped) __syncthreads();")])
        got = mutants_of("  KIT_CUDA_CHECK(cudaStreamSynchronize(s));")
        self.assertIn(("synchronisation dropped",
                       "  // (mutant: dropped) KIT_CUDA_CHECK(cudaStreamSynchronize(s));"), got)

    def test_a_barrier_moves_into_the_one_line_branch_above_it(self) -> None:
        lines = ["  if (t < s) v[t] += v[t + s];", "  // a comment", "  __syncthreads();  // why"]
        first, before, after = mutate._barrier_into_branch(lines, 2)
        self.assertEqual((first, before), (0, "\n".join(lines)))
        self.assertEqual(after.split("\n"), ["  if (t < s) { v[t] += v[t + s]; __syncthreads(); }",
                                              "  // a comment",
                                              "  // (mutant: moved into the branch above)"])
        self.assertIsNone(mutate._barrier_into_branch(["  x = 1;", "  __syncthreads();"], 1))

    def test_comments_strings_and_preprocessor_lines_are_left_alone(self) -> None:
        self.assertEqual(mutants_of("  // i < n and 1 + 2"), [])
        self.assertEqual(mutants_of("#include <vector>"), [])
        got = [m for _, m in mutants_of('  throw std::invalid_argument("n < 1"); // 2 + 2')]
        self.assertFalse([m for m in got if '"n <= 1"' in m or "2 - 2" in m], got)

    def test_pinned_memory_becomes_pageable(self) -> None:
        got = mutants_of("  KIT_CUDA_CHECK(cudaHostAlloc(&q, n * 4, cudaHostAllocDefault));")
        self.assertIn(("pageable", "  KIT_CUDA_CHECK((*reinterpret_cast<void**>(&q) = "
                                   "std::malloc(n * 4), cudaSuccess));"), got)

    def test_size_t_narrows_to_unsigned(self) -> None:
        self.assertIn(("narrowing", "  unsigned i = blockIdx.x;"),
                      mutants_of("  std::size_t i = blockIdx.x;"))
        self.assertIn(("narrowing", "  unsigned j = a[i];"), mutants_of("  size_t j = a[i];"))
        self.assertIn(("narrowing", "  return static_cast<unsigned>(block_idx.x) * block_dim.x;"),
                      mutants_of("  return static_cast<std::size_t>(block_idx.x) * block_dim.x;"))
        # A size that is not an index (no CUDA index variable, no subscript) is not narrowed.
        self.assertNotIn("narrowing", {op for op, _ in mutants_of("  std::size_t bytes = kib * 1024;")})


class EnumerateTest(unittest.TestCase):
    def setUp(self) -> None:
        self.lab = load_manifest(ROOT / "grader" / "labs.json").find_lab("06_occupancy")
        assert self.lab is not None

    def test_every_mutant_is_inside_a_done_region_and_changes_one_line(self) -> None:
        mutants = mutate.enumerate_mutants(ROOT, self.lab)
        self.assertGreater(len(mutants), 20)
        for m in mutants:
            lines = (ROOT / "solutions" / self.lab.id / m.file).read_text().splitlines()
            span = m.before.split("\n")
            self.assertEqual(lines[m.line - 1:m.line - 1 + len(span)], span)
            self.assertNotEqual(m.before, m.after)
            self.assertTrue(m.region.startswith("occupancy."), m)

    def test_an_unknown_step_is_a_usage_error_before_anything_builds(self) -> None:
        import io
        from kitgrade import cli
        err = io.StringIO()
        with tempfile.TemporaryDirectory() as tmp:
            code = cli.main(["mutate", "06", "--steps", "occupancy.9", "--build-dir", tmp],
                            stdout=io.StringIO(), stderr=err)
            self.assertEqual(list(Path(tmp).iterdir()), [])
        self.assertEqual(code, 2)
        self.assertIn("no step occupancy.9", err.getvalue())

    def test_the_sample_is_the_same_for_a_seed(self) -> None:
        mutants = mutate.enumerate_mutants(ROOT, self.lab)
        first = [m.name for m in mutate.sample(mutants, 10, 7)]
        self.assertEqual(first, [m.name for m in mutate.sample(mutants, 10, 7)])
        self.assertNotEqual(first, [m.name for m in mutate.sample(mutants, 10, 8)])
        self.assertEqual(len(mutate.sample(mutants, None, 7)), len(mutants))

    def test_a_moved_barrier_is_written_over_its_lines(self) -> None:
        lab = load_manifest(ROOT / "grader" / "labs.json").find_lab("05_divergence")
        moved = [m for m in mutate.enumerate_mutants(ROOT, lab)
                 if m.operator == "barrier into the branch"]
        self.assertGreaterEqual(len(moved), 2)
        with tempfile.TemporaryDirectory() as tmp:
            mutate.write_mutants(ROOT, lab, moved[:1], Path(tmp))
            m = moved[0]
            text = (Path(tmp) / lab.id / m.name / m.file).read_text()
            self.assertIn("__syncthreads(); }", text)
            self.assertIn("// (mutant: moved into the branch above)", text)
            solution = (ROOT / "solutions" / lab.id / m.file).read_text()
            self.assertEqual(len(text.split("\n")), len(solution.split("\n")))

    def test_a_barrier_after_a_braced_branch_moves_before_its_closing_brace(self) -> None:
        lines = ["    if (t < s) {", "      v += p[t + s];", "    }", "    // done",
                 "    __syncthreads();  // round s"]
        first, before, after = mutate._barrier_into_branch(lines, 4)
        self.assertEqual(first, 2)
        self.assertEqual(after.split("\n"), ["    __syncthreads(); }", "    // done",
                                              "    // (mutant: moved into the branch above)"])
        self.assertEqual(before.split("\n"), lines[2:])
        # A block that is not an if (a loop's body) is left alone.
        loop = ["    for (;;) {", "      x();", "    }", "    __syncthreads();"]
        self.assertIsNone(mutate._barrier_into_branch(loop, 3))

    def test_written_mutants_differ_from_the_solution_in_their_line_only(self) -> None:
        mutants = mutate.sample(mutate.enumerate_mutants(ROOT, self.lab), 3, 1)
        with tempfile.TemporaryDirectory() as tmp:
            mutate.write_mutants(ROOT, self.lab, mutants, Path(tmp))
            names = (Path(tmp) / self.lab.id / "names.txt").read_text().split()
            self.assertEqual(names, [m.name for m in mutants])
            for m in mutants:
                solution = (ROOT / "solutions" / self.lab.id / m.file).read_text().split("\n")
                written = (Path(tmp) / self.lab.id / m.name / m.file).read_text().split("\n")
                changed = [i for i, (a, b) in enumerate(zip(solution, written)) if a != b]
                self.assertEqual(changed, [m.line - 1])

    def test_equivalent_marks_need_a_reason(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "grader" / self.lab.id).mkdir(parents=True)
            path = root / "grader" / self.lab.id / mutate.EQUIVALENT_FILE
            path.write_text(json.dumps({"equivalent": [
                {"file": "a.cpp", "line": " x < n ", "mutant": "x != n", "reason": "x counts up"}]}))
            self.assertEqual(mutate.load_equivalent(root, self.lab),
                             {("a.cpp", "x < n", "x != n"): "x counts up"})
            path.write_text(json.dumps({"equivalent": [{"file": "a.cpp", "line": "x"}]}))
            with self.assertRaises(Exception):
                mutate.load_equivalent(root, self.lab)


    def test_choices_need_a_reason_and_shape_the_mutants_of_their_line(self) -> None:
        lab = load_manifest(ROOT / "grader" / "labs.json").find_lab("07")
        choices = mutate.load_choices(ROOT, lab)
        self.assertEqual(list(choices), [("streams.cu", "return {4, 4};")])
        of_line = [m.after.strip() for m in mutate.enumerate_mutants(ROOT, lab)
                   if m.before.strip() == "return {4, 4};"]
        self.assertEqual(sorted(of_line), ["return {0, 4};", "return {1, 4};",
                                           "return {4, 0};", "return {4, 1};"])
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "grader" / lab.id).mkdir(parents=True)
            (root / "grader" / lab.id / mutate.EQUIVALENT_FILE).write_text(
                json.dumps({"choices": [{"file": "streams.cu", "line": "return {4, 4};"}]}))
            with self.assertRaises(Exception):
                mutate.load_choices(root, lab)


    def test_marks_that_no_longer_fit_the_solution_are_problems(self) -> None:
        lab = load_manifest(ROOT / "grader" / "labs.json").find_lab("07")
        self.assertEqual(mutate.stale_marks(ROOT, lab), [])
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            shutil.copytree(ROOT / "solutions" / lab.id, root / "solutions" / lab.id)
            (root / "grader" / lab.id).mkdir(parents=True)
            (root / "grader" / lab.id / mutate.EQUIVALENT_FILE).write_text(json.dumps({
                "equivalent": [{"file": "streams.cu", "line": "return {4, 4};",
                                "mutant": "return {4, 9};", "reason": "r"}],
                "choices": [{"file": "streams.cu", "line": "return {8, 4};", "reason": "r"}]}))
            problems = mutate.stale_marks(root, lab)
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("return {4, 9}; (of return {4, 4};) is no longer made", problems[0])
        self.assertIn("the choice streams.cu: return {8, 4}; is no line", problems[1])


class JudgeTest(unittest.TestCase):
    MUTANT = mutate.Mutant("mutant_0001", "a.cpp", "alpha.1", 3, "relational", "a < b", "a <= b")

    def test_a_mutant_is_killed_when_a_test_the_reference_passes_goes_wrong(self) -> None:
        def result(test_id: str, status: Status) -> TestResult:
            return TestResult(lab="06_occupancy", step="alpha.1", id=test_id, title="t",
                              kind="host", points=1, status=status)

        reference = {"A.One": Status.PASSED, "A.Two": Status.PASSED, "A.Gpu": Status.PASSED}
        same = {"A.One": result("A.One", Status.PASSED), "A.Two": result("A.Two", Status.PASSED),
                "A.Gpu": result("A.Gpu", Status.NOT_RUN)}  # not selected: decides nothing
        self.assertEqual(mutate.judge(self.MUTANT, reference, same, None).status, "survived")
        wrong = dict(same, **{"A.Two": result("A.Two", Status.TIMED_OUT)})
        killed = mutate.judge(self.MUTANT, reference, wrong, None)
        self.assertEqual((killed.status, killed.why), ("killed", "alpha.1: A.Two timed out"))
        self.assertEqual(mutate.judge(self.MUTANT, reference, None, "no binary").status, "killed")

    def test_the_score_line_leaves_out_equivalent_and_uncompiled_mutants(self) -> None:
        lab = load_manifest(ROOT / "grader" / "labs.json").find_lab("06_occupancy")
        report = mutate.Report(lab, [mutate.Verdict(self.MUTANT, s) for s in
                                     ("killed", "killed", "killed", "survived", "equivalent",
                                      "not compiled")], gpu=True, total_mutants=6)
        self.assertEqual(report.score_line, "mutation score: 3/4 killed (75%)")
        self.assertIn("| alpha.1 | 6 | 3 | 1 | 1 | 1 |", report.table())
        self.assertIn("a.cpp:3: a < b  ->  a <= b", report.markdown())


class RecheckTest(unittest.TestCase):
    A = mutate.Mutant("mutant_0001", "a.cpp", "alpha.1", 3, "relational", "a < b", "a <= b")
    B = mutate.Mutant("mutant_0002", "a.cpp", "alpha.1", 9, "constant", "k = 4;", "k = 5;")

    def test_survivors_are_found_again_by_their_text_and_changed_lines_are_named(self) -> None:
        report = {"lab": "06_occupancy", "verdicts": [
            # this run's fields; the line number moved (3 -> 30) since
            {"file": "a.cpp", "line": 30, "diff": "a.cpp:30: a < b  ->  a <= b",
             "before": "a < b", "after": "a <= b", "status": "survived"},
            # an older report, with its diff only
            {"file": "a.cpp", "line": 9, "diff": "a.cpp:9: k = 4;  ->  k = 5;", "status": "survived"},
            {"file": "a.cpp", "line": 9, "diff": "a.cpp:9: k = 4;  ->  k = 0;", "status": "killed"},
            {"file": "a.cpp", "line": 12, "diff": "a.cpp:12: x + y  ->  x - y",
             "before": "x + y", "after": "x - y", "status": "survived"}]}
        found, gone = mutate.survivors_of(report, [self.A, self.B])
        self.assertEqual(found, [self.A, self.B])
        self.assertEqual(gone, ["a.cpp:12: x + y  ->  x - y"])

    def test_the_json_report_keeps_each_line_as_it_was_and_as_mutated(self) -> None:
        lab = load_manifest(ROOT / "grader" / "labs.json").find_lab("06_occupancy")
        report = mutate.Report(lab, [mutate.Verdict(self.A, "survived")], gpu=True,
                               total_mutants=1)
        verdict = report.to_json()["verdicts"][0]
        self.assertEqual((verdict["before"], verdict["after"]), ("a < b", "a <= b"))
        self.assertEqual(mutate.survivors_of(report.to_json(), [self.A]), ([self.A], []))


class SurvivorLineTest(unittest.TestCase):
    def test_a_long_line_is_cut_around_its_change(self) -> None:
        line = "kernel<<<launch.grid, launch.block, 0, stream>>>(n, a, b, d_in, d_out, more, args);"
        mutant = mutate.Mutant("m", "a.cu", "alpha.1", 1, "stream", line,
                               line.replace("0, stream>>>", "0, 0>>>"))
        shown = mutate._around_change(mutant, 40)
        self.assertLessEqual(len(shown), 40)
        self.assertIn("0, 0>>>", shown)
        short = mutate.Mutant("m", "a.cu", "alpha.1", 1, "relational", "a < b", "a <= b")
        self.assertEqual(mutate._around_change(short, 40), "a <= b")


if __name__ == "__main__":
    unittest.main()
