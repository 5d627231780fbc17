"""kitgrade.diagnose_build on the real texts of nvcc 13.0, g++ and GNU ld (captured by compiling
tiny .cu files with `nvcc -arch=sm_75`, and by a CMake + Ninja project with the kit's ccache
launcher), and `kit.py grade` printing its explanations after a failed build.

Run all runner tests from the repository root:
    python3 -m unittest discover -s grader/tests -t grader
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
import unittest
from pathlib import Path

from kitgrade import diagnose_build
from kitgrade.build import BuildError, ensure_built
from kitgrade.cli import main

from .support import fake_env, make_repo

REPO = Path(__file__).resolve().parents[2]

# Ninja building a lab whose index_math.cuh has `return TODO;` and whose launcher calls the
# kernel without <<<...>>> (the command line is the kit's, with its ccache launcher).
NINJA_TODO = """\
[1/4] Building CUDA object grader/01_indexing/CMakeFiles/lab_01_indexing_student.dir/__/__/labs/01_indexing/indexing.cu.o
FAILED: grader/01_indexing/CMakeFiles/lab_01_indexing_student.dir/__/__/labs/01_indexing/indexing.cu.o
/usr/bin/cmake -E env CCACHE_BASEDIR=/home/ada/kit /usr/bin/ccache /usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -I/home/ada/kit/labs/01_indexing -I/home/ada/kit/common/include -isystem=/usr/local/cuda/include -O3 -DNDEBUG --generate-code=arch=compute_75,code=[compute_75,sm_75] -lineinfo -std=c++17 -MD -MT grader/01_indexing/CMakeFiles/lab_01_indexing_student.dir/__/__/labs/01_indexing/indexing.cu.o -x cu -c /home/ada/kit/labs/01_indexing/indexing.cu -o grader/01_indexing/CMakeFiles/lab_01_indexing_student.dir/__/__/labs/01_indexing/indexing.cu.o
/home/ada/kit/labs/01_indexing/index_math.cuh(21): error: identifier "TODO" is undefined
    return TODO;
           ^

/home/ada/kit/labs/01_indexing/indexing.cu(23): error: a __global__ function call must be configured
    saxpy_kernel(n, a, d_x, d_y, d_out);
    ^

2 errors detected in the compilation of "/home/ada/kit/labs/01_indexing/indexing.cu".
[2/4] Building CXX object grader/01_indexing/CMakeFiles/grade_01_indexing.dir/__/__/common/src/test_main.cpp.o
ninja: build stopped: subcommand failed.
"""

# A __host__ __device__ function reading the built-ins, called from host code: compiles, then
# fails to link (nvcc 13.0 and GNU ld 2.42; the link command is CMake's).
NINJA_LINK = """\
[1/3] Building CUDA object CMakeFiles/lab.dir/todo.cu.o
/tmp/diag/proj/todo.cu(9): warning #177-D: variable "unused" was declared but never referenced
  void launch(float* d) { int unused = 3; saxpy_kernel<<<1, 32>>>(10, d); }
                              ^

Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

