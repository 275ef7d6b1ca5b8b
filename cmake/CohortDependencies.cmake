# The third-party libraries, found in one place, one of two ways:
#
#  - default: the system's (Debian 12 packages, scripts/install-deps.sh): Boost.JSON and
#    Boost.URL, fmt, CLI11, SQLite, OpenSSL's libcrypto, libcurl (libpq in src/store/postgres).
#
#  - COHORT_PORTABLE=ON (scripts/build-wheels.sh, docs/python.md "Wheels"): the node build that
#    goes into the Python wheels, which must run on any x86_64 or aarch64 Linux with glibc >= 2.28
#    and nothing else installed. The compiler is zig targeting glibc 2.28 (build-wheels.sh's
#    zig-cc/zig-c++ wrappers, libc++ linked statically); Boost.JSON, fmt and CLI11 are compiled from their headers, found
#    in COHORT_PORTABLE_HEADERS (a directory that holds only boost/, fmt/ and CLI/: never
#    /usr/include, whose glibc headers are newer than the target's); OpenSSL and libcurl are
#    static libraries under COHORT_PORTABLE_PREFIX, built from source by build-wheels.sh with
#    the same compiler. There is no server in this build (COHORT_BUILD_SERVER=OFF): no SQLite,
#    no libpq, no Boost.URL.
option(COHORT_PORTABLE "Node build for portable wheels (zig, static OpenSSL/libcurl; no server)"
       OFF)
set(COHORT_PORTABLE_HEADERS "" CACHE PATH "COHORT_PORTABLE: directory with boost/, fmt/, CLI/")
set(COHORT_PORTABLE_PREFIX "" CACHE PATH "COHORT_PORTABLE: prefix of static OpenSSL and libcurl")

find_package(Threads REQUIRED)

if(NOT COHORT_PORTABLE)
  find_package(Boost 1.81 REQUIRED COMPONENTS json url)
  find_package(fmt REQUIRED)
  find_package(CLI11 CONFIG REQUIRED)
  find_package(OpenSSL REQUIRED)
  find_package(CURL REQUIRED)
  if(COHORT_BUILD_SERVER)
    find_package(PkgConfig REQUIRED)
    pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
  endif()
  return()
endif()

if(COHORT_BUILD_SERVER)
  message(FATAL_ERROR "COHORT_PORTABLE builds the node parts only: configure with "
                      "-DCOHORT_BUILD_SERVER=OFF (scripts/build-wheels.sh does)")
endif()
foreach(dir boost fmt CLI)
  if(NOT EXISTS "${COHORT_PORTABLE_HEADERS}/${dir}")
    message(FATAL_ERROR "COHORT_PORTABLE: ${COHORT_PORTABLE_HEADERS}/${dir} not found; set "
                        "COHORT_PORTABLE_HEADERS to a directory holding boost/, fmt/ and CLI/ "
                        "(scripts/build-wheels.sh makes one)")
  endif()
endforeach()

# Boost.JSON compiled from its src.hpp (the translation unit the shared client library bundles
# too), header-only fmt and CLI11.
add_library(cohort_boost_json STATIC ${PROJECT_SOURCE_DIR}/src/client/bundled/boost_json.cc)
target_include_directories(cohort_boost_json SYSTEM PUBLIC "${COHORT_PORTABLE_HEADERS}")
target_compile_definitions(cohort_boost_json PUBLIC BOOST_JSON_NO_LIB BOOST_CONTAINER_NO_LIB)
add_library(Boost::json ALIAS cohort_boost_json)
add_library(cohort_fmt INTERFACE)
target_include_directories(cohort_fmt SYSTEM INTERFACE "${COHORT_PORTABLE_HEADERS}")
target_compile_definitions(cohort_fmt INTERFACE FMT_HEADER_ONLY=1)
add_library(fmt::fmt ALIAS cohort_fmt)
add_library(cohort_cli11 INTERFACE)
target_include_directories(cohort_cli11 SYSTEM INTERFACE "${COHORT_PORTABLE_HEADERS}")
add_library(CLI11::CLI11 ALIAS cohort_cli11)

# nanobind's headers call fprintf(stderr, ...) without including <cstdio>: with libstdc++ another
# standard header brings it in, with LLVM's libc++ (zig) under Py_LIMITED_API (the cp312-abi3
# wheel) nothing does. clang's joined form of `-include cstdio`.
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-includecstdio>)

set(OPENSSL_ROOT_DIR "${COHORT_PORTABLE_PREFIX}")
set(OPENSSL_USE_STATIC_LIBS TRUE)
find_package(OpenSSL REQUIRED)
set(CURL_DIR "${COHORT_PORTABLE_PREFIX}/lib/cmake/CURL")
find_package(CURL CONFIG REQUIRED)
foreach(lib "${OPENSSL_CRYPTO_LIBRARY}" "${CURL_DIR}")
  cmake_path(IS_PREFIX COHORT_PORTABLE_PREFIX "${lib}" NORMALIZE inside)
  if(NOT inside)
    message(FATAL_ERROR "COHORT_PORTABLE: ${lib} is not under ${COHORT_PORTABLE_PREFIX}")
  endif()
endforeach()
