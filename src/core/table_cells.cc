#include "core/table_cells.h"

#include <cstdint>
#include <set>

namespace cohort::batch {

namespace bj = json::bj;

std::optional<MediaRow> MediaCellOf(const bj::value& cell) {
  const bj::object* o = cell.if_object();
  if (o == nullptr) return std::nullopt;
  const bj::value* type = o->if_contains("_type");
  if (type == nullptr || !type->is_string()) return std::nullopt;
  auto parsed = ParseMediaType(std::string_view(type->get_string()));
  if (!parsed || *parsed == MediaType::kTable) return std::nullopt;
  MediaRow m;
  m.type = *parsed;
  auto text = [&](const char* name, std::string* out) {
    const bj::value* v = o->if_contains(name);
    if (v != nullptr && v->is_string()) *out = std::string(v->get_string());
  };
  auto number = [&](const char* name, int64_t* out) {
    const bj::value* v = o->if_contains(name);
    if (v != nullptr && v->is_int64()) *out = v->get_int64();
    if (v != nullptr && v->is_uint64() && v->get_uint64() <= uint64_t(INT64_MAX)) {
      *out = int64_t(v->get_uint64());
    }
  };
  text("sha256", &m.sha256);
  text("mime", &m.mime);
  text("caption", &m.caption);
  number("size", &m.size);
  number("width", &m.width);
  number("height", &m.height);
  number("duration_ms", &m.duration_ms);
  if (!InvalidMediaReason(m).empty()) return std::nullopt;
  return m;
}

Result<std::vector<std::string>> MediaCellDigests(std::string_view doc) {
  COHORT_ASSIGN_OR_RETURN(bj::value v, json::Parse(doc));
  const bj::value* data = v.is_object() ? v.as_object().if_contains("data") : nullptr;
  if (data == nullptr || !data->is_array()) {
    return Status::InvalidArgument("table document: no data array");
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const bj::value& row : data->as_array()) {
    if (!row.is_array()) continue;
    for (const bj::value& cell : row.as_array()) {
      auto m = MediaCellOf(cell);
      if (m && seen.insert(m->sha256).second) out.push_back(m->sha256);
    }
  }
  return out;
}

}  // namespace cohort::batch
