// `cohort gc`: removes the blobs (artifact files) that no version references any more, and
// uploads abandoned long ago (docs/artifacts.md, "Garbage collection"). A dry run unless
// --apply. Safe while the server runs and uploads arrive: only blobs recorded before the grace
// period are considered, a blob's record is forgotten only while nothing references it (checked
// under the row lock that commits take), and a file is removed only when no entity holds it
// (checked after the file was moved out of reach, and put back otherwise).
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "blob/blob_store.h"
#include "blob/s3_blob_store.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/table_cells.h"
#include "core/user_config.h"
#include "store/store.h"
#include "wal/file.h"

namespace cohort::cli {
namespace {

// The blobs media cells of tables reference (docs/formats.md "Tables"), read from each table
// document of the entities in `entities`: (entity, sha256) pairs, and the entities one of whose
// tables could not be read (not uploaded yet, or a failing read): their cells are unknown, so
// nothing of theirs is forgotten in this pass. A blob that is no table document references
// nothing.
struct CellBlobs {
  std::set<std::pair<std::string, std::string>> held;
  std::set<std::string> unknown;
};
Result<CellBlobs> TableCellBlobs(store::Store* store, blob::BlobStore* blobs,
                                 const std::set<std::string>& entities) {
  CellBlobs out;
  if (entities.empty()) return out;
  COHORT_ASSIGN_OR_RETURN(auto tables, store->TableBlobs());
  for (const store::HeldBlob& t : tables) {
    if (!entities.contains(t.entity) || out.unknown.contains(t.entity)) continue;
    auto text = blobs->Read(t.sha256, 0, uint64_t(t.size));
    if (!text.ok()) {
      out.unknown.insert(t.entity);
      continue;
    }
    auto digests = batch::MediaCellDigests(*text);
    if (!digests.ok()) continue;
    for (std::string& d : *digests) out.held.emplace(t.entity, std::move(d));
  }
  return out;
}

}  // namespace

Runner AddGcCommand(CLI::App& app) {
  struct Opts {
    std::string data_dir, store_url, blob_dir;
    blob::S3Config s3;
    double grace_hours = 24;
    bool apply = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "gc", "Remove artifact files no version references (a dry run unless --apply)");
  cmd->add_option("--data-dir", o->data_dir, "Server data directory")->envname("COHORT_DATA_DIR");
  cmd->add_option("--store", o->store_url, "Store URL (overrides --data-dir)")
      ->envname("COHORT_STORE");
  cmd->add_option(
         "--blob-dir", o->blob_dir,
         "Blob directory (default: <data-dir>/blobs; on a PostgreSQL store, required unless "
         "--blob-s3-* name the servers' bucket)")
      ->envname("COHORT_BLOB_DIR");
  AddBlobS3Options(cmd, &o->s3);
  cmd->add_option("--grace-hours", o->grace_hours,
                  "Keep blobs and uploads younger than this (uploads still to be committed)")
      ->capture_default_str()
      ->check(kNotNegative);
  cmd->add_flag("--apply", o->apply, "Remove them (without it, only say what would go)");
  return [=]() -> int {
    if (!cmd->parsed()) return -1;
    const std::string dir = o->data_dir.empty() ? UserDataDir() + "/server" : o->data_dir;
    const std::string url = o->store_url.empty() ? "sqlite://" + dir + "/cohort.db" : o->store_url;
    // Never a new or empty store: it references no blob, and every blob would go.
    auto store = store::OpenExistingStore(url, "cohort gc");
    if (!store.ok()) {
      std::fprintf(stderr, "cohort gc: %s\n", store.status().ToString().c_str());
      return 1;
    }
    auto blobs = blob::OpenConfiguredBlobStore(wal::FileSystem::Default(), o->blob_dir,
                                               dir + "/blobs", o->s3, store::IsSharedStoreUrl(url));
    if (!blobs.ok()) {
      std::fprintf(stderr, "cohort gc: %s\n", blobs.status().ToString().c_str());
      return 1;
    }
    const int64_t before = NowMillis() - int64_t(o->grace_hours * 3600 * 1000);
    auto fail = [](const Status& s) {
      std::fprintf(stderr, "cohort gc: %s\n", s.ToString().c_str());
      return 1;
    };

    // 1. Records of blobs nothing of their entity references: no row, and no media cell of one
    // of its tables (read after the rows were: a table logged meanwhile references blobs
    // recorded within the grace period, or blobs its upload records again).
    auto unreferenced = (*store)->UnreferencedBlobs(before);
    if (!unreferenced.ok()) return fail(unreferenced.status());
    std::set<std::string> entities;
    for (const store::HeldBlob& b : *unreferenced) entities.insert(b.entity);
    auto cells = TableCellBlobs(store->get(), blobs->get(), entities);
    if (!cells.ok()) return fail(cells.status());
    for (const std::string& e : cells->unknown) {
      std::fprintf(stderr,
                   "cohort gc: a table of entity '%s' could not be read (not uploaded yet?): "
                   "none of its blobs is removed in this pass\n",
                   e.c_str());
    }
    std::set<std::string> candidates;
    int64_t forgotten = 0;
    for (const store::HeldBlob& b : *unreferenced) {
      if (cells->unknown.contains(b.entity) || cells->held.contains({b.entity, b.sha256})) {
        continue;
      }
      if (o->apply) {
        auto gone = (*store)->ForgetBlob(b.entity, b.sha256, before);
        if (!gone.ok()) return fail(gone.status());
        if (!*gone) continue;
      }
      ++forgotten;
      candidates.insert(b.sha256);
    }
    // 2. Files no entity holds (those just forgotten, and any left without a record).
    std::map<std::string, uint64_t> files;
    Status listed = (*blobs)->ListBlobs([&](std::string_view sha, uint64_t size) {
      files.emplace(std::string(sha), size);
      return Status::Ok();
    });
    if (!listed.ok()) return fail(listed);
    int64_t removed = 0;
    uint64_t removed_bytes = 0;
    for (const auto& [sha, size] : files) {
      auto held = (*store)->BlobHeldByAnyEntity(sha);
      if (!held.ok()) return fail(held.status());
      // In a dry run the candidates' records are still there: count their files too (another
      // entity may hold one, so the dry run says "up to").
      const bool would_go = !*held || (!o->apply && candidates.count(sha) > 0);
      if (!would_go) continue;
      if (o->apply) {
        const std::string key = sha;
        auto gone = (*blobs)->DeleteUnless(sha, [&]() -> Result<bool> {
          return (*store)->BlobHeldByAnyEntity(key);
        });
        if (!gone.ok()) return fail(gone.status());
        if (!*gone) continue;
      }
      ++removed;
      removed_bytes += size;
    }
    // 3. Uploads abandoned: no part since the grace period began.
    int64_t uploads = 0;
    if (o->apply) {
      auto dropped = (*blobs)->DropUploadsIdleSince(before);
      if (!dropped.ok()) return fail(dropped.status());
      uploads = *dropped;
    }
    char size[32];
    std::snprintf(size, sizeof(size), "%.1f MiB", double(removed_bytes) / (1 << 20));
    const std::string tail = o->apply
                                 ? ", and " + std::to_string(uploads) + " abandoned upload(s)"
                                 : " (dry run: run again with --apply)";
    std::printf("%s %lld blob record(s) no version references and %s%lld file(s) (%s)%s\n",
                o->apply ? "removed" : "would remove", static_cast<long long>(forgotten),
                o->apply ? "" : "up to ", static_cast<long long>(removed), size, tail.c_str());
    return 0;
  };
}

}  // namespace cohort::cli
