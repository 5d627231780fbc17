"""Compiler and linker errors students hit, explained in one line each.

A failed build prints the compiler's own message; `filter_output` keeps just that (the errors,
warnings and notes with the source lines and carets under them) and drops the build tool's noise:
ninja's ``[3/7]`` and ``FAILED:`` lines, the long nvcc and g++ command lines. `explain` then adds,
for every error it recognises, what it means for a CUDA beginner and the handout section that
covers it. Both `kit.py grade` (after "build failed: ...") and `kit.py watch` show them.

The texts matched are the real ones, captured from nvcc 13.0 and GNU ld / g++ (see
grader/tests/test_diagnose_build.py, which holds them).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

LAB01 = "docs/labs/01_indexing.md"
_BUILTINS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
_BUILTIN = "|".join(_BUILTINS)


@dataclass(frozen=True)
class Diagnosis:
    """One known error: a regular expression over the whole build output, the explanation (a
    function of every match and of the source line the compiler printed under the first, so it
    can name the functions or variables involved) and the handout section that teaches the rule."""

    pattern: re.Pattern[str]
    explain: Callable[[list[re.Match[str]], str], str | None]
    """None: this error is explained by another diagnosis (nvcc reported it twice)."""
    handout: str
    section: str
    handout_of_the_lab: bool = False
    """Point at the handout of the lab whose file has the error (labs/NN_name/...), not `handout`."""


def _builtin(matches: list[re.Match[str]], _: str) -> str:
    names = list(dict.fromkeys(m.group("linked") or m.group("named") for m in matches))
    used = f"{names[0]} is" if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]} are"
    return (f"{used} read in code that runs on the CPU (a __host__ __device__ function, or a "
            ".cpp file), but the built-ins exist only in a kernel: read them in the __global__ "
            "kernel and pass them in, as global_index_1d(blockIdx, blockDim, threadIdx) does.")


def _device_from_host(matches: list[re.Match[str]], source: str) -> str | None:
    m = matches[0]
    callee, caller = m.group("callee"), m.group("caller")
    name = callee.split("(", 1)[0].split("::")[-1]
    if re.search(rf"\b{re.escape(name)}\s*<<<", source):
        return None  # a kernel marked __device__: "a __device__ function call cannot be configured"
    return (f"{callee} is marked __device__, so it exists only on the GPU, but {caller} "
            f"({m.group('where')} code) calls it on the CPU: keep the stub's __host__ __device__ "
            "on functions that launchers and the grader's host tests call.")


def _syncthreads(matches: list[re.Match[str]], _: str) -> str:
    return (f"__syncthreads() is a barrier for the threads of one block: call it only inside a "
            f"__global__ kernel (or a __device__ function only kernels call), not in "
            f"{matches[0].group('caller')}.")


def _configured(_: list[re.Match[str]], __: str) -> str:
    return ("Only a __global__ function (a kernel) can be launched with <<<grid, block>>>: put "
            "__global__ void in front of the kernel; a plain or __device__ function is called "
            "without <<<...>>>.")


def _unconfigured(_: list[re.Match[str]], __: str) -> str:
    return ("A kernel is launched, not called: write kernel<<<grid, block>>>(arguments), with the "
            "launch's grid and block sizes.")


def _todo(_: list[re.Match[str]], __: str) -> str:
    return ("TODO is not code: a line of a TODO region lost its // (or a placeholder was left "
            "in); write the code the TODO(...) comment asks for.")


def _void(_: list[re.Match[str]], __: str) -> str:
    return ("A kernel returns nothing: write __global__ void, and store results through a pointer "
            "argument (out[i] = ...), which the host copies back.")


def _library(matches: list[re.Match[str]], _: str) -> str:
    name = matches[0].group("symbol")
    return (f"{name} belongs to a library (cuBLAS, cuRAND, ...) that lab code does not get: your "
            "code runs in a worker linked only with the CUDA runtime and the C++ library, and a lab "
            "that is about writing the kernel bans the library that would write it. Write it "
            "yourself.")


STD_HEADERS = {
    "function": "functional", "bind": "functional", "invoke": "functional",
    "hash": "functional", "ref": "functional", "cref": "functional",
    "vector": "vector", "array": "array", "string": "string", "to_string": "string",
    "map": "map", "unordered_map": "unordered_map", "set": "set", "pair": "utility",
    "move": "utility", "swap": "utility", "tuple": "tuple", "optional": "optional",
    "unique_ptr": "memory", "shared_ptr": "memory", "make_unique": "memory",
    "sort": "algorithm", "min_element": "algorithm", "max_element": "algorithm",
    "accumulate": "numeric", "iota": "numeric", "numeric_limits": "limits",
    "runtime_error": "stdexcept", "invalid_argument": "stdexcept", "out_of_range": "stdexcept",
    "thread": "thread", "mutex": "mutex", "ostringstream": "sstream",
    "stringstream": "sstream", "cout": "iostream", "cerr": "iostream",
}
"""The standard header of each name a student is likely to use without including it (the
diagnosis of a missing #include names it; a name not here gets the advice without a header)."""


def _std_member(matches: list[re.Match[str]], _: str) -> str:
    names = list(dict.fromkeys(m.group("nvcc") or m.group("gcc") for m in matches))
    wanted = [f"<{STD_HEADERS[name]}> for std::{name}" for name in names if name in STD_HEADERS]
    used = ", ".join(f"std::{name}" for name in names)
    promise = ("Include what you use: a header of the kit's (kit/check.h, kit/launch.h) is no "
               "promise of what it brings in with it.")
    if not wanted:
        return (f"{used} is not declared by the headers this file includes: check the name's "
                f"spelling, or add the #include of the standard header that declares it. "
                + promise)
    return (f"{used} is declared in a standard header this file does not include: add "
            f"#include {', '.join(dict.fromkeys(wanted))} at the top of the file. " + promise)


def _allocation(matches: list[re.Match[str]], _: str) -> str | None:
    # The first argument a pointer (one star): `float *`, not `float **`.
    calls = list(dict.fromkeys(m.group("fn") for m in matches
                               if re.fullmatch(r"[^*]+\*", m.group("first").strip())))
    if not calls:
        return None  # another mismatch (a size of the wrong type, say): the compiler's words
    fn = calls[0]
    return (f"{fn} stores the address it allocates into your pointer variable, so it takes that "
            f"variable's address: {fn}(&ptr, bytes) (ptr a float*, &ptr a float**), not "
            f"{fn}(ptr, bytes)." + (f" The same for {', '.join(calls[1:])}." if calls[1:]
                                     else ""))


def _shared_on_host(_: list[re.Match[str]], __: str) -> str:
    return ("__shared__ memory belongs to a block of a running kernel: declare a __shared__ array "
            "inside the __global__ kernel (or a __device__ function it calls), not in a launcher "
            "or other host code.")


_CALL = (r"calling a __device__ function\(\"(?P<callee>{callee})\"\) from a "
         r"(?P<where>__host__(?: __device__)?) function\(\"(?P<caller>[^\"]*)\"\) is not allowed")

KNOWN: tuple[Diagnosis, ...] = (
    # GNU ld: `undefined reference to `__device_builtin_variable_blockIdx'` (g++ in a constexpr
    # function: `the value of '__device_builtin_variable_threadIdx' is not usable...`); nvcc:
    # `identifier "threadIdx" is undefined`; g++ (a .cpp file): `'threadIdx' was not declared`.
    Diagnosis(re.compile(rf"(?:undefined reference to |the value of )[`'‘]"
                         rf"__device_builtin_variable_(?P<linked>{_BUILTIN})\b"
                         rf"|(?:identifier \"|[‘'`])(?P<named>{_BUILTIN})"
                         rf"(?:\" is undefined|[’'] was not declared in this scope)"),
              _builtin, LAB01, "One kernel, many threads"),
    # nvcc: `calling a __device__ function("__syncthreads") from a __host__ function("h") ...`
    Diagnosis(re.compile(_CALL.format(callee=r"__syncthreads[^\"]*")), _syncthreads,
              "docs/labs/03_coalescing.md", "Barriers: what every __syncthreads() is for"),
    # nvcc: `calling a __device__ function("twice(unsigned int)") from a __host__ function("main")
    # is not allowed` (also "from a __host__ __device__ function").
    Diagnosis(re.compile(_CALL.format(callee=r"(?!__syncthreads)[^\"]*")), _device_from_host,
              LAB01, "Goal"),
    # nvcc: `a host function call cannot be configured` (a kernel without __global__),
    # `a __device__ function call cannot be configured`, or `... is not a __global__ function`.
    Diagnosis(re.compile(r"a (?:host|__device__|__host__ __device__) function call cannot be "
                         r"configured|is not a __global__ function"), _configured,
              LAB01, "One kernel, many threads"),
    # nvcc: `a __global__ function call must be configured` (kernel(args) without <<<...>>>).
    Diagnosis(re.compile(r"a __global__ function call must be configured"), _unconfigured,
              LAB01, "One kernel, many threads"),
    # nvcc: `a __global__ function must have a void return type`.
    Diagnosis(re.compile(r"a __global__ function must have a void return type"), _void,
              LAB01, "One kernel, many threads"),
    # GNU ld: `undefined reference to `cublasSgemm_v2'` (the worker links no library but the CUDA
    # runtime; docs/students.md, "What lab code may call").
    Diagnosis(re.compile(r"undefined reference to [`'‘](?P<symbol>(?:cublas|cublasLt|curand|"
                         r"cufft|cusparse|cusolver|cudnn|nccl|nvrtc|cutensor)\w*)"),
              _library, "docs/students.md", "What lab code may call"),
    # nvcc: `namespace "std" has no member "function"`; g++: `'function' is not a member of
    # 'std'` (a standard header the file does not include, which a kit header used to).
    Diagnosis(re.compile(r"namespace \"std\" has no member \"(?P<nvcc>\w+)\"|"
                         r"[‘'`](?P<gcc>\w+)[’'] is not a member of [‘'`]std[’']"),
              _std_member, "docs/students.md", "Compiler messages explained"),
    # nvcc: `no instance of overloaded function "cudaMalloc" matches the argument list` and, on
    # the next line, `argument types are: (float *, unsigned long)`: the pointer, not its address.
    Diagnosis(re.compile(r"no instance of overloaded function \"(?P<fn>cudaMalloc(?:Host|Managed|"
                         r"Async)?|cudaHostAlloc)\" matches the argument list\s*\n\s*argument "
                         r"types are: \((?P<first>[^,)]*)"),
              _allocation, "docs/labs/07_streams.md", "Pinned and pageable memory"),
    # nvcc: `a static "__shared__" variable declaration is not allowed inside a host function body`
    Diagnosis(re.compile(r"\"__shared__\" variable declaration is not allowed inside a host "
                         r"function body"),
              _shared_on_host, "docs/labs/03_coalescing.md",
              "Shared-memory banks and the padded tile"),
    # nvcc: `identifier "TODO" is undefined`; g++: `'TODO' was not declared in this scope`.
    Diagnosis(re.compile(r"identifier \"TODO\" is undefined|[‘'`]TODO[’'] was not declared"),
              _todo, LAB01, "Goal", handout_of_the_lab=True),
)


_LAB_PATH = re.compile(r"labs/(\d\d_[a-z][a-z0-9_]*)/")


def explain(build_output: str) -> list[str]:
    """One line per known error in `build_output`, in the order they first appear (the same
    advice once), each ending with the handout section to read:
    `why: ... (docs/labs/01_indexing.md, "Goal")`."""
    found: dict[str, int] = {}
    for diagnosis in KNOWN:
        matches = list(diagnosis.pattern.finditer(build_output))
        if not matches:
            continue
        m = matches[0]
        line, source = _line_and_next(build_output, m.start())
        handout = diagnosis.handout
        lab = _LAB_PATH.search(line) if diagnosis.handout_of_the_lab else None
        if lab:
            handout = f"docs/labs/{lab.group(1)}.md"
        why = diagnosis.explain(matches, source)
        if why is None:
            continue
        text = f"why: {why} ({handout}, \"{diagnosis.section}\")"
        found[text] = min(found.get(text, m.start()), m.start())
    return sorted(found, key=found.__getitem__)


_NBSP = "\u00a0"  # keeps `<<<grid, block>>>` on one line when an explanation is wrapped


def wrapped(explanation: str, width: int) -> list[str]:
    """An explain() line in lines of at most `width` columns (the first starts with `why:`, the
    others are indented under it), `<<<grid, block>>>` never split."""
    text = explanation.replace("<<<grid, block>>>", f"<<<grid,{_NBSP}block>>>")
    return [line.replace(_NBSP, " ") for line in
            textwrap.wrap(text, width, subsequent_indent="     ", break_long_words=False,
                          break_on_hyphens=False)]


def _line_and_next(text: str, index: int) -> tuple[str, str]:
    """The line holding text[index], and the line after it (nvcc prints the source line there)."""
    start = text.rfind("\n", 0, index) + 1
    rest = text[start:].split("\n", 2)
    return rest[0], rest[1] if len(rest) > 1 else ""


# ---------------------------------------------------------------- the compiler's own message

_DIAGNOSTIC = re.compile(r"\b(errors?|warnings?|notes?|undefined reference)\b", re.IGNORECASE)
_CONTEXT = re.compile(r"(: In (member )?function|: in function|In file included from|"
                      r"In instantiation of|required from|At global scope)")
_NINJA = re.compile(r"^(FAILED: |ninja: |\[\d+/\d+\] )")
_COMMAND = re.compile(r"^(: && )?(cd \S+ && )?\S*(nvcc|[gc]\+\+|gcc|cc|clang\+\+|clang|ar|ranlib|"
                      r"cmake|ld)(\s|$)")
_UNDEFINED = re.compile(r"undefined reference to [`'‘]([^'’]+)[’']")
_NOISE = re.compile(r"^Remark: The warnings can be suppressed|creating DT_TEXTREL in a PIE|"
                    r"warning: relocation against")


def filter_output(build_output: str) -> list[str]:
    """The compiler's and linker's own messages: every error, warning and note line, with the
    source lines and carets under it, and the "In function ..." lines that place them. Ninja's
    progress and FAILED lines, the build commands, nvcc's suppression remark and the linker's
    second and later undefined references to one symbol (counted) are dropped; blank lines
    between messages are kept (one at most). Output that has none of these
    (a tool that died some other way) is returned whole, minus the noise."""
    kept: list[str] = []
    following = False  # inside a message: source lines and carets continue it
    symbols: set[str] = set()
    repeats = 0  # undefined references to a symbol already shown, since the last line kept
    for line in build_output.splitlines():
        text = line.rstrip()
        undefined = _UNDEFINED.search(text)
        if undefined and undefined.group(1) in symbols:
            repeats += 1
            continue
        if repeats:
            kept.append(f"  ({repeats} more undefined references to the symbols above)")
            repeats = 0
        if undefined:
            symbols.add(undefined.group(1))
        if _NINJA.match(text) or _COMMAND.match(text) or _NOISE.search(text):
            following = False
            continue
        if _DIAGNOSTIC.search(text) or _CONTEXT.search(text):
            kept.append(text)
            following = True
        elif following and text and (text[0].isspace() or "|" in text[:8]):
            kept.append(text)
        elif not text:
            following = False
            if kept and kept[-1]:
                kept.append("")
    if not any(kept):
        kept = [line.rstrip() for line in build_output.splitlines()
                if line.strip() and not _NINJA.match(line) and not _COMMAND.match(line)]
    while kept and not kept[-1]:
        kept.pop()
    return kept
