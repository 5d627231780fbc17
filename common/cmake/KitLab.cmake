# kit_add_lab(): the one helper that turns a lab folder into targets.
#
#   kit_add_lab(01_indexing
#     SOURCES   indexing.cu          # files under labs/<lab>/ that the student's library is built from
#     TESTS     test_indexing.cu     # grader sources under grader/<lab>/
#     BENCHMARK bench_indexing.cu    # optional Google Benchmark sources under grader/<lab>/
#     LIBRARIES ...                  # optional: linked into the lab's own library (and so everywhere)
#     GRADER_LIBRARIES ...)          # optional: linked only into the grader and benchmark, e.g. the
#                                    # cuBLAS ceiling of lab 04, so student code cannot reach it
#
# Builds, for lab NN_name:
#   lab_NN_name_student / lab_NN_name_reference   the lab code from labs/ and from solutions/
#   grade_NN_name                                  grader linked with the student's code
#   reference_NN_name                              the same grader linked with the reference solution
#   bench_NN_name / bench_NN_name_reference        the benchmark, both ways (when Google Benchmark is on)
#   wrong_NN_name_<mistake>                        the grader linked with each known-wrong submission
#                                                  described in grader/NN_name/wrong.json
# A lab with grader/<lab>/remote.h is graded by one judge (target judge_NN_name, run as
# bin/grade_NN_name) and a worker per build; grade_, reference_ and wrong_ are then targets that
# build the judge and the worker of that code.
#
# The instructor-only parts are optional, so that a student edition (the kit without solutions/,
# grader/*/wrong.json, grader/selftest/ and grader/*/hidden/) configures without them: the reference
# targets exist only when solutions/<lab>/ does, the known-wrong submissions only when both
# solutions/<lab>/ and grader/<lab>/wrong.json do.
#
# Hidden tests: every .cu and .cpp file in grader/<lab>/hidden/ is compiled into the lab's graders
# (grade_, reference_ and wrong_), next to TESTS. They declare themselves with KIT_HIDDEN_TEST
# (kit/test.h) and are graded with the lab's hidden_visibility (lab.json). The folder stays out of
# a student edition; a file added to it reconfigures the build.
#
# solutions/<lab>/ holds only the files a student edits. The reference build searches
# solutions/<lab>/ before labs/<lab>/, so a solution header replaces the stub's and the lab's given
# interface header comes from labs/<lab>/.
#
# KIT_SUBMISSION_DIR (set by `kit.py grade --submission`, in a build directory of its own): the
# student build searches KIT_SUBMISSION_DIR/<lab>/ before labs/<lab>/ in the same way, to grade a
# submission's files instead of labs/. kit.py fills that folder with every lab's student files.
set(KIT_SUBMISSION_DIR "" CACHE PATH
    "Student files of a submission, as <dir>/<lab>/<file>, used before labs/ (kit.py grade --submission)")

