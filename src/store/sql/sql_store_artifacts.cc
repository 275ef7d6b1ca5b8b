// SqlStore: artifacts (store.h ArtifactStore, docs/artifacts.md) and the blobs entities hold.
#include <algorithm>
#include <map>
#include <set>

#include "core/limits.h"
#include "core/sha256.h"
#include "store/run_ref.h"
#include "store/sql/sql_store.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

namespace {

using BlobRow = std::pair<std::string, int64_t>;        // sha256, size
using VersionDigest = std::pair<int64_t, std::string>;  // pk, digest

// A version with its collection, from column 0 (aliases are loaded apart).
constexpr const char* kVersionColumns =
    "v.pk, c.entity, c.project, c.name, c.type, v.idx, v.digest, v.size, v.file_count, "
    "v.description, v.metadata, v.created_ms, v.run_id, v.writer, v.client_digest, "
    "v.client_manifest";
constexpr int kVersionColumnCount = 16;
constexpr const char* kVersionFrom =
    " FROM artifact_versions v JOIN artifact_collections c ON c.pk = v.collection_pk ";

ArtifactVersion ReadVersion(const Row& row, int at = 0) {
  ArtifactVersion v;
  v.pk = row.Int(at + 0);
  v.entity = row.Text(at + 1);
  v.project = row.Text(at + 2);
  v.name = row.Text(at + 3);
  v.type = row.Text(at + 4);
  v.index = row.Int(at + 5);
  v.digest = row.Text(at + 6);
  v.size = row.Int(at + 7);
  v.file_count = row.Int(at + 8);
  if (!row.IsNull(at + 9)) v.description = row.Text(at + 9);
  v.metadata_json = row.Text(at + 10);
  v.created_ms = row.Int(at + 11);
  v.run_id = row.Text(at + 12);
  v.writer = row.Text(at + 13);
  if (!row.IsNull(at + 14)) v.client_digest = row.Text(at + 14);
  if (!row.IsNull(at + 15)) v.client_manifest = row.Text(at + 15);
  return v;
}

constexpr const char* kFileColumns = "path, sha256, size, ref, ref_digest";

ArtifactFile ReadFile(const Row& row) {
  ArtifactFile f;
  f.path = row.Text(0);
  if (!row.IsNull(1)) f.sha256 = row.Text(1);
  f.size = row.IsNull(2) ? -1 : row.Int(2);
  if (!row.IsNull(3)) f.ref = row.Text(3);
  if (!row.IsNull(4)) f.ref_digest = row.Text(4);
  return f;
}

Status LoadAliases(Conn& conn, ArtifactVersion* v) {
  COHORT_ASSIGN_OR_RETURN(
      v->aliases,
      sql::QueryAll<std::string>(
          conn, "SELECT alias FROM artifact_aliases WHERE version_pk = $1 ORDER BY alias",
          Params().Add(v->pk), [](const Row& row) { return row.Text(0); }));
  return Status::Ok();
}

Result<ArtifactVersion> LoadVersionByPk(Conn& conn, int64_t pk) {
  static const std::string kSql =
      std::string("SELECT ") + kVersionColumns + kVersionFrom + "WHERE v.pk = $1";
  COHORT_ASSIGN_OR_RETURN(
      ArtifactVersion v,
      sql::QueryOne<ArtifactVersion>(conn, kSql, Params().Add(pk),
                                     [](const Row& row) { return ReadVersion(row); },
                                     Status::NotFound("artifact version not found")));
  COHORT_RETURN_IF_ERROR(LoadAliases(conn, &v));
  return v;
}

// A version by "v<N>" or alias.
Result<ArtifactVersion> FindVersion(Conn& conn, const std::string& entity,
                                    const std::string& project, const std::string& name,
                                    const std::string& version_or_alias) {
  static const std::string kByIndex = std::string("SELECT ") + kVersionColumns + kVersionFrom +
                                      "WHERE c.entity = $1 AND c.project = $2 AND c.name = $3 "
                                      "AND v.idx = $4";
  static const std::string kByAlias =
      std::string("SELECT ") + kVersionColumns + kVersionFrom +
      "JOIN artifact_aliases a ON a.version_pk = v.pk AND a.collection_pk = c.pk "
      "WHERE c.entity = $1 AND c.project = $2 AND c.name = $3 AND a.alias = $4";
  Status missing = ArtifactNotFound(entity, project, name, version_or_alias);
  auto read = [](const Row& row) { return ReadVersion(row); };
  Result<ArtifactVersion> v = Status::Ok();
  if (std::optional<int64_t> index = ParseVersionName(version_or_alias)) {
    v = sql::QueryOne<ArtifactVersion>(
        conn, kByIndex, Params().Add(entity).Add(project).Add(name).Add(*index), read, missing);
  } else {
    v = sql::QueryOne<ArtifactVersion>(
        conn, kByAlias, Params().Add(entity).Add(project).Add(name).Add(version_or_alias), read,
        missing);
  }
  if (!v.ok()) return v.status();
  COHORT_RETURN_IF_ERROR(LoadAliases(conn, &*v));
  return v;
}

struct CollectionRow {
  int64_t pk = 0;
  std::string type;
  int64_t next_index = 0;
};

// Locks the collection row (PostgreSQL), creating the collection when it is new.
Result<CollectionRow> LockCollection(Conn& conn, const ArtifactCommit& c) {
  COHORT_RETURN_IF_ERROR(
      conn.Exec("INSERT INTO artifact_collections (entity, project, name, type, next_index, "
                "created_ms, updated_ms) VALUES ($1, $2, $3, $4, 0, $5, $5) "
                "ON CONFLICT DO NOTHING",
                Params().Add(c.entity).Add(c.project).Add(c.name).Add(c.type).Add(c.now_ms))
          .status());
  return sql::QueryOne<CollectionRow>(
      conn,
      "SELECT pk, type, next_index FROM artifact_collections "
      "WHERE entity = $1 AND project = $2 AND name = $3 FOR UPDATE",
      Params().Add(c.entity).Add(c.project).Add(c.name),
      [](const Row& row) { return CollectionRow{row.Int(0), row.Text(1), row.Int(2)}; },
      Status::Internal("artifact collection vanished while logging a version"));
}

Status SetAlias(Conn& conn, int64_t collection_pk, const std::string& alias, int64_t version_pk) {
  return conn
      .Exec("INSERT INTO artifact_aliases (collection_pk, alias, version_pk) VALUES ($1, $2, $3) "
            "ON CONFLICT (collection_pk, alias) DO UPDATE SET version_pk = excluded.version_pk",
            Params().Add(collection_pk).Add(alias).Add(version_pk))
      .status();
}

// Checks that the entity holds every blob of the manifest with its size, locking the rows
// (PostgreSQL) so that a garbage collection cannot drop one before this commit does.
Status CheckHeldBlobs(Conn& conn, const ArtifactCommit& c) {
  std::vector<std::string> wanted;
  for (const ArtifactFile& f : c.files) {
    if (f.ref.empty()) wanted.push_back(f.sha256);
  }
  if (wanted.empty()) return Status::Ok();
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  COHORT_ASSIGN_OR_RETURN(
      auto held,
      sql::QueryAll<BlobRow>(
          conn,
          "SELECT sha256, size FROM blobs WHERE entity = $1 AND sha256 = ANY($2) "
          "ORDER BY sha256 FOR UPDATE",
          Params().Add(c.entity).AddTextArray(wanted),
          [](const Row& row) { return std::make_pair(row.Text(0), row.Int(1)); }));
  std::map<std::string, int64_t> sizes(held.begin(), held.end());
  for (const ArtifactFile& f : c.files) {
    if (!f.ref.empty()) continue;
    auto it = sizes.find(f.sha256);
    if (it == sizes.end()) {
      return Status::FailedPrecondition("file \"" + f.path + "\" (blob " + f.sha256 +
                                        ") is not uploaded; upload it first");
    }
    if (it->second != f.size) {
      return Status::InvalidArgument("file \"" + f.path + "\": the manifest says " +
                                     std::to_string(f.size) + " bytes, the uploaded blob has " +
                                     std::to_string(it->second));
    }
  }
  return Status::Ok();
}

Status InsertFiles(Conn& conn, int64_t version_pk, const std::vector<ArtifactFile>& files) {
  for (const ArtifactFile& f : files) {
    Params p;
    p.Add(version_pk).Add(f.path);
    if (f.ref.empty()) {
      p.Add(f.sha256).Add(f.size).AddNull(sql::Type::kText).AddNull(sql::Type::kText);
    } else {
      p.AddNull(sql::Type::kText);
      if (f.size >= 0) {
        p.Add(f.size);
      } else {
        p.AddNull(sql::Type::kInt);
      }
      p.Add(f.ref).Add(f.ref_digest);
    }
    COHORT_RETURN_IF_ERROR(
        conn.Exec("INSERT INTO artifact_files (version_pk, path, sha256, size, ref, ref_digest) "
                  "VALUES ($1, $2, $3, $4, $5, $6)",
                  p)
            .status());
  }
  return Status::Ok();
}

Status RecordUse(Conn& conn, int64_t version_pk, int64_t run_pk, const std::string& writer,
                 const char* direction, int64_t now_ms) {
  return conn
      .Exec("INSERT INTO artifact_uses (version_pk, run_pk, writer, direction, used_ms) "
            "VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            Params().Add(version_pk).Add(run_pk).Add(writer).Add(direction).Add(now_ms))
      .status();
}

}  // namespace

Status SqlStore::RecordBlob(const std::string& entity, const std::string& sha256, int64_t size,
                            int64_t now_ms, const std::string& md5) {
  if (!IsSha256Hex(sha256) || size < 0) {
    return Status::InvalidArgument("blob: expected a SHA-256 (64 lowercase hex digits) and a size");
  }
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    COHORT_RETURN_IF_ERROR(
        conn.Exec("INSERT INTO blobs (entity, sha256, size, created_ms) VALUES ($1, $2, $3, $4) "
                  "ON CONFLICT (entity, sha256) DO UPDATE SET created_ms = excluded.created_ms "
                  "WHERE blobs.created_ms < excluded.created_ms",
                  Params().Add(entity).Add(sha256).Add(size).Add(now_ms))
            .status());
    if (md5.empty()) return Status::Ok();
    return conn
        .Exec("INSERT INTO blob_md5 (entity, md5, sha256, size) VALUES ($1, $2, $3, $4) "
              "ON CONFLICT (entity, md5) DO UPDATE SET sha256 = excluded.sha256, "
              "size = excluded.size",
              Params().Add(entity).Add(md5).Add(sha256).Add(size))
        .status();
  });
}

