#include "store/sqlite/sqlite_summary_pages.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "core/coding.h"
#include "core/crc32c.h"
#include "store/sqlite/sqlite_chunk_rows.h"

namespace cohort::store::sqlite {
namespace {

using coding::BitsDouble;
using coding::DecodeFixed64;
using coding::DoubleBits;
using coding::PutFixed64;

// One page entry: idx, rowid, then the summary (count, min/max step, min/max time, min, max, sum,
// first, last, nan_count), each as 8 little-endian bytes. A page is its entries followed by the
// CRC-32C of the entries (4 little-endian bytes).
constexpr size_t kEntryBytes = 13 * 8;
constexpr size_t kCrcBytes = 4;

// The entries of a stored page; nullopt when its size or checksum is wrong.
std::optional<std::string_view> PageEntries(std::string_view data) {
  if (data.size() < kCrcBytes || (data.size() - kCrcBytes) % kEntryBytes != 0) return std::nullopt;
  const std::string_view entries = data.substr(0, data.size() - kCrcBytes);
  if (coding::DecodeFixed32(entries.data() + entries.size()) != crc32c::Value(entries)) {
    return std::nullopt;
  }
  return entries;
}

void PutEntry(std::string* dst, int64_t idx, int64_t pk, const series::ChunkSummary& s) {
  for (int64_t v : {idx, pk, s.count, s.min_step, s.max_step, s.min_time, s.max_time}) {
    PutFixed64(dst, uint64_t(v));
  }
  for (double d : {s.min, s.max, s.sum, s.first, s.last}) PutFixed64(dst, DoubleBits(d));
  PutFixed64(dst, uint64_t(s.nan_count));
}

void GetEntry(const char* p, int64_t* idx, series::ChunkMeta* m) {
  auto i = [&p] {
    const int64_t v = int64_t(DecodeFixed64(p));
    p += 8;
    return v;
  };
  auto d = [&p] {
    const double v = BitsDouble(DecodeFixed64(p));
    p += 8;
    return v;
  };
  *idx = i();
  m->id = i();
  series::ChunkSummary& s = m->summary;
  s.count = i();
  s.min_step = i();
  s.max_step = i();
  s.min_time = i();
  s.max_time = i();
  s.min = d();
  s.max = d();
  s.sum = d();
  s.first = d();
  s.last = d();
  s.nan_count = i();
}

// The summaries of the series' chunks with from_idx <= idx < upto_idx, read from their rows (the
// pages are built from them, and a damaged page is read from them instead).
Status ReadRowSummaries(Db* db, int64_t series_pk, int64_t from_idx, int64_t upto_idx,
                        std::vector<series::ChunkWrite>* chunks, std::vector<int64_t>* pks) {
  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("SELECT pk, idx, count, min_step, max_step, min_time, max_time, vmin, "
                          "vmax, vsum, vfirst, vlast, nan_count FROM chunks INDEXED BY "
                          "chunks_summary WHERE series_pk = ? AND idx >= ? AND idx < ? "
                          "ORDER BY idx"));
  st.Bind(series_pk).Bind(from_idx).Bind(upto_idx);
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    series::ChunkWrite w;
    w.index = st.Int(1);
    w.summary = ReadChunkSummary(st, 2);
    pks->push_back(st.Int(0));
    chunks->push_back(std::move(w));
  }
  st.Reset();
  return Status::Ok();
}

}  // namespace

Status AddToPages(Db* db, int64_t series_pk, const std::vector<series::ChunkWrite>& sealed,
                  const std::vector<int64_t>& pks) {
  size_t i = 0;
  while (i < sealed.size()) {
    const int64_t page = sealed[i].index / kChunksPerPage;
    std::string data;
    int64_t lo = 0, hi = 0;
    bool have = false, existed = false;
    {
      COHORT_ASSIGN_OR_RETURN(Stmt st, db->Cached("SELECT data, min_step, max_step FROM "
                                                  "chunk_pages WHERE series_pk = ? AND page = ?"));
      st.Bind(series_pk).Bind(page);
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (row) {
        data = st.Blob(0);
        lo = st.Int(1);
        hi = st.Int(2);
        have = existed = true;
      }
    }
    auto add = [&](const series::ChunkWrite& w, int64_t pk) {
      const series::ChunkSummary& s = w.summary;
      PutEntry(&data, w.index, pk, s);
      if (s.count == 0) return;
      lo = have ? std::min(lo, s.min_step) : s.min_step;
      hi = have ? std::max(hi, s.max_step) : s.max_step;
      have = true;
    };
    if (existed) {  // an empty or NULL page is damaged too: its entries are not in it
      if (std::optional<std::string_view> entries = PageEntries(data)) {
        data.resize(entries->size());
      } else {  // damaged: the page's earlier entries again, from the chunks' rows
        data.clear();
        have = false;
        std::vector<series::ChunkWrite> before;
        std::vector<int64_t> before_pks;
        COHORT_RETURN_IF_ERROR(ReadRowSummaries(db, series_pk, page * kChunksPerPage,
                                                sealed[i].index, &before, &before_pks));
        for (size_t k = 0; k < before.size(); ++k) add(before[k], before_pks[k]);
      }
    }
    for (; i < sealed.size() && sealed[i].index / kChunksPerPage == page; ++i) {
      add(sealed[i], pks[i]);
    }
    coding::PutFixed32(&data, crc32c::Value(data));
    COHORT_ASSIGN_OR_RETURN(
        Stmt st, db->Cached("INSERT INTO chunk_pages (series_pk, page, min_step, max_step, data) "
                            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (series_pk, page) DO UPDATE SET "
                            "min_step = excluded.min_step, max_step = excluded.max_step, "
                            "data = excluded.data"));
    st.Bind(series_pk).Bind(page).Bind(lo).Bind(hi).BindBlob(data);
    COHORT_RETURN_IF_ERROR(st.Run());
  }
  return Status::Ok();
}

