// SqlStore: histogram values, for both engines (one SQL layer): the write of a batch's
// histograms (inside each engine's ingest transaction), the list of a run's histogram keys and
// the histogram query with its bucketing (core/histogram.h Merge).
#include <algorithm>
#include <set>
#include <unordered_set>

#include "core/histogram.h"
#include "core/limits.h"
#include "store/sql/sql_store.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

Status SqlStore::WriteHistograms(Conn& conn, int64_t run_pk, int64_t writer_pk,
                                 const IngestBatch& batch) {
  std::string counts;
  for (const HistogramPoint& h : batch.histograms) {
    const Histogram& v = h.value;
    counts.clear();
    histogram::EncodeCounts(v.counts, &counts);
    Params p;
    p.Add(run_pk).Add(h.key).Add(writer_pk).Add(h.step).Add(h.time_ms).Add(int64_t(v.bins()));
    p.AddStored(v.uniform() ? v.lo : v.edges.front()).AddStored(v.uniform() ? v.hi : v.edges.back());
    p.AddBlob(v.uniform() ? std::string() : histogram::EncodeEdges(v.edges)).AddBlob(counts);
    COHORT_RETURN_IF_ERROR(
        conn.Exec("INSERT INTO histograms (run_pk, key, writer_pk, step, time_ms, bins, lo, hi, "
                  "edges, counts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
                  "ON CONFLICT (run_pk, key, writer_pk, step) DO UPDATE SET time_ms = "
                  "excluded.time_ms, bins = excluded.bins, lo = excluded.lo, hi = excluded.hi, "
                  "edges = excluded.edges, counts = excluded.counts",
                  p)
            .status());
  }
  return Status::Ok();
}

Result<std::vector<SeriesInfo>> SqlStore::ListHistograms(const RunRef& ref) {
  using Out = std::vector<SeriesInfo>;
  return RunFor<Out>(Access::kReadAny, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    return sql::QueryAll<SeriesInfo>(
        conn,
        "SELECT h.key, w.label, count(*), min(h.step), max(h.step) FROM histograms h JOIN "
        "writers w ON w.pk = h.writer_pk WHERE h.run_pk = $1 GROUP BY h.key, w.label "
        "ORDER BY h.key, w.label",
        Params().Add(run.pk), [](const Row& row) {
          return SeriesInfo{row.Text(0), row.Text(1), row.Int(2), row.Int(3), row.Int(4)};
        });
  });
}

namespace {

// Merges the steps of `s` into `buckets` buckets of neighbouring steps (as even in count as
// they can be).
void Bucket(HistogramSeries* s, int buckets) {
  const size_t n = s->steps.size();
  if (buckets <= 0 || n <= size_t(buckets)) return;
  std::vector<HistogramStep> out;
  out.reserve(size_t(buckets));
  std::vector<const Histogram*> parts;
  for (size_t b = 0; b < size_t(buckets); ++b) {
    const size_t lo = b * n / size_t(buckets), hi = (b + 1) * n / size_t(buckets);
    if (hi <= lo) continue;
    parts.clear();
    for (size_t i = lo; i < hi; ++i) parts.push_back(&s->steps[i].value);
    HistogramStep m;
    m.step = s->steps[lo].step;
    m.last_step = s->steps[hi - 1].last_step;
    m.time_ms = s->steps[hi - 1].time_ms;
    m.merged = int64_t(hi - lo);
    m.value = histogram::Merge(parts, &m.exact);
    out.push_back(std::move(m));
  }
  s->steps = std::move(out);
}

}  // namespace

Result<std::vector<HistogramSeries>> SqlStore::QueryHistograms(const HistogramQuery& q) {
  using Out = std::vector<HistogramSeries>;
  return RunFor<Out>(Access::kReadAny, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, q.run));
    Params params;
    params.Add(run.pk).Add(q.min_step).Add(q.max_step);
    std::string sql =
        "SELECT h.key, w.label, h.step, h.time_ms, h.bins, h.lo, h.hi, h.edges, h.counts FROM "
        "histograms h JOIN writers w ON w.pk = h.writer_pk WHERE h.run_pk = $1 AND h.step >= $2 "
        "AND h.step <= $3";
    if (!q.keys.empty()) {
      params.AddTextArray(q.keys);
      sql += " AND h.key = ANY(" + params.Last() + ")";
    }
    if (!q.writers.empty()) {
      params.AddTextArray(q.writers);
      sql += " AND w.label = ANY(" + params.Last() + ")";
    }
    sql += " ORDER BY h.key, w.label, h.step";
    COHORT_ASSIGN_OR_RETURN(std::unique_ptr<sql::Rows> rows,
                            conn.Query(sql, params, sql::Prepare::kOnce));
    Out out;
    int64_t held = 0;  // bin counts and edges read
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, rows->Next());
      if (!row) break;
      std::string_view key = rows->Bytes(0);
      std::string label = rows->Text(1);
      if (out.empty() || out.back().key != key || out.back().writer != label) {
        HistogramSeries& s = out.emplace_back();
        s.key.assign(key);
        s.writer = std::move(label);
      }
      HistogramStep& st = out.back().steps.emplace_back();
      st.step = st.last_step = rows->Int(2);
      st.time_ms = rows->Int(3);
      const int64_t bins = rows->Int(4);
      if (bins < 1 || bins > int64_t(limits::kMaxHistogramBins)) {
        return Status::Corruption("histogram '" + out.back().key + "' step " +
                                  std::to_string(st.step) + ": " + std::to_string(bins) +
                                  " bins");
      }
      std::string_view edges = rows->Bytes(7);
      held += bins + (edges.empty() ? 0 : bins + 1);
      if (q.max_values > 0 && held > q.max_values) {
        return Status::PayloadTooLarge(
            "histograms: the query would read more than " + std::to_string(q.max_values) +
            " bin counts and edges (--max-answer-points): name fewer keys or writers, or narrow "
            "the step range (buckets= merges steps after they are read)");
      }
      COHORT_ASSIGN_OR_RETURN(st.value.counts,
                              histogram::DecodeCounts(rows->Bytes(8), size_t(bins)));
      if (edges.empty()) {
        st.value.lo = rows->Double(5);
        st.value.hi = rows->Double(6);
      } else {
        COHORT_ASSIGN_OR_RETURN(st.value.edges, histogram::DecodeEdges(edges));
        if (st.value.edges.size() != size_t(bins) + 1) {
          return Status::Corruption("histogram '" + out.back().key + "' step " +
                                    std::to_string(st.step) + ": edges do not match its bins");
        }
      }
    }
    for (HistogramSeries& s : out) {
      s.count = int64_t(s.steps.size());
      Bucket(&s, q.buckets);
    }
    return out;
  });
}

}  // namespace cohort::store
