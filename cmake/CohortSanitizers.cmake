# Sanitizer and fuzzing builds (docs/reliability.md, "Bad input").
#
#   -DCOHORT_SANITIZE=address,undefined   ASan+UBSan (scripts/test-sanitizers.sh asan)
#   -DCOHORT_SANITIZE=thread              TSan       (scripts/test-sanitizers.sh tsan)
#   -DCOHORT_FUZZ=ON                      libFuzzer targets of tests/fuzz with ASan+UBSan; needs
#                                         clang (scripts/fuzz.sh configures build-fuzz)
#
# Runtime options (leak checks, log files, suppressions) are set by the scripts through
# ASAN_OPTIONS / UBSAN_OPTIONS / TSAN_OPTIONS; the ASan+UBSan build also halts on the first UBSan
# report at compile level (-fno-sanitize-recover=undefined, below).
set(COHORT_SANITIZE "" CACHE STRING "Sanitizers to enable: address,undefined | thread")
option(COHORT_FUZZ "Build the libFuzzer targets of tests/fuzz (clang only)" OFF)

if(COHORT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "COHORT_FUZZ needs clang: configure with CC=clang-14 CXX=clang++-14")
  endif()
  if(NOT COHORT_SANITIZE)
    set(COHORT_SANITIZE "address,undefined")
  endif()
  # Coverage instrumentation for every library; the fuzz targets add -fsanitize=fuzzer (the
  # libFuzzer main) at link time.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(COHORT_SANITIZE)
  add_compile_options(-fsanitize=${COHORT_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${COHORT_SANITIZE})
  # clang <= 14 cannot compile C++20 coroutines (src/server/http/server.cc) with UBSan's
  # -fsanitize=function check ("Cannot represent a difference across sections",
  # llvm/llvm-project#49689); the other UBSan checks stay on.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND COHORT_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize=function)
  endif()
  # A UBSan finding aborts the process whatever UBSAN_OPTIONS says (a test run by hand, a server
  # started by pytest without the script's environment), so that it fails the test instead of
  # printing and going on. The fuzz build keeps UBSan's default (scripts/fuzz.sh halts through
  # UBSAN_OPTIONS), so that its objects stay in the compiler cache.
  if(COHORT_SANITIZE MATCHES "undefined" AND NOT COHORT_FUZZ)
    add_compile_options(-fno-sanitize-recover=undefined)
    add_link_options(-fno-sanitize-recover=undefined)
  endif()
endif()
