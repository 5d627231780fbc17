"""Tests of kit.py profile (kitgrade.profile) without a GPU: ncu's CSV read back, the table, and
the reasons it gives for not running.

Run: python3 -m unittest discover -s grader/tests -t grader
"""
import io
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from kitgrade import cli, profile
from kitgrade.manifest import load_manifest

ROOT = Path(__file__).resolve().parents[2]
LD = profile._LD.split("/")

# ncu --csv output: its own log lines first, then one row per kernel launch and metric; numbers
# with thousands separators.
CSV = f'''==PROF== Connected to process 4242 (bench_03_coalescing)
==PROF== Profiling "transpose_naive_kernel" - 0: 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","bench_03_coalescing","127.0.0.1","_Z22transpose_naive_kerneljjPKfPf","1","7","(32, 8, 1)","(256, 1024, 1)","0","9.0","Command line profiler metrics","{LD[0]}","sector","67,108,864"
"0","4242","bench_03_coalescing","127.0.0.1","_Z22transpose_naive_kerneljjPKfPf","1","7","(32, 8, 1)","(256, 1024, 1)","0","9.0","Command line profiler metrics","{LD[1]}","request","2,097,152"
"0","4242","bench_03_coalescing","127.0.0.1","_Z22transpose_naive_kerneljjPKfPf","1","7","(32, 8, 1)","(256, 1024, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","41.5"
"1","4242","bench_03_coalescing","127.0.0.1","_Z22transpose_naive_kerneljjPKfPf","1","7","(32, 8, 1)","(256, 1024, 1)","0","9.0","Command line profiler metrics","{LD[0]}","sector","1"
"1","4242","bench_03_coalescing","127.0.0.1","_Z22transpose_naive_kerneljjPKfPf","1","7","(32, 8, 1)","(256, 1024, 1)","0","9.0","Command line profiler metrics","{LD[1]}","request","1"
"2","4242","bench_03_coalescing","127.0.0.1","_Z15grader_copy_kernPKfPf","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","{LD[0]}","sector","8"
"2","4242","bench_03_coalescing","127.0.0.1","_Z15grader_copy_kernPKfPf","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","{LD[1]}","request","0"
==PROF== Disconnected from process 4242
'''


class ReadingNcu(unittest.TestCase):
    counters = profile.COUNTERS["03_coalescing"]

    def test_each_kernel_keeps_its_first_launch_and_ratios_are_divided(self) -> None:
        kernels = profile.parse_csv(CSV, self.counters)
        self.assertEqual([k.name for k in kernels],
                         ["_Z22transpose_naive_kerneljjPKfPf", "_Z15grader_copy_kernPKfPf"])
        naive = kernels[0].values
        self.assertEqual(naive[profile._LD], 32.0)  # 67,108,864 sectors over 2,097,152 requests
        self.assertEqual(naive["dram__throughput.avg.pct_of_peak_sustained_elapsed"], 41.5)
        self.assertNotIn(profile._LD, kernels[1].values)  # no request: no ratio, not 0 or inf

    def test_output_without_a_table_reads_as_no_kernel(self) -> None:
        self.assertEqual(profile.parse_csv("==PROF== No kernels were profiled.\n", self.counters), [])
        self.assertIn("no kernel", profile.refusal_reason("==WARNING== No kernels were profiled."))

    def test_counters_not_permitted_is_one_clear_reason(self) -> None:
        text = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU"
        reason = profile.refusal_reason(text)
        self.assertIn("ERR_NVGPUCTRPERM", reason)
        self.assertIn("NVreg_RestrictProfilingToAdminUsers=0", reason)
        self.assertEqual(profile.refusal_reason(CSV), "")

    def test_the_command_asks_for_every_counter_of_the_lab(self) -> None:
        argv = profile.command("ncu", Path("bench"), self.counters, 40)
        metrics = argv[argv.index("--metrics") + 1].split(",")
        self.assertEqual(set(metrics), {m for c in self.counters for m in c.raw})
        self.assertIn("--csv", argv)
        self.assertEqual(argv[-2:], ["bench", "--benchmark_min_time=0.001"])

    def test_every_lab_has_counters_and_each_metric_reads_as_words(self) -> None:
        manifest = load_manifest(ROOT / "grader" / "labs.json")
        for lab in manifest.labs:
            self.assertTrue(profile.COUNTERS.get(lab.id), lab.id)
            for counter in profile.COUNTERS[lab.id]:
                self.assertTrue(counter.words and counter.meaning, counter.metric)
                self.assertLessEqual(len(counter.raw), 2, counter.metric)