Status SqlStore::TouchBlob(const std::string& entity, const std::string& sha256, int64_t now_ms) {
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    return conn
        .Exec("UPDATE blobs SET created_ms = $3 WHERE entity = $1 AND sha256 = $2 AND "
              "created_ms < $4",
              Params().Add(entity).Add(sha256).Add(now_ms).Add(now_ms - limits::kBlobRetouchMs))
        .status();
  });
}

Result<std::map<std::string, BlobByMd5>> SqlStore::BlobsByMd5(const std::string& entity,
                                                              const std::vector<std::string>& md5s) {
  using Out = std::map<std::string, BlobByMd5>;
  using Md5Row = std::pair<std::string, BlobByMd5>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(
        auto rows, sql::QueryAll<Md5Row>(
                       conn,
                       "SELECT m.md5, m.sha256, m.size FROM blob_md5 m JOIN blobs b ON "
                       "b.entity = m.entity AND b.sha256 = m.sha256 "
                       "WHERE m.entity = $1 AND m.md5 = ANY($2)",
                       Params().Add(entity).AddTextArray(md5s), [](const Row& row) {
                         return Md5Row(row.Text(0), BlobByMd5{row.Text(1), row.Int(2)});
                       }));
    return Out(rows.begin(), rows.end());
  });
}