[2/3] Linking CUDA static library liblab.a
[3/3] Linking CUDA executable app
FAILED: app 
: && /usr/bin/g++  CMakeFiles/app.dir/main.cu.o -o app  liblab.a  -lcudadevrt  -lcudart_static  -lrt  -lpthread  -ldl -L"/usr/local/cuda/targets/x86_64-linux/lib/stubs" -L"/usr/local/cuda/targets/x86_64-linux/lib" && :
/usr/bin/ld: liblab.a(todo.cu.o): warning: relocation against `__device_builtin_variable_blockIdx' in read-only section `.text._Z15global_index_1dv[_Z15global_index_1dv]'
/usr/bin/ld: liblab.a(todo.cu.o): in function `global_index_1d()':
tmpxft_00001df4_00000000-6_todo.cudafe1.cpp:(.text._Z15global_index_1dv[_Z15global_index_1dv]+0x6): undefined reference to `__device_builtin_variable_blockIdx'
/usr/bin/ld: tmpxft_00001df4_00000000-6_todo.cudafe1.cpp:(.text._Z15global_index_1dv[_Z15global_index_1dv]+0xc): undefined reference to `__device_builtin_variable_blockDim'
/usr/bin/ld: tmpxft_00001df4_00000000-6_todo.cudafe1.cpp:(.text._Z15global_index_1dv[_Z15global_index_1dv]+0x15): undefined reference to `__device_builtin_variable_threadIdx'
/usr/bin/ld: warning: creating DT_TEXTREL in a PIE
collect2: error: ld returned 1 exit status
ninja: build stopped: subcommand failed.
"""

# The kit itself, lab 01's global_index_1d written with the built-ins: the grader's host test
# calls it, so the grader binary does not link (ccache + nvcc 13.0, ninja, GNU ld).
KIT_LINK = """\
[0/2] Re-checking globbed directories...
[1/1] Linking CXX executable bin/grade_01_indexing
FAILED: bin/grade_01_indexing 
: && /usr/bin/c++ -O3 -DNDEBUG  grader/01_indexing/CMakeFiles/grade_01_indexing.dir/test_indexing.cu.o grader/01_indexing/CMakeFiles/grade_01_indexing.dir/__/__/common/src/test_main.cpp.o -o bin/grade_01_indexing -L/usr/local/cuda/targets/x86_64-linux/lib grader/01_indexing/liblab_01_indexing_student.a  common/libkit_test.a  common/libkit_common.a  /usr/local/cuda/lib/libcudart_static.a  /usr/lib/x86_64-linux-gnu/librt.a  -ldl  /usr/lib/x86_64-linux-gnu/libgtest.a  -lcudadevrt  -lcudart_static  -lrt  -lpthread  -ldl && :
/usr/bin/ld: grader/01_indexing/CMakeFiles/grade_01_indexing.dir/test_indexing.cu.o: warning: relocation against `__device_builtin_variable_blockIdx' in read-only section `.text'
/usr/bin/ld: grader/01_indexing/CMakeFiles/grade_01_indexing.dir/test_indexing.cu.o: in function `(anonymous namespace)::IndexingHost_GlobalIndexSkipsEarlierBlocks_Test::TestBody()':
tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x2ea0): undefined reference to `__device_builtin_variable_blockIdx'
/usr/bin/ld: tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x2ea7): undefined reference to `__device_builtin_variable_blockDim'
/usr/bin/ld: tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x2ead): undefined reference to `__device_builtin_variable_threadIdx'
/usr/bin/ld: tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x2f39): undefined reference to `__device_builtin_variable_blockIdx'
/usr/bin/ld: tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x2f40): undefined reference to `__device_builtin_variable_blockDim'
/usr/bin/ld: tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x2f4e): undefined reference to `__device_builtin_variable_threadIdx'
/usr/bin/ld: tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x2fc3): undefined reference to `__device_builtin_variable_blockIdx'
/usr/bin/ld: tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x2fca): undefined reference to `__device_builtin_variable_blockDim'
/usr/bin/ld: tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x2fd8): undefined reference to `__device_builtin_variable_threadIdx'
/usr/bin/ld: tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x310c): undefined reference to `__device_builtin_variable_blockDim'
/usr/bin/ld: tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x31c1): undefined reference to `__device_builtin_variable_blockIdx'
/usr/bin/ld: tmpxft_000074e5_00000000-6_test_indexing.compute_90.cudafe1.cpp:(.text+0x31ca): undefined reference to `__device_builtin_variable_threadIdx'
/usr/bin/ld: warning: creating DT_TEXTREL in a PIE
collect2: error: ld returned 1 exit status
ninja: build stopped: subcommand failed.
"""

# A __device__ helper called by a launcher, on the line of a launch of a plain function.
NINJA_DEVICE = """\
[1/3] Building CUDA object CMakeFiles/lab.dir/todo.cu.o
FAILED: CMakeFiles/lab.dir/todo.cu.o 
/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler   --generate-code=arch=compute_75,code=[compute_75,sm_75] -MD -MT CMakeFiles/lab.dir/todo.cu.o -MF CMakeFiles/lab.dir/todo.cu.o.d -x cu -c /tmp/diag/proj/todo.cu -o CMakeFiles/lab.dir/todo.cu.o
/tmp/diag/proj/todo.cu(3): error: calling a __device__ function("grid_size_1d(unsigned int, unsigned int)") from a __host__ function("launch") is not allowed
  void launch(float* d) { unsigned g = grid_size_1d(10, 256); saxpy_kernel<<<g, 256>>>(10, d); }
                                       ^

/tmp/diag/proj/todo.cu(3): error: a host function call cannot be configured
  void launch(float* d) { unsigned g = grid_size_1d(10, 256); saxpy_kernel<<<g, 256>>>(10, d); }
                                                              ^

2 errors detected in the compilation of "/tmp/diag/proj/todo.cu".
ninja: build stopped: subcommand failed.
"""

BUILTIN_IN_MAIN = """\
/usr/bin/ld: /tmp/tmpxft_00001a47_00000000-11_builtin_host.o: warning: relocation against `__device_builtin_variable_blockDim' in read-only section `.text'
/usr/bin/ld: /tmp/tmpxft_00001a47_00000000-11_builtin_host.o: in function `main':
tmpxft_00001a47_00000000-6_builtin_host.cudafe1.cpp:(.text+0x38): undefined reference to `__device_builtin_variable_blockIdx'
/usr/bin/ld: tmpxft_00001a47_00000000-6_builtin_host.cudafe1.cpp:(.text+0x3e): undefined reference to `__device_builtin_variable_blockDim'
/usr/bin/ld: tmpxft_00001a47_00000000-6_builtin_host.cudafe1.cpp:(.text+0x47): undefined reference to `__device_builtin_variable_threadIdx'
/usr/bin/ld: tmpxft_00001a47_00000000-6_builtin_host.cudafe1.cpp:(.text+0x52): undefined reference to `__device_builtin_variable_gridDim'
/usr/bin/ld: warning: creating DT_TEXTREL in a PIE
collect2: error: ld returned 1 exit status
"""

BUILTIN_IN_CPP = """\
builtin_cpp.cpp: In function ‘unsigned int f()’:
builtin_cpp.cpp:2:23: error: ‘threadIdx’ was not declared in this scope
    2 | unsigned f() { return threadIdx.x; }
      |                       ^~~~~~~~~
"""

# A constexpr function reading a built-in (g++ through nvcc).
BUILTIN_CONSTEXPR = """\
t1.cu: In function ‘constexpr unsigned int f()’:
t1.cu:1:72: error: the value of ‘__device_builtin_variable_threadIdx’ is not usable in a constant expression
    1 | constexpr unsigned f() { return threadIdx.x; }
      |                                                                        ^
/usr/local/cuda/bin/../targets/x86_64-linux/include/device_launch_parameters.h:71:20: note: ‘__device_builtin_variable_threadIdx’ was not declared ‘constexpr’
   71 | uint3 __device_builtin__ __STORAGE__ threadIdx;
      |                    ^~~~~~~~~~~~~~~~~~~~~~~~~~~~
"""

# nvcc's message for a name it does not know (captured for a misspelt `treadIdx`; nvcc 13.0 lets
# threadIdx itself through to the linker, older front ends and IDEs say this).
BUILTIN_IDENTIFIER = """\
kernel.cu(4): error: identifier "threadIdx" is undefined
    return threadIdx.x;
           ^
"""

DEVICE_FROM_HOST = """\
device_from_host.cu(2): error: calling a __device__ function("twice(unsigned int)") from a __host__ function("main") is not allowed
  int main() { return (int)twice(3); }
                           ^

1 error detected in the compilation of "device_from_host.cu".
"""

DEVICE_FROM_HOST_DEVICE = """\
r6.cu(2): error: calling a __device__ function("twice(unsigned int)") from a __host__ __device__ function("hd") is not allowed
  __attribute__((host)) __attribute__((device)) unsigned hd(unsigned x) { return twice(x); }
                                                                                 ^

1 error detected in the compilation of "r6.cu".
"""

SYNCTHREADS_ON_HOST = """\
r2.cu(1): error: calling a __device__ function("__syncthreads") from a __host__ function("h") is not allowed
  void h() { __syncthreads(); }
             ^

1 error detected in the compilation of "r2.cu".
"""

MISSING_GLOBAL = """\
missing_global.cu(2): error: a host function call cannot be configured
  void launch(float* d) { saxpy_kernel<<<1, 32>>>(d); }
                          ^

1 error detected in the compilation of "missing_global.cu".
"""

KERNEL_MARKED_DEVICE = """\
missing_global_dev.cu(2): error: calling a __device__ function("saxpy_kernel(float *)") from a __host__ function("launch") is not allowed
  void launch(float* d) { saxpy_kernel<<<1, 32>>>(d); }
                          ^

missing_global_dev.cu(2): error: a __device__ function call cannot be configured
  void launch(float* d) { saxpy_kernel<<<1, 32>>>(d); }
                          ^

2 errors detected in the compilation of "missing_global_dev.cu".
"""

NOT_CONFIGURED = """\
no_config.cu(2): error: a __global__ function call must be configured
  void launch(float* d) { saxpy_kernel(d); }
                          ^

1 error detected in the compilation of "no_config.cu".
"""

KERNEL_RETURNS = """\
r1.cu(1): error: a __global__ function must have a void return type
  __attribute__((global)) float k(float* o) { return o[0]; }
                 ^

1 error detected in the compilation of "r1.cu".
"""


MISSING_FUNCTIONAL = """\
/home/ada/kit/labs/07_streams/streams.cu(12): error: namespace "std" has no member "function"
  void each(std::function<void(int)> f);
                 ^

/home/ada/kit/labs/07_streams/streams.cu(13): error: namespace "std" has no member "function"
  static std::function<void(int)> g;
              ^

2 errors detected in the compilation of "/home/ada/kit/labs/07_streams/streams.cu".
"""

MISSING_FUNCTIONAL_GCC = """\
/tmp/f.cpp:3:15: error: ‘function’ is not a member of ‘std’
    3 | void run(std::function<int(int)> f);
      |               ^~~~~~~~
"""


ALLOCATIONS = """\
/home/ada/kit/labs/07_streams/streams.cu(5): error: no instance of overloaded function "cudaMalloc" matches the argument list
            argument types are: (float *, unsigned long)
    cudaMalloc(d, 100 * sizeof(float));
    ^
/usr/local/cuda/bin/../targets/x86_64-linux/include/cuda_runtime_api.h(4581): note #3326-D: function "cudaMalloc(void **, size_t)" does not match because argument #1 does not match parameter
  extern __attribute__((host)) __attribute__((cudart_builtin)) cudaError_t cudaMalloc(void **devPtr, size_t size);
                                                                           ^

/home/ada/kit/labs/07_streams/streams.cu(6): error: no instance of overloaded function "cudaMallocHost" matches the argument list
            argument types are: (float *, int)

2 errors detected in the compilation of "/home/ada/kit/labs/07_streams/streams.cu".
"""

SHARED_ON_HOST = """\
/home/ada/kit/labs/03_coalescing/coalescing.cu(6): error: a static "__shared__" variable declaration is not allowed inside a host function body
    __attribute__((shared)) float s[32];
                                  ^

1 error detected in the compilation of "/home/ada/kit/labs/03_coalescing/coalescing.cu".
"""


def sections(path: str) -> set[str]:
    """The titles of a handout's sections, as Doxygen shows them."""
    text = (REPO / path).read_text(encoding="utf-8")
    return {m.group(1).strip() for m in re.finditer(r"^#+ (.*?) \{#\w+\}\s*$", text, re.M)}


class ExplainTest(unittest.TestCase):
    def explain(self, text: str) -> list[str]:
        lines = diagnose_build.explain(text)
        for line in lines:
            m = re.search(r'\((docs/\S+\.md), "([^"]+)"\)$', line)
            self.assertIsNotNone(m, line)
            self.assertIn(m.group(2), sections(m.group(1)), line)  # a real handout section
            self.assertNotIn("\n", line)
        return lines

    def test_a_library_the_worker_does_not_link(self) -> None:
        output = ("/usr/bin/ld: liblab_04_tiling_student.a(tiling.cu.o): in function "
                  "`lab04::matmul_tiled(...)':\ntmpxft_0001(.text+0x1c4): undefined reference to "
                  "`cublasSgemm_v2'\ncollect2: error: ld returned 1 exit status\n")
        (line,) = diagnose_build.explain(output)
        self.assertIn("cublasSgemm_v2 belongs to a library", line)
        self.assertIn("docs/students.md", line)

    def test_builtins_in_host_code_at_link_time(self) -> None:
        for text, names in ((NINJA_LINK, "blockIdx, blockDim and threadIdx are read"),
                            (BUILTIN_IN_MAIN, "blockIdx, blockDim, threadIdx and gridDim are read")):
            lines = self.explain(text)
            self.assertEqual(len(lines), 1, lines)
            self.assertTrue(lines[0].startswith(f"why: {names} in code that runs on the CPU"), lines)
            self.assertIn("pass them in, as global_index_1d(blockIdx, blockDim, threadIdx)", lines[0])
            self.assertTrue(lines[0].endswith('(docs/labs/01_indexing.md, "One kernel, many threads")'))

    def test_builtins_named_by_the_compiler(self) -> None:
        for text in (BUILTIN_IN_CPP, BUILTIN_IDENTIFIER, BUILTIN_CONSTEXPR):
            lines = self.explain(text)
            self.assertEqual(len(lines), 1, lines)
            self.assertTrue(lines[0].startswith("why: threadIdx is read in code that runs on the CPU"))

    def test_device_function_called_from_host(self) -> None:
        lines = self.explain(DEVICE_FROM_HOST)
        self.assertEqual(len(lines), 1)
        self.assertIn("twice(unsigned int) is marked __device__", lines[0])
        self.assertIn("but main (__host__ code) calls it", lines[0])
        self.assertIn("keep the stub's __host__ __device__", lines[0])
        self.assertTrue(lines[0].endswith('(docs/labs/01_indexing.md, "Goal")'))
        self.assertIn("but hd (__host__ __device__ code)", self.explain(DEVICE_FROM_HOST_DEVICE)[0])

    def test_syncthreads_outside_a_kernel(self) -> None:
        lines = self.explain(SYNCTHREADS_ON_HOST)
        self.assertEqual(len(lines), 1)
        self.assertIn("__syncthreads() is a barrier", lines[0])
        self.assertIn("not in h.", lines[0])
        self.assertIn("docs/labs/03_coalescing.md", lines[0])

    def test_missing_global(self) -> None:
        for text in (MISSING_GLOBAL, KERNEL_MARKED_DEVICE, "error: k is not a __global__ function"):
            lines = diagnose_build.explain(text)
            self.assertEqual(len(lines), 1, lines)  # a kernel marked __device__: one advice, once
            self.assertIn("Only a __global__ function (a kernel) can be launched", lines[0])

    def test_two_errors_in_the_order_they_appear(self) -> None:
        lines = self.explain(NINJA_DEVICE)
        self.assertEqual(len(lines), 2)
        self.assertIn("grid_size_1d(unsigned int, unsigned int) is marked __device__", lines[0])
        self.assertIn("Only a __global__ function", lines[1])

    def test_todo_and_unconfigured_launch(self) -> None:
        lines = self.explain(NINJA_TODO)
        self.assertEqual(len(lines), 2)
        self.assertTrue(lines[0].startswith("why: TODO is not code"))
        self.assertTrue(lines[0].endswith('(docs/labs/01_indexing.md, "Goal")'))
        self.assertTrue(lines[1].startswith("why: A kernel is launched, not called"))
        other_lab = NINJA_TODO.replace("01_indexing/index_math.cuh", "04_tiling/tiling_math.cuh")
        self.assertIn("(docs/labs/04_tiling.md, \"Goal\")", self.explain(other_lab)[0])
        self.assertIn("launched, not called", self.explain(NOT_CONFIGURED)[0])

    def test_kernel_with_a_return_type(self) -> None:
        self.assertIn("A kernel returns nothing", self.explain(KERNEL_RETURNS)[0])

    def test_a_standard_header_not_included(self) -> None:
        for text in (MISSING_FUNCTIONAL, MISSING_FUNCTIONAL_GCC):
            lines = self.explain(text)
            self.assertEqual(len(lines), 1, lines)
            self.assertTrue(lines[0].startswith(
                "why: std::function is declared in a standard header this file does not "
                "include: add #include <functional> for std::function at the top"), lines)
            self.assertTrue(lines[0].endswith(
                '(docs/students.md, "Compiler messages explained")'), lines)
        (line,) = self.explain('x.cu(2): error: namespace "std" has no member "frobnicate"\n')
        self.assertTrue(line.startswith(
            "why: std::frobnicate is not declared by the headers this file includes: check the "
            "name's spelling, or add the #include"), line)

    def test_an_allocation_given_the_pointer_not_its_address(self) -> None:
        (line,) = self.explain(ALLOCATIONS)
        self.assertTrue(line.startswith(
            "why: cudaMalloc stores the address it allocates into your pointer variable"), line)
        self.assertIn("cudaMalloc(&ptr, bytes)", line)
        self.assertIn("The same for cudaMallocHost.", line)
        self.assertTrue(line.endswith('(docs/labs/07_streams.md, "Pinned and pageable memory")'))
        other = ALLOCATIONS.replace("(float *, unsigned long)", "(float **, float)").replace(
            "(float *, int)", "(int **, float)")
        self.assertEqual(diagnose_build.explain(other), [])  # the address was given: not this

    def test_shared_memory_declared_in_host_code(self) -> None:
        (line,) = self.explain(SHARED_ON_HOST)
        self.assertIn("declare a __shared__ array inside the __global__ kernel", line)

    def test_unknown_errors_get_no_explanation(self) -> None:
        self.assertEqual(diagnose_build.explain("x.cu(3): error: expected a \";\"\n"), [])
        self.assertEqual(diagnose_build.explain(""), [])


