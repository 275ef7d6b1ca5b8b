// Routes: artifacts (docs/artifacts.md) — log a version, list collections and versions, read a
// version (manifest, aliases, metadata, lineage), download its files (with Range), record a use,
// move aliases, delete versions, and a run's artifacts.
#include <charconv>
#include <utility>

#include "blob/blob_store.h"
#include "core/clock.h"
#include "core/text_encoding.h"
#include "server/api/context.h"

namespace cohort::api {
namespace {

// A file asked for whole (no Range) is read into memory up to this size; a larger one is sent
// in parts of this size as they are read (the SDK and the CLI ask for ranges anyway).
// Larger answers (an SDK's 8 MiB ranges included) are streamed, in parts of
// limits::kBlobPartBytes counted in the server's response budget.
constexpr uint64_t kMaxWholeDownloadBytes = uint64_t{1} << 20;
// What a streamed download reads before it answers (ServeBlobBytes).
constexpr uint64_t kFirstPieceBytes = uint64_t{64} << 10;

std::string ArtifactPath(const store::ArtifactVersion& v) {
  return "/api/v1/artifacts/" + PercentEncode(v.entity, true) + "/" +
         PercentEncode(v.project, true) + "/" + PercentEncode(v.name, true) + "/" +
         VersionName(v.index);
}

bj::array Strings(const std::vector<std::string>& v) {
  bj::array out;
  for (const std::string& s : v) out.push_back(bj::string(s));
  return out;
}

bj::object VersionJson(const store::ArtifactVersion& v) {
  bj::object o{{"entity", v.entity},
               {"project", v.project},
               {"name", v.name},
               {"type", v.type},
               {"version", VersionName(v.index)},
               {"index", v.index},
               {"digest", v.digest},
               {"size", v.size},
               {"file_count", v.file_count},
               {"aliases", Strings(v.aliases)},
               {"metadata", ParseStoredJson(v.metadata_json)},
               {"created_ms", v.created_ms}};
  o["description"] = v.description ? bj::value(bj::string(*v.description)) : bj::value(nullptr);
  o["run"] = v.run_id.empty() ? bj::value(nullptr) : bj::value(bj::string(v.run_id));
  o["writer"] = v.writer.empty() ? bj::value(nullptr) : bj::value(bj::string(v.writer));
  return o;
}

bj::object FileJson(const store::ArtifactVersion& v, const store::ArtifactFile& f) {
  bj::object o{{"path", f.path}};
  o["size"] = f.size >= 0 ? bj::value(f.size) : bj::value(nullptr);
  if (f.ref.empty()) {
    o["sha256"] = f.sha256;
    o["url"] = ArtifactPath(v) + "/files/" + PercentEncode(f.path, true);
  } else {
    o["ref"] = f.ref;
    o["digest"] = f.ref_digest.empty() ? bj::value(nullptr) : bj::value(bj::string(f.ref_digest));
  }
  return o;
}

struct CollectionPath {
  std::string entity, project, name;
};

Result<CollectionPath> ProjectFromPath(const http::HttpRequest& req, const AuthContext& who) {
  COHORT_ASSIGN_OR_RETURN(store::RunRef ref, RunRefFromPath(req, who));
  CollectionPath p{ref.entity, ref.project, ""};
  if (req.path_params.count("name")) {
    p.name = req.PathParam("name");
    COHORT_RETURN_IF_ERROR(ValidateArtifactName("artifact name", p.name));
  }
  return p;
}

Result<store::ArtifactFile> ReadManifestEntry(const bj::value& v, size_t i) {
  if (!v.is_object()) {
    return Status::InvalidArgument("files[" + std::to_string(i) + "]: expected an object");
  }
  json::FieldReader r(v.as_object(), "files[" + std::to_string(i) + "]");
  r.RejectUnknown({"path", "sha256", "size", "ref", "digest"});
  store::ArtifactFile f;
  f.path = r.String("path", 1024);
  f.sha256 = r.OptString("sha256", 64).value_or("");
  f.size = r.OptInt("size").value_or(-1);
  f.ref = r.OptString("ref", 4096).value_or("");
  f.ref_digest = r.OptString("digest", 512).value_or("");
  if (!r.ok()) return r.status();
  if (f.ref.empty() && !f.ref_digest.empty()) {
    return Status::InvalidArgument("files[" + std::to_string(i) +
                                   "]: digest is for references; a file has sha256");
  }
  return f;
}

Result<store::ArtifactCommit> ReadCommit(const http::HttpRequest& req, const CollectionPath& p,
                                         const ApiLimits& limits) {
  COHORT_ASSIGN_OR_RETURN(bj::object body, ParseBodyObject(req));
  json::FieldReader r(body, "");
  r.RejectUnknown({"type", "description", "metadata", "aliases", "run", "writer", "files"});
  store::ArtifactCommit c;
  c.entity = p.entity;
  c.project = p.project;
  c.name = p.name;
  c.type = r.String("type", limits::kMaxArtifactNameBytes);
  c.description = r.OptString("description", limits::kMaxArtifactDescriptionBytes);
  if (const bj::object* meta = r.OptObject("metadata")) c.metadata_json = bj::serialize(*meta);
  c.aliases = r.OptStringArray("aliases", limits::kMaxArtifactNameBytes)
                  .value_or(std::vector<std::string>{});
  c.run_id = r.OptString("run", 128).value_or("");
  c.writer = r.OptString("writer", limits::kMaxLabelBytes).value_or("");
  const bj::array* files = r.OptArray("files");
  if (!r.ok()) return r.status();
  if (files == nullptr) return Status::InvalidArgument("files: required (a list, may be empty)");
  if (files->size() > limits::kMaxArtifactFiles) {
    return Status::InvalidArgument("files: at most " + std::to_string(limits::kMaxArtifactFiles) +
                                   " per version; split the artifact");
  }
  c.files.reserve(files->size());
  int64_t total = 0;  // the version's size: the files' sizes must add up in an int64
  for (size_t i = 0; i < files->size(); ++i) {
    COHORT_ASSIGN_OR_RETURN(store::ArtifactFile f, ReadManifestEntry((*files)[i], i));
    if (f.ref.empty() && f.size > 0) {  // references are not stored here: no limit
      COHORT_RETURN_IF_ERROR(CheckArtifactFileSize(limits, "file \"" + f.path + "\"",
                                                   uint64_t(f.size)));
    }
    if (f.size > 0 && __builtin_add_overflow(total, f.size, &total)) {
      return Status::InvalidArgument("files[" + std::to_string(i) + "] (\"" + f.path +
                                     "\"): the files' sizes add up past 2^63 bytes");
    }
    c.files.push_back(std::move(f));
  }
  c.now_ms = NowMillis();
  return c;
}

// Every blob of the commit is readable (a recorded blob whose publication failed is not).
Status CheckBlobsReadable(ApiContext* ctx, const store::ArtifactCommit& c) {
  for (const store::ArtifactFile& f : c.files) {
    if (!f.ref.empty()) continue;
    Result<uint64_t> stored = ctx->blobs->Stat(f.sha256);
    if (!stored.ok()) {
      if (stored.status().code() != StatusCode::kNotFound) return stored.status();
      return Status::FailedPrecondition("file \"" + f.path + "\" (blob " + f.sha256 +
                                        ") is not uploaded; upload it first");
    }
  }
  return Status::Ok();
}

// "bytes=a-b", "bytes=a-", "bytes=-n" of a file of `size` bytes into [*first, *last];
// kOutOfRange-like errors as kInvalidArgument with the 416 decided by the caller.
bool ParseRange(std::string_view header, uint64_t size, uint64_t* first, uint64_t* last) {
  constexpr std::string_view kPrefix = "bytes=";
  if (!header.starts_with(kPrefix) || size == 0) return false;
  header.remove_prefix(kPrefix.size());
  if (header.find(',') != std::string_view::npos) return false;  // one range only
  size_t dash = header.find('-');
  if (dash == std::string_view::npos) return false;
  auto num = [](std::string_view s, uint64_t* out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size();
  };
  std::string_view a = header.substr(0, dash), b = header.substr(dash + 1);
  uint64_t x = 0, y = 0;
  if (a.empty()) {
    if (!num(b, &y) || y == 0) return false;
    *first = y >= size ? 0 : size - y;
    *last = size - 1;
    return true;
  }
  if (!num(a, &x) || x >= size) return false;
  if (b.empty()) {
    y = size - 1;
  } else if (!num(b, &y) || y < x) {
    return false;
  }
  *first = x;
  *last = std::min(y, size - 1);
  return true;
}

}  // namespace

http::HttpResponse ServeBlobBytes(ApiContext* ctx, const http::HttpRequest& req,
                                  const std::string& sha256, uint64_t size,
                                  const std::string& path) {
  const store::ArtifactFile f{.path = path, .sha256 = sha256, .size = int64_t(size)};
  uint64_t first = 0, last = size == 0 ? 0 : size - 1;
  bool ranged = false;
  std::string_view range = req.Header("range");
  if (!range.empty()) {
    if (!ParseRange(range, size, &first, &last)) {
      auto resp = http::HttpResponse::Error(416, "range_not_satisfiable",
                                            "Range: expected one range bytes=a-b within the " +
                                                std::to_string(size) + " bytes of the file");
      resp.headers.emplace_back("Content-Range", "bytes */" + std::to_string(size));
      return resp;
    }
    ranged = true;
  }
  const uint64_t length = size == 0 ? 0 : last - first + 1;
  http::HttpResponse resp;
  if (length > kMaxWholeDownloadBytes) {
    // Sent in parts as they are read: a download or range of any size holds one part in memory,
    // its share of the server's --max-response-bytes-in-flight. Its first bytes are read before
    // the status is chosen: a blob store that does not answer, or a blob that is not there, is
    // the usual error response (503 with Retry-After, 404), not a 200 cut off after its head. A
    // small read (kFirstPieceBytes), as it is held before the response's share is taken.
    auto head_bytes = ctx->blobs->Read(sha256, first, std::min(kFirstPieceBytes, length));
    if (!head_bytes.ok()) return ErrorResponse(head_bytes.status());
    if (head_bytes->empty()) {
      return ErrorResponse(Status::Corruption("blob " + f.sha256 + " is shorter than recorded"));
    }
    resp = http::HttpResponse::Text(ranged ? 206 : 200, "", "application/octet-stream");
    resp.streamed_length = length;
    resp.streamed_piece_bytes = limits::kBlobPartBytes;
    resp.body_source = [blobs = ctx->blobs, sha256, end = last + 1,
                        offset = first + head_bytes->size(),
                        pending = std::move(*head_bytes)]() mutable -> Result<std::string> {
      if (!pending.empty()) return std::exchange(pending, std::string());
      COHORT_ASSIGN_OR_RETURN(
          std::string part,
          blobs->Read(sha256, offset, std::min<uint64_t>(limits::kBlobPartBytes, end - offset)));
      offset += part.size();
      return part;
    };
  } else {
    auto bytes = ctx->blobs->Read(f.sha256, first, length);
    if (!bytes.ok()) return ErrorResponse(bytes.status());
    if (bytes->size() != length) {
      return ErrorResponse(Status::Corruption("blob " + f.sha256 + " is shorter than recorded"));
    }
    resp = http::HttpResponse::Text(ranged ? 206 : 200, std::move(*bytes),
                                    "application/octet-stream");
  }
  resp.headers.emplace_back("Accept-Ranges", "bytes");
  resp.headers.emplace_back("ETag", "\"" + f.sha256 + "\"");
  resp.headers.emplace_back("X-Content-Type-Options", "nosniff");
  resp.headers.emplace_back("Content-Security-Policy", "default-src 'none'; sandbox");
  std::string base = f.path.substr(f.path.rfind('/') + 1);
  resp.headers.emplace_back("Content-Disposition",
                            "attachment; filename*=UTF-8''" + PercentEncode(base, false));
  if (ranged) {
    resp.headers.emplace_back("Content-Range", "bytes " + std::to_string(first) + "-" +
                                                   std::to_string(last) + "/" +
                                                   std::to_string(size));
  }
  return resp;
}

namespace {

http::HttpResponse ServeFile(ApiContext* ctx, const http::HttpRequest& req,
                             const store::ArtifactFile& f) {
  if (!f.ref.empty()) {
    return ErrorResponse(Status::FailedPrecondition(
        "\"" + f.path + "\" is a reference to " + f.ref + "; fetch it from there"));
  }
  return ServeBlobBytes(ctx, req, f.sha256, uint64_t(f.size), f.path);
}

}  // namespace

void RegisterArtifactRoutes(http::Router& r, ApiContext* ctx) {
  const std::string project = "/api/v1/artifacts/{entity}/{project}";
  const std::string collection = project + "/{name}";
  const std::string version = collection + "/{version}";

  r.Add("GET", project, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto p = ProjectFromPath(req, who);
          if (!p.ok()) return ErrorResponse(p.status());
          auto cols = ctx->store->ListArtifactCollections(p->entity, p->project);
          if (!cols.ok()) return ErrorResponse(cols.status());
          bj::array out;
          for (const store::ArtifactCollection& c : *cols) {
            bj::object o{{"name", c.name},
                         {"type", c.type},
                         {"version_count", c.version_count},
                         {"created_ms", c.created_ms},
                         {"updated_ms", c.updated_ms}};
            o["latest"] = c.latest ? bj::value(VersionJson(*c.latest)) : bj::value(nullptr);
            out.push_back(std::move(o));
          }
          return JsonResponse(200, bj::object{{"collections", std::move(out)}});
        }));

  r.Add("POST", collection, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          if (ctx->blobs == nullptr) {
            return ErrorResponse(Status::Unavailable("this server has no blob store"));
          }
          auto p = ProjectFromPath(req, who);
          if (!p.ok()) return ErrorResponse(p.status());
          auto commit = ReadCommit(req, *p, ctx->limits);
          if (!commit.ok()) return ErrorResponse(commit.status());
          if (Status s = CheckBlobsReadable(ctx, *commit); !s.ok()) return ErrorResponse(s);
          auto logged = ctx->store->CommitArtifact(*commit);
          if (!logged.ok()) return ErrorResponse(logged.status());
          bj::object out = VersionJson(logged->version);
          out["created"] = logged->created;
          return JsonResponse(logged->created ? 201 : 200, out);
        }));

  r.Add("GET", collection + "/versions",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto p = ProjectFromPath(req, who);
          if (!p.ok()) return ErrorResponse(p.status());
          auto versions = ctx->store->ListArtifactVersions(p->entity, p->project, p->name);
          if (!versions.ok()) return ErrorResponse(versions.status());
          bj::array out;
          for (const store::ArtifactVersion& v : *versions) out.push_back(VersionJson(v));
          return JsonResponse(200, bj::object{{"versions", std::move(out)}});
        }));

  r.Add("GET", version, Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto p = ProjectFromPath(req, who);
          if (!p.ok()) return ErrorResponse(p.status());
          auto v = ctx->store->GetArtifactVersion(p->entity, p->project, p->name,
                                                  req.PathParam("version"));
          if (!v.ok()) return ErrorResponse(v.status());
          auto files = ctx->store->ListArtifactFiles(*v);
          if (!files.ok()) return ErrorResponse(files.status());
          auto uses = ctx->store->ListArtifactUses(*v);
          if (!uses.ok()) return ErrorResponse(uses.status());
          bj::object out = VersionJson(*v);
          bj::array file_list;
          for (const store::ArtifactFile& f : *files) file_list.push_back(FileJson(*v, f));
          out["files"] = std::move(file_list);
          bj::array used_by;
          for (const store::ArtifactUse& u : *uses) {
            bj::object o{{"project", u.project}, {"run", u.run_id}, {"used_ms", u.used_ms}};
            o["writer"] = u.writer.empty() ? bj::value(nullptr) : bj::value(bj::string(u.writer));
            if (u.direction == "output") {
              out["produced_by"] = std::move(o);
            } else {
              used_by.push_back(std::move(o));
            }
          }
          if (!out.contains("produced_by")) out["produced_by"] = nullptr;
          out["used_by"] = std::move(used_by);
          return JsonResponse(200, out);
        }));

  r.Add("GET", version + "/files/{path...}",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          if (ctx->blobs == nullptr) {
            return ErrorResponse(Status::Unavailable("this server has no blob store"));
          }
          auto p = ProjectFromPath(req, who);
          if (!p.ok()) return ErrorResponse(p.status());
          auto v = ctx->store->GetArtifactVersion(p->entity, p->project, p->name,
                                                  req.PathParam("version"));
          if (!v.ok()) return ErrorResponse(v.status());
          auto f = ctx->store->GetArtifactFile(*v, req.PathParam("path"));
          if (!f.ok()) return ErrorResponse(f.status());
          return ServeFile(ctx, req, *f);
        }));

  r.Add("POST", version + "/use",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto p = ProjectFromPath(req, who);
          if (!p.ok()) return ErrorResponse(p.status());
          auto body = ParseBodyObject(req);
          if (!body.ok()) return ErrorResponse(body.status());
          json::FieldReader fields(*body, "");
          fields.RejectUnknown({"run", "project", "writer"});
          std::string run = fields.String("run", 128);
          std::string run_project = fields.OptString("project", 128).value_or(p->project);
          std::string writer = fields.OptString("writer", limits::kMaxLabelBytes).value_or("");
          if (!fields.ok()) return ErrorResponse(fields.status());
          auto v = ctx->store->UseArtifact(p->project, p->name, req.PathParam("version"),
                                           store::RunRef{p->entity, run_project, run}, writer,
                                           NowMillis());
          if (!v.ok()) return ErrorResponse(v.status());
          return JsonResponse(200, VersionJson(*v));
        }));

  r.Add("PUT", collection + "/aliases/{alias}",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto p = ProjectFromPath(req, who);
          if (!p.ok()) return ErrorResponse(p.status());
          auto body = ParseBodyObject(req);
          if (!body.ok()) return ErrorResponse(body.status());
          json::FieldReader fields(*body, "");
          fields.RejectUnknown({"version"});
          std::string target = fields.String("version", 128);
          if (!fields.ok()) return ErrorResponse(fields.status());
          auto v = ctx->store->SetArtifactAlias(p->entity, p->project, p->name,
                                                req.PathParam("alias"), target);
          if (!v.ok()) return ErrorResponse(v.status());
          return JsonResponse(200, VersionJson(*v));
        }));

  r.Add("DELETE", collection + "/aliases/{alias}",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto p = ProjectFromPath(req, who);
          if (!p.ok()) return ErrorResponse(p.status());
          Status s = ctx->store->DeleteArtifactAlias(p->entity, p->project, p->name,
                                                     req.PathParam("alias"));
          if (!s.ok()) return ErrorResponse(s);
          return JsonResponse(200, bj::object{{"deleted", true}});
        }));

  r.Add("DELETE", version,
        Authed(
            ctx,
            [ctx](http::HttpRequest& req, const AuthContext& who) {
              auto p = ProjectFromPath(req, who);
              if (!p.ok()) return ErrorResponse(p.status());
              Status s = ctx->store->DeleteArtifactVersion(p->entity, p->project, p->name,
                                                           req.PathParam("version"));
              if (!s.ok()) return ErrorResponse(s);
              return JsonResponse(200, bj::object{{"deleted", true}});
            },
            /*admin_only=*/true));

  r.Add("GET", "/api/v1/runs/{entity}/{project}/{run}/artifacts",
        Authed(ctx, [ctx](http::HttpRequest& req, const AuthContext& who) {
          auto ref = RunRefFromPath(req, who);
          if (!ref.ok()) return ErrorResponse(ref.status());
          auto arts = ctx->store->ListRunArtifacts(*ref);
          if (!arts.ok()) return ErrorResponse(arts.status());
          bj::array out;
          for (const store::RunArtifact& a : *arts) {
            bj::object o = VersionJson(a.version);
            o["direction"] = a.direction;
            o["used_ms"] = a.used_ms;
            o["used_by_writer"] = a.writer.empty() ? bj::value(nullptr)
                                                   : bj::value(bj::string(a.writer));
            out.push_back(std::move(o));
          }
          return JsonResponse(200, bj::object{{"artifacts", std::move(out)}});
        }));
}

}  // namespace cohort::api