Result<std::map<std::string, std::string>> SqlStore::Md5sOfBlobs(
    const std::string& entity, const std::vector<std::string>& sha256s) {
  using Out = std::map<std::string, std::string>;
  using ShaRow = std::pair<std::string, std::string>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(
        auto rows, sql::QueryAll<ShaRow>(
                       conn,
                       "SELECT m.sha256, m.md5 FROM blob_md5 m JOIN blobs b ON "
                       "b.entity = m.entity AND b.sha256 = m.sha256 "
                       "WHERE m.entity = $1 AND m.sha256 = ANY($2)",
                       Params().Add(entity).AddTextArray(sha256s),
                       [](const Row& row) { return ShaRow(row.Text(0), row.Text(1)); }));
    return Out(rows.begin(), rows.end());
  });
}

namespace {
// The condition that blob row `b` is referenced by something of its entity: an artifact file or
// manifest, a draft, a media row of one of its runs.
constexpr const char* kBlobReferenced =
    "(EXISTS (SELECT 1 FROM artifact_files f JOIN artifact_versions v ON v.pk = f.version_pk "
    "JOIN artifact_collections c ON c.pk = v.collection_pk "
    "WHERE f.sha256 = b.sha256 AND c.entity = b.entity) "
    "OR EXISTS (SELECT 1 FROM artifact_versions v JOIN artifact_collections c "
    "ON c.pk = v.collection_pk WHERE v.client_manifest = b.sha256 AND c.entity = b.entity) "
    "OR EXISTS (SELECT 1 FROM artifact_drafts d WHERE d.manifest_sha256 = b.sha256 "
    "AND d.entity = b.entity) "
    "OR EXISTS (SELECT 1 FROM media m JOIN runs r ON r.pk = m.run_pk WHERE m.sha256 = b.sha256 "
    "AND r.entity = b.entity) "
    "OR EXISTS (SELECT 1 FROM run_files f JOIN runs r ON r.pk = f.run_pk WHERE f.sha256 = b.sha256 "
    "AND f.sha256 <> '' AND r.entity = b.entity))";
}  // namespace