class FilterTest(unittest.TestCase):
    def test_keeps_the_compiler_message_and_drops_ninja_and_commands(self) -> None:
        self.assertEqual(diagnose_build.filter_output(NINJA_TODO), [
            '/home/ada/kit/labs/01_indexing/index_math.cuh(21): error: identifier "TODO" is undefined',
            "    return TODO;",
            "           ^",
            "",
            "/home/ada/kit/labs/01_indexing/indexing.cu(23): error: a __global__ function call "
            "must be configured",
            "    saxpy_kernel(n, a, d_x, d_y, d_out);",
            "    ^",
            "",
            '2 errors detected in the compilation of "/home/ada/kit/labs/01_indexing/indexing.cu".',
        ])

    def test_linker_messages_keep_their_function(self) -> None:
        kept = diagnose_build.filter_output(NINJA_LINK)
        text = "\n".join(kept)
        for noise in ("FAILED:", "[3/3]", "ninja:", "/usr/bin/g++", "Remark:", "DT_TEXTREL",
                      "relocation against"):
            self.assertNotIn(noise, text)
        self.assertIn('warning #177-D: variable "unused"', kept[0])
        self.assertIn("in function `global_index_1d()':", text)
        self.assertIn("undefined reference to `__device_builtin_variable_threadIdx'", text)
        self.assertEqual(kept[-1], "collect2: error: ld returned 1 exit status")

    def test_repeated_undefined_references_are_counted_not_shown(self) -> None:
        kept = diagnose_build.filter_output(KIT_LINK)
        self.assertEqual(len(kept), 6, kept)
        self.assertIn("in function `(anonymous namespace)::IndexingHost_GlobalIndexSkipsEarlierBlocks",
                      kept[0])
        self.assertEqual([k.rsplit(" ", 1)[-1] for k in kept[1:4]],
                         ["`__device_builtin_variable_blockIdx'", "`__device_builtin_variable_blockDim'",
                          "`__device_builtin_variable_threadIdx'"])
        self.assertEqual(kept[4:], ["  (9 more undefined references to the symbols above)",
                                    "collect2: error: ld returned 1 exit status"])
        self.assertIn("blockIdx, blockDim and threadIdx are read", diagnose_build.explain(KIT_LINK)[0])

    def test_gcc_source_lines_and_carets(self) -> None:
        self.assertEqual(diagnose_build.filter_output(BUILTIN_IN_CPP),
                         BUILTIN_IN_CPP.rstrip("\n").splitlines())

    def test_output_without_diagnostics_is_kept_whole_minus_noise(self) -> None:
        text = "[1/2] Building x\nFAILED: x.o\n/usr/bin/c++ -c x.cpp\nKilled\nninja: build stopped\n"
        self.assertEqual(diagnose_build.filter_output(text), ["Killed"])