class TheTable(unittest.TestCase):
    def test_yours_next_to_the_references_in_80_columns(self) -> None:
        counters = profile.COUNTERS["03_coalescing"]
        mine = profile.parse_csv(CSV, counters)[:1]
        ref = [profile.KernelCounters(mine[0].name, {profile._LD: 4.0}),
               profile.KernelCounters("_Z14transpose_tilejjPKfPf", {})]
        text = profile.render("03_coalescing", counters, mine, ref)
        self.assertIn("transpose_naive_kernel\n", text)
        row = next(line for line in text.splitlines() if "global-load sectors" in line)
        self.assertEqual(row.split()[-2:], ["32.0", "4.00"])
        self.assertIn("did not launch: transpose_tile", text)
        for line in text.splitlines():
            self.assertLessEqual(len(line), 80, line)

    def test_two_instances_of_a_template_are_two_kernels_paired_by_name(self) -> None:
        self.assertEqual(profile.shown("_Z22transpose_tiled_kernelILj33EEvPKfPfjj"),
                         "transpose_tiled_kernel<33>")
        self.assertEqual(profile.shown("void transpose_tiled_kernel<32u>(const float *)"),
                         "transpose_tiled_kernel<32u>")
        self.assertEqual(profile.shown("scale_kernel <<<(256, 1, 1)>>>"),
                         "scale_kernel <<<(256, 1, 1)>>>")
        counters = profile.COUNTERS["03_coalescing"][:1]
        metric = counters[0].metric
        a, b = "_Z22transpose_tiled_kernelILj32EEvPKfPfjj", "_Z22transpose_tiled_kernelILj33EEvPKfPfjj"
        mine = [profile.KernelCounters(a, {metric: 1.0}), profile.KernelCounters(b, {metric: 2.0})]
        ref = [profile.KernelCounters(a, {metric: 3.0}), profile.KernelCounters(b, {metric: 4.0})]
        text = profile.render("03_coalescing", counters, mine, ref)
        rows = [line.split() for line in text.splitlines() if line.startswith("  global-load")]
        self.assertEqual([r[-2:] for r in rows], [["1.00", "3.00"], ["2.00", "4.00"]])
        self.assertNotIn("did not launch", text)

    def test_only_the_labs_kernels_are_profiled(self) -> None:
        argv = profile.command("ncu", Path("bench"), profile.COUNTERS["03_coalescing"], 40,
                                  {"b_kernel", "a_kernel"})
        self.assertEqual(argv[argv.index("--kernel-name") + 1], "regex:^(a_kernel|b_kernel)$")
        self.assertEqual(argv[argv.index("--kernel-name-base") + 1], "function")
        self.assertNotIn("--kernel-name", profile.command("ncu", Path("b"), profile.COUNTERS["02_bounds"], 4))

    def test_demangled_names(self) -> None:
        self.assertEqual(profile.demangled("_Z22transpose_naive_kerneljjPKfPf"),
                         "transpose_naive_kernel")
        self.assertEqual(profile.demangled("plain_name"), "plain_name")
        self.assertEqual(profile.demangled("_ZN5lab0316transpose_kernelEPKfPf"), "transpose_kernel")
        self.assertEqual(profile.demangled("_Z12tiled_kernelILi32EEvPKfS1_Pfiii"), "tiled_kernel")
        self.assertEqual(profile.demangled("_ZN12_GLOBAL__N_16kernelEv"), "kernel")
        self.assertEqual(profile.demangled(
            "void lab04::tiled_kernel<32>(const float *, const float *, float *, int)"),
            "tiled_kernel")
        self.assertEqual(profile.demangled("transpose_naive_kernel(unsigned int, float *)"),
                         "transpose_naive_kernel")


