// Routes: media values of a run (docs/api.md "Media"): the rows (GET .../{run}/media), a row's
// bytes from the blob store with its MIME type, sandboxed (GET .../{run}/media/{sha256}, or a
// media cell of one of the run's tables with ?table=), and a table's rows with paging (GET
// .../{run}/tables/{key...}).
#include <algorithm>
#include <cmath>
#include <optional>

#include "blob/blob_store.h"
#include "core/clock.h"
#include "core/json_non_finite.h"
#include "core/sha256.h"
#include "core/table_cells.h"
#include "core/text_encoding.h"
#include "server/api/context.h"
#include "server/api/table_cell_cache.h"
#include "server/metrics.h"

namespace cohort::api {
namespace {

std::string RunBase(const store::RunRef& ref) {
  return "/api/v1/runs/" + PercentEncode(ref.entity) + "/" + PercentEncode(ref.project) + "/" +
         PercentEncode(ref.run_id);
}

Status ReadRange(const http::HttpRequest& req, int64_t* min_step, int64_t* max_step) {
  COHORT_ASSIGN_OR_RETURN(auto lo, IntParam(req, "min_step"));
  COHORT_ASSIGN_OR_RETURN(auto hi, IntParam(req, "max_step"));
  if (lo) *min_step = *lo;
  if (hi) *max_step = *hi;
  if (*min_step > *max_step) return Status::InvalidArgument("min_step: greater than max_step");
  return Status::Ok();
}

// Whether the entity holds each blob (recorded and readable): the agent uploads a media blob
// beside the batch that names it, so a row may arrive before its bytes.
Result<std::map<std::string, int64_t>> Held(ApiContext* ctx, const std::string& entity,
                                            const std::vector<store::MediaRecord>& rows) {
  std::vector<std::string> shas;
  for (const auto& m : rows) shas.push_back(m.sha256);
  std::sort(shas.begin(), shas.end());
  shas.erase(std::unique(shas.begin(), shas.end()), shas.end());
  if (shas.empty()) return std::map<std::string, int64_t>{};
  return ctx->store->HeldBlobs(entity, shas);
}

bj::object RowJson(const store::MediaRecord& m, const std::string& base, bool uploaded) {
  bj::object o{{"key", m.key},
               {"writer", m.writer},
               {"step", m.step},
               {"index", m.index},
               {"time_ms", m.time_ms},
               {"type", m.type},
               {"mime", m.mime},
               {"sha256", m.sha256},
               {"size", m.size},
               {"caption", m.caption},
               {"uploaded", uploaded},
               {"url", base + "/media/" + m.sha256}};
  if (m.type == "table") {
    o["ncols"] = m.width;
    o["nrows"] = m.height;
    o["cell_bytes"] = m.cell_bytes;
  } else {
    o["width"] = m.width;
    o["height"] = m.height;
    o["duration_ms"] = m.duration_ms;
  }
  return o;
}

// The row's blob must be readable: kNotFound naming it when its upload has not completed.
// The size of the media's blob as the store recorded it when its bytes were checked (never the
// row's own, which the client declared); kNotFound while it is not uploaded.
Result<uint64_t> UploadedSize(ApiContext* ctx, const std::string& entity,
                              const store::MediaRecord& m) {
  if (ctx->blobs == nullptr) return Status::Unavailable("this server has no blob store");
  COHORT_ASSIGN_OR_RETURN(auto held, ctx->store->HeldBlobs(entity, {m.sha256}));
  if (!held.contains(m.sha256)) {
    return Status::NotFound("media '" + m.key + "' step " + std::to_string(m.step) +
                            ": blob " + m.sha256 +
                            " is not uploaded yet (the agent uploads it after the batch)");
  }
  return uint64_t(held.at(m.sha256));
}

// A table row's document, parsed: {"columns": [...], "data": [[...], ...]}; a vendor table's
// from its artifact once that is committed (ApiContext::table_document), else the row's blob.
// `final` (optional): whether that document is the one the row will always have (false for a
// vendor table read from its run file while its artifact is not committed).
Result<bj::object> ReadTable(ApiContext* ctx, const std::string& entity,
                             const store::MediaRecord& m, bool* final = nullptr) {
  std::string text;
  if (final != nullptr) *final = m.artifact_ref.empty() || !ctx->table_document;
  if (!m.artifact_ref.empty() && ctx->table_document) {
    auto doc = ctx->table_document(entity, m.artifact_ref);
    // An artifact not committed yet, or whose entry is not a table: the row's own document.
    if (doc.ok()) {
      text = std::move(doc).value();
      if (final != nullptr) *final = true;
    } else if (doc.status().code() != StatusCode::kNotFound &&
               doc.status().code() != StatusCode::kCorruption) {
      return doc.status();
    }
  }
  if (text.empty()) {
    COHORT_ASSIGN_OR_RETURN(const uint64_t size, UploadedSize(ctx, entity, m));
    // Parsed in memory: never more than a media file may be (the blob named may be larger
    // than the row says).
    if (ctx->limits.max_media_file_bytes > 0 && size > ctx->limits.max_media_file_bytes) {
      return Status::PayloadTooLarge(
          "table '" + m.key + "' step " + std::to_string(m.step) + ": its blob is " +
          std::to_string(size) + " bytes, more than --max-media-file-bytes (" +
          std::to_string(ctx->limits.max_media_file_bytes) + "); download it whole instead");
    }
    COHORT_ASSIGN_OR_RETURN(text, ctx->blobs->Read(m.sha256, 0, size));
  }
  // A vendor client's table may hold bare NaN / Infinity (not JSON): its cells are answered as
  // the strings "NaN", "Infinity", "-Infinity", as every non-finite number (docs/api.md).
  auto doc = json::Parse(json::QuoteNonFinite(text));
  if (!doc.ok() || !doc->is_object()) {
    return Status::Corruption("table '" + m.key + "' step " + std::to_string(m.step) +
                              ": its blob is not a JSON object");
  }
  bj::object& o = doc->as_object();
  const bj::value* columns = o.if_contains("columns");
  const bj::value* data = o.if_contains("data");
  if (columns == nullptr || !columns->is_array() || data == nullptr || !data->is_array()) {
    return Status::Corruption("table '" + m.key + "': its document has no columns or data array");
  }
  return std::move(o);
}

// The table row `?table=` names: its digest, and its place (key, writer, step, index) when the
// URL gives it (the table route's URLs do: a vendor client's tables at two steps may have one
// run file, and so one digest, with different images in their artifacts).
Result<store::MediaRecord> TableOfRequest(ApiContext* ctx, const http::HttpRequest& req,
                                          const store::RunRef& ref,
                                          const std::string& table_sha256) {
  if (req.QueryParam("key").empty()) return ctx->store->FindMedia(ref, table_sha256);
  COHORT_ASSIGN_OR_RETURN(auto step, IntParam(req, "step"));
  COHORT_ASSIGN_OR_RETURN(auto index, IntParam(req, "index"));
  store::MediaQuery q;
  q.run = ref;
  q.keys = {req.QueryParam("key")};
  if (!req.QueryParam("writer").empty()) q.writers = {req.QueryParam("writer")};
  if (step) q.min_step = q.max_step = *step;
  COHORT_ASSIGN_OR_RETURN(auto rows, ctx->store->QueryMedia(q));
  for (const store::MediaRecord& m : rows) {
    if (m.sha256 == table_sha256 && (!index || m.index == *index)) return m;
  }
  return Status::NotFound("table " + table_sha256 + " of key '" + q.keys[0] +
                          "': not found in this run");
}

// The media row a cell of the run's table `table_sha256` stands for, when one of its cells
// names `sha256`: the run's tables are what give its cells' blobs to the run's readers.
Result<store::MediaRecord> FindTableCell(ApiContext* ctx, const http::HttpRequest& req,
                                         const store::RunRef& ref,
                                         const std::string& table_sha256,
                                         const std::string& sha256) {
  if (!IsSha256Hex(table_sha256)) {
    return Status::InvalidArgument("table: expected the table's sha256 (64 lowercase hex digits)");
  }
  COHORT_ASSIGN_OR_RETURN(store::MediaRecord table, TableOfRequest(ctx, req, ref, table_sha256));
  if (table.type != "table") {
    return Status::InvalidArgument("table: media " + table_sha256 + " of key '" + table.key +
                                   "' is " + table.type + ", not a table");
  }
  // The table's media cells: parsed once for the requests of a page of cells (TableCellCache).
  auto load = [&]() -> Result<TableCellCache::Loaded> {
    TableCellCache::Loaded loaded;
    COHORT_ASSIGN_OR_RETURN(bj::object doc, ReadTable(ctx, ref.entity, table, &loaded.final));
    for (const bj::value& row : doc.at("data").as_array()) {
      if (!row.is_array()) continue;
      for (const bj::value& cell : row.as_array()) {
        if (auto m = batch::MediaCellOf(cell)) loaded.cells.push_back(std::move(*m));
      }
    }
    return loaded;
  };
  std::shared_ptr<const TableCellCache::Cells> cells;
  if (ctx->table_cells != nullptr) {
    COHORT_ASSIGN_OR_RETURN(cells, ctx->table_cells->Get(ref.entity + "\n" + table.sha256 +
                                                             "\n" + table.artifact_ref,
                                                         load));
  } else {
    COHORT_ASSIGN_OR_RETURN(TableCellCache::Loaded loaded, load());
    cells = std::make_shared<const TableCellCache::Cells>(std::move(loaded.cells));
  }
  for (const batch::MediaRow& m : *cells) {
    if (m.sha256 != sha256) continue;
    store::MediaRecord out = table;
    out.type = std::string(batch::MediaTypeName(m.type));
    out.mime = m.mime;
    out.sha256 = m.sha256;
    out.caption = m.caption;
    out.size = m.size;  // served with the size the store holds (UploadedSize)
    return out;
  }
  return Status::NotFound("table '" + table.key + "' step " + std::to_string(table.step) +
                          " has no media cell " + sha256);
}

http::HttpResponse ServeMedia(ApiContext* ctx, const http::HttpRequest& req,
                              const store::RunRef& ref, const std::string& sha256) {
  if (!IsSha256Hex(sha256)) {
    return ErrorResponse(Status::InvalidArgument("sha256: expected 64 lowercase hex digits"));
  }
  const std::string table = req.QueryParam("table");
  auto row = table.empty() ? ctx->store->FindMedia(ref, sha256)
                           : FindTableCell(ctx, req, ref, table, sha256);
  if (!row.ok()) return ErrorResponse(row.status());
  auto size = UploadedSize(ctx, ref.entity, *row);
  if (!size.ok()) return ErrorResponse(size.status());
  std::string name = row->key.substr(row->key.rfind('/') + 1);
  http::HttpResponse resp = ServeBlobBytes(ctx, req, sha256, *size, name);
  if (resp.status >= 300) return resp;
  // The row's type, never sniffed, and a sandbox: the bytes never run in the UI's origin.
  resp.content_type = row->mime;
  for (auto& [h, v] : resp.headers) {
    if (h == "Content-Disposition") v = "inline; filename*=UTF-8''" + PercentEncode(name, false);
  }
  resp.headers.emplace_back("Cache-Control", "private, max-age=31536000, immutable");
  return resp;
}

// A table document ({"columns": [...], "data": [[...], ...]}) paged: rows [offset, offset +
// limit). Its media cells get the `url` of their bytes and whether they are `uploaded`.
Result<bj::object> TablePage(ApiContext* ctx, const store::RunRef& ref,
                             const store::MediaRecord& m, int64_t offset, int64_t limit) {
  COHORT_ASSIGN_OR_RETURN(bj::object doc, ReadTable(ctx, ref.entity, m));
  const bj::value& columns = doc.at("columns");
  bj::array& rows = doc.at("data").as_array();
  const int64_t n = int64_t(rows.size());
  bj::array page;
  std::vector<store::MediaRecord> cells;
  const int64_t begin = std::min(offset, n), end = begin + std::min(limit, n - begin);
  for (int64_t i = begin; i < end; ++i) {
    page.push_back(std::move(rows[size_t(i)]));
    if (!page.back().is_array()) continue;
    for (const bj::value& cell : page.back().as_array()) {
      if (auto c = batch::MediaCellOf(cell)) {
        cells.emplace_back();
        cells.back().sha256 = c->sha256;
      }
    }
  }
  if (!cells.empty()) {
    COHORT_ASSIGN_OR_RETURN(auto held, Held(ctx, ref.entity, cells));
    const std::string media = RunBase(ref) + "/media/";
    for (bj::value& row : page) {
      if (!row.is_array()) continue;
      for (bj::value& cell : row.as_array()) {
        auto c = batch::MediaCellOf(cell);
        if (!c) continue;
        cell.as_object()["url"] = media + c->sha256 + "?table=" + m.sha256 +
                                  "&key=" + PercentEncode(m.key) + "&writer=" +
                                  PercentEncode(m.writer) + "&step=" + std::to_string(m.step) +
                                  "&index=" + std::to_string(m.index);
        cell.as_object()["uploaded"] = held.contains(c->sha256);
      }
    }
  }
  return bj::object{{"key", m.key},     {"writer", m.writer}, {"step", m.step},
                    {"index", m.index}, {"caption", m.caption}, {"columns", columns},
                    {"nrows", n},       {"ncols", int64_t(columns.as_array().size())},
                    {"offset", offset}, {"limit", limit},     {"data", std::move(page)}};
}

}  // namespace

void RegisterMediaRoutes(http::Router& r, ApiContext* ctx) {
  const std::string base = "/api/v1/runs/{entity}/{project}/{run}";
  r.Add("GET", base + "/media", Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          store::MediaQuery q;
          q.run = *ref;
          q.keys = SplitListParam(req.QueryParam("keys"));
          q.writers = SplitListParam(req.QueryParam("writers"));
          if (Status s = ReadRange(req, &q.min_step, &q.max_step); !s.ok()) return ErrorResponse(s);
          auto limit = IntParam(req, "limit");
          if (!limit.ok()) return ErrorResponse(limit.status());
          if (*limit) {
            if (**limit < 1 || **limit > q.limit) {
              return ErrorResponse(
                  Status::InvalidArgument("limit: expected 1.." + std::to_string(q.limit)));
            }
            q.limit = **limit;
          }
          // One row more than asked: whether more matched.
          const int64_t wanted = q.limit;
          q.limit = wanted + 1;
          const int64_t t0 = MonoNanos();
          auto rows = ctx->store->QueryMedia(q);
          ctx->metrics->ObserveStore("query_media", MonoNanos() - t0);
          if (!rows.ok()) return ErrorResponse(rows.status());
          const bool truncated = int64_t(rows->size()) > wanted;
          if (truncated) rows->resize(size_t(wanted));
          auto held = Held(ctx, ref->entity, *rows);
          if (!held.ok()) return ErrorResponse(held.status());
          const std::string run_base = RunBase(*ref);
          bj::array out;
          for (const auto& m : *rows) out.push_back(RowJson(m, run_base, held->contains(m.sha256)));
          return JsonResponse(200, bj::object{{"media", std::move(out)}, {"truncated", truncated}});
        }));
  r.Add("GET", base + "/media/{sha256}",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          return ServeMedia(ctx, req, *ref, req.PathParam("sha256"));
        }));
  r.Add("GET", base + "/tables/{key...}",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          const std::string key = req.PathParam("key");
          auto step = IntParam(req, "step");
          auto offset = IntParam(req, "offset");
          auto limit = IntParam(req, "limit");
          for (const auto* p : {&step, &offset, &limit}) {
            if (!p->ok()) return ErrorResponse(p->status());
          }
          const int64_t off = offset->value_or(0);
          const int64_t lim = limit->value_or(limits::kDefaultTableRowsPerPage);
          if (off < 0) return ErrorResponse(Status::InvalidArgument("offset: must be >= 0"));
          if (lim < 1 || lim > limits::kMaxTableRowsPerPage) {
            return ErrorResponse(Status::InvalidArgument(
                "limit: expected 1.." + std::to_string(limits::kMaxTableRowsPerPage)));
          }
          store::MediaQuery q;
          q.run = *ref;
          q.keys = {key};
          q.writers = SplitListParam(req.QueryParam("writers"));
          if (*step) {
            q.min_step = q.max_step = **step;
          } else {
            // The latest step, from the key's summary: the rows themselves are capped at
            // q.limit in writer and step order, which a long run's table key passes.
            auto keys = ctx->store->ListMedia(*ref);
            if (!keys.ok()) return ErrorResponse(keys.status());
            std::optional<int64_t> latest;
            for (const store::MediaKeyInfo& k : *keys) {
              const bool writer_asked =
                  q.writers.empty() ||
                  std::find(q.writers.begin(), q.writers.end(), k.writer) != q.writers.end();
              if (k.key == key && writer_asked) {
                latest = std::max(latest.value_or(k.max_step), k.max_step);
              }
            }
            if (latest) q.min_step = q.max_step = *latest;
          }
          auto rows = ctx->store->QueryMedia(q);
          if (!rows.ok()) return ErrorResponse(rows.status());
          if (rows->empty()) {
            return ErrorResponse(Status::NotFound(
                "table '" + key + "'" + (*step ? " at step " + std::to_string(**step) : "") +
                ": not found in this run"));
          }
          // The latest step (or the one asked for), its first writer in label order, index 0.
          const store::MediaRecord* pick = &rows->front();
          for (const auto& m : *rows) {
            if (m.step > pick->step || (m.step == pick->step && m.writer == pick->writer &&
                                        m.index < pick->index)) {
              pick = &m;
            }
          }
          if (pick->type != "table") {
            return ErrorResponse(Status::InvalidArgument("key '" + key + "' is " + pick->type +
                                                         " media, not a table"));
          }
          auto page = TablePage(ctx, *ref, *pick, off, lim);
          if (!page.ok()) return ErrorResponse(page.status());
          return JsonResponse(200, *page);
        }));
}

}  // namespace cohort::api
