// `cohort export | import | migrate`: a full copy of a store (store/dump_format.h) to a dump file,
// from a dump file, or straight from one store to another (SQLite -> PostgreSQL and back).
// Rows keep their keys and are skipped when the target holds them already, so an interrupted
// import or migration is simply run again with --resume. A target that holds data is refused
// unless --resume or --force says so. Progress goes to stderr: a bar on a terminal, else a line
// every few seconds; at the end the row count of every table is checked against the source's.
// Run them with the servers of both stores stopped (docs/operations.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/clock.h"
#include "store/dump_format.h"
#include "store/store.h"

namespace cohort::cli {
namespace {

// Said by export and migrate (their output and --help): a backup or a move is the store AND its
// blob store (docs/operations.md, "Backups").
constexpr const char* kBlobsNotIncluded =
    "note: the files of artifacts, media and run uploads are in the blob store, not in the "
    "store: copy the data directory's blobs/ (or --blob-dir) along, or keep the S3 bucket "
    "(docs/operations.md, \"Backups\")";

using store::DumpCounts;
using store::DumpHeader;
using store::DumpRecord;
using store::Store;

constexpr size_t kImportBatchRows = 500;
constexpr size_t kImportBatchBytes = 8 << 20;

bool IsPostgresUrl(const std::string& url) {
  return url.starts_with("postgresql://") || url.starts_with("postgres://");
}

// "sqlite:PATH" (one colon) is accepted as well as "sqlite:///PATH" and a bare path.
std::string NormalizeUrl(const std::string& url) {
  if (url.starts_with("sqlite:") && !url.starts_with("sqlite://")) return url.substr(7);
  return url;
}

std::string SqlitePath(const std::string& url) {
  std::string path = url.starts_with("sqlite://") ? url.substr(9) : url;
  return path.substr(0, path.find('?'));
}

// Opens a store; `must_exist`: a SQLite source that is not there is an error, not a new file.
Result<std::unique_ptr<Store>> Open(const std::string& raw_url, bool must_exist) {
  const std::string url = NormalizeUrl(raw_url);
  if (url.empty()) return Status::InvalidArgument("empty store URL");
  if (must_exist && !IsPostgresUrl(url) && !std::filesystem::exists(SqlitePath(url))) {
    if (url.find("://") != std::string::npos && !url.starts_with("sqlite://")) {
      return Status::InvalidArgument("store url '" + store::RedactUrl(url) +
                                     "': unknown scheme (use sqlite:PATH or "
                                     "postgresql://user:password@host:port/db)");
    }
    return Status::NotFound("store '" + store::RedactUrl(url) +
                            "' not found (no such SQLite file)");
  }
  auto s = store::OpenStore(url);
  if (!s.ok()) {
    return Status(s.status().code(),
                  "cannot open store '" + store::RedactUrl(url) + "': " + s.status().message());
  }
  return s;
}

int64_t Total(const DumpCounts& c) {
  int64_t n = 0;
  for (const auto& [name, rows] : c) n += rows;
  return n;
}

// Collects rows into batches for Store::Import.
class ImportBatcher {
 public:
  ImportBatcher(store::AdminStore* to, DumpHeader from, ProgressReport* progress)
      : to_(to), from_(std::move(from)), progress_(progress) {}
  Status Add(const DumpRecord& rec) {
    for (const auto& v : rec.values) {
      if (const auto* s = std::get_if<std::string>(&v)) bytes_ += s->size();
    }
    pending_.push_back(rec);
    if (pending_.size() >= kImportBatchRows || bytes_ >= kImportBatchBytes) return Flush();
    return Status::Ok();
  }
  Status Flush() {
    if (pending_.empty()) return Status::Ok();
    COHORT_ASSIGN_OR_RETURN(int64_t n, to_->Import(pending_, from_));
    stored_ += n;
    progress_->Advance(int64_t(pending_.size()));
    pending_.clear();
    bytes_ = 0;
    return Status::Ok();
  }
  int64_t stored() const { return stored_; }

