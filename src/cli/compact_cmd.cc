// `cohort compact`: re-cuts the chunks of series written before SQLite schema version 4 at
// 1,024-step window edges (store/sqlite/sqlite_recut.h), so that chart queries over them read
// summaries instead of decoding chunks. One transaction per series: it can be interrupted at any
// moment and run again; series already aligned (all data written by version 4 or later) are
// only looked at. It may run while a server uses the store; progress goes to stderr.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "store/sqlite/sqlite_recut.h"
#include "store/sqlite/sqlite_store.h"

namespace cohort::cli {
namespace {

struct CompactOpts {
  std::string store_url, progress = "auto";
};

// The SQLite file of a store URL (sqlite:PATH, sqlite://PATH or a bare path); empty for others.
std::string SqliteFile(const std::string& url) {
  if (url.starts_with("postgresql://") || url.starts_with("postgres://")) return "";
  std::string path = url;
  if (path.starts_with("sqlite://")) {
    path = path.substr(9);
  } else if (path.starts_with("sqlite:")) {
    path = path.substr(7);
  }
  return path.substr(0, path.find('?'));
}

int Fail(const Status& s) {
  std::fprintf(stderr, "cohort compact: %s\n", s.ToString().c_str());
  return 1;
}

int RunCompact(const CompactOpts& o) {
  const std::string path = SqliteFile(o.store_url);
  if (path.empty()) {
    return Fail(Status::InvalidArgument(
        "--store: only SQLite stores are re-cut (a file path or sqlite:PATH); PostgreSQL "
        "stores need no re-cut"));
  }
  if (!std::filesystem::exists(path)) {
    return Fail(Status::NotFound("store '" + path + "' not found (no such SQLite file)"));
  }
  // Opening the store brings the schema to this build's version first.
  {
    auto store = store::SqliteStore::Open(store::SqliteOptions{.path = path});
    if (!store.ok()) return Fail(store.status());
  }
  auto db = store::sqlite::Db::Open(path, SQLITE_OPEN_READWRITE, /*busy_timeout_ms=*/30000);
  if (!db.ok()) return Fail(db.status());
  auto before = store::sqlite::CountStraddlingChunks(db->get());
  if (!before.ok()) return Fail(before.status());

  const bool quiet = o.progress == "never";
  const bool bar = o.progress == "always" || (o.progress == "auto" && isatty(STDERR_FILENO));
  auto last_line = std::chrono::steady_clock::now();
  int last_pct = -1;
  store::sqlite::RecutCounts counts;
  Status s = store::sqlite::RecutAllSeries(
      db->get(),
      [&](int64_t done, int64_t total) {
        const int pct = int(done * 100 / std::max<int64_t>(total, 1));
        if (quiet) return true;
        if (bar) {
          if (pct != last_pct) {
            last_pct = pct;
            constexpr int kWidth = 30;
            std::string b(size_t(pct * kWidth / 100), '#');
            b.resize(kWidth, ' ');
            std::fprintf(stderr, "\rre-cutting [%s] %3d%% %lld/%lld series", b.c_str(), pct,
                         static_cast<long long>(done), static_cast<long long>(total));
            std::fflush(stderr);
          }
          return true;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now - last_line >= std::chrono::seconds(5)) {
          last_line = now;
          std::fprintf(stderr, "re-cutting: %lld/%lld series (%d%%)\n",
                       static_cast<long long>(done), static_cast<long long>(total), pct);
        }
        return true;
      },
      &counts);
  if (bar && last_pct >= 0) std::fputc('\n', stderr);
  if (!s.ok()) return Fail(s);
  auto after = store::sqlite::CountStraddlingChunks(db->get());
  if (!after.ok()) return Fail(after.status());
  std::printf(
      "re-cut %lld of %lld series: %lld chunks -> %lld, %lld points re-encoded\n"
      "chunks straddling a 1,024-step window edge: %lld before, %lld now%s\n",
      static_cast<long long>(counts.series_recut), static_cast<long long>(counts.series),
      static_cast<long long>(counts.chunks_before), static_cast<long long>(counts.chunks_after),
      static_cast<long long>(counts.points), static_cast<long long>(*before),
      static_cast<long long>(*after),
      *after > 0 ? " (sparse steps straddle edges whatever the cut)" : "");
  if (counts.series_damaged > 0) {
    std::printf("left as they are: %lld series with a chunk that does not decode\n",
                static_cast<long long>(counts.series_damaged));
  }
  return 0;
}

}  // namespace

Runner AddCompactCommand(CLI::App& app) {
  auto o = std::make_shared<CompactOpts>();
  auto* cmd = app.add_subcommand(
      "compact",
      "Re-cut the chunks of series written before schema version 4 at 1,024-step edges "
      "(SQLite), so that charts of them read summaries; safe to interrupt and to run again");
  cmd->add_option("--store", o->store_url, "SQLite store (PATH or sqlite:PATH)")
      ->required()
      ->envname("COHORT_STORE");
  cmd->add_option("--progress", o->progress,
                  "Progress on stderr: auto (a bar on a terminal, else a line every 5 s), "
                  "always (bar), never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    return RunCompact(*o);
  };
}

}  // namespace cohort::cli
