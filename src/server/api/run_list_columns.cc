#include "server/api/run_list_columns.h"

#include <bit>
#include <cstring>
#include <map>
#include <string_view>
#include <vector>

#include "core/coding.h"
#include "server/api/history_columns.h"

namespace cohort::api {
namespace {

namespace bj = json::bj;

// The run's own fields, in this order, with their column types.
constexpr std::pair<std::string_view, std::string_view> kBase[] = {
    {"id", "text"},         {"name", "text"},       {"group", "text"},
    {"job_type", "text"},   {"state", "text"},      {"exit_code", "i64"},
    {"host", "text"},       {"tags", "json"},       {"created_ms", "i64"},
    {"updated_ms", "i64"},  {"runtime_ms", "i64"},  {"writer_count", "i64"}};

// Adds `value` under `prefix`, objects flattened with '.' (an empty one kept as {}).
void Flatten(const std::string& prefix, const bj::value& value, size_t row, size_t rows,
             std::map<std::string, std::vector<const bj::value*>>* out) {
  if (value.is_object() && !value.get_object().empty()) {
    for (const auto& [k, v] : value.get_object()) {
      Flatten(prefix + "." + std::string(k), v, row, rows, out);
    }
    return;
  }
  auto& cells = (*out)[prefix];
  if (cells.empty()) cells.resize(rows, nullptr);
  cells[row] = &value;
}

bool FitsInt64(const bj::value& v) {
  return v.is_int64() || (v.is_uint64() && v.get_uint64() <= uint64_t(INT64_MAX));
}

// A flattened field's column type from its present values: "bool", "i64", "f64", "text", or
// "json" (nulls, arrays, {} or values of more than one kind: each cell its JSON text).
std::string_view TypeOf(const std::vector<const bj::value*>& cells) {
  bool all_bool = true, all_int = true, all_number = true, all_string = true;
  for (const bj::value* v : cells) {
    if (v == nullptr) continue;
    all_bool = all_bool && v->is_bool();
    all_int = all_int && FitsInt64(*v);
    all_number = all_number && (FitsInt64(*v) || v->is_double());
    all_string = all_string && v->is_string();
  }
  if (all_bool) return "bool";
  if (all_int) return "i64";
  if (all_number) return "f64";
  if (all_string) return "text";
  return "json";
}

void Pad8(std::string* out) { out->append((8 - out->size() % 8) % 8, '\0'); }

void PutWord(std::string* out, uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  char b[8];
  std::memcpy(b, &v, 8);
  out->append(b, 8);
}

void PutColumn(std::string_view type, const std::vector<const bj::value*>& cells,
               std::string* out) {
  for (const bj::value* v : cells) out->push_back(v != nullptr ? 1 : 0);
  Pad8(out);
  if (type == "bool") {
    for (const bj::value* v : cells) out->push_back(v != nullptr && v->get_bool() ? 1 : 0);
    Pad8(out);
  } else if (type == "i64") {
    for (const bj::value* v : cells) {
      PutWord(out, v == nullptr ? 0 : v->is_int64() ? uint64_t(v->get_int64()) : v->get_uint64());
    }
  } else if (type == "f64") {
    for (const bj::value* v : cells) {
      double d = v == nullptr ? 0 : v->is_double() ? v->get_double()
                                  : v->is_int64()  ? double(v->get_int64())
                                                   : double(v->get_uint64());
      PutWord(out, coding::DoubleBits(d));
    }
  } else {  // text, json: u32 offsets (n + 1), then the UTF-8 bytes
    std::string bytes;
    std::vector<uint32_t> offsets{0};
    for (const bj::value* v : cells) {
      if (v != nullptr) {
        if (type == "text") {
          bytes.append(v->get_string().data(), v->get_string().size());
        } else {
          bytes.append(bj::serialize(*v));
        }
      }
      offsets.push_back(uint32_t(bytes.size()));
    }
    for (uint32_t o : offsets) coding::PutFixed32(out, o);
    Pad8(out);
    out->append(bytes);
    Pad8(out);
  }
}

}  // namespace

std::string EncodeRunListColumns(const bj::array& runs, int64_t total,
                                 const std::string& next_cursor) {
  const size_t n = runs.size();
  std::vector<std::pair<std::string, std::vector<const bj::value*>>> base;
  for (const auto& [name, type] : kBase) {
    std::vector<const bj::value*> cells(n, nullptr);
    for (size_t i = 0; i < n; ++i) {
      const bj::value* v = runs[i].as_object().if_contains(name);
      // A run's own field is null when unset (exit_code): missing in its column.
      if (v != nullptr && !v->is_null()) cells[i] = v;
    }
    base.emplace_back(std::string(name), std::move(cells));
  }
  std::map<std::string, std::vector<const bj::value*>> extra;
  for (size_t i = 0; i < n; ++i) {
    const bj::object& run = runs[i].as_object();
    for (const char* part : {"config", "summary"}) {
      if (const bj::value* v = run.if_contains(part)) Flatten(part, *v, i, n, &extra);
    }
  }
  bj::array columns;
  std::vector<std::pair<std::string_view, const std::vector<const bj::value*>*>> order;
  for (size_t c = 0; c < base.size(); ++c) {
    columns.push_back(bj::object{{"name", base[c].first}, {"type", kBase[c].second}});
    order.emplace_back(kBase[c].second, &base[c].second);
  }
  for (const auto& [name, cells] : extra) {
    const std::string_view type = TypeOf(cells);
    columns.push_back(bj::object{{"name", name}, {"type", type}});
    order.emplace_back(type, &cells);
  }
  const std::string header = bj::serialize(bj::object{
      {"table", bj::object{{"rows", n}, {"columns", std::move(columns)}}},
      {"total", total},
      {"next_cursor", next_cursor.empty() ? bj::value(nullptr) : bj::value(next_cursor)}});
  std::string out = BeginColumns(header);
  for (const auto& [type, cells] : order) PutColumn(type, *cells, &out);
  SealColumns(&out);
  return out;
}

}  // namespace cohort::api