Status PageChunks(Db* db, int64_t series_pk, int64_t from_idx, int64_t upto_idx) {
  if (upto_idx <= from_idx) return Status::Ok();
  std::vector<series::ChunkWrite> chunks;
  std::vector<int64_t> pks;
  COHORT_RETURN_IF_ERROR(ReadRowSummaries(db, series_pk, from_idx, upto_idx, &chunks, &pks));
  return AddToPages(db, series_pk, chunks, pks);
}

Status PageImportedChunks(Db* db) {
  std::vector<std::pair<int64_t, int64_t>> todo;  // (series pk, tail_idx)
  {
    COHORT_ASSIGN_OR_RETURN(Stmt st,
                            db->Prepare("SELECT pk, tail_idx FROM series WHERE paged_upto = 0 AND "
                                        "tail_idx > 0 ORDER BY pk"));
    while (true) {
      COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
      if (!row) break;
      todo.emplace_back(st.Int(0), st.Int(1));
    }
  }
  COHORT_ASSIGN_OR_RETURN(Stmt up, db->Prepare("UPDATE series SET paged_upto = ? WHERE pk = ?"));
  for (const auto& [series_pk, tail_idx] : todo) {
    COHORT_RETURN_IF_ERROR(PageChunks(db, series_pk, 0, tail_idx));
    up.Reset();
    up.Bind(tail_idx).Bind(series_pk);
    COHORT_RETURN_IF_ERROR(up.Run());
  }
  return Status::Ok();
}

Status ReadPages(Db* db, int64_t series_pk, int64_t paged_upto, int64_t lo, int64_t hi, int64_t tlo,
                 int64_t thi, std::vector<series::ChunkMeta>* out) {
  if (paged_upto <= 0) return Status::Ok();
  COHORT_ASSIGN_OR_RETURN(
      Stmt st, db->Cached("SELECT page, data FROM chunk_pages WHERE series_pk = ? AND page <= ? "
                          "AND max_step >= ? AND min_step <= ? ORDER BY page"));
  st.Bind(series_pk).Bind((paged_upto - 1) / kChunksPerPage).Bind(lo).Bind(hi);
  while (true) {
    COHORT_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    const int64_t page = st.Int(0);
    auto wanted = [&](const series::ChunkSummary& s) {
      return s.count > 0 && s.max_step >= lo && s.min_step <= hi && s.max_time >= tlo &&
             s.min_time <= thi;
    };
    const std::optional<std::string_view> entries = PageEntries(st.BlobView(1));
    if (!entries) {
      // Damaged (a checksum that fails, a size no page has): its chunks' summaries from their
      // rows, which hold the same (the page only packs them); nothing is missed or wrong.
      std::vector<series::ChunkWrite> rows;
      std::vector<int64_t> pks;
      COHORT_RETURN_IF_ERROR(ReadRowSummaries(db, series_pk, page * kChunksPerPage,
                                              std::min(paged_upto, (page + 1) * kChunksPerPage),
                                              &rows, &pks));
      for (size_t k = 0; k < rows.size(); ++k) {
        if (wanted(rows[k].summary)) out->push_back(series::ChunkMeta{pks[k], rows[k].summary});
      }
      continue;
    }
    for (size_t off = 0; off < entries->size(); off += kEntryBytes) {
      int64_t idx = 0;
      series::ChunkMeta m;
      GetEntry(entries->data() + off, &idx, &m);
      if (idx / kChunksPerPage != page || idx >= paged_upto) {
        return Status::Corruption("summary page " + std::to_string(page) + " of series #" +
                                  std::to_string(series_pk) + " names chunk " +
                                  std::to_string(idx));
      }
      if (wanted(m.summary)) out->push_back(m);
    }
  }
  return Status::Ok();
}

}  // namespace cohort::store::sqlite
