#include "cli/history_fetch.h"

#include "core/json.h"

namespace cohort::cli {
namespace bj = boost::json;

Result<std::vector<HistorySeries>> ParseHistoryJson(const bj::value& answer) {
  const bj::value* list =
      answer.is_object() ? answer.as_object().if_contains("series") : nullptr;
  if (!list || !list->is_array()) return Status::Internal("history: no series in the answer");
  std::vector<HistorySeries> out;
  for (const bj::value& v : list->as_array()) {
    HistorySeries s;
    s.key = StrField(v, "key");
    s.writer = StrField(v, "writer");
    const bj::value* more = v.is_object() ? v.as_object().if_contains("more") : nullptr;
    s.more = more && more->is_bool() && more->get_bool();
    const bj::value* pts = v.is_object() ? v.as_object().if_contains("points") : nullptr;
    if (!pts || !pts->is_array()) return Status::Internal("history: a series without points");
    for (const bj::value& p : pts->as_array()) {
      const bj::array* a = p.if_array();
      if (!a || a->size() < 3) return Status::Internal("history: a point is not [step, time, value]");
      auto value = json::ToDouble((*a)[2]);
      if (!value || !(*a)[0].is_number() || !(*a)[1].is_number()) {
        return Status::Internal("history: a point is not [step, time, value]");
      }
      s.steps.push_back((*a)[0].to_number<int64_t>());
      s.times.push_back((*a)[1].to_number<int64_t>());
      s.values.push_back(*value);
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::vector<HistorySeries>> FetchHistory(ReadClient& client, std::string_view path,
                                                const Query& query) {
  COHORT_ASSIGN_OR_RETURN(
      agent::HttpResponse res,
      client.Send("GET", WithQuery(path, query), {}, "application/json",
                  "Accept: application/vnd.cohort.columns; version=1, application/json;q=0.5"));
  if (std::string_view(res.body).substr(0, 4) == history_columns::kMagic) {
    COHORT_ASSIGN_OR_RETURN(history_columns::Decoded decoded, history_columns::Decode(res.body));
    return std::move(decoded.series);
  }
  auto parsed = json::Parse(res.body);
  if (!parsed.ok()) {
    return Status::Internal("GET " + std::string(path) + ": the answer is neither the history " +
                            "columns nor JSON: " + parsed.status().message());
  }
  return ParseHistoryJson(*parsed);
}

}  // namespace cohort::cli