Result<std::vector<HeldBlob>> SqlStore::UnreferencedBlobs(int64_t recorded_before_ms) {
  static const std::string kSql =
      std::string("SELECT b.entity, b.sha256, b.size, b.created_ms FROM blobs b "
                  "WHERE b.created_ms < $1 AND NOT ") +
      kBlobReferenced + " ORDER BY b.entity, b.sha256";
  using Out = std::vector<HeldBlob>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryAll<HeldBlob>(conn, kSql, Params().Add(recorded_before_ms),
                                   [](const Row& row) {
                                     return HeldBlob{row.Text(0), row.Text(1), row.Int(2),
                                                     row.Int(3)};
                                   });
  });
}

Result<std::vector<HeldBlob>> SqlStore::TableBlobs() {
  static const std::string kSql =
      "SELECT DISTINCT r.entity, m.sha256, m.size FROM media m JOIN runs r ON r.pk = m.run_pk "
      "WHERE m.type = 'table' AND m.sha256 <> '' ORDER BY r.entity, m.sha256";
  using Out = std::vector<HeldBlob>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryAll<HeldBlob>(conn, kSql, Params(), [](const Row& row) {
      return HeldBlob{row.Text(0), row.Text(1), row.Int(2), 0};
    });
  });
}

Result<bool> SqlStore::ForgetBlob(const std::string& entity, const std::string& sha256,
                                  int64_t recorded_before_ms) {
  static const std::string kCheck = std::string("SELECT 1 FROM blobs b WHERE b.entity = $1 AND "
                                                "b.sha256 = $2 AND b.created_ms < $3 AND NOT ") +
                                    kBlobReferenced;
  return RunFor<bool>(Access::kWrite, [&](Conn& conn) -> Result<bool> {
    // The row lock first (a commit referencing the blob holds it until it commits), then the
    // check, in a statement that sees what committed before the lock was granted.
    COHORT_ASSIGN_OR_RETURN(
        int64_t exists,
        sql::QueryInt(conn,
                      "SELECT 1 FROM blobs WHERE entity = $1 AND sha256 = $2 FOR UPDATE",
                      Params().Add(entity).Add(sha256)));
    if (exists == 0) return false;
    COHORT_ASSIGN_OR_RETURN(
        int64_t unreferenced,
        sql::QueryInt(conn, kCheck, Params().Add(entity).Add(sha256).Add(recorded_before_ms)));
    if (unreferenced == 0) return false;
    COHORT_RETURN_IF_ERROR(
        conn.Exec("DELETE FROM blob_md5 WHERE entity = $1 AND sha256 = $2",
                  Params().Add(entity).Add(sha256))
            .status());
    COHORT_RETURN_IF_ERROR(conn.Exec("DELETE FROM blobs WHERE entity = $1 AND sha256 = $2",
                                     Params().Add(entity).Add(sha256))
                               .status());
    return true;
  });
}

Result<bool> SqlStore::BlobHeldByAnyEntity(const std::string& sha256) {
  return RunFor<bool>(Access::kReadOne, [&](Conn& conn) -> Result<bool> {
    COHORT_ASSIGN_OR_RETURN(int64_t n, sql::QueryInt(conn,
                                                     "SELECT 1 FROM blobs WHERE sha256 = $1 "
                                                     "LIMIT 1",
                                                     Params().Add(sha256)));
    return n != 0;
  });
}

namespace {
constexpr const char* kDraftColumns =
    "pk, entity, project, name, type, client_digest, spec, manifest_sha256, version_pk, "
    "created_ms, client_id";
ArtifactDraft ReadDraft(const Row& row) {
  ArtifactDraft d;
  d.pk = row.Int(0);
  d.entity = row.Text(1);
  d.project = row.Text(2);
  d.name = row.Text(3);
  d.type = row.Text(4);
  d.client_digest = row.Text(5);
  d.spec_json = row.Text(6);
  if (!row.IsNull(7)) d.manifest_sha256 = row.Text(7);
  d.version_pk = row.OptInt(8);
  d.created_ms = row.Int(9);
  d.client_id = row.Text(10);
  return d;
}
}  // namespace

Result<ArtifactDraft> SqlStore::CreateArtifactDraft(const ArtifactDraft& d) {
  COHORT_RETURN_IF_ERROR(ValidateArtifactName("artifact name", d.name));
  COHORT_RETURN_IF_ERROR(ValidateArtifactName("artifact type", d.type));
  static const std::string kSql =
      std::string("INSERT INTO artifact_drafts (entity, project, name, type, client_digest, "
                  "spec, created_ms, client_id, version_pk) VALUES ($1, $2, $3, $4, $5, $6, $7, "
                  "$8, $9) RETURNING ") +
      kDraftColumns;
  return RunFor<ArtifactDraft>(Access::kWrite, [&](Conn& conn) {
    return sql::QueryOne<ArtifactDraft>(
        conn, kSql,
        Params().Add(d.entity).Add(d.project).Add(d.name).Add(d.type).Add(d.client_digest)
            .Add(d.spec_json).Add(d.created_ms).Add(d.client_id).Add(d.version_pk),
        ReadDraft, Status::Internal("artifact draft insert returned no row"));
  });
}