class Lab06Model(unittest.TestCase):
    """Lab 06's tables put the student's own occupancy() next to what ncu read for each launch."""

    JSON = {"context": {}, "benchmarks": [
        # Google Benchmark's names: the registered one, then the row's options.
        {"name": "BM_ChosenBlock/scale_kernel/iterations:3/manual_time", "block": 64.0,
         "api_block": 1024.0, "model_occupancy": 0.5, "api_block_model_occupancy": 1.0},
        {"name": "BM_Model/registers_kernel<2>/256", "occupancy": 1.0},
        {"name": "BM_ChosenBlock/staged_scale_kernel/iterations:3/manual_time",
         "error_occurred": True}]}

    def kernels(self) -> list:
        return [profile.KernelCounters("_Z12scale_kernelPKfPfj <<<(64, 1, 1)>>>",
                                       {"sm__maximum_warps_per_active_cycle_pct": 100.0}),
                profile.KernelCounters("_Z12scale_kernelPKfPfj <<<(1024, 1, 1)>>>", {}),
                profile.KernelCounters("_Z19staged_scale_kernelPKfPfj <<<(256, 1, 1)>>>", {})]

    def test_the_models_answer_per_kernel_and_block(self) -> None:
        rows = profile.parse_model_rows(self.JSON)
        self.assertEqual(rows, {("scale_kernel", 64): 50.0, ("scale_kernel", 1024): 100.0})
        kernels = self.kernels()
        profile.add_model_rows(kernels, rows)
        metric = profile.MODEL_OCCUPANCY.metric
        self.assertEqual([k.values.get(metric) for k in kernels], [50.0, 100.0, None])

    def test_the_row_is_in_the_table_and_not_asked_of_ncu(self) -> None:
        kernels = self.kernels()
        profile.add_model_rows(kernels, profile.parse_model_rows(self.JSON))
        rows = profile.COUNTERS["06_occupancy"] + profile.MODEL_ROWS["06_occupancy"]
        text = profile.render("06_occupancy", rows, kernels, [])
        model = [line for line in text.splitlines() if line.startswith("  your model's")]
        self.assertEqual([line.split()[-2] for line in model], ["50.0", "100.0", "-"])
        argv = profile.command("ncu", Path("bench"), profile.COUNTERS["06_occupancy"], 4)
        self.assertNotIn("kit_model_occupancy", argv[argv.index("--metrics") + 1])
        for line in text.splitlines():
            self.assertLessEqual(len(line), 80, line)

    def test_no_output_or_garbage_reads_as_no_rows(self) -> None:
        self.assertEqual(profile.parse_model_rows([]), {})
        self.assertEqual(profile.parse_model_rows({"benchmarks": "x"}), {})
        self.assertEqual(profile.model_rows(Path("/nonexistent/bench")), {})


