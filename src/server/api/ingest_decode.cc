#include "server/api/ingest_decode.h"

#include <unordered_set>

#include "server/api/ingest_fast_decode.h"

namespace cohort::api {
namespace {

class BatchDecoder {
 public:
  explicit BatchDecoder(const ApiLimits& limits) : limits_(limits) {}

  Status DecodeValues(const bj::value* v, const std::string& path,
                      std::vector<store::IngestBatchBuilder::Cell>* out) {
    if (!v || !v->is_object()) return Status::InvalidArgument(path + ": expected an object");
    const auto& obj = v->get_object();
    out->reserve(obj.size());
    for (const auto& kv : obj) {
      std::string_view key = kv.key();
      if (key.empty()) return Status::InvalidArgument(path + ": empty key");
      if (key.size() > limits_.max_key_bytes) {
        return Status::InvalidArgument(path + ": key longer than " +
                                       std::to_string(limits_.max_key_bytes) + " bytes");
      }
      auto d = json::ToDouble(kv.value());
      if (!d) {
        return Status::InvalidArgument(path + "." + std::string(key) +
                                       ": expected a number (or \"NaN\", \"Infinity\", "
                                       "\"-Infinity\")");
      }
      if (keys_.size() < limits_.max_keys_per_batch + 1) keys_.insert(std::string(key));
      if (keys_.size() > limits_.max_keys_per_batch) {
        return Status::PayloadTooLarge("batch has more than " +
                                       std::to_string(limits_.max_keys_per_batch) +
                                       " distinct keys (--max-keys-per-batch)");
      }
      out->emplace_back(key, *d);
    }
    return Status::Ok();
  }

  Result<store::IngestBatch> Decode(std::string_view body) {
    COHORT_ASSIGN_OR_RETURN(bj::value root, json::Parse(body));
    if (!root.is_object()) return Status::InvalidArgument("body: expected a JSON object");
    const auto& obj = root.get_object();
    json::FieldReader r(obj, "");
    r.RejectUnknown({"seq", "history", "system", "console"});
    store::IngestBatchBuilder builder(r.Int("seq"));
    store::IngestBatch& batch = builder.batch();
    const bj::array* history = r.OptArray("history");
    const bj::array* system = r.OptArray("system");
    const bj::array* console = r.OptArray("console");
    if (!r.ok()) return r.status();
    if (batch.seq <= 0) return Status::InvalidArgument("seq: must be > 0");
    size_t rows = (history ? history->size() : 0) + (system ? system->size() : 0) +
                  (console ? console->size() : 0);
    if (rows > limits_.max_rows_per_batch) {
      return Status::PayloadTooLarge("batch has more than " +
                                     std::to_string(limits_.max_rows_per_batch) + " rows");
    }
    if (history) {
      for (size_t i = 0; i < history->size(); ++i) {
        std::string path = "history[" + std::to_string(i) + "]";
        const auto& row = (*history)[i];
        if (!row.is_object()) return Status::InvalidArgument(path + ": expected an object");
        json::FieldReader rr(row.get_object(), path);
        rr.RejectUnknown({"step", "time", "values"});
        const int64_t step = rr.OptInt("step").value_or(store::kAssignStep);
        const int64_t time_ms = rr.Int("time");
        if (!rr.ok()) return rr.status();
        if (row.get_object().contains("step") && step < 0) {
          return Status::InvalidArgument(path + ".step: must be >= 0");
        }
        cells_.clear();
        COHORT_RETURN_IF_ERROR(
            DecodeValues(row.get_object().if_contains("values"), path + ".values", &cells_));
        builder.AddHistoryRow(step, time_ms, cells_);
      }
    }
    if (system) {
      for (size_t i = 0; i < system->size(); ++i) {
        std::string path = "system[" + std::to_string(i) + "]";
        const auto& row = (*system)[i];
        if (!row.is_object()) return Status::InvalidArgument(path + ": expected an object");
        json::FieldReader rr(row.get_object(), path);
        rr.RejectUnknown({"time", "values"});
        const int64_t time_ms = rr.Int("time");
        if (!rr.ok()) return rr.status();
        cells_.clear();
        COHORT_RETURN_IF_ERROR(
            DecodeValues(row.get_object().if_contains("values"), path + ".values", &cells_));
        builder.AddSystemRow(time_ms, cells_);
      }
    }
    if (console) {
      batch.console.reserve(console->size());
      for (size_t i = 0; i < console->size(); ++i) {
        std::string path = "console[" + std::to_string(i) + "]";
        const auto& row = (*console)[i];
        if (!row.is_object()) return Status::InvalidArgument(path + ": expected an object");
        json::FieldReader rr(row.get_object(), path);
        rr.RejectUnknown({"time", "stream", "text"});
        store::ConsoleLine line;
        line.time_ms = rr.Int("time");
        line.stream = rr.OptString("stream", 16).value_or("stdout");
        line.text = rr.String("text", limits_.max_console_line_bytes);
        if (!rr.ok()) return rr.status();
        if (line.stream != "stdout" && line.stream != "stderr") {
          return Status::InvalidArgument(path + ".stream: expected stdout or stderr");
        }
        batch.console.push_back(std::move(line));
      }
    }
    return builder.Finish();
  }

 private:
  const ApiLimits& limits_;
  std::unordered_set<std::string> keys_;
  std::vector<store::IngestBatchBuilder::Cell> cells_;
};

}  // namespace

Result<store::IngestBatch> DecodeIngestBatch(std::string_view body, const ApiLimits& limits) {
  if (auto fast = FastDecodeIngestBatch(body, limits)) return std::move(*fast);
  return DecodeIngestBatchWithTree(body, limits);
}

Result<store::IngestBatch> DecodeIngestBatchWithTree(std::string_view body,
                                                     const ApiLimits& limits) {
  BatchDecoder d(limits);
  return d.Decode(body);
}

}  // namespace cohort::api
