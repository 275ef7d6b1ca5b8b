// The checks that the ingest fuzz targets (ingest_fuzzer.cc: JSON bodies, ingest_binary_fuzzer.cc:
// batch v4 bodies) make of what a batch decoder returns: an error is a 400 or 413 with a message,
// a decoded batch keeps the limits it was decoded under, and a decoded batch encoded again as
// batch v4 (core/batch_format.h) decodes to the same columns bit for bit. Each check that fails
// aborts (fuzz_check.h). Header-only; pure functions.
#pragma once

#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/batch_format.h"
#include "core/limits.h"
#include "core/metric_key.h"
#include "core/utf8.h"
#include "fuzz_check.h"
#include "server/api/context.h"
#include "server/api/ingest_binary_decode.h"
#include "store/ingest_batch.h"

namespace cohort::fuzz {

using store::IngestBatch;
using store::HistogramPoint;
using store::MediaPoint;
using store::KeyColumn;

// The small limits the targets decode under, so that the fuzzer reaches them.
inline api::ApiLimits SmallIngestLimits() {
  api::ApiLimits limits;
  limits.max_keys_per_batch = 8;
  limits.max_key_bytes = 16;
  limits.max_console_line_bytes = 64;
  limits.max_rows_per_batch = 32;
  return limits;
}

inline bool SameDouble(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// `a` and `b` hold the same seq, rows, columns (in any order) and console lines, values bit for
// bit.
inline void CheckSameBatch(const IngestBatch& a, const IngestBatch& b) {
  FUZZ_CHECK(a.seq == b.seq, "seq %lld vs %lld", static_cast<long long>(a.seq),
             static_cast<long long>(b.seq));
  FUZZ_CHECK(a.history_step == b.history_step && a.history_time_ms == b.history_time_ms &&
                 a.system_time_ms == b.system_time_ms,
             "rows differ");
  FUZZ_CHECK(a.columns.size() == b.columns.size(), "%zu vs %zu columns", a.columns.size(),
             b.columns.size());
  std::map<std::pair<std::string, bool>, const KeyColumn*> by_key;
  for (const KeyColumn& c : b.columns) by_key[{c.key, c.system}] = &c;
  for (const KeyColumn& c : a.columns) {
    auto it = by_key.find({c.key, c.system});
    FUZZ_CHECK(it != by_key.end(), "column '%s' missing", c.key.c_str());
    const KeyColumn& d = *it->second;
    FUZZ_CHECK(c.rows == d.rows && c.values.size() == d.values.size(), "column '%s' differs",
               c.key.c_str());
    for (size_t i = 0; i < c.values.size(); ++i) {
      FUZZ_CHECK(SameDouble(c.values[i], d.values[i]), "column '%s' value %zu", c.key.c_str(), i);
    }
  }
  FUZZ_CHECK(a.histograms.size() == b.histograms.size(), "histogram counts differ");
  for (size_t i = 0; i < a.histograms.size(); ++i) {
    const HistogramPoint &x = a.histograms[i], &y = b.histograms[i];
    FUZZ_CHECK(x.key == y.key && x.step == y.step && x.time_ms == y.time_ms &&
                   x.value.edges == y.value.edges && x.value.counts == y.value.counts &&
                   (!x.value.uniform() || (x.value.lo == y.value.lo && x.value.hi == y.value.hi)),
               "histograms[%zu] differs", i);
  }
  FUZZ_CHECK(a.media.size() == b.media.size(), "media counts differ");
  for (size_t i = 0; i < a.media.size(); ++i) {
    const MediaPoint &x = a.media[i], &y = b.media[i];
    FUZZ_CHECK(x.key == y.key && x.step == y.step && x.time_ms == y.time_ms &&
                   x.index == y.index && x.type == y.type && x.sha256 == y.sha256 &&
                   x.size == y.size && x.mime == y.mime && x.width == y.width &&
                   x.height == y.height && x.duration_ms == y.duration_ms &&
                   x.caption == y.caption,
               "media[%zu] differs", i);
  }
  FUZZ_CHECK(a.console.size() == b.console.size(), "console sizes differ");
  for (size_t i = 0; i < a.console.size(); ++i) {
    FUZZ_CHECK(a.console[i].time_ms == b.console[i].time_ms &&
                   a.console[i].stream == b.console[i].stream &&
                   a.console[i].text == b.console[i].text,
               "console[%zu] differs", i);
  }
}

// A decoder's error: 400 (kInvalidArgument) or 413 (kPayloadTooLarge), with a message.
inline void CheckDecodeError(const Status& status) {
  StatusCode code = status.code();
  FUZZ_CHECK(code == StatusCode::kInvalidArgument || code == StatusCode::kPayloadTooLarge, "%s",
             status.ToString().c_str());
  FUZZ_CHECK(!status.message().empty(), "an error names the problem");
}

// What a batch decoded under `limits` keeps: a positive seq, at most max_rows_per_batch rows,
// steps from -1, columns whose rows ascend within their section and hold one value each, keys
// that follow the key rule (core/metric_key.h) within max_key_bytes, system keys with their
// prefix, at most max_keys_per_batch distinct keys, stdout/stderr console lines of UTF-8 text of
// at most max_console_line_bytes.
inline void CheckBatchLimits(const IngestBatch& batch, const api::ApiLimits& limits) {
  FUZZ_CHECK(batch.seq > 0, "seq %lld", static_cast<long long>(batch.seq));
  FUZZ_CHECK(batch.history_step.size() == batch.history_time_ms.size(), "history arrays");
  FUZZ_CHECK(batch.history_rows() + batch.system_rows() + batch.console.size() +
                     batch.histograms.size() + batch.media.size() <=
                 limits.max_rows_per_batch,
             "too many rows");
  for (int64_t step : batch.history_step) {
    FUZZ_CHECK(step >= -1, "step %lld", static_cast<long long>(step));
  }
  std::map<std::string, int> keys;
  for (const KeyColumn& c : batch.columns) {
    std::string_view key = c.key;
    if (c.system) {
      FUZZ_CHECK(key.starts_with(limits::kSystemKeyPrefix), "system key '%s'", c.key.c_str());
      key.remove_prefix(limits::kSystemKeyPrefix.size());
    }
    FUZZ_CHECK(key.size() <= limits.max_key_bytes && InvalidKeyReason(key).empty(), "key '%s'",
               c.key.c_str());
    ++keys[std::string(key)];
    FUZZ_CHECK(!c.rows.empty() && c.rows.size() == c.values.size(), "column '%s' sizes",
               c.key.c_str());
    const size_t section_rows = c.system ? batch.system_rows() : batch.history_rows();
    for (size_t i = 0; i < c.rows.size(); ++i) {
      FUZZ_CHECK(c.rows[i] < section_rows && (i == 0 || c.rows[i - 1] < c.rows[i]),
                 "column '%s' rows", c.key.c_str());
    }
  }
  FUZZ_CHECK(keys.size() <= limits.max_keys_per_batch, "%zu distinct keys", keys.size());
  for (const auto& [key, n] : keys) FUZZ_CHECK(n <= 2, "key '%s' in %d columns", key.c_str(), n);
  for (const auto& line : batch.console) {
    FUZZ_CHECK(line.stream == "stdout" || line.stream == "stderr", "stream '%s'",
               line.stream.c_str());
    FUZZ_CHECK(line.text.size() <= limits.max_console_line_bytes, "line of %zu bytes",
               line.text.size());
    FUZZ_CHECK(utf8::IsValid(line.text), "console text is not UTF-8");
  }
}

// The batch as the client library holds it (core/batch_format.h), to encode it again.
inline batch::Batch ToEncoderBatch(const IngestBatch& in) {
  batch::Batch out;
  std::map<std::string, uint32_t> index;
  // Per section, the cells of each row, in column order.
  std::vector<std::vector<batch::Batch::Cell>> history(in.history_rows()), system(in.system_rows());
  for (const KeyColumn& c : in.columns) {
    std::string key = c.system ? c.key.substr(limits::kSystemKeyPrefix.size()) : c.key;
    auto [it, added] = index.emplace(key, uint32_t(out.keys.size()));
    if (added) out.keys.push_back(key);
    for (size_t i = 0; i < c.rows.size(); ++i) {
      (c.system ? system : history)[c.rows[i]].push_back({it->second, c.values[i]});
    }
  }
  auto add_rows = [&](const std::vector<std::vector<batch::Batch::Cell>>& rows,
                      std::vector<batch::Batch::Row>* to, const std::vector<int64_t>* steps,
                      const std::vector<int64_t>& times) {
    for (size_t r = 0; r < rows.size(); ++r) {
      to->push_back({steps ? (*steps)[r] : 0, times[r], uint32_t(out.cells.size()),
                     uint32_t(rows[r].size())});
      out.cells.insert(out.cells.end(), rows[r].begin(), rows[r].end());
    }
  };
  add_rows(history, &out.history, &in.history_step, in.history_time_ms);
  add_rows(system, &out.system, nullptr, in.system_time_ms);
  for (const auto& l : in.console) out.console.push_back({l.time_ms, l.stream == "stderr", l.text});
  for (const HistogramPoint& h : in.histograms) {
    auto [it, added] = index.emplace(h.key, uint32_t(out.keys.size()));
    if (added) out.keys.push_back(h.key);
    out.histograms.push_back({h.step, h.time_ms, it->second, h.value});
  }
  for (const MediaPoint& m : in.media) {
    auto [it, added] = index.emplace(m.key, uint32_t(out.keys.size()));
    if (added) out.keys.push_back(m.key);
    batch::MediaRow r;
    r.step = m.step;
    r.time_ms = m.time_ms;
    r.key = it->second;
    r.index = uint32_t(m.index);
    r.type = *batch::ParseMediaType(m.type);
    r.sha256 = m.sha256;
    r.size = m.size;
    r.mime = m.mime;
    r.width = m.width;
    r.height = m.height;
    r.duration_ms = m.duration_ms;
    r.caption = m.caption;
    out.media.push_back(std::move(r));
  }
  return out;
}

// Encodes `decoded` again as batch v4 and decodes that: the same batch.
inline void CheckReencodes(const IngestBatch& decoded, const api::ApiLimits& limits) {
  std::string again;
  batch::EncodeStats stats = batch::Encode(ToEncoderBatch(decoded), &again);
  FUZZ_CHECK(stats.dropped_keys == 0 && stats.points == decoded.points(), "encoder dropped values");
  FUZZ_CHECK(stats.dropped_media == 0, "encoder dropped media rows");
  auto redecoded = api::DecodeBinaryIngestBatch(again, decoded.seq, limits);
  FUZZ_CHECK(redecoded.ok(), "re-encoded batch does not decode: %s",
             redecoded.status().ToString().c_str());
  CheckSameBatch(decoded, *redecoded);
}

}  // namespace cohort::fuzz