Result<ArtifactDraft> SqlStore::GetArtifactDraft(const std::string& entity, int64_t pk) {
  static const std::string kSql = std::string("SELECT ") + kDraftColumns +
                                  " FROM artifact_drafts WHERE pk = $1 AND entity = $2";
  return RunFor<ArtifactDraft>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryOne<ArtifactDraft>(conn, kSql, Params().Add(pk).Add(entity), ReadDraft,
                                        Status::NotFound("artifact " + std::to_string(pk) +
                                                         " not found"));
  });
}

Result<ArtifactVersion> SqlStore::ArtifactVersionOfClientId(const std::string& entity,
                                                            const std::string& client_id) {
  auto pk = RunFor<int64_t>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryOne<int64_t>(
        conn,
        "SELECT version_pk FROM artifact_drafts WHERE entity = $1 AND client_id = $2 AND "
        "client_id <> '' AND version_pk IS NOT NULL ORDER BY pk DESC LIMIT 1",
        Params().Add(entity).Add(client_id), [](const Row& row) { return row.Int(0); },
        Status::NotFound("no committed artifact of client ID " + client_id));
  });
  if (!pk.ok()) return pk.status();
  return GetArtifactVersionByPk(entity, *pk);
}

Status SqlStore::SetArtifactDraftManifest(const std::string& entity, int64_t pk,
                                          const std::string& sha256) {
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    COHORT_ASSIGN_OR_RETURN(
        int64_t n, conn.Exec("UPDATE artifact_drafts SET manifest_sha256 = $3 WHERE pk = $1 AND "
                             "entity = $2",
                             Params().Add(pk).Add(entity).Add(sha256)));
    if (n == 0) return Status::NotFound("artifact " + std::to_string(pk) + " not found");
    return Status::Ok();
  });
}

Status SqlStore::SetArtifactDraftVersion(const std::string& entity, int64_t pk,
                                         int64_t version_pk) {
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    COHORT_ASSIGN_OR_RETURN(
        int64_t n, conn.Exec("UPDATE artifact_drafts SET version_pk = $3 WHERE pk = $1 AND "
                             "entity = $2",
                             Params().Add(pk).Add(entity).Add(version_pk)));
    if (n == 0) return Status::NotFound("artifact " + std::to_string(pk) + " not found");
    return Status::Ok();
  });
}

Result<std::map<std::string, int64_t>> SqlStore::HeldBlobSizes(
    Conn& conn, const std::string& entity, const std::vector<std::string>& sha256s) {
  COHORT_ASSIGN_OR_RETURN(
      auto rows, sql::QueryAll<BlobRow>(
                     conn, "SELECT sha256, size FROM blobs WHERE entity = $1 AND sha256 = ANY($2)",
                     Params().Add(entity).AddTextArray(sha256s),
                     [](const Row& row) { return std::make_pair(row.Text(0), row.Int(1)); }));
  return std::map<std::string, int64_t>(rows.begin(), rows.end());
}

Result<std::map<std::string, int64_t>> SqlStore::HeldBlobs(
    const std::string& entity, const std::vector<std::string>& sha256s) {
  using Out = std::map<std::string, int64_t>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) -> Result<Out> {
    return HeldBlobSizes(conn, entity, sha256s);
  });
}

