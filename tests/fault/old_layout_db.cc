// Program of the `cohort compact` fault test (tests/fault/test_compact_kill.py):
//
//   cohort_old_layout_db build PATH KEYS POINTS   a SQLite store with run e/p/r, writer w and KEYS
//                                                 keys of POINTS steps each, laid out as before
//                                                 schema version 4 (batches of 10,000 rows sealed
//                                                 at their own first step: chunks straddle
//                                                 1,024-step edges), plus a tail of 300 points
//   cohort_old_layout_db digest PATH              what readers see, one line per key: raw points
//                                                 (bit patterns) and 1,000 buckets (count,
//                                                 extremes, first, last; -0.0 read as 0.0), hashed
//
// Single-threaded; exits 1 with a message on any error.
#include <sqlite3.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "series/chunk.h"
#include "store/sqlite/sqlite_old_layout_for_test.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/sqlite_summary_pages.h"

namespace cohort {
namespace {

const store::RunRef kRun{"e", "p", "r"};
constexpr int64_t kBatchRows = 10000;

int Die(const std::string& what) {
  std::fprintf(stderr, "cohort_old_layout_db: %s\n", what.c_str());
  return 1;
}

#define OR_DIE(expr)                         \
  do {                                       \
    ::cohort::Status s_ = (expr);            \
    if (!s_.ok()) return Die(s_.ToString()); \
  } while (0)

store::IngestBatch Batch(int64_t seq, int keys, int64_t first, int64_t rows) {
  store::IngestBatch b{.seq = seq};
  for (int64_t s = first; s < first + rows; ++s) {
    store::HistoryRow row{.step = s, .time_ms = 1'700'000'000'000 + s};
    for (int k = 0; k < keys; ++k) {
      double v = 1.0 / (1.0 + 0.001 * double(s + k)) + 0.01 * std::sin(double(s) * 0.7 + k);
      if ((s + k) % 997 == 0) v = std::nan("");
      if ((s + k) % 1999 == 0) v = -0.0;
      row.values.emplace_back("k" + std::to_string(k), v);
    }
    b.rows.push_back(std::move(row));
  }
  return b;
}

int Build(const std::string& path, int keys, int64_t points) {
  {
    auto store = store::SqliteStore::Open(store::SqliteOptions{.path = path});
    if (!store.ok()) return Die(store.status().ToString());
    OR_DIE((*store)->UpsertRun(store::RunUpsert{.ref = kRun}).status());
    OR_DIE((*store)->JoinWriter(kRun, store::WriterJoin{.label = "w"}).status());
    int64_t seq = 1;
    for (int64_t first = 0; first < points; first += kBatchRows) {
      const int64_t rows = std::min(kBatchRows, points - first);
      OR_DIE((*store)->Ingest(kRun, "w", Batch(seq++, keys, first, rows), 1).status());
    }
  }
  OR_DIE(store::sqlite::MakeOldLayout(path, kBatchRows));
  auto store = store::SqliteStore::Open(store::SqliteOptions{.path = path});
  if (!store.ok()) return Die(store.status().ToString());
  OR_DIE((*store)->Ingest(kRun, "w", Batch(1000000, keys, points, 300), 1).status());
  return 0;
}

uint64_t Fnv(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

int Digest(const std::string& path) {
  auto store = store::SqliteStore::Open(store::SqliteOptions{.path = path});
  if (!store.ok()) return Die(store.status().ToString());
  auto raw = (*store)->QueryHistory(store::HistoryQuery{.run = kRun, .series = {.limit = 1 << 30}});
  if (!raw.ok()) return Die(raw.status().ToString());
  auto buckets =
      (*store)->QueryHistory(store::HistoryQuery{.run = kRun, .series = {.buckets = 1000}});
  if (!buckets.ok()) return Die(buckets.status().ToString());
  for (size_t i = 0; i < raw->size(); ++i) {
    const store::SeriesData& s = (*raw)[i];
    uint64_t h = 14695981039346656037ull;
    for (const series::Point& p : s.points) {
      h = Fnv(h, &p.step, 8);
      h = Fnv(h, &p.time_ms, 8);
      h = Fnv(h, &p.value, 8);
    }
    for (const series::Bucket& b : (*buckets)[i].buckets) {
      for (int64_t v : {b.step_min, b.step_max, b.time_min, b.time_max, b.count, b.nan_count}) {
        h = Fnv(h, &v, 8);
      }
      for (double d : {b.min, b.max, b.first, b.last}) {
        const double z = d == 0 ? 0.0 : d;
        h = Fnv(h, &z, 8);
      }
    }
    std::printf("%s %zu %zu %016llx\n", s.key.c_str(), s.points.size(), s.damaged.size(),
                static_cast<unsigned long long>(h));
  }
  return 0;
}

}  // namespace
}  // namespace cohort

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "build") == 0) {
    return cohort::Build(argv[2], std::atoi(argv[3]), std::atoll(argv[4]));
  }
  if (argc == 3 && std::strcmp(argv[1], "digest") == 0) return cohort::Digest(argv[2]);
  std::fprintf(stderr, "usage: cohort_old_layout_db build PATH KEYS POINTS | digest PATH\n");
  return 2;
}