class BuildErrorOutputTest(unittest.TestCase):
    """build.BuildError keeps the tail of the failed command's output; `kit.py grade` explains it."""

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.root = make_repo(self.tmp / "repo", ["01_alpha"])
        tools = self.tmp / "tools"
        tools.mkdir()
        (self.tmp / "out.txt").write_text(NINJA_TODO)
        cmake = tools / "cmake"
        cmake.write_text(f'#!/bin/sh\ncase "$1" in --build) cat "{self.tmp / "out.txt"}"; exit 1;; esac\n')
        cmake.chmod(0o755)
        self.path = f"{tools}{os.pathsep}{os.environ.get('PATH', '')}"

    def test_build_error_carries_the_output(self) -> None:
        with fake_env(PATH=self.path):
            with self.assertRaises(BuildError) as caught:
                ensure_built(self.root, self.root / "build", ["grade_01_alpha"], out=io.StringIO(),
                             quiet=True)
        self.assertIn('error: identifier "TODO" is undefined', caught.exception.output)

    def test_grade_prints_explanations_after_the_failure(self) -> None:
        out, err = io.StringIO(), io.StringIO()
        with fake_env(PATH=self.path):
            code = main(["grade", "01"], root=self.root, stdout=out, stderr=err)
        self.assertEqual(code, 3)
        lines = err.getvalue().splitlines()
        self.assertTrue(lines[0].startswith("build failed: `cmake --build"), lines)
        why = [line for line in lines if line.startswith("why:")]
        self.assertTrue(why[0].startswith("why: TODO is not code"), lines)
        self.assertTrue(why[1].startswith("why: A kernel is launched, not called"), lines)
        self.assertTrue(all(len(line) <= 78 for line in lines[lines.index(why[0]):]), lines)
        self.assertIn('error: identifier "TODO" is undefined', out.getvalue())  # the compiler's own
        self.assertFalse((self.root / "build" / "progress").exists())


if __name__ == "__main__":
    unittest.main()
