# GoogleTest and Google Benchmark: the system packages when installed (a fully offline build),
# otherwise fetched at configure time.
include(FetchContent)

find_package(GTest CONFIG QUIET)
if(NOT GTest_FOUND)
  find_package(GTest QUIET)
endif()
if(GTest_FOUND)
  message(STATUS "kit: GoogleTest from the system")
else()
  message(STATUS "kit: GoogleTest not installed; fetching it")
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  FetchContent_Declare(googletest
    URL https://github.com/google/googletest/archive/refs/tags/v1.14.0.tar.gz
    DOWNLOAD_EXTRACT_TIMESTAMP TRUE)
  FetchContent_MakeAvailable(googletest)
  add_library(GTest::gtest ALIAS gtest)
  add_library(GTest::gtest_main ALIAS gtest_main)
endif()

set(KIT_HAVE_BENCHMARK OFF)
if(KIT_BUILD_BENCHMARKS)
  find_package(benchmark CONFIG QUIET)
  if(benchmark_FOUND)
    message(STATUS "kit: Google Benchmark from the system")
  else()
    message(STATUS "kit: Google Benchmark not installed; fetching it")
    set(BENCHMARK_ENABLE_TESTING OFF CACHE BOOL "" FORCE)
    set(BENCHMARK_ENABLE_INSTALL OFF CACHE BOOL "" FORCE)
    FetchContent_Declare(benchmark
      URL https://github.com/google/benchmark/archive/refs/tags/v1.8.3.tar.gz
      DOWNLOAD_EXTRACT_TIMESTAMP TRUE)
    FetchContent_MakeAvailable(benchmark)
  endif()
  set(KIT_HAVE_BENCHMARK ON)
endif()
