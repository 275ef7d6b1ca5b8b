// Boost.JSON's implementation, compiled from its headers in two places: the portable wheels'
// build (cmake/CohortDependencies.cmake: Boost::json itself) and libcohort_client.so
// (src/client/CMakeLists.txt):
// the shared client library then needs no libboost_json at run time, and its version script
// (cohort_client.map) keeps these symbols local, so that they never meet the Boost.JSON of the
// program that loads it. (Debian's libboost_json.a is not position-independent, so it cannot be
// linked into a shared library; this is Boost's documented way to build the library in a
// program's own translation unit.)
#include <boost/json/src.hpp>