 private:
  store::AdminStore* to_;
  DumpHeader from_;
  ProgressReport* progress_;
  std::vector<DumpRecord> pending_;
  size_t bytes_ = 0;
  int64_t stored_ = 0;
};

// Refuses a target that holds rows unless the user said so.
Status CheckTargetEmpty(store::AdminStore* target, const std::string& url, bool resume,
                        bool force) {
  COHORT_ASSIGN_OR_RETURN(DumpCounts counts, target->CountRows());
  if (Total(counts) == 0 || resume || force) return Status::Ok();
  return Status::FailedPrecondition(
      "target store '" + store::RedactUrl(url) + "' is not empty (" +
      std::to_string(counts["runs"]) + " runs, " + std::to_string(counts["api_keys"]) +
      " API keys, " + std::to_string(Total(counts)) +
      " rows in all); pass --resume to continue an interrupted copy of the same source, or "
      "--force to merge into it");
}

// Prints the table of counts and checks that the target holds at least the source's rows.
Status Verify(const DumpCounts& source, store::AdminStore* target) {
  COHORT_ASSIGN_OR_RETURN(DumpCounts dst, target->CountRows());
  std::fprintf(stderr, "%-18s %12s %12s\n", "TABLE", "SOURCE", "TARGET");
  std::string missing;
  for (const auto& [name, n] : source) {
    std::fprintf(stderr, "%-18s %12lld %12lld\n", name.c_str(), static_cast<long long>(n),
                 static_cast<long long>(dst[name]));
    if (dst[name] < n) missing += (missing.empty() ? "" : ", ") + name;
  }
  if (!missing.empty()) {
    return Status::Internal("verification failed: the target holds fewer rows than the source in " +
                            missing);
  }
  return Status::Ok();
}

// Exit code 1 for a failure of the work (docs/cli.md "Exit codes"), whatever its status code: a
// store's refusal of a dump's row is not a bad argument.
int Fail(const char* cmd, const Status& s) {
  std::fprintf(stderr, "cohort %s: %s\n", cmd, s.ToString().c_str());
  return 1;
}

// The checks of the command's arguments (a store URL that cannot be opened for what it is, --from
// and --to the same store, an --out it must not write): exit code 2 for kInvalidArgument.
int FailArgument(const char* cmd, const Status& s) {
  const int code = Fail(cmd, s);
  return s.code() == StatusCode::kInvalidArgument ? 2 : code;
}

// A dump that cannot be read (not a dump, damaged): exit code 1, whatever the reader's code.
int FailReading(const Status& s) {
  std::fprintf(stderr, "cohort import: %s\n", s.ToString().c_str());
  return 1;
}

struct Opts {
  std::string store_url, out, in, from, to, progress = "auto";
  bool resume = false, force = false, allow_truncated = false;
};

int RunExport(const Opts& o) {
  auto src = Open(o.store_url, /*must_exist=*/true);
  if (!src.ok()) return FailArgument("export", src.status());
  std::string path = o.out;
  if (std::filesystem::is_directory(path) || path.ends_with('/')) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) {
      return Fail("export", Status::IOError("--out " + path +
                                            ": cannot create the directory: " + ec.message()));
    }
    path = (std::filesystem::path(path) / ("cohort-" + std::to_string(NowMillis()) + ".cdump"))
               .string();
  }
  // Never over the store itself (its file renamed away under a running server: its later writes
  // lost), nor over another file unless asked.
  if (!IsPostgresUrl(NormalizeUrl(o.store_url))) {
    const std::string db = SqlitePath(NormalizeUrl(o.store_url));
    for (const std::string& file : {db, db + "-wal", db + "-shm", db + "-journal"}) {
      std::error_code ec;
      if (std::filesystem::equivalent(path, file, ec)) {
        return FailArgument("export",
                            Status::InvalidArgument("--out " + path + " is the store's own file (" +
                                                    file + "); give another path"));
      }
    }
  }
  if (std::error_code ec; std::filesystem::exists(path, ec) && !o.force) {
    return FailArgument("export",
                        Status::InvalidArgument("--out " + path +
                                                " exists; pass --force to replace it, or give "
                                                "a directory to create a new dump in"));
  }
  auto counts = (*src)->CountRows();
  if (!counts.ok()) return Fail("export", counts.status());
  const std::string tmp = path + ".tmp";
  // The dump holds everything the store does (key hashes included): private, mode 0600.
  std::remove(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  std::FILE* f = fd < 0 ? nullptr : ::fdopen(fd, "wb");
  if (f == nullptr) {
    if (fd >= 0) ::close(fd);
    return Fail("export", Status::IOError("cannot create '" + tmp + "': " + std::strerror(errno)));
  }
  DumpHeader header{.source = IsPostgresUrl(NormalizeUrl(o.store_url)) ? "postgres" : "sqlite",
                    .created_ms = NowMillis()};
  store::DumpFileWriter writer(f, header);
  ProgressReport progress("exporting", "rows", Total(*counts), o.progress);
  Status s = writer.Begin();
  if (s.ok()) {
    s = (*src)->Export([&](const DumpRecord& rec) {
      progress.Advance(1);
      return writer.Add(rec);
    });
  }
  if (s.ok()) s = writer.Close();
  progress.Finish();
  if (s.ok() && fsync(fileno(f)) != 0) s = Status::IOError("fsync failed");
  std::fclose(f);
  if (s.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Status::IOError("cannot rename '" + tmp + "': " + std::strerror(errno));
  }
  if (!s.ok()) {
    std::remove(tmp.c_str());
    return Fail("export", s);
  }
  std::fprintf(stderr, "exported %lld rows (%lld bytes) to %s\n%s\n",
               static_cast<long long>(Total(writer.counts())),
               static_cast<long long>(writer.bytes()), path.c_str(), kBlobsNotIncluded);
  std::printf("%s\n", path.c_str());
  return 0;
}

int RunImport(const Opts& o) {
  std::FILE* f = std::fopen(o.in.c_str(), "rb");
  if (f == nullptr) {
    return Fail("import", Status::NotFound("cannot open '" + o.in +
                                           "': " + std::string(std::strerror(errno))));
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(f, &std::fclose);
  // First pass: check every record before anything is written.
  store::DumpFileReader check(f);
  if (Status s = check.Begin(); !s.ok()) return FailReading(s);
  DumpRecord rec;
  while (true) {
    auto more = check.Next(&rec);
    if (!more.ok()) return FailReading(more.status());
    if (!*more) break;
  }
  if (check.truncated()) {
    const Status s = Status::Corruption("dump '" + o.in + "' is truncated after " +
                                        std::to_string(Total(check.counts())) +
                                        " rows (no end record; the export was interrupted)");
    if (!o.allow_truncated) {
      return Fail("import", Status(s.code(), s.message() + "; pass --allow-truncated to import "
                                                           "the intact rows"));
    }
    std::fprintf(stderr, "cohort import: warning: %s\n", s.message().c_str());
  } else if (!check.CountsMatchEnd()) {
    return Fail("import",
                Status::Corruption("dump '" + o.in + "': row counts do not match its end record"));
  }
  auto dst = Open(o.store_url, /*must_exist=*/false);
  if (!dst.ok()) return FailArgument("import", dst.status());
  if (Status s = CheckTargetEmpty(dst->get(), o.store_url, o.resume, o.force); !s.ok()) {
    return Fail("import", s);
  }
  // Second pass: import.
  std::rewind(f);
  store::DumpFileReader reader(f);
  if (Status s = reader.Begin(); !s.ok()) return FailReading(s);
  ProgressReport progress("importing", "rows", Total(check.counts()), o.progress);
  ImportBatcher batcher(dst->get(), reader.header(), &progress);
  while (true) {
    auto more = reader.Next(&rec);
    if (!more.ok()) return FailReading(more.status());
    if (!*more) break;
    if (Status s = batcher.Add(rec); !s.ok()) return Fail("import", s);
  }
  Status s = batcher.Flush();
  if (s.ok()) s = (*dst)->FinishImport();
  progress.Finish();
  if (!s.ok()) return Fail("import", s);
  if (Status v = Verify(check.counts(), dst->get()); !v.ok()) return Fail("import", v);
  std::fprintf(stderr, "imported %lld rows (%lld already present)\n",
               static_cast<long long>(batcher.stored()),
               static_cast<long long>(Total(check.counts()) - batcher.stored()));
  return 0;
}

int RunMigrate(const Opts& o) {
  if (NormalizeUrl(o.from) == NormalizeUrl(o.to)) {
    return FailArgument("migrate", Status::InvalidArgument("--from and --to name the same store"));
  }
  auto src = Open(o.from, /*must_exist=*/true);
  if (!src.ok()) return FailArgument("migrate", src.status());
  auto dst = Open(o.to, /*must_exist=*/false);
  if (!dst.ok()) return FailArgument("migrate", dst.status());
  if (Status s = CheckTargetEmpty(dst->get(), o.to, o.resume, o.force); !s.ok()) {
    return Fail("migrate", s);
  }
  auto counts = (*src)->CountRows();
  if (!counts.ok()) return Fail("migrate", counts.status());
  DumpHeader header{.source = IsPostgresUrl(NormalizeUrl(o.from)) ? "postgres" : "sqlite",
                    .created_ms = NowMillis()};
  ProgressReport progress("migrating", "rows", Total(*counts), o.progress);
  ImportBatcher batcher(dst->get(), header, &progress);
  Status s = (*src)->Export([&](const DumpRecord& rec) { return batcher.Add(rec); });
  if (s.ok()) s = batcher.Flush();
  if (s.ok()) s = (*dst)->FinishImport();
  progress.Finish();
  if (!s.ok()) return Fail("migrate", s);
  if (Status v = Verify(*counts, dst->get()); !v.ok()) return Fail("migrate", v);
  std::fprintf(stderr, "migrated %lld rows (%lld already present)\n%s\n",
               static_cast<long long>(batcher.stored()),
               static_cast<long long>(Total(*counts) - batcher.stored()), kBlobsNotIncluded);
  return 0;
}

}  // namespace

Runner AddStoreDumpCommands(CLI::App& app) {
  auto o = std::make_shared<Opts>();
  auto progress_opt = [&](CLI::App* cmd) {
    cmd->add_option("--progress", o->progress,
                    "Progress on stderr: auto (a bar on a terminal, else a line every 5 s), "
                    "always (bar), never")
        ->check(CLI::IsMember({"auto", "always", "never"}))
        ->capture_default_str();
  };
  auto target_opts = [&](CLI::App* cmd) {
    cmd->add_flag("--resume", o->resume,
                  "Continue an interrupted copy: rows the target holds already are skipped");
    cmd->add_flag("--force", o->force,
                  "Copy into a target that holds other data (rows with the same keys are skipped)");
  };
  auto* exp = app.add_subcommand(
      "export",
      "Dump a whole store (every run, series, key...) to a file; the blob store is not in it");
  exp->add_option("--store", o->store_url, "Store URL (sqlite:PATH, PATH or postgresql://...)")
      ->required()
      ->envname("COHORT_STORE");
  exp->add_option("--out", o->out, "Dump file, or a directory to create one in")->required();
  exp->add_flag("--force", o->force, "Replace the --out file if it exists");
  progress_opt(exp);
  auto* imp = app.add_subcommand("import", "Load a dump written by `cohort export` into a store");
  imp->add_option("--store", o->store_url, "Target store URL")->required();
  imp->add_option("--in", o->in, "Dump file")->required();
  imp->add_flag("--allow-truncated", o->allow_truncated,
                "Import the intact rows of a dump whose export was interrupted");
  target_opts(imp);
  progress_opt(imp);
  auto* mig = app.add_subcommand("migrate",
                                 "Copy a whole store into another (e.g. SQLite to "
                                 "PostgreSQL); stop the servers of both first; the blob store "
                                 "is not copied");
  mig->add_option("--from", o->from, "Source store URL (sqlite:PATH, PATH or postgresql://...)")
      ->required();
  mig->add_option("--to", o->to, "Target store URL")->required();
  target_opts(mig);
  progress_opt(mig);
  exp->footer(kBlobsNotIncluded);
  mig->footer(kBlobsNotIncluded);
  return [=]() -> int {
    if (exp->parsed()) return RunExport(*o);
    if (imp->parsed()) return RunImport(*o);
    if (mig->parsed()) return RunMigrate(*o);
    return -1;
  };
}

}  // namespace cohort::cli
