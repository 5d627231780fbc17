# kit_add_lab(): the one helper that turns a lab folder into targets.
#
#   kit_add_lab(01_indexing
#     SOURCES   indexing.cu          # files under labs/<lab>/ that the student's library is built from
#     TESTS     test_indexing.cu     # grader sources under grader/<lab>/
#     BENCHMARK bench_indexing.cu)   # optional Google Benchmark source under grader/<lab>/
#
# Builds, for lab NN_name:
#   lab_NN_name_student / lab_NN_name_reference   the lab code from labs/ and from solutions/
#   grade_NN_name                                  grader linked with the student's code
#   reference_NN_name                              the same grader linked with the reference solution
#   bench_NN_name / bench_NN_name_reference        the benchmark, both ways (when Google Benchmark is on)
#
# solutions/<lab>/ holds only the files a student edits. The reference build searches
# solutions/<lab>/ before labs/<lab>/, so a solution header replaces the stub's and the lab's given
# interface header comes from labs/<lab>/.
function(kit_add_lab lab)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "BENCHMARK" "SOURCES;TESTS;LIBRARIES")
  set(lab_dir ${PROJECT_SOURCE_DIR}/labs/${lab})
  set(solution_dir ${PROJECT_SOURCE_DIR}/solutions/${lab})
  set(grader_dir ${PROJECT_SOURCE_DIR}/grader/${lab})

  foreach(variant student reference)
    set(sources "")
    foreach(src IN LISTS arg_SOURCES)
      if(variant STREQUAL "reference" AND EXISTS ${solution_dir}/${src})
        list(APPEND sources ${solution_dir}/${src})
      else()
        list(APPEND sources ${lab_dir}/${src})
      endif()
    endforeach()

    set(lib lab_${lab}_${variant})
    add_library(${lib} STATIC ${sources})
    if(variant STREQUAL "reference")
      target_include_directories(${lib} PUBLIC ${solution_dir})
    endif()
    target_include_directories(${lib} PUBLIC ${lab_dir})
    target_link_libraries(${lib} PUBLIC kit_common ${arg_LIBRARIES})
    target_compile_options(${lib} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)

    if(variant STREQUAL "student")
      set(exe grade_${lab})
    else()
      set(exe reference_${lab})
    endif()
    list(TRANSFORM arg_TESTS PREPEND ${grader_dir}/ OUTPUT_VARIABLE tests)
    add_executable(${exe} ${tests})
    target_link_libraries(${exe} PRIVATE ${lib} kit_test)
    target_compile_definitions(${exe} PRIVATE KIT_LAB_ID="${lab}" KIT_VARIANT="${variant}")
    target_compile_options(${exe} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)

    if(arg_BENCHMARK AND KIT_HAVE_BENCHMARK)
      if(variant STREQUAL "student")
        set(bench bench_${lab})
      else()
        set(bench bench_${lab}_reference)
      endif()
      add_executable(${bench} ${grader_dir}/${arg_BENCHMARK})
      target_link_libraries(${bench} PRIVATE ${lib} benchmark::benchmark)
      target_compile_definitions(${bench} PRIVATE KIT_LAB_ID="${lab}" KIT_VARIANT="${variant}")
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY KIT_LABS ${lab})
endfunction()