Result<ArtifactLogged> SqlStore::CommitArtifact(const ArtifactCommit& c) {
  COHORT_RETURN_IF_ERROR(ValidateArtifactCommit(c));
  const std::string digest = ManifestDigest(c.files);
  int64_t size = 0;
  for (const ArtifactFile& f : c.files) {
    if (__builtin_add_overflow(size, std::max<int64_t>(f.size, 0), &size)) {
      return Status::InvalidArgument("artifact " + c.name +
                                     ": its files' sizes add up past 2^63 bytes");
    }
  }
  return RunFor<ArtifactLogged>(Access::kWrite, [&](Conn& conn) -> Result<ArtifactLogged> {
    std::optional<int64_t> run_pk;
    if (!c.run_id.empty()) {
      COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, RunRef{c.entity, c.project, c.run_id}));
      run_pk = run.pk;
    }
    COHORT_RETURN_IF_ERROR(CheckHeldBlobs(conn, c));
    COHORT_ASSIGN_OR_RETURN(CollectionRow col, LockCollection(conn, c));
    if (col.type != c.type) {
      return Status::AlreadyExists("artifact " + c.entity + "/" + c.project + "/" + c.name +
                                   " is of type \"" + col.type + "\", not \"" + c.type + "\"");
    }
    COHORT_ASSIGN_OR_RETURN(
        auto latest,
        sql::QueryAll<VersionDigest>(
            conn,
            "SELECT v.pk, v.digest FROM artifact_aliases a "
            "JOIN artifact_versions v ON v.pk = a.version_pk "
            "WHERE a.collection_pk = $1 AND a.alias = 'latest'",
            Params().Add(col.pk),
            [](const Row& row) { return std::make_pair(row.Int(0), row.Text(1)); }));
    ArtifactLogged out;
    int64_t version_pk = 0;
    if (!latest.empty() && latest[0].second == digest) {
      version_pk = latest[0].first;
    } else {
      out.created = true;
      Params p;
      p.Add(col.pk).Add(col.next_index).Add(digest).Add(size).Add(int64_t(c.files.size()));
      if (c.description) {
        p.Add(*c.description);
      } else {
        p.AddNull(sql::Type::kText);
      }
      p.Add(c.metadata_json).Add(c.run_id).Add(c.writer).Add(c.now_ms);
      for (const std::string* client : {&c.client_digest, &c.client_manifest}) {
        if (client->empty()) {
          p.AddNull(sql::Type::kText);
        } else {
          p.Add(*client);
        }
      }
      COHORT_ASSIGN_OR_RETURN(
          version_pk,
          sql::QueryOne<int64_t>(
              conn,
              "INSERT INTO artifact_versions (collection_pk, idx, digest, size, file_count, "
              "description, metadata, run_id, writer, created_ms, client_digest, "
              "client_manifest) "
              "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING pk",
              p, [](const Row& row) { return row.Int(0); },
              Status::Internal("artifact version insert returned no row")));
      COHORT_RETURN_IF_ERROR(
          conn.Exec("UPDATE artifact_collections SET next_index = next_index + 1, "
                    "updated_ms = greatest(updated_ms, $2) WHERE pk = $1",
                    Params().Add(col.pk).Add(c.now_ms))
              .status());
      COHORT_RETURN_IF_ERROR(InsertFiles(conn, version_pk, c.files));
      COHORT_RETURN_IF_ERROR(SetAlias(conn, col.pk, "latest", version_pk));
    }
    for (const std::string& alias : c.aliases) {
      COHORT_RETURN_IF_ERROR(SetAlias(conn, col.pk, alias, version_pk));
    }
    if (run_pk) {
      COHORT_RETURN_IF_ERROR(RecordUse(conn, version_pk, *run_pk, c.writer, "output", c.now_ms));
    }
    COHORT_ASSIGN_OR_RETURN(out.version, LoadVersionByPk(conn, version_pk));
    return out;
  });
}

Result<std::vector<ArtifactCollection>> SqlStore::ListArtifactCollections(
    const std::string& entity, const std::string& project) {
  static const std::string kSql =
      std::string(
          "SELECT c.entity, c.project, c.name, c.type, c.created_ms, c.updated_ms, "
          "(SELECT count(*) FROM artifact_versions n WHERE n.collection_pk = c.pk), "
          "(SELECT a.version_pk FROM artifact_aliases a "
          " WHERE a.collection_pk = c.pk AND a.alias = 'latest') "
          "FROM artifact_collections c WHERE c.entity = $1 AND c.project = $2 ORDER BY c.name");
  using Out = std::vector<ArtifactCollection>;
  return RunFor<Out>(Access::kRead, [&](Conn& conn) -> Result<Out> {
    std::vector<std::optional<int64_t>> latest_pks;
    COHORT_ASSIGN_OR_RETURN(
        Out out, sql::QueryAll<ArtifactCollection>(
                     conn, kSql, Params().Add(entity).Add(project), [&](const Row& row) {
                       ArtifactCollection col;
                       col.entity = row.Text(0);
                       col.project = row.Text(1);
                       col.name = row.Text(2);
                       col.type = row.Text(3);
                       col.created_ms = row.Int(4);
                       col.updated_ms = row.Int(5);
                       col.version_count = row.Int(6);
                       latest_pks.push_back(row.OptInt(7));
                       return col;
                     }));
    for (size_t i = 0; i < out.size(); ++i) {
      if (!latest_pks[i]) continue;
      COHORT_ASSIGN_OR_RETURN(ArtifactVersion v, LoadVersionByPk(conn, *latest_pks[i]));
      out[i].latest = std::move(v);
    }
    return out;
  });
}

