# Install rules (COHORT_INSTALL, on in a top-level, non-wheel build): `cmake --install <build>
# --prefix P` puts there
#
#   include/cohort/*.h                       the public API (standard headers only)
#   lib/libcohort_client.so.<version>        Cohort::client (SONAME libcohort_client.so.<soversion>)
#   lib/libcohort_client.a                   Cohort::client_static
#   lib/cmake/Cohort/                        CohortConfig.cmake, CohortConfigVersion.cmake,
#                                            CohortTargets.cmake, CohortStaticTargets.cmake
#   lib/pkgconfig/cohort.pc                  pkg-config
#   bin/cohort                               server, agent and CLI
#
# ("lib" is CMAKE_INSTALL_LIBDIR: lib/<multiarch> when the prefix is /usr on Debian.) Tests,
# benchmarks, fuzzers and the Python extension have no install rules. docs/cpp.md has the usage.
include(CMakePackageConfigHelpers)

set(COHORT_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Cohort" CACHE STRING
    "Where CohortConfig.cmake is installed (relative to the prefix)")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/cohort DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS cohort_client_shared EXPORT CohortTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS cohort_client_static EXPORT CohortStaticTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS cohort RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT CohortTargets NAMESPACE Cohort:: DESTINATION ${COHORT_INSTALL_CMAKEDIR})
install(EXPORT CohortStaticTargets NAMESPACE Cohort:: DESTINATION ${COHORT_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/CohortConfig.cmake.in
  ${PROJECT_BINARY_DIR}/package/CohortConfig.cmake
  INSTALL_DESTINATION ${COHORT_INSTALL_CMAKEDIR})
# 0.x: a minor release may change the API; from 1.0 on, the same major version.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(cohort_compatibility SameMinorVersion)
else()
  set(cohort_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/CohortConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${cohort_compatibility})
install(FILES ${PROJECT_BINARY_DIR}/package/CohortConfig.cmake
              ${PROJECT_BINARY_DIR}/package/CohortConfigVersion.cmake
        DESTINATION ${COHORT_INSTALL_CMAKEDIR})

# cohort.pc finds the prefix from its own place (${pcfiledir}), so that it holds wherever
# `cmake --install --prefix` put it.
file(RELATIVE_PATH COHORT_PC_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" COHORT_PC_PREFIX "${COHORT_PC_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/cohort.pc.in ${PROJECT_BINARY_DIR}/package/cohort.pc
               @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/cohort.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
