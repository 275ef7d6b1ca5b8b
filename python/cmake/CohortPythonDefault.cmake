# Sets COHORT_PYTHON_DEFAULT to ON when a Python >= 3.9 with its development headers and an
# importable nanobind is found, OFF otherwise. Without -DPython_EXECUTABLE=..., the project's
# virtual environment (.venv, made by scripts/setup-venv.sh) is preferred when it exists, so that
# `scripts/build.sh` builds the extension against the interpreter the tests use.
set(COHORT_PYTHON_DEFAULT OFF)
if(NOT DEFINED Python_EXECUTABLE AND NOT DEFINED ENV{VIRTUAL_ENV}
   AND EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
  set(Python_EXECUTABLE "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
      "Python interpreter for the cohort extension")
endif()
find_package(Python 3.9 QUIET COMPONENTS Interpreter Development.Module)
if(Python_FOUND)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
    OUTPUT_VARIABLE COHORT_NANOBIND_CMAKE_DIR
    OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE cohort_nanobind_rc
    ERROR_QUIET)
  if(cohort_nanobind_rc EQUAL 0 AND EXISTS "${COHORT_NANOBIND_CMAKE_DIR}")
    set(COHORT_PYTHON_DEFAULT ON)
  endif()
endif()
if(NOT COHORT_PYTHON_DEFAULT)
  message(STATUS "cohort: Python extension off by default (no Python >= 3.9 with nanobind)")
endif()