Result<std::vector<ArtifactVersion>> SqlStore::ListArtifactVersions(const std::string& entity,
                                                                    const std::string& project,
                                                                    const std::string& name) {
  static const std::string kSql = std::string("SELECT ") + kVersionColumns + kVersionFrom +
                                  "WHERE c.entity = $1 AND c.project = $2 AND c.name = $3 "
                                  "ORDER BY v.idx DESC";
  using Out = std::vector<ArtifactVersion>;
  return RunFor<Out>(Access::kRead, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(
        int64_t exists,
        sql::QueryInt(conn,
                      "SELECT 1 FROM artifact_collections WHERE entity = $1 AND project = $2 "
                      "AND name = $3",
                      Params().Add(entity).Add(project).Add(name)));
    if (exists == 0) return ArtifactNotFound(entity, project, name);
    COHORT_ASSIGN_OR_RETURN(Out out, sql::QueryAll<ArtifactVersion>(
                                         conn, kSql, Params().Add(entity).Add(project).Add(name),
                                         [](const Row& row) { return ReadVersion(row); }));
    for (ArtifactVersion& v : out) COHORT_RETURN_IF_ERROR(LoadAliases(conn, &v));
    return out;
  });
}

Result<ArtifactVersion> SqlStore::GetArtifactVersion(const std::string& entity,
                                                     const std::string& project,
                                                     const std::string& name,
                                                     const std::string& version_or_alias) {
  return RunFor<ArtifactVersion>(Access::kRead, [&](Conn& conn) {
    return FindVersion(conn, entity, project, name, version_or_alias);
  });
}

Result<ArtifactVersion> SqlStore::GetArtifactVersionByPk(const std::string& entity, int64_t pk) {
  return RunFor<ArtifactVersion>(Access::kRead, [&](Conn& conn) -> Result<ArtifactVersion> {
    Result<ArtifactVersion> v = LoadVersionByPk(conn, pk);
    if (!v.ok() || v->entity != entity) {
      return Status::NotFound("artifact version " + std::to_string(pk) + " not found");
    }
    return v;
  });
}

Result<std::vector<ArtifactFile>> SqlStore::ListArtifactFiles(const ArtifactVersion& version) {
  static const std::string kSql = std::string("SELECT ") + kFileColumns +
                                  " FROM artifact_files WHERE version_pk = $1 ORDER BY path";
  using Out = std::vector<ArtifactFile>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryAll<ArtifactFile>(conn, kSql, Params().Add(version.pk), ReadFile);
  });
}

Result<ArtifactFile> SqlStore::GetArtifactFile(const ArtifactVersion& version,
                                               const std::string& path) {
  static const std::string kSql = std::string("SELECT ") + kFileColumns +
                                  " FROM artifact_files WHERE version_pk = $1 AND path = $2";
  return RunFor<ArtifactFile>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryOne<ArtifactFile>(
        conn, kSql, Params().Add(version.pk).Add(path), ReadFile,
        Status::NotFound("artifact " + version.name + ":" + VersionName(version.index) +
                         " has no file \"" + path + "\""));
  });
}

Result<std::vector<ArtifactUse>> SqlStore::ListArtifactUses(const ArtifactVersion& version) {
  using Out = std::vector<ArtifactUse>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryAll<ArtifactUse>(
        conn,
        "SELECT r.entity, r.project, r.run_id, u.writer, u.direction, u.used_ms "
        "FROM artifact_uses u JOIN runs r ON r.pk = u.run_pk WHERE u.version_pk = $1 "
        "ORDER BY u.used_ms, r.run_id, u.writer, u.direction",
        Params().Add(version.pk), [](const Row& row) {
          return ArtifactUse{row.Text(0), row.Text(1), row.Text(2),
                             row.Text(3), row.Text(4), row.Int(5)};
        });
  });
}

Result<ArtifactVersion> SqlStore::UseArtifact(const std::string& project, const std::string& name,
                                              const std::string& version_or_alias,
                                              const RunRef& run, const std::string& writer,
                                              int64_t now_ms) {
  return RunFor<ArtifactVersion>(Access::kWrite, [&](Conn& conn) -> Result<ArtifactVersion> {
    COHORT_ASSIGN_OR_RETURN(RunRecord r, LoadRun(conn, run));
    COHORT_ASSIGN_OR_RETURN(ArtifactVersion v,
                            FindVersion(conn, run.entity, project, name, version_or_alias));
    COHORT_RETURN_IF_ERROR(RecordUse(conn, v.pk, r.pk, writer, "input", now_ms));
    return v;
  });
}

