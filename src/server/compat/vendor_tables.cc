#include "server/compat/vendor_tables.h"

#include <map>
#include <string_view>

#include "blob/blob_store.h"
#include "core/json.h"
#include "core/json_non_finite.h"
#include "core/table_cells.h"
#include "server/compat/wandb_lines.h"

namespace cohort::compat {

namespace {
constexpr std::string_view kClientArtifact = "wandb-client-artifact://";
}  // namespace

Result<std::string> VendorTableDocument(api::ApiContext* ctx, const std::string& entity,
                                        const std::string& artifact_ref) {
  std::string_view ref = artifact_ref;
  const size_t slash = ref.starts_with(kClientArtifact)
                           ? ref.find('/', kClientArtifact.size())
                           : std::string_view::npos;
  if (slash == std::string_view::npos || slash == kClientArtifact.size() ||
      slash + 1 == ref.size()) {
    return Status::NotFound("table artifact '" + artifact_ref + "': not a client artifact path");
  }
  const std::string client_id(ref.substr(kClientArtifact.size(), slash - kClientArtifact.size()));
  const std::string entry(ref.substr(slash + 1));
  if (ctx->blobs == nullptr) return Status::Unavailable("this server has no blob store");
  COHORT_ASSIGN_OR_RETURN(store::ArtifactVersion version,
                          ctx->store->ArtifactVersionOfClientId(entity, client_id));
  COHORT_ASSIGN_OR_RETURN(std::vector<store::ArtifactFile> files,
                          ctx->store->ListArtifactFiles(version));
  std::map<std::string, const store::ArtifactFile*> by_path;
  for (const store::ArtifactFile& f : files) {
    if (!f.sha256.empty()) by_path.emplace(f.path, &f);
  }
  const std::string where = "table artifact " + version.name + ":v" +
                            std::to_string(version.index) + " entry '" + entry + "'";
  auto it = by_path.find(entry);
  if (it == by_path.end()) return Status::NotFound(where + ": no such file");
  if (uint64_t(it->second->size) > ctx->limits.max_media_file_bytes) {  // as a table row's
    return Status::Corruption(where + ": " + std::to_string(it->second->size) +
                              " bytes, above --max-media-file-bytes");
  }
  COHORT_ASSIGN_OR_RETURN(std::string text,
                          ctx->blobs->Read(it->second->sha256, 0, uint64_t(it->second->size)));
  // The client writes missing values (pandas' NaN) and infinities as bare NaN / Infinity: read
  // and answered as the strings Cohort writes non-finite numbers as (docs/api.md).
  auto doc = json::Parse(json::QuoteNonFinite(text));
  bj::value* data = doc.ok() && doc->is_object() ? doc->as_object().if_contains("data") : nullptr;
  if (data == nullptr || !data->is_array() || !doc->as_object().contains("columns")) {
    return Status::Corruption(where + ": not a table document");
  }
  // Each media file cell ({"_type": "image-file", "path", "width", "height", "caption"?}) as
  // the media cell of the artifact's file at that path; any other cell as it is.
  for (bj::value& row : data->as_array()) {
    if (!row.is_array()) continue;
    for (bj::value& cell : row.as_array()) {
      bj::object* o = cell.if_object();
      const bj::value* type = o ? o->if_contains("_type") : nullptr;
      const bj::value* path = o ? o->if_contains("path") : nullptr;
      if (type == nullptr || !type->is_string() || path == nullptr || !path->is_string()) continue;
      const std::string_view media_type = VendorMediaType(type->get_string());
      auto file = by_path.find(std::string(path->get_string()));
      if (media_type.empty() || media_type == "table" || file == by_path.end()) continue;
      bj::object out{{"_type", media_type},
                     {"sha256", file->second->sha256},
                     {"size", file->second->size},
                     {"mime", VendorMediaMime(path->get_string(), media_type)}};
      for (const char* dim : {"width", "height"}) {
        const bj::value* v = o->if_contains(dim);
        out[dim] = v != nullptr && v->is_int64() ? v->get_int64() : int64_t(0);
      }
      out["duration_ms"] = int64_t(0);
      const bj::value* caption = o->if_contains("caption");
      out["caption"] = caption != nullptr && caption->is_string() ? caption->get_string() : "";
      if (batch::MediaCellOf(out)) cell = std::move(out);
    }
  }
  return bj::serialize(*doc);
}

}  // namespace cohort::compat
