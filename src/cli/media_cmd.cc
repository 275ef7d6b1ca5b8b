// `cohort media ls RUN [--key K] [--label L] [--min-step N] [--max-step N]`: a run's media rows
// (images, audio, video, html, tables); `cohort media get RUN [same filters] [--out DIR]`: their
// bytes into DIR/<key>/<writer>/<step>_<index><ext>, each checked against its SHA-256 (a file
// already there with that digest is kept; rows whose blob the server does not hold yet are
// named at the end and make it exit 1) (docs/cli.md, docs/api.md "Media").
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/progress.h"
#include "cli/read_client.h"
#include "core/sha256.h"
#include "wal/file.h"

namespace cohort::cli {
namespace {

namespace bj = boost::json;

struct MediaOpts {
  std::string run, keys, labels, out = ".", min_step, max_step, progress = "auto";
};

int Fail(const Status& s) {
  std::fprintf(stderr, "cohort media: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

std::string Extension(std::string_view mime) {
  static constexpr std::pair<std::string_view, std::string_view> kExt[] = {
      {"image/png", ".png"},  {"image/jpeg", ".jpg"}, {"image/gif", ".gif"},
      {"image/webp", ".webp"}, {"image/bmp", ".bmp"}, {"audio/wav", ".wav"},
      {"audio/mpeg", ".mp3"}, {"audio/ogg", ".ogg"}, {"audio/flac", ".flac"},
      {"audio/mp4", ".m4a"},  {"video/mp4", ".mp4"}, {"video/webm", ".webm"},
      {"video/ogg", ".ogv"},  {"video/quicktime", ".mov"}, {"text/html", ".html"},
      {"application/json", ".json"}};
  for (const auto& [m, e] : kExt) {
    if (m == mime) return std::string(e);
  }
  return "";
}

// The rows of the filters, in key, writer, step, index order; `*truncated` when more matched
// than the server lists in one answer.
Result<bj::array> Rows(ReadClient& client, const RunPath& ref, const MediaOpts& o,
                       bool* truncated) {
  COHORT_ASSIGN_OR_RETURN(bj::value body,
                          client.Get(ref.ApiPath() + "/media", {{"keys", o.keys},
                                                                {"writers", o.labels},
                                                                {"min_step", o.min_step},
                                                                {"max_step", o.max_step}}));
  const bj::value* media = body.as_object().if_contains("media");
  if (media == nullptr || !media->is_array()) {
    return Status::Unavailable("the server's answer has no media list");
  }
  const bj::value* more = body.as_object().if_contains("truncated");
  *truncated = more != nullptr && more->is_bool() && more->as_bool();
  return media->as_array();
}

constexpr const char* kNarrow = "narrow them with --key, --label, --min-step, --max-step";

int List(ReadClient& client, const RunPath& ref, const MediaOpts& o) {
  bool truncated = false;
  auto rows = Rows(client, ref, o, &truncated);
  if (!rows.ok()) return Fail(rows.status());
  Table t({"KEY", "WRITER", "STEP", "INDEX", "TYPE", "MIME", "SIZE", "SHAPE", "CAPTION"});
  for (const bj::value& r : *rows) {
    std::string shape;
    if (StrField(r, "type") == "table") {
      shape = std::to_string(IntField(r, "nrows")) + " rows x " +
              std::to_string(IntField(r, "ncols")) + " cols";
    } else if (IntField(r, "width") > 0) {
      shape = std::to_string(IntField(r, "width")) + "x" + std::to_string(IntField(r, "height"));
    } else if (IntField(r, "duration_ms") > 0) {
      shape = FormatDuration(IntField(r, "duration_ms"));
    }
    const bj::value* up = r.as_object().if_contains("uploaded");
    std::string size = std::to_string(IntField(r, "size"));
    if (up != nullptr && up->is_bool() && !up->as_bool()) size += " (uploading)";
    t.AddRow({StrField(r, "key"), StrField(r, "writer"), std::to_string(IntField(r, "step")),
              std::to_string(IntField(r, "index")), StrField(r, "type"), StrField(r, "mime"),
              size, shape, StrField(r, "caption")});
  }
  if (t.rows() == 0) {
    std::fprintf(stderr, "no media in %s for these filters\n", ref.Text().c_str());
    return 0;
  }
  t.Print(stdout);
  if (truncated) {
    std::fprintf(stderr, "the first %zu rows only: more match these filters (%s)\n", t.rows(),
                 kNarrow);
  }
  return 0;
}

// Creates every directory of `path` under the file system.
Status MakeDirs(wal::FileSystem* fs, const std::string& path) {
  for (size_t at = path.find('/', 1); at != std::string::npos; at = path.find('/', at + 1)) {
    COHORT_ASSIGN_OR_RETURN(bool exists, fs->Exists(path.substr(0, at)));
    if (!exists) COHORT_RETURN_IF_ERROR(fs->CreateDir(path.substr(0, at)));
  }
  COHORT_ASSIGN_OR_RETURN(bool exists, fs->Exists(path));
  return exists ? Status::Ok() : fs->CreateDir(path);
}

// Whether `path` holds `size` bytes whose SHA-256 is `sha` (a file a get wrote before).
bool AlreadyThere(wal::FileSystem* fs, const std::string& path, int64_t size,
                  const std::string& sha) {
  auto st = fs->Stat(path);
  if (!st.ok() || int64_t(st->size) != size) return false;
  auto file = fs->NewSequentialFile(path);
  if (!file.ok()) return false;
  Sha256 hash;
  std::string scratch(1 << 20, '\0');
  while (true) {
    auto chunk = (*file)->Read(scratch.size(), scratch.data());
    if (!chunk.ok()) return false;
    if (chunk->empty()) break;
    hash.Update(*chunk);
  }
  return hash.FinishHex() == sha;
}

std::string RowName(const bj::value& r) {
  return StrField(r, "key") + " " + StrField(r, "writer") + " step " +
         std::to_string(IntField(r, "step")) + " #" + std::to_string(IntField(r, "index"));
}

int Get(ReadClient& client, const RunPath& ref, const MediaOpts& o) {
  bool truncated = false;
  auto rows = Rows(client, ref, o, &truncated);
  if (!rows.ok()) return Fail(rows.status());
  if (truncated) {  // never a partial download that says it is done
    return Fail(Status::FailedPrecondition("more than the " + std::to_string(rows->size()) +
                                           " media rows the server lists at once match these "
                                           "filters; " +
                                           kNarrow + ", and get each part"));
  }
  wal::FileSystem* fs = wal::FileSystem::Default();
  // Every row's file first: a directory that would leave --out fails the command before
  // anything is fetched or written.
  std::vector<std::string> paths;
  for (const bj::value& r : *rows) {
    auto key_dir = PathUnder(o.out, StrField(r, "key"), "the media key");
    if (!key_dir.ok()) return Fail(key_dir.status());
    auto dir = PathUnder(*key_dir, StrField(r, "writer"), "the writer label");
    if (!dir.ok()) return Fail(dir.status());
    paths.push_back(*dir + "/" + std::to_string(IntField(r, "step")) + "_" +
                    std::to_string(IntField(r, "index")) + Extension(StrField(r, "mime")));
  }
  ProgressReport progress("fetching", "files", int64_t(rows->size()), o.progress);
  // Rows whose blob the server does not hold (yet): the others are fetched, these named at the
  // end, and the command fails then (a later get fetches them, skipping what it has).
  std::vector<std::string> missing;
  // Rows listed as uploaded whose file the server answers 404 for: a moment's race with the
  // upload, or a blob store that lost it (restored without its blobs); said apart.
  std::vector<std::string> absent;
  std::string absent_reason;
  int64_t files = 0, bytes = 0, kept = 0;
  for (size_t i = 0; i < rows->size(); ++i) {
    const bj::value& r = (*rows)[i];
    const std::string& path = paths[i];
    const std::string url = StrField(r, "url"), sha = StrField(r, "sha256");
    const bj::value* up = r.as_object().if_contains("uploaded");
    if (sha.empty() || (up != nullptr && up->is_bool() && !up->as_bool())) {
      missing.push_back(RowName(r));
      progress.Advance(1);
      continue;
    }
    if (AlreadyThere(fs, path, IntField(r, "size", -1), sha)) {
      ++kept;
      progress.Advance(1);
      continue;
    }
    auto resp = client.Send("GET", url);
    if (!resp.ok() && resp.status().code() == StatusCode::kNotFound) {
      absent.push_back(RowName(r));
      if (absent_reason.empty()) absent_reason = resp.status().message();
      progress.Advance(1);
      continue;
    }
    if (!resp.ok()) {
      progress.Finish();
      return Fail(resp.status());
    }
    if (Sha256::Hex(resp->body) != sha) {
      progress.Finish();
      return Fail(Status::Corruption(RowName(r) + ": the bytes do not match their sha256 " + sha));
    }
    Status s = MakeDirs(fs, path.substr(0, path.rfind('/')));
    if (s.ok()) s = wal::WriteFileAtomically(fs, path, resp->body);
    if (!s.ok()) {
      progress.Finish();
      return Fail(s);
    }
    ++files;
    bytes += int64_t(resp->body.size());
    progress.Advance(1, int64_t(resp->body.size()));
  }
  progress.Finish();
  std::fprintf(stderr, "%lld file(s), %lld bytes into %s", static_cast<long long>(files),
               static_cast<long long>(bytes), o.out.c_str());
  if (kept > 0) {
    std::fprintf(stderr, "; %lld already there (same size and SHA-256), skipped",
                 static_cast<long long>(kept));
  }
  std::fputc('\n', stderr);
  auto named = [](const std::vector<std::string>& rows) {
    constexpr size_t kNamed = 10;
    std::string names;
    for (size_t i = 0; i < rows.size() && i < kNamed; ++i) names += (i ? ", " : "") + rows[i];
    if (rows.size() > kNamed) names += ", and " + std::to_string(rows.size() - kNamed) + " more";
    return names;
  };
  if (!missing.empty()) {
    std::fprintf(stderr,
                 "cohort media: %zu row(s) not uploaded to the server (yet), not fetched: %s; "
                 "get again later to fetch them\n",
                 missing.size(), named(missing).c_str());
  }
  if (!absent.empty()) {
    std::fprintf(stderr,
                 "cohort media: %zu row(s) listed as uploaded whose file the server does not "
                 "have (%s), not fetched: %s; a get moments after the upload can meet this (get "
                 "again); if it stays, the server's blob store lacks these files (a store "
                 "restored without its blobs: docs/operations.md, \"Backups\")\n",
                 absent.size(), absent_reason.c_str(), named(absent).c_str());
  }
  return missing.empty() && absent.empty() ? 0 : 1;
}

int RunMedia(const MediaOpts& o, bool get) {
  auto client = ReadClient::Open();
  if (!client.ok()) return Fail(client.status());
  auto ref = (*client)->ParseRun(o.run);
  if (!ref.ok()) return Fail(ref.status());
  return get ? Get(**client, *ref, o) : List(**client, *ref, o);
}

void AddFilters(CLI::App* cmd, MediaOpts* o) {
  cmd->add_option("run", o->run, "entity/project/run_id or project/run_id")->required();
  cmd->add_option("-k,--key", o->keys,
                  "Only these keys (comma-separated; \\, for a comma in a key)");
  cmd->add_option("-l,--label", o->labels,
                  "Only these writers (comma-separated labels; \\, for a comma in a label)");
  cmd->add_option("--min-step", o->min_step, "First step");
  cmd->add_option("--max-step", o->max_step, "Last step");
}

}  // namespace

Runner AddMediaCommand(CLI::App& app) {
  auto o = std::make_shared<MediaOpts>();
  auto* media = app.add_subcommand("media", "List or download a run's images, audio, video, "
                                            "html and tables");
  media->require_subcommand(1);
  auto* ls = media->add_subcommand("ls", "List a run's media rows");
  AddFilters(ls, o.get());
  auto* get = media->add_subcommand("get", "Download a run's media files, checked by SHA-256");
  AddFilters(get, o.get());
  get->add_option("-o,--out", o->out, "Directory to write <key>/<writer>/<step>_<index><ext> in")
      ->capture_default_str();
  get->add_option("--progress", o->progress,
                  "auto (a bar on a terminal, else a line every 5 s), always (a bar), never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  return [media, ls, get, o]() -> int {
    if (!media->parsed()) return -1;
    return RunMedia(*o, get->parsed() && !ls->parsed());
  };
}

}  // namespace cohort::cli