Result<ArtifactVersion> SqlStore::SetArtifactAlias(const std::string& entity,
                                                   const std::string& project,
                                                   const std::string& name,
                                                   const std::string& alias,
                                                   const std::string& version_or_alias) {
  COHORT_RETURN_IF_ERROR(ValidateAliasName(alias));
  return RunFor<ArtifactVersion>(Access::kWrite, [&](Conn& conn) -> Result<ArtifactVersion> {
    COHORT_ASSIGN_OR_RETURN(ArtifactVersion v,
                            FindVersion(conn, entity, project, name, version_or_alias));
    COHORT_ASSIGN_OR_RETURN(
        int64_t collection_pk,
        sql::QueryInt(conn, "SELECT collection_pk FROM artifact_versions WHERE pk = $1",
                      Params().Add(v.pk)));
    COHORT_RETURN_IF_ERROR(SetAlias(conn, collection_pk, alias, v.pk));
    return LoadVersionByPk(conn, v.pk);
  });
}

Status SqlStore::DeleteArtifactAlias(const std::string& entity, const std::string& project,
                                     const std::string& name, const std::string& alias) {
  COHORT_RETURN_IF_ERROR(ValidateAliasName(alias));
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    COHORT_ASSIGN_OR_RETURN(
        int64_t deleted,
        conn.Exec("DELETE FROM artifact_aliases WHERE alias = $4 AND collection_pk = "
                  "(SELECT pk FROM artifact_collections WHERE entity = $1 AND project = $2 "
                  "AND name = $3)",
                  Params().Add(entity).Add(project).Add(name).Add(alias)));
    if (deleted == 0) return ArtifactNotFound(entity, project, name, alias);
    return Status::Ok();
  });
}

Status SqlStore::DeleteArtifactVersion(const std::string& entity, const std::string& project,
                                       const std::string& name, const std::string& version) {
  if (!ParseVersionName(version)) {
    return Status::InvalidArgument("version: expected v<N> (\"" + version +
                                   "\" is an alias; delete the alias, or name the version)");
  }
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    COHORT_ASSIGN_OR_RETURN(
        int64_t collection_pk,
        sql::QueryInt(conn,
                      "SELECT pk FROM artifact_collections WHERE entity = $1 AND project = $2 "
                      "AND name = $3 FOR UPDATE",
                      Params().Add(entity).Add(project).Add(name)));
    if (collection_pk == 0) return ArtifactNotFound(entity, project, name);
    COHORT_ASSIGN_OR_RETURN(ArtifactVersion v, FindVersion(conn, entity, project, name, version));
    // The W&B clients' drafts of this version go with it: kept, they held its manifest blob for
    // ever (cohort gc counts a draft's manifest as referenced) and named a version that is gone.
    COHORT_RETURN_IF_ERROR(conn.Exec("DELETE FROM artifact_drafts WHERE version_pk = $1 AND "
                                     "entity = $2",
                                     Params().Add(v.pk).Add(entity))
                               .status());
    COHORT_RETURN_IF_ERROR(
        conn.Exec("DELETE FROM artifact_versions WHERE pk = $1", Params().Add(v.pk)).status());
    if (std::find(v.aliases.begin(), v.aliases.end(), "latest") == v.aliases.end()) {
      return Status::Ok();
    }
    COHORT_ASSIGN_OR_RETURN(
        int64_t newest,
        sql::QueryInt(conn,
                      "SELECT pk FROM artifact_versions WHERE collection_pk = $1 "
                      "ORDER BY idx DESC LIMIT 1",
                      Params().Add(collection_pk)));
    if (newest == 0) return Status::Ok();
    return SetAlias(conn, collection_pk, "latest", newest);
  });
}

Result<std::vector<RunArtifact>> SqlStore::ListRunArtifacts(const RunRef& ref) {
  static const std::string kSql =
      std::string("SELECT ") + kVersionColumns + ", u.direction, u.writer, u.used_ms" +
      kVersionFrom +
      "JOIN artifact_uses u ON u.version_pk = v.pk WHERE u.run_pk = $1 "
      "ORDER BY u.used_ms, v.pk, u.direction, u.writer";
  using Out = std::vector<RunArtifact>;
  return RunFor<Out>(Access::kRead, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(RunRecord run, LoadRun(conn, ref));
    COHORT_ASSIGN_OR_RETURN(
        Out out, sql::QueryAll<RunArtifact>(conn, kSql, Params().Add(run.pk), [](const Row& row) {
          RunArtifact a;
          a.version = ReadVersion(row);
          a.direction = row.Text(kVersionColumnCount);
          a.writer = row.Text(kVersionColumnCount + 1);
          a.used_ms = row.Int(kVersionColumnCount + 2);
          return a;
        }));
    for (RunArtifact& a : out) COHORT_RETURN_IF_ERROR(LoadAliases(conn, &a.version));
    return out;
  });
}

}  // namespace cohort::store
