// fmt's compiled part, built into libcohort_client.so only (src/client/CMakeLists.txt): the
// shared client library then needs no libfmt at run time (Debian ships no static libfmt), and
// its version script (cohort_client.map) keeps these symbols local.
//
// Without FMT_HEADER_ONLY, <fmt/format-inl.h> defines fmt's out-of-line functions (vformat, ...)
// in this translation unit; the templates that <fmt/format.h> declares `extern template` are
// instantiated below for char, the only character type the library formats.
#include <fmt/format.h>

#if FMT_VERSION < 90000 || FMT_VERSION >= 100000
#error "bundled/fmt.cc is written against fmt 9 (Debian 12): check its extern templates"
#endif

#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl<char>(locale_ref) -> char;
template auto dragonbox::to_decimal<float>(float) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal<double>(double) noexcept -> dragonbox::decimal_fp<double>;

}  // namespace detail
FMT_END_NAMESPACE
