// `cohort artifact ls|show|get|put` (docs/cli.md): artifact collections and versions from a
// terminal, verified downloads, and uploads of a file or directory as a new version straight over
// HTTP (docs/artifacts.md). The byte moving is artifact_transfer.cc.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <set>

#include "agent/hash_cache.h"
#include "cli/artifact_transfer.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "cli/read_client.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/text_encoding.h"
#include "core/user_config.h"

namespace cohort::cli {
namespace {

namespace bj = boost::json;

int Fail(const char* cmd, const Status& s) {
  std::fprintf(stderr, "cohort artifact %s: %s\n", cmd, s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

std::string Bytes(uint64_t n) {
  char buf[32];
  if (n < 1024) return std::to_string(n) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = double(n) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  std::snprintf(buf, sizeof(buf), "%.1f %s", v, units[u]);
  return buf;
}

// Progress of a long transfer on stderr: a line that updates on a terminal (at most twice a
// second), a line every 10 s otherwise; nothing for the first 2 s.
class Progress {
 public:
  Progress(std::string what, uint64_t total) : what_(std::move(what)), total_(total) {}
  void Add(uint64_t n) {
    done_ += n;
    auto now = Clock::now();
    if (now - start_ < std::chrono::seconds(2)) return;
    if (now - last_ < (tty_ ? std::chrono::milliseconds(500) : std::chrono::seconds(10))) return;
    last_ = now;
    Print(tty_ ? "" : "\n");
  }
  void Finish() {
    if (shown_) Print("\n");
  }

 private:
  using Clock = std::chrono::steady_clock;
  void Print(const char* end) {
    double s = std::chrono::duration<double>(Clock::now() - start_).count();
    std::fprintf(stderr, "%scohort: %s: %s / %s, %.1f MiB/s%s", tty_ ? "\r\x1b[2K" : "",
                 what_.c_str(), Bytes(done_).c_str(), Bytes(total_).c_str(),
                 double(done_) / (1 << 20) / std::max(s, 1e-3), end);
    std::fflush(stderr);
    shown_ = true;
  }
  std::string what_;
  uint64_t total_, done_ = 0;
  bool tty_ = isatty(2) != 0;
  bool shown_ = false;
  Clock::time_point start_ = Clock::now(), last_{};
};

const bj::array* ArrayField(const bj::value& v, std::string_view key) {
  if (!v.is_object()) return nullptr;
  const bj::value* f = v.as_object().if_contains(key);
  return f && f->is_array() ? &f->as_array() : nullptr;
}

std::string Join(const bj::array* a) {
  std::string out;
  if (!a) return out;
  for (const bj::value& s : *a) {
    if (!s.is_string()) continue;
    if (!out.empty()) out += ",";
    out += std::string(s.get_string());
  }
  return out;
}

int RunLs(const std::string& project_text) {
  auto client = ReadClient::Open();
  if (!client.ok()) return Fail("ls", client.status());
  auto project = ParseProject(**client, project_text);
  if (!project.ok()) return Fail("ls", project.status());
  auto res = (*client)->Get("/api/v1/artifacts/" + PercentEncode(project->first) + "/" +
                            PercentEncode(project->second));
  if (!res.ok()) return Fail("ls", res.status());
  const bj::array* collections = ArrayField(*res, "collections");
  Table t({"NAME", "TYPE", "VERSIONS", "LATEST", "ALIASES", "SIZE", "UPDATED"});
  if (collections) {
    for (const bj::value& c : *collections) {
      const bj::value* latest = c.as_object().if_contains("latest");
      bool has_latest = latest && latest->is_object();
      t.AddRow({StrField(c, "name"), StrField(c, "type"),
                std::to_string(IntField(c, "version_count")),
                has_latest ? StrField(*latest, "version") : "-",
                has_latest ? Join(ArrayField(*latest, "aliases")) : "-",
                has_latest ? Bytes(uint64_t(IntField(*latest, "size"))) : "-",
                FormatTime(IntField(c, "updated_ms"))});
    }
  }
  if (t.rows() == 0) {
    std::fprintf(stderr, "no artifacts in %s/%s\n", project->first.c_str(),
                 project->second.c_str());
    return 0;
  }
  t.Print(stdout);
  return 0;
}

int RunShow(const std::string& text, bool as_json) {
  auto client = ReadClient::Open();
  if (!client.ok()) return Fail("show", client.status());
  auto ref = ParseArtifactRef(**client, text);
  if (!ref.ok()) return Fail("show", ref.status());
  auto res = (*client)->Get(ref->VersionPath());
  if (!res.ok()) return Fail("show", res.status());
  const bj::value& v = *res;
  if (as_json) {
    std::printf("%s\n", CompactJson(v).c_str());
    return 0;
  }
  std::printf("%s/%s/%s:%s\n", StrField(v, "entity").c_str(), StrField(v, "project").c_str(),
              StrField(v, "name").c_str(), StrField(v, "version").c_str());
  std::printf("  type         %s\n", StrField(v, "type").c_str());
  std::printf("  aliases      %s\n", Join(ArrayField(v, "aliases")).c_str());
  std::printf("  digest       %s\n", StrField(v, "digest").c_str());
  std::printf("  size         %s in %lld files\n", Bytes(uint64_t(IntField(v, "size"))).c_str(),
              static_cast<long long>(IntField(v, "file_count")));
  std::printf("  created      %s\n", FormatTime(IntField(v, "created_ms")).c_str());
  std::string run = StrField(v, "run"), writer = StrField(v, "writer");
  if (!run.empty()) {
    std::printf("  logged by    run %s%s\n", run.c_str(),
                writer.empty() ? "" : (" (writer " + writer + ")").c_str());
  }
  if (std::string d = StrField(v, "description"); !d.empty()) {
    std::printf("  description  %s\n", d.c_str());
  }
  if (const bj::value* m = v.as_object().if_contains("metadata");
      m && m->is_object() && !m->as_object().empty()) {
    std::printf("  metadata     %s\n", CompactJson(*m).c_str());
  }
  const bj::array* files = ArrayField(v, "files");
  Table ft({"PATH", "SIZE", "SHA256 / REFERENCE"});
  if (files) {
    for (const bj::value& f : *files) {
      std::string ref_uri = StrField(f, "ref");
      int64_t size = IntField(f, "size", -1);
      ft.AddRow({StrField(f, "path"), size < 0 ? "-" : Bytes(uint64_t(size)),
                 ref_uri.empty() ? StrField(f, "sha256") : ref_uri});
    }
  }
  std::printf("\nfiles (%zu)\n", ft.rows());
  if (ft.rows() > 0) ft.Print(stdout, "  ");
  const bj::array* used = ArrayField(v, "used_by");
  if (used && !used->empty()) {
    Table ut({"RUN", "WRITER", "USED"});
    for (const bj::value& u : *used) {
      ut.AddRow({StrField(u, "run"), StrField(u, "writer"), FormatTime(IntField(u, "used_ms"))});
    }
    std::printf("\nused by (%zu)\n", ut.rows());
    ut.Print(stdout, "  ");
  }
  return 0;
}

int RunGet(const std::string& text, std::string root) {
  auto client = ReadClient::Open();
  if (!client.ok()) return Fail("get", client.status());
  auto ref = ParseArtifactRef(**client, text);
  if (!ref.ok()) return Fail("get", ref.status());
  auto res = (*client)->Get(ref->VersionPath());
  if (!res.ok()) return Fail("get", res.status());
  ArtifactRef exact = *ref;
  exact.version = StrField(*res, "version");  // an alias that moves meanwhile changes nothing
  if (root.empty()) root = "artifacts/" + exact.name + ":" + exact.version;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  wal::FileSystem* fs = wal::FileSystem::Default();
  if (Status s = fs->CreateDir(root); !s.ok()) return Fail("get", s);
  const bj::array* files = ArrayField(*res, "files");
  uint64_t total = 0;
  std::vector<const bj::value*> blobs;
  int refs = 0;
  static const bj::array kNone;
  for (const bj::value& f : files ? *files : kNone) {  // pointers into *files are kept below
    if (!StrField(f, "ref").empty()) {
      ++refs;
      continue;
    }
    blobs.push_back(&f);
    total += uint64_t(IntField(f, "size"));
  }
  Progress progress("downloading " + exact.Text(), total);
  int fetched = 0, present = 0;
  for (const bj::value* f : blobs) {
    std::string path = StrField(*f, "path"), sha = StrField(*f, "sha256");
    uint64_t size = uint64_t(IntField(*f, "size"));
    auto dest = PathUnder(root, path, "the manifest's path");
    if (!dest.ok()) return Fail("get", dest.status());
    if (auto have = fs->FileSize(*dest); have.ok() && *have == size) {
      auto digest = agent::HashFileCached(fs, *dest, UserCacheDir());
      if (digest.ok() && digest->sha256 == sha) {  // already there, intact
        ++present;
        progress.Add(size);
        continue;
      }
    }
    std::string url = exact.VersionPath() + "/files/" + PercentEncode(path, true);
    Status s =
        DownloadVerified(**client, fs, url, *dest, sha, size, [&](uint64_t n) { progress.Add(n); });
    if (!s.ok()) {
      progress.Finish();
      return Fail("get", s);
    }
    ++fetched;
  }
  progress.Finish();
  std::fprintf(stderr, "%s: %d files downloaded and verified, %d already present", root.c_str(),
               fetched, present);
  if (refs > 0) std::fprintf(stderr, "; %d references not downloaded (see `show`)", refs);
  std::fprintf(stderr, "\n");
  std::printf("%s\n", root.c_str());
  return 0;
}

struct PutOpts {
  std::string path, name, type, project, description, metadata;
  std::vector<std::string> aliases;
};

// Files of this many parts or more are hashed while they are sent (RunPut).
constexpr uint64_t kHashWhileSendingParts = 8;

Status ChangedWhileRead(const std::string& path) {
  return Status::FailedPrecondition(path +
                                    ": the file changed while it was read; put it again once it "
                                    "is written");
}

// kFailedPrecondition naming both types when `ref`'s collection exists with a type other than
// `type` (the project's collection list: it holds collections whose versions were all deleted
// too, and no manifests); Ok when it does not exist yet.
Status CheckCollectionType(ReadClient& client, const ArtifactRef& ref, const std::string& type) {
  auto res = client.Get("/api/v1/artifacts/" + PercentEncode(ref.entity) + "/" +
                        PercentEncode(ref.project));
  if (!res.ok()) return res.status().code() == StatusCode::kNotFound ? Status::Ok() : res.status();
  const bj::value* list = res->is_object() ? res->as_object().if_contains("collections") : nullptr;
  if (list == nullptr || !list->is_array()) return Status::Ok();  // the commit checks it
  for (const bj::value& c : list->as_array()) {
    if (StrField(c, "name") != ref.name) continue;
    const std::string has = StrField(c, "type");
    if (has == type) return Status::Ok();
    return Status::FailedPrecondition("artifact " + ref.entity + "/" + ref.project + "/" +
                                      ref.name + " is of type \"" + has + "\", not \"" + type +
                                      "\" (--type " + has + ", or another --name); nothing sent");
  }
  return Status::Ok();
}

int RunPut(const PutOpts& o) {
  wal::FileSystem* fs = wal::FileSystem::Default();
  bj::value metadata = bj::object();
  if (!o.metadata.empty()) {
    auto parsed = json::Parse(o.metadata);
    if (!parsed.ok() || !parsed->is_object()) {
      return Fail("put", Status::InvalidArgument("--metadata: expected a JSON object, got '" +
                                                 o.metadata + "'"));
    }
    metadata = std::move(*parsed);
  }
  auto client = ReadClient::Open();
  if (!client.ok()) return Fail("put", client.status());
  auto project = ParseProject(**client, o.project);
  if (!project.ok()) return Fail("put", project.status());
  auto ref = ParseArtifactRef(**client, project->first + "/" + project->second + "/" + o.name);
  if (!ref.ok() || o.name.find(':') != std::string::npos) {
    return Fail("put",
                ref.ok() ? Status::InvalidArgument("--name: no ':' (use --alias)") : ref.status());
  }
  // A collection of another type refuses the commit: refused here, before anything is hashed or
  // sent (a version of that type would have been uploaded for nothing).
  if (Status s = CheckCollectionType(**client, *ref, o.type); !s.ok()) return Fail("put", s);
  auto files = CollectFiles(fs, o.path);
  if (!files.ok()) return Fail("put", files.status());
  uint64_t total = 0;
  for (const LocalFile& f : *files) total += f.size;
  // Through the hash cache (docs/formats.md, "Hash cache"): a file put or logged before and
  // unchanged since is not read again. A file of kHashWhileSendingParts parts or more goes as an
  // upload by id (UploadBlobById): hashed while it is sent when the cache does not know it, and
  // continued by a later put when interrupted. The others are hashed first, so that a put of
  // bytes the entity holds sends nothing (a large one sends what went before the hash ended).
  const std::string cache = UserCacheDir();
  std::set<std::string> from_cache;  // files whose digest the cache gave
  std::vector<std::string> upload_ids(files->size());  // "": by digest
  {
    uint64_t to_hash = 0;
    for (size_t i = 0; i < files->size(); ++i) {
      LocalFile& f = (*files)[i];
      auto st = fs->Stat(f.disk_path);
      if (f.size < kHashWhileSendingParts * limits::kBlobPartBytes || !st.ok() ||
          st->size != f.size) {
        to_hash += f.size;
        continue;
      }
      upload_ids[i] = PutUploadId(ref->entity, f.disk_path, *st);
      if (auto cached = agent::LookupHash(fs, cache, *st)) {
        f.sha256 = *cached;
        from_cache.insert(f.disk_path);
      }
    }
    Progress hashing("hashing " + o.path, to_hash);
    for (size_t i = 0; i < files->size(); ++i) {
      if (!upload_ids[i].empty()) continue;
      LocalFile& f = (*files)[i];
      bool hit = false;
      auto digest = agent::HashFileCached(
          fs, f.disk_path, cache, {}, [&](int64_t n) { hashing.Add(uint64_t(n)); }, &hit);
      if (!digest.ok()) return Fail("put", digest.status());
      if (uint64_t(digest->size) != f.size) return Fail("put", ChangedWhileRead(f.disk_path));
      f.sha256 = digest->sha256;
      if (hit) from_cache.insert(f.disk_path);
    }
    hashing.Finish();
  }
  Progress uploading("uploading " + o.path, total);
  agent::PartPool parts(agent::ParallelPartsFromEnvironment(), {}, fs,
                        agent::PartDelayFromEnvironment());
  uint64_t sent_bytes = 0;
  for (size_t i = 0; i < files->size(); ++i) {
    LocalFile& f = (*files)[i];
    const auto add = [&](uint64_t n) { uploading.Add(n); };
    const auto upload = [&]() -> Result<UploadResult> {
      if (upload_ids[i].empty()) return UploadBlob(**client, &parts, ref->entity, f, add);
      return UploadBlobById(
          **client, &parts, ref->entity, &f, upload_ids[i],
          [fs, &f, &cache](const std::function<bool()>& stop) -> Result<std::string> {
            auto digest = agent::HashFileCached(fs, f.disk_path, cache, {}, {}, nullptr, stop);
            if (!digest.ok()) return digest.status();
            if (uint64_t(digest->size) != f.size) return ChangedWhileRead(f.disk_path);
            return digest->sha256;
          },
          add);
    };
    Result<UploadResult> up = upload();
    if (!up.ok() && up.status().code() == StatusCode::kInvalidArgument &&
        (from_cache.count(f.disk_path) || !upload_ids[i].empty())) {
      // The server found other bytes than the digest's: a cached digest of a file rewritten
      // without moving its modification time, or the parts of an earlier put of such a file
      // under the same upload id. The cache entry goes, the file is read again, and the upload
      // is made again, once (the server dropped the parts it had).
      if (auto st = fs->Stat(f.disk_path); st.ok()) agent::ForgetHash(fs, cache, *st);
      from_cache.erase(f.disk_path);
      f.sha256.clear();
      if (upload_ids[i].empty()) {
        auto digest = agent::HashFileCached(fs, f.disk_path, cache);
        if (!digest.ok()) return Fail("put", digest.status());
        f.sha256 = digest->sha256;
      }
      up = upload();
    }
    if (!up.ok()) {
      uploading.Finish();
      return Fail("put", Status(up.status().code(), f.name + ": " + up.status().message()));
    }
    sent_bytes += up->bytes_sent;
  }
  uploading.Finish();
  bj::array manifest;
  for (const LocalFile& f : *files) {
    manifest.push_back(bj::object{{"path", f.name}, {"sha256", f.sha256}, {"size", f.size}});
  }
  bj::array aliases;
  for (const std::string& a : o.aliases) aliases.push_back(bj::string(a));
  bj::object body{{"type", o.type},
                  {"description", o.description},
                  {"metadata", std::move(metadata)},
                  {"aliases", std::move(aliases)},
                  {"files", std::move(manifest)}};
  auto res = (*client)->Post(ref->CollectionPath(), body);
  if (!res.ok() && res.status().message().find("upload it first") != std::string::npos) {
    // A blob found held when its file's turn came was forgotten by gc before the commit (docs/
    // artifacts.md, "Garbage collection"): each file is asked for again (those held are not
    // sent), the missing one uploaded, and the commit made once more.
    std::fprintf(stderr, "put: %s; uploading it again\n", res.status().message().c_str());
    for (const LocalFile& f : *files) {
      Result<UploadResult> up = UploadBlob(**client, &parts, ref->entity, f, [](uint64_t) {});
      if (!up.ok())
        return Fail("put", Status(up.status().code(), f.name + ": " + up.status().message()));
      sent_bytes += up->bytes_sent;
    }
    res = (*client)->Post(ref->CollectionPath(), body);
  }
  if (!res.ok()) return Fail("put", res.status());
  const bj::value* created = res->as_object().if_contains("created");
  bool is_new = created && created->is_bool() && created->get_bool();
  std::fprintf(stderr, "%s: %zu files, %s (%s sent)%s\n", StrField(*res, "version").c_str(),
               files->size(), Bytes(total).c_str(), Bytes(sent_bytes).c_str(),
               is_new ? "" : "; the same files as the latest version: no new version");
  std::printf("%s/%s/%s:%s\n", ref->entity.c_str(), ref->project.c_str(), ref->name.c_str(),
              StrField(*res, "version").c_str());
  return 0;
}

}  // namespace

Runner AddArtifactCommand(CLI::App& app) {
  auto ls_project = std::make_shared<std::string>();
  auto show_path = std::make_shared<std::string>();
  auto show_json = std::make_shared<bool>(false);
  auto get_path = std::make_shared<std::string>();
  auto get_root = std::make_shared<std::string>();
  auto put = std::make_shared<PutOpts>();
  auto* cmd = app.add_subcommand("artifact", "List, show, download and upload artifacts");
  cmd->require_subcommand(1);
  auto* ls = cmd->add_subcommand("ls", "List the artifact collections of a project");
  ls->add_option("project", *ls_project, "entity/project or project")->required();
  auto* show = cmd->add_subcommand("show", "Show one version: aliases, files, lineage");
  show->add_option("artifact", *show_path, "entity/project/name[:alias|:vN] (default :latest)")
      ->required();
  show->add_flag("--json", *show_json, "Print the version as the API answers it");
  auto* get = cmd->add_subcommand("get", "Download a version's files, verified (resumable)");
  get->add_option("artifact", *get_path, "entity/project/name[:alias|:vN] (default :latest)")
      ->required();
  get->add_option("--root", *get_root, "Directory (default ./artifacts/<name>:<version>)");
  auto* p = cmd->add_subcommand("put", "Upload a file or directory as a new version");
  p->add_option("path", put->path, "A file or a directory (every file under it)")->required();
  p->add_option("--name", put->name, "Collection name")->required();
  p->add_option("--type", put->type, "Collection type (model, dataset, ...)")->required();
  p->add_option("-p,--project", put->project, "entity/project or project")->required();
  p->add_option("--alias", put->aliases, "Alias to set on the version (repeatable)");
  p->add_option("--description", put->description, "Description of the version");
  p->add_option("--metadata", put->metadata, "Metadata, a JSON object");
  return [=]() -> int {
    if (!cmd->parsed()) return -1;
    if (ls->parsed()) return RunLs(*ls_project);
    if (show->parsed()) return RunShow(*show_path, *show_json);
    if (get->parsed()) return RunGet(*get_path, *get_root);
    return RunPut(*put);
  };
}

}  // namespace cohort::cli
