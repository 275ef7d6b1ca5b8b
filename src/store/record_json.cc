#include "store/record_json.h"

#include "core/json.h"

namespace cohort::store {

namespace bj = boost::json;

Result<std::string> MergeJsonObject(std::string_view base, std::string_view patch,
                                    std::string_view what, PatchNull nulls,
                                    const std::vector<std::string>& remove) {
  auto patch_value = json::Parse(patch);
  if (!patch_value.ok() || !patch_value->is_object()) {
    return Status::InvalidArgument(std::string(what) + ": expected a JSON object");
  }
  bj::object merged;
  if (auto base_value = json::Parse(base); base_value.ok() && base_value->is_object()) {
    merged = std::move(base_value->get_object());
  }
  for (const auto& kv : patch_value->get_object()) {
    if (kv.value().is_null() && nulls == PatchNull::kDeletes) {
      merged.erase(kv.key());
    } else {
      merged[kv.key()] = kv.value();
    }
  }
  for (const std::string& key : remove) merged.erase(key);
  std::string text = json::Serialize(merged);
  if (text.size() > kMaxRunDocumentBytes) {
    return Status::PayloadTooLarge(std::string(what) + ": " + std::to_string(text.size()) +
                                   " bytes as JSON after merging; the limit is " +
                                   std::to_string(kMaxRunDocumentBytes) + " bytes");
  }
  return text;
}

std::string StringsToJson(const std::vector<std::string>& v) {
  bj::array a;
  a.reserve(v.size());
  for (const std::string& s : v) a.emplace_back(s);
  return json::Serialize(a);
}

std::vector<std::string> StringsFromJson(std::string_view text) {
  std::vector<std::string> out;
  auto v = json::Parse(text);
  if (!v.ok() || !v->is_array()) return out;
  for (const auto& e : v->get_array()) {
    if (e.is_string()) out.emplace_back(e.get_string());
  }
  return out;
}

std::string IntsToJson(const std::vector<int64_t>& v) {
  bj::array a;
  a.reserve(v.size());
  for (int64_t i : v) a.emplace_back(i);
  return json::Serialize(a);
}

std::vector<int64_t> IntsFromJson(std::string_view text) {
  std::vector<int64_t> out;
  auto v = json::Parse(text);
  if (!v.ok() || !v->is_array()) return out;
  for (const auto& e : v->get_array()) {
    if (e.is_int64()) out.push_back(e.get_int64());
    if (e.is_uint64()) out.push_back(int64_t(e.get_uint64()));
  }
  return out;
}

}  // namespace cohort::store