function(kit_add_lab lab)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;TESTS;BENCHMARK;LIBRARIES;GRADER_LIBRARIES")
  set(lab_dir ${PROJECT_SOURCE_DIR}/labs/${lab})
  set(solution_dir ${PROJECT_SOURCE_DIR}/solutions/${lab})
  set(grader_dir ${PROJECT_SOURCE_DIR}/grader/${lab})

  list(TRANSFORM arg_TESTS PREPEND ${grader_dir}/ OUTPUT_VARIABLE tests)
  file(GLOB hidden_tests CONFIGURE_DEPENDS ${grader_dir}/hidden/*.cu ${grader_dir}/hidden/*.cpp)
  list(SORT hidden_tests)
  list(APPEND tests ${hidden_tests})
  set(variants student)
  if(IS_DIRECTORY ${solution_dir})
    list(APPEND variants reference)
  endif()
  # A lab with grader/<lab>/remote.h is graded by one judge (no student code in it) and a worker per
  # build of the student's files (kit/remote.h); the others still link the student's code into the
  # grader (one grader executable per build).
  if(EXISTS ${grader_dir}/remote.h)
    kit_add_judge(${lab} TESTS ${tests} GRADER_LIBRARIES ${arg_GRADER_LIBRARIES})
  endif()
  foreach(variant IN LISTS variants)
    if(variant STREQUAL "student")
      set(dirs ${lab_dir})
      if(KIT_SUBMISSION_DIR)
        set(dirs ${KIT_SUBMISSION_DIR}/${lab} ${lab_dir})
      endif()
      set(exe grade_${lab})
    else()
      set(dirs ${solution_dir} ${lab_dir})
      set(exe reference_${lab})
    endif()
    set(lib lab_${lab}_${variant})
    set(share "")
    if(variant STREQUAL "reference")
      kit_reference_objects(${lab} "${dirs}" "${arg_SOURCES}" "${arg_LIBRARIES}")
      set(share SHARE_REFERENCE)
    endif()
    kit_lab_build(${lab} ${variant} ${lib} ${exe} ${share} DIRS ${dirs} SOURCES ${arg_SOURCES}
                  TESTS ${tests} LIBRARIES ${arg_LIBRARIES} GRADER_LIBRARIES ${arg_GRADER_LIBRARIES})

    if(arg_BENCHMARK AND KIT_HAVE_BENCHMARK)
      if(variant STREQUAL "student")
        set(bench bench_${lab})
      else()
        set(bench bench_${lab}_reference)
      endif()
      list(TRANSFORM arg_BENCHMARK PREPEND ${grader_dir}/ OUTPUT_VARIABLE bench_sources)
      add_executable(${bench} ${bench_sources})
      target_link_libraries(${bench} PRIVATE ${lib} benchmark::benchmark ${arg_GRADER_LIBRARIES})
      target_compile_definitions(${bench} PRIVATE KIT_LAB_ID="${lab}" KIT_VARIANT="${variant}")
    endif()
  endforeach()
  if(IS_DIRECTORY ${solution_dir})
    kit_add_wrong_submissions(${lab} "${arg_SOURCES}" "${tests}" "${arg_LIBRARIES}"
                              "${arg_GRADER_LIBRARIES}")
  endif()
  set_property(GLOBAL APPEND PROPERTY KIT_LABS ${lab})
endfunction()

# The judge of a lab with grader/<lab>/remote.h (target judge_<lab>, run as bin/grade_<lab>): every
# test of the lab, the kit's test main (kit_main_judge, with common/src/grader_identity.cpp), and a
# proxy for each student function the tests call (common/src/remote_judge_table.cpp). Its include
# path puts grader/<lab>/judge/ first, where every student header of the lab (lab.json
# student_files ending in .cuh or .h) has a declarations-only stand-in, so no student code is
# compiled into it; labs/<lab>/ then supplies the lab's given interface headers. The judge is built
# once and grades every worker: the student's, the reference, each known-wrong submission.
function(kit_add_judge lab)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "TESTS;GRADER_LIBRARIES")
  set(grader_dir ${PROJECT_SOURCE_DIR}/grader/${lab})
  kit_student_files(names ${lab})
  foreach(name IN LISTS names)
    if(name MATCHES "\\.(cuh|h|hpp)$" AND NOT EXISTS ${grader_dir}/judge/${name})
      message(FATAL_ERROR "grader/${lab}/judge/${name} is missing: the judge must not include the "
                          "student's ${name}; give it a declarations-only stand-in")
    endif()
  endforeach()
  set(judge judge_${lab})
  add_executable(${judge} ${arg_TESTS} ${PROJECT_SOURCE_DIR}/common/src/remote_judge_table.cpp
                          ${PROJECT_SOURCE_DIR}/common/src/grader_identity.cpp)
  # bin/grade_<lab>, the name students run (and the judge's process name), is a link to
  # bin/judge_<lab> made at each link of the judge; the target grade_<lab> builds the judge and the
  # student's worker. (Named grade_<lab> itself, the judge's file would take over the target name
  # grade_<lab> in Ninja, which then no longer builds the worker.)
  add_custom_command(TARGET ${judge} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E create_symlink $<TARGET_FILE_NAME:${judge}>
            $<TARGET_FILE_DIR:${judge}>/grade_${lab}
    VERBATIM)
  # Two empty steps after the judge's link, which the graders' targets wait for (judge_ready_<lab>).
  # They only order a fresh build: Ninja (1.12 and later) starts first the steps with the most
  # steps after them. A student library's compile has two (its archive, the worker's link), a
  # judge's test file one (the judge's link), so without these the judge's test files, the
  # build's longest compiles (11-20 s each on an H100 machine), started after every short compile
  # of the libraries; with them they start first (docs/engine_log.md, session 24).
  set(ready ${CMAKE_CURRENT_BINARY_DIR}/judge_${lab}.ready)
  add_custom_command(OUTPUT ${ready}.1 COMMAND ${CMAKE_COMMAND} -E touch ${ready}.1
                     DEPENDS ${judge} VERBATIM)
  add_custom_command(OUTPUT ${ready} COMMAND ${CMAKE_COMMAND} -E touch ${ready}
                     DEPENDS ${ready}.1 VERBATIM)
  add_custom_target(judge_ready_${lab} DEPENDS ${ready})
  target_include_directories(${judge} BEFORE PRIVATE ${grader_dir}/judge ${grader_dir}
                             ${PROJECT_SOURCE_DIR}/labs/${lab})
  target_link_libraries(${judge} PRIVATE kit_main_judge kit_judge ${arg_GRADER_LIBRARIES})
  # The judge finds worker_${lab} next to itself when it starts (test_main.cpp): no path of this
  # build directory is compiled in, so the compiler cache serves a new build directory too.
  target_compile_definitions(${judge} PRIVATE KIT_LAB_ID="${lab}" KIT_VARIANT="judge"
                             KIT_JUDGE=1)
  target_compile_options(${judge} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
endfunction()

# After each link of `target`, the same Ninja step touches <build dir>/<target>.linked: the
# selftest runs the fake lab and the C++ unit tests as soon as theirs appear, beside the rest of
# its first build (grader/kitgrade/selftest.py, _Beside), and builds <target>_early, which waits
# for two empty steps after the link: as for the judges (kit_add_judge), they make Ninja start
# the target's compiles among the first, so that it is linked early in a fresh build.
function(kit_link_stamp target)
  set(stamp ${CMAKE_BINARY_DIR}/${target}.linked)
  add_custom_command(TARGET ${target} POST_BUILD COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
                     VERBATIM)
  add_custom_command(OUTPUT ${stamp}.1 COMMAND ${CMAKE_COMMAND} -E touch ${stamp}.1
                     DEPENDS ${target} VERBATIM)
  add_custom_command(OUTPUT ${stamp}.2 COMMAND ${CMAKE_COMMAND} -E touch ${stamp}.2
                     DEPENDS ${stamp}.1 VERBATIM)
  add_custom_target(${target}_early DEPENDS ${stamp}.2)
endfunction()

# Sets `out` to the student files of `lab` (grader/<lab>/lab.json, student_files), in its order.
function(kit_student_files out lab)
  file(READ ${PROJECT_SOURCE_DIR}/grader/${lab}/lab.json manifest)
  string(JSON count LENGTH "${manifest}" student_files)
  math(EXPR last "${count} - 1")
  set(names "")
  foreach(i RANGE ${last})
    string(JSON name GET "${manifest}" student_files ${i})
    list(APPEND names ${name})
  endforeach()
  set(${out} ${names} PARENT_SCOPE)
endfunction()

# Sets `out` to dir/name for the first of the dirs that holds `name` (empty when none does).
function(kit_first_in out name)
  set(found "")
  foreach(dir IN LISTS ARGN)
    if(NOT found AND EXISTS ${dir}/${name})
      set(found ${dir}/${name})
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# The reference build's objects, compiled once and shared with every build of the same code: an
# object library per source of the lab (kitref_<lab>_<n>, the n-th of SOURCES, from the reference's
# DIRS) and, for a lab with a judge, one of the worker's own files (kitref_<lab>_worker: the table
# of callable functions and the probes). A known-wrong submission or a mutant is the reference with
# an edit, most often to one source file: it compiles that file and takes the rest from here
# (kit_lab_build, SHARE_REFERENCE). Before, each of the 111 known-wrong submissions compiled every
# file, its worker's table and probes included.
function(kit_reference_objects lab dirs sources libraries)
  set(grader_dir ${PROJECT_SOURCE_DIR}/grader/${lab})
  set(n 0)
  foreach(src IN LISTS sources)
    kit_first_in(found ${src} ${dirs})
    add_library(kitref_${lab}_${n} OBJECT ${found})
    target_include_directories(kitref_${lab}_${n} PUBLIC ${dirs})
    target_link_libraries(kitref_${lab}_${n} PUBLIC kit_common ${libraries})
    target_compile_options(kitref_${lab}_${n} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
    math(EXPR n "${n} + 1")
  endforeach()
  if(EXISTS ${grader_dir}/remote.h)
    file(GLOB probes ${grader_dir}/probes.cu ${grader_dir}/probes.cpp)
    add_library(kitref_${lab}_worker OBJECT ${PROJECT_SOURCE_DIR}/common/src/remote_worker_table.cpp
                ${probes})
    target_include_directories(kitref_${lab}_worker PRIVATE ${grader_dir} ${dirs})
    target_link_libraries(kitref_${lab}_worker PRIVATE kit_common ${libraries})
    target_compile_options(kitref_${lab}_worker PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
  endif()
endfunction()

# Sets `out` to TRUE when the files `a` and `b` are one file or hold the same bytes.
function(kit_same_file out a b)
  set(same FALSE)
  if(a STREQUAL b)
    set(same TRUE)
  elseif(EXISTS ${a} AND EXISTS ${b})
    file(SHA256 ${a} hash_a)
    file(SHA256 ${b} hash_b)
    if(hash_a STREQUAL hash_b)
      set(same TRUE)
    endif()
  endif()
  set(${out} ${same} PARENT_SCOPE)
endfunction()

# One build of a lab: a library of its sources, each taken from the first of DIRS that holds it
# (DIRS are also its include path, in that order), and the grader executable linked with it.
# SHARE_REFERENCE (the reference, known-wrong submissions, mutants): where every student header
# the build finds holds the reference's bytes, each source that does too is the reference's object
# (kit_reference_objects), and so are the worker's table and probes; only the files that differ
# are compiled. Decided when CMake configures, which it does each time those files are written
# (grader/CMakeLists.txt writes the known-wrong submissions, kit.py mutate configures after
# writing its mutants).
function(kit_lab_build lab variant lib exe)
  cmake_parse_arguments(PARSE_ARGV 4 arg "SHARE_REFERENCE" ""
                        "DIRS;SOURCES;TESTS;LIBRARIES;GRADER_LIBRARIES")
  set(reference_dirs ${PROJECT_SOURCE_DIR}/solutions/${lab} ${PROJECT_SOURCE_DIR}/labs/${lab})
  kit_student_files(student_files ${lab})
  set(shared ${arg_SHARE_REFERENCE})
  if(shared)
    foreach(name IN LISTS student_files)
      if(name MATCHES "\\.(cuh|h|hpp)$")
        kit_first_in(mine ${name} ${arg_DIRS})
        kit_first_in(theirs ${name} ${reference_dirs})
        kit_same_file(same "${mine}" "${theirs}")
        if(NOT same)
          set(shared FALSE)
        endif()
      endif()
    endforeach()
  endif()
  set(files "")
  set(n 0)
  foreach(src IN LISTS arg_SOURCES)
    kit_first_in(found ${src} ${arg_DIRS})
    if(NOT found)
      message(FATAL_ERROR "kit_add_lab(${lab}): ${src} is in none of ${arg_DIRS}")
    endif()
    set(same FALSE)
    if(shared)
      kit_first_in(theirs ${src} ${reference_dirs})
      kit_same_file(same "${found}" "${theirs}")
    endif()
    if(same)
      list(APPEND files $<TARGET_OBJECTS:kitref_${lab}_${n}>)
    else()
      list(APPEND files ${found})
    endif()
    math(EXPR n "${n} + 1")
  endforeach()
  add_library(${lib} STATIC ${files})
  set_target_properties(${lib} PROPERTIES LINKER_LANGUAGE CXX)
  target_include_directories(${lib} PUBLIC ${arg_DIRS})
  target_link_libraries(${lib} PUBLIC kit_common ${arg_LIBRARIES})
  target_compile_options(${lib} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
  set(grader_dir ${PROJECT_SOURCE_DIR}/grader/${lab})
  set(worker_entry "")
  if(EXISTS ${grader_dir}/remote.h)
    # The worker: the student's library, the lab's table of callable functions, and the grader's
    # probes (grader code that must run beside the student's device functions), nothing else: no
    # test, no verdict, no ceiling library (cuBLAS, CUB) is in this process.
    set(worker worker_${lab})
    if(NOT exe STREQUAL "grade_${lab}")
      string(REGEX REPLACE "^(reference|wrong)_${lab}" "worker_${lab}_\\1" worker ${exe})
    endif()
    if(shared)
      add_executable(${worker} $<TARGET_OBJECTS:kitref_${lab}_worker> $<TARGET_OBJECTS:kit_worker>)
      set_target_properties(${worker} PROPERTIES LINKER_LANGUAGE CXX)
    else()
      file(GLOB probes ${grader_dir}/probes.cu ${grader_dir}/probes.cpp)
      add_executable(${worker} ${PROJECT_SOURCE_DIR}/common/src/remote_worker_table.cpp ${probes}
                               $<TARGET_OBJECTS:kit_worker>)
    endif()
    target_include_directories(${worker} PRIVATE ${grader_dir})
    target_link_libraries(${worker} PRIVATE ${lib})
    target_compile_options(${worker} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
    if(KIT_KERNEL_CHECK)
      # The kernels compiled into the worker, for the judge to check its launches against.
      target_link_libraries(${worker} PRIVATE CUDA::cupti)
      add_custom_command(TARGET ${worker} POST_BUILD
        COMMAND sh -c "\"$0\" -symbols \"$1\" > \"$1.kernels\"" ${KIT_CUOBJDUMP}
                $<TARGET_FILE:${worker}>
        VERBATIM)
    endif()
    # grade_<lab> (the student's quick loop), reference_<lab> and wrong_<lab>_<name> are each
    # the judge and their own worker: a reference build compiles no student code, and nothing holds
    # the judge's compiles, the longest of a fresh build, until a worker is linked.
    add_custom_target(${exe})
    add_dependencies(${exe} judge_ready_${lab} ${worker})
    set(binary "$<TARGET_FILE_DIR:judge_${lab}>/grade_${lab}")
    set(worker_entry ", \"worker\": \"$<TARGET_FILE:${worker}>\"")
  else()
    add_executable(${exe} ${arg_TESTS} ${PROJECT_SOURCE_DIR}/common/src/grader_identity.cpp)
    # The lab's grader folder, so a hidden test (grader/<lab>/hidden/) includes the grader's headers
    # as the visible tests next to them do.
    target_include_directories(${exe} PRIVATE ${grader_dir})
    target_link_libraries(${exe} PRIVATE ${lib} kit_main kit_test ${arg_GRADER_LIBRARIES})
    target_compile_definitions(${exe} PRIVATE KIT_LAB_ID="${lab}" KIT_VARIANT="${variant}")
    target_compile_options(${exe} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
    set(binary "$<TARGET_FILE:${exe}>")
  endif()

  # For kit-targets.json (grader/CMakeLists.txt): the binary, the library, and where each student
  # file of the lab (grader/<lab>/lab.json) was taken from.
  set(file_entries "")
  foreach(name IN LISTS student_files)
    kit_first_in(where ${name} ${arg_DIRS})
    list(APPEND file_entries "\"${name}\": \"${where}\"")
  endforeach()
  list(JOIN file_entries ", " file_entries)
  set_property(GLOBAL APPEND PROPERTY KIT_TARGETS_JSON
    "\"${exe}\": {\"lab\": \"${lab}\", \"variant\": \"${variant}\", \"binary\": \"${binary}\"${worker_entry}, \"archive\": \"$<TARGET_FILE:${lib}>\", \"files\": {${file_entries}}}")
endfunction()

# Known-wrong submissions: grader/<lab>/wrong.json lists plausible student mistakes, each as text
# edits applied to the reference solution's files (grader/kitgrade/wrong.py validates the file). Each becomes a grader binary,
# wrong_<lab>_<name>, that the selftest grades to prove the grader takes away the right points.
function(kit_add_wrong_submissions lab sources tests libraries grader_libraries)
  set(spec_file ${PROJECT_SOURCE_DIR}/grader/${lab}/wrong.json)
  if(NOT EXISTS ${spec_file})
    return()
  endif()
  set(lab_dir ${PROJECT_SOURCE_DIR}/labs/${lab})
  set(solution_dir ${PROJECT_SOURCE_DIR}/solutions/${lab})
  file(GLOB solution_paths ${solution_dir}/*)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${spec_file} ${solution_paths}
               ${PROJECT_SOURCE_DIR}/grader/kitgrade/wrong.py)

  # grader/CMakeLists.txt ran grader/kitgrade/wrong.py once for every lab: it validated the file,
  # applied each submission's edits to the solution and wrote the files of each to
  # KIT_WRONG_DIR/<lab>/<name>/ (only what changed), and their names to names.txt there; one
  # implementation of the edits, shared with `kit.py check`.
  set(out_root ${KIT_WRONG_DIR}/${lab})
  file(STRINGS ${out_root}/names.txt names)
  # Mutants of the reference solution (kit.py mutate, grader/kitgrade/mutate.py): each a folder of
  # files under KIT_MUTANTS_DIR/<lab>/, listed in names.txt there, built like a wrong submission.
  if(KIT_MUTANTS_DIR AND EXISTS ${KIT_MUTANTS_DIR}/${lab}/names.txt)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                 ${KIT_MUTANTS_DIR}/${lab}/names.txt)
    file(STRINGS ${KIT_MUTANTS_DIR}/${lab}/names.txt mutants)
    foreach(name IN LISTS mutants)
      kit_lab_build(${lab} student lab_${lab}_wrong_${name} wrong_${lab}_${name} SHARE_REFERENCE
                    DIRS ${KIT_MUTANTS_DIR}/${lab}/${name} ${lab_dir} SOURCES ${sources}
                    TESTS ${tests} LIBRARIES ${libraries} GRADER_LIBRARIES ${grader_libraries})
    endforeach()
  endif()
  foreach(name IN LISTS names)
    kit_lab_build(${lab} student lab_${lab}_wrong_${name} wrong_${lab}_${name} SHARE_REFERENCE
                  DIRS ${out_root}/${name} ${lab_dir} SOURCES ${sources} TESTS ${tests}
                  LIBRARIES ${libraries} GRADER_LIBRARIES ${grader_libraries})
  endforeach()
endfunction()