class NotRun(unittest.TestCase):
    def run_cli(self, *argv: str) -> tuple[int, str]:
        out = io.StringIO()
        code = cli.main(list(argv), stdout=out, stderr=io.StringIO())
        return code, out.getvalue()

    def test_without_ncu_one_line_and_exit_4(self) -> None:
        with mock.patch.object(profile, "find_ncu", return_value=None):
            code, text = self.run_cli("profile", "03", "--no-build")
        self.assertEqual(code, profile.NOT_RUN_EXIT)
        self.assertIn("not run: Nsight Compute (ncu) is not installed", text)
        self.assertNotIn("sectors", text)

    def test_without_a_gpu_no_table(self) -> None:
        with mock.patch.object(profile, "find_ncu", return_value="/opt/ncu"), \
                mock.patch.object(profile.protocol, "query_device",
                                  return_value={"available": False, "reason": "no CUDA device"}):
            code, text = self.run_cli("profile", "03", "--no-build")
        self.assertEqual(code, profile.NOT_RUN_EXIT)
        self.assertIn("profile: not run: no CUDA device", text)
        for line in text.splitlines():
            self.assertLessEqual(len(line), 80, line)

    def profile_with(self, outputs: dict[str, str]) -> tuple[int, str]:
        """`profile 03 --no-build` where each build's benchmark prints outputs[variant] under
        ncu (run_ncu's own handling of that output included)."""
        real_run_ncu = profile.run_ncu

        def fake_ncu(ncu: str, program: Path, *rest: object) -> str:
            variant = "reference" if program.name.endswith("_reference") else "student"
            with mock.patch.object(profile.subprocess, "run",
                                   return_value=mock.Mock(stdout=outputs[variant])):
                return real_run_ncu(ncu, Path(__file__), (), 1)

        with mock.patch.object(profile, "find_ncu", return_value="/opt/ncu"), \
                mock.patch.object(profile.protocol, "query_device",
                                  return_value={"available": True}), \
                mock.patch.object(profile, "run_ncu", side_effect=fake_ncu):
            return self.run_cli("profile", "03", "--no-build")

    @unittest.skipUnless((ROOT / "solutions").is_dir(),
                         "a student edition has no reference column to show")
    def test_a_stub_that_launches_nothing_still_gets_the_references_table(self) -> None:
        code, text = self.profile_with({"student": "==WARNING== No kernels were profiled.\n",
                                        "reference": CSV})
        self.assertEqual(code, 0, text)
        # The reference's kernel with its readings, "-" for yours.
        self.assertRegex(text, r"global-load sectors per request +- +32\.0")
        self.assertIn("none of your kernels was profiled", text)
        for line in text.splitlines():
            self.assertLessEqual(len(line), 80, line)

    def test_no_kernel_on_either_side_is_not_run(self) -> None:
        none = "==WARNING== No kernels were profiled.\n"
        code, text = self.profile_with({"student": none, "reference": none})
        self.assertEqual(code, profile.NOT_RUN_EXIT)
        self.assertIn("profile: not run: ncu profiled no kernel", text)

    def test_counters_not_permitted_on_one_side_is_not_run(self) -> None:
        code, text = self.profile_with({"student": "==ERROR== ERR_NVGPUCTRPERM\n",
                                        "reference": CSV})
        self.assertEqual(code, profile.NOT_RUN_EXIT)
        self.assertIn("ERR_NVGPUCTRPERM", text)



class Lab07Timeline(unittest.TestCase):
    """profile 07 draws the pipelines' measured timelines (stand-in benchmarks write the CSV)."""

    CSV = ("run,stream,chunk,stage,start_ms,end_ms\n"
           "serial,0,0,copy-in,0,1\nserial,0,0,kernel,1,2\nserial,0,0,copy-out,2,3\n"
           "pipelined,0,0,copy-in,0,1\npipelined,1,0,kernel,1,2\npipelined,1,0,copy-out,2,2.5\n"
           "ideal,,,,0,2.4\n")

    def programs(self, folder: Path, student_runs: bool) -> dict[str, Path]:
        found = {}
        for variant in ("student", "reference"):
            script = folder / f"bench_{variant}"
            writes = student_runs or variant == "reference"
            script.write_text("#!/bin/sh\n" + (f"printf '{self.CSV}' > \"${{1#*=}}\"\n"
                                                if writes else "exit 1\n"))
            script.chmod(0o755)
            found[variant] = script
        return found

    def test_yours_and_the_reference_are_drawn(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            line = profile.draw_timeline(ROOT, Path(tmp), self.programs(Path(tmp), True))
            svg = Path(tmp) / "profile" / "lab07_timeline.svg"
            self.assertEqual(line, f"timeline: {svg} (open it in a browser)")
            text = svg.read_text()
            self.assertIn("yours", text)
            self.assertIn("reference", text)

    def test_a_stub_pipeline_gets_a_reason_not_a_picture(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            line = profile.draw_timeline(ROOT, Path(tmp), self.programs(Path(tmp), False))
            self.assertIn("not drawn", line)
            self.assertFalse((Path(tmp) / "profile" / "lab07_timeline.svg").exists())

if __name__ == "__main__":
    unittest.main()
