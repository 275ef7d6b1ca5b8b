// Boost.JSON compiled from its headers, for the portable (wheel) build: the one translation unit
// of cmake/CohortDependencies.cmake's cohort_boost_json. The default build links Debian's
// libboost_json instead.
#include <boost/json/src.hpp>
