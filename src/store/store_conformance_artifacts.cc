// Conformance cases for artifacts (store.h ArtifactStore, docs/artifacts.md): versions,
// deduplication by digest, aliases, lineage, blobs held per entity, bad input leaving nothing
// half-committed, concurrent commits, deletion.
#include <algorithm>
#include <thread>
#include <vector>

#include "core/limits.h"
#include "core/sha256.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

constexpr int64_t kNow = 1'000'000;

ArtifactFile Blob(const std::string& path, const std::string& content) {
  return ArtifactFile{.path = path, .sha256 = Sha256::Hex(content),
                      .size = int64_t(content.size())};
}

ArtifactCommit Commit(const std::string& name, std::vector<ArtifactFile> files,
                      const std::string& run_id = "", std::vector<std::string> aliases = {}) {
  ArtifactCommit c;
  c.entity = "acme";
  c.project = "vision";
  c.name = name;
  c.type = "model";
  c.files = std::move(files);
  c.run_id = run_id;
  c.writer = run_id.empty() ? "" : "rank0";
  c.aliases = std::move(aliases);
  c.metadata_json = R"({"epoch":1})";
  c.now_ms = kNow;
  return c;
}

}  // namespace

TEST_P(StoreConformanceTest, ArtifactVersionsAreNumberedAndDeduplicatedByDigest) {
  MakeRun("r1");
  for (const char* content : {"weights-1", "weights-2", "config"}) {
    COHORT_ASSERT_OK(store().RecordBlob(kEntity, Sha256::Hex(content),
                                        int64_t(std::string(content).size()), kNow, ""));
  }
  COHORT_ASSERT_OK_AND_ASSIGN(
      ArtifactLogged v0,
      store().CommitArtifact(Commit("ckpt", {Blob("model.pt", "weights-1"),
                                             Blob("cfg/config.json", "config")},
                                    "r1", {"best"})));
  EXPECT_TRUE(v0.created);
  EXPECT_EQ(v0.version.index, 0);
  EXPECT_EQ(v0.version.file_count, 2);
  EXPECT_EQ(v0.version.size, 15);
  EXPECT_EQ(v0.version.type, "model");
  EXPECT_EQ(v0.version.run_id, "r1");
  EXPECT_EQ(v0.version.writer, "rank0");
  EXPECT_EQ(v0.version.metadata_json, R"({"epoch":1})");
  EXPECT_EQ(v0.version.aliases, (std::vector<std::string>{"best", "latest"}));
  EXPECT_EQ(v0.version.digest, ManifestDigest({Blob("cfg/config.json", "config"),
                                               Blob("model.pt", "weights-1")}));

  // The same files in another order: the same version, nothing new, aliases added.
  COHORT_ASSERT_OK_AND_ASSIGN(
      ArtifactLogged again,
      store().CommitArtifact(Commit("ckpt", {Blob("cfg/config.json", "config"),
                                             Blob("model.pt", "weights-1")},
                                    "", {"prod"})));
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.version.index, 0);
  EXPECT_EQ(again.version.aliases, (std::vector<std::string>{"best", "latest", "prod"}));

  COHORT_ASSERT_OK_AND_ASSIGN(
      ArtifactLogged v1, store().CommitArtifact(Commit(
                             "ckpt", {Blob("model.pt", "weights-2"), Blob("cfg/config.json", "config")},
                             "r1")));
  EXPECT_TRUE(v1.created);
  EXPECT_EQ(v1.version.index, 1);
  EXPECT_EQ(v1.version.aliases, (std::vector<std::string>{"latest"}));

  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactVersion latest,
                              store().GetArtifactVersion(kEntity, kProject, "ckpt", "latest"));
  EXPECT_EQ(latest.index, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactVersion best,
                              store().GetArtifactVersion(kEntity, kProject, "ckpt", "best"));
  EXPECT_EQ(best.index, 0);
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactVersion by_index,
                              store().GetArtifactVersion(kEntity, kProject, "ckpt", "v0"));
  EXPECT_EQ(by_index.pk, best.pk);
  EXPECT_EQ(store().GetArtifactVersion(kEntity, kProject, "ckpt", "v7").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store().GetArtifactVersion("other", kProject, "ckpt", "v0").status().code(),
            StatusCode::kNotFound);

  COHORT_ASSERT_OK_AND_ASSIGN(auto files, store().ListArtifactFiles(best));
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].path, "cfg/config.json");
  EXPECT_EQ(files[1].sha256, Sha256::Hex("weights-1"));
  EXPECT_EQ(files[1].size, 9);
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactFile one, store().GetArtifactFile(best, "model.pt"));
  EXPECT_EQ(one.sha256, Sha256::Hex("weights-1"));
  EXPECT_EQ(store().GetArtifactFile(best, "nope").status().code(), StatusCode::kNotFound);

  COHORT_ASSERT_OK_AND_ASSIGN(auto versions,
                              store().ListArtifactVersions(kEntity, kProject, "ckpt"));
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[0].index, 1);  // newest first
  COHORT_ASSERT_OK_AND_ASSIGN(auto collections,
                              store().ListArtifactCollections(kEntity, kProject));
  ASSERT_EQ(collections.size(), 1u);
  EXPECT_EQ(collections[0].name, "ckpt");
  EXPECT_EQ(collections[0].version_count, 2);
  ASSERT_TRUE(collections[0].latest.has_value());
  EXPECT_EQ(collections[0].latest->index, 1);

  Reopen();
  COHORT_ASSERT_OK_AND_ASSIGN(latest,
                              store().GetArtifactVersion(kEntity, kProject, "ckpt", "latest"));
  EXPECT_EQ(latest.index, 1);
}

TEST_P(StoreConformanceTest, ArtifactCommitRefusesWhatItCannotKeepAndStoresNothing) {
  MakeRun("r1");
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, Sha256::Hex("abc"), 3, kNow, ""));
  // A blob the entity does not hold: named, nothing committed.
  Result<ArtifactLogged> missing =
      store().CommitArtifact(Commit("ds", {Blob("a", "abc"), Blob("b", "not uploaded")}, "r1"));
  ASSERT_EQ(missing.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(missing.status().message().find("\"b\""), std::string::npos);
  // Another entity holding it is not enough.
  COHORT_ASSERT_OK(store().RecordBlob("other", Sha256::Hex("zzz"), 3, kNow, ""));
  EXPECT_EQ(store().CommitArtifact(Commit("ds", {Blob("z", "zzz")})).status().code(),
            StatusCode::kFailedPrecondition);
  // A manifest that lies about a size.
  ArtifactFile lying = Blob("a", "abc");
  lying.size = 4;
  Result<ArtifactLogged> lie = store().CommitArtifact(Commit("ds", {lying}));
  ASSERT_EQ(lie.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(lie.status().message().find("the manifest says 4 bytes"), std::string::npos);
  // Names and paths.
  for (const char* bad : {"a/b", "..", ".hidden", "with space", ""}) {
    EXPECT_EQ(store().CommitArtifact(Commit(bad, {Blob("a", "abc")})).status().code(),
              StatusCode::kInvalidArgument)
        << bad;
  }
  for (const char* bad : {"../x", "/abs", "a//b", "a/./b", "a\\b"}) {
    EXPECT_EQ(store().CommitArtifact(Commit("ds", {Blob(bad, "abc")})).status().code(),
              StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(store().CommitArtifact(Commit("ds", {Blob("a", "abc"), Blob("a", "abc")}))
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store().CommitArtifact(Commit("ds", {Blob("a", "abc")}, "", {"v3"})).status().code(),
            StatusCode::kInvalidArgument);
  ArtifactCommit bad_meta = Commit("ds", {Blob("a", "abc")});
  bad_meta.metadata_json = "[1]";
  EXPECT_EQ(store().CommitArtifact(bad_meta).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store().CommitArtifact(Commit("ds", {Blob("a", "abc")}, "no-such-run")).status().code(),
            StatusCode::kNotFound);
  COHORT_ASSERT_OK_AND_ASSIGN(auto none, store().ListArtifactCollections(kEntity, kProject));
  EXPECT_TRUE(none.empty());

  // A type that differs from the collection's.
  COHORT_ASSERT_OK(store().CommitArtifact(Commit("ds", {Blob("a", "abc")})).status());
  ArtifactCommit other_type = Commit("ds", {Blob("b", "abc")});
  other_type.type = "dataset";
  Result<ArtifactLogged> clash = store().CommitArtifact(other_type);
  ASSERT_EQ(clash.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(clash.status().message().find("is of type \"model\""), std::string::npos);
  COHORT_ASSERT_OK_AND_ASSIGN(auto versions, store().ListArtifactVersions(kEntity, kProject, "ds"));
  EXPECT_EQ(versions.size(), 1u);
}

TEST_P(StoreConformanceTest, ArtifactReferencesAndTheEmptyVersion) {
  ArtifactFile ref{.path = "data/train.csv", .size = 99, .ref = "s3://bucket/train.csv",
                   .ref_digest = "etag-1"};
  ArtifactFile unsized{.path = "data/web", .ref = "https://example.com/x"};
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactLogged v, store().CommitArtifact(Commit("refs", {ref, unsized})));
  EXPECT_EQ(v.version.size, 99);
  COHORT_ASSERT_OK_AND_ASSIGN(auto files, store().ListArtifactFiles(v.version));
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].ref, "s3://bucket/train.csv");
  EXPECT_EQ(files[0].ref_digest, "etag-1");
  EXPECT_EQ(files[0].size, 99);
  EXPECT_TRUE(files[0].sha256.empty());
  EXPECT_EQ(files[1].size, -1);
  ArtifactFile bad_ref{.path = "x", .ref = "ftp://host/x"};
  EXPECT_EQ(store().CommitArtifact(Commit("refs", {bad_ref})).status().code(),
            StatusCode::kInvalidArgument);
  // A changed ETag is a new version.
  ref.ref_digest = "etag-2";
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactLogged v1, store().CommitArtifact(Commit("refs", {ref, unsized})));
  EXPECT_TRUE(v1.created);
  EXPECT_EQ(v1.version.index, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactLogged empty, store().CommitArtifact(Commit("nothing", {})));
  EXPECT_EQ(empty.version.file_count, 0);
}

TEST_P(StoreConformanceTest, ArtifactAliasesMoveAndDeletingLatestMovesIt) {
  for (const char* c : {"a", "b", "c"}) COHORT_ASSERT_OK(store().RecordBlob(kEntity, Sha256::Hex(c), 1, kNow, ""));
  for (const char* c : {"a", "b", "c"}) {
    COHORT_ASSERT_OK(store().CommitArtifact(Commit("m", {Blob("f", c)})).status());
  }
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactVersion moved,
                              store().SetArtifactAlias(kEntity, kProject, "m", "prod", "v0"));
  EXPECT_EQ(moved.aliases, (std::vector<std::string>{"prod"}));
  COHORT_ASSERT_OK(store().SetArtifactAlias(kEntity, kProject, "m", "prod", "v1").status());
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactVersion prod,
                              store().GetArtifactVersion(kEntity, kProject, "m", "prod"));
  EXPECT_EQ(prod.index, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactVersion v0,
                              store().GetArtifactVersion(kEntity, kProject, "m", "v0"));
  EXPECT_TRUE(v0.aliases.empty());
  EXPECT_EQ(store().SetArtifactAlias(kEntity, kProject, "m", "latest", "v0").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store().SetArtifactAlias(kEntity, kProject, "m", "x", "v9").status().code(),
            StatusCode::kNotFound);
  COHORT_ASSERT_OK(store().DeleteArtifactAlias(kEntity, kProject, "m", "prod"));
  EXPECT_EQ(store().DeleteArtifactAlias(kEntity, kProject, "m", "prod").code(),
            StatusCode::kNotFound);

  COHORT_ASSERT_OK(store().DeleteArtifactVersion(kEntity, kProject, "m", "v2"));
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactVersion latest,
                              store().GetArtifactVersion(kEntity, kProject, "m", "latest"));
  EXPECT_EQ(latest.index, 1);
  EXPECT_EQ(store().DeleteArtifactVersion(kEntity, kProject, "m", "latest").code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store().DeleteArtifactVersion(kEntity, kProject, "m", "v2").code(),
            StatusCode::kNotFound);
  // Numbers are never reused: the next version is v3.
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, Sha256::Hex("d"), 1, kNow, ""));
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactLogged next, store().CommitArtifact(Commit("m", {Blob("f", "d")})));
  EXPECT_EQ(next.version.index, 3);
}

TEST_P(StoreConformanceTest, ArtifactLineageOfRunsThatLogAndUse) {
  MakeRun("producer");
  RunRecord consumer = MakeRun("consumer");
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, Sha256::Hex("w"), 1, kNow, ""));
  COHORT_ASSERT_OK(store().CommitArtifact(Commit("m", {Blob("f", "w")}, "producer")).status());
  COHORT_ASSERT_OK_AND_ASSIGN(
      ArtifactVersion used,
      store().UseArtifact(kProject, "m", "latest", Ref("consumer"), "rank1", kNow + 5));
  EXPECT_EQ(used.index, 0);
  COHORT_ASSERT_OK(
      store().UseArtifact(kProject, "m", "v0", Ref("consumer"), "rank1", kNow + 6).status());
  EXPECT_EQ(store().UseArtifact(kProject, "m", "v0", Ref("ghost"), "", kNow).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store().UseArtifact(kProject, "nope", "v0", Ref("consumer"), "", kNow).status().code(),
            StatusCode::kNotFound);

  COHORT_ASSERT_OK_AND_ASSIGN(auto uses, store().ListArtifactUses(used));
  ASSERT_EQ(uses.size(), 2u);
  EXPECT_EQ(uses[0].run_id, "producer");
  EXPECT_EQ(uses[0].direction, "output");
  EXPECT_EQ(uses[0].writer, "rank0");
  EXPECT_EQ(uses[1].run_id, "consumer");
  EXPECT_EQ(uses[1].direction, "input");
  EXPECT_EQ(uses[1].writer, "rank1");

  COHORT_ASSERT_OK_AND_ASSIGN(auto of_consumer, store().ListRunArtifacts(Ref("consumer")));
  ASSERT_EQ(of_consumer.size(), 1u);
  EXPECT_EQ(of_consumer[0].direction, "input");
  EXPECT_EQ(of_consumer[0].version.name, "m");
  EXPECT_EQ(of_consumer[0].version.aliases, (std::vector<std::string>{"latest"}));
  COHORT_ASSERT_OK_AND_ASSIGN(auto of_producer, store().ListRunArtifacts(Ref("producer")));
  ASSERT_EQ(of_producer.size(), 1u);
  EXPECT_EQ(of_producer[0].direction, "output");

  // Deleting the run that logged it keeps the version (and says who logged it).
  COHORT_ASSERT_OK(store().DeleteRun(Ref("producer")));
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactVersion kept,
                              store().GetArtifactVersion(kEntity, kProject, "m", "v0"));
  EXPECT_EQ(kept.run_id, "producer");
  COHORT_ASSERT_OK_AND_ASSIGN(uses, store().ListArtifactUses(kept));
  ASSERT_EQ(uses.size(), 1u);
  EXPECT_EQ(uses[0].run_id, "consumer");
  (void)consumer;
}

TEST_P(StoreConformanceTest, BlobsAreHeldPerEntity) {
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, Sha256::Hex("a"), 1, kNow, ""));
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, Sha256::Hex("a"), 1, kNow, ""));  // idempotent
  COHORT_ASSERT_OK(store().RecordBlob("other", Sha256::Hex("b"), 1, kNow, ""));
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto held, store().HeldBlobs(kEntity, {Sha256::Hex("a"), Sha256::Hex("b"), Sha256::Hex("c")}));
  EXPECT_EQ(held, (std::map<std::string, int64_t>{{Sha256::Hex("a"), 1}}));
  EXPECT_EQ(store().RecordBlob(kEntity, "xyz", 1, kNow, "").code(), StatusCode::kInvalidArgument);
}

// A blob touched (an upload found it held: what names it is on its way) moves its time forward,
// at most once per kBlobRetouchMs, so that gc's grace period keeps it for what comes; a blob the
// entity does not hold is not recorded by a touch.
TEST_P(StoreConformanceTest, TouchingAHeldBlobMovesItsTimeOutOfGcReach) {
  const std::string a = Sha256::Hex("a"), b = Sha256::Hex("b"), c = Sha256::Hex("c");
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, a, 1, kNow, ""));
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, b, 1, kNow, ""));
  const int64_t later = kNow + 10 * limits::kBlobRetouchMs;
  COHORT_ASSERT_OK_AND_ASSIGN(auto unreferenced, store().UnreferencedBlobs(later));
  EXPECT_EQ(unreferenced.size(), 2u);
  // Within the interval: nothing moves (no write per status call).
  COHORT_ASSERT_OK(store().TouchBlob(kEntity, a, kNow + limits::kBlobRetouchMs / 2));
  COHORT_ASSERT_OK_AND_ASSIGN(unreferenced, store().UnreferencedBlobs(kNow + 1));
  EXPECT_EQ(unreferenced.size(), 2u);
  // Later: `a` is young again; a gc whose cutoff is `later` leaves it.
  COHORT_ASSERT_OK(store().TouchBlob(kEntity, a, later));
  COHORT_ASSERT_OK_AND_ASSIGN(unreferenced, store().UnreferencedBlobs(later));
  ASSERT_EQ(unreferenced.size(), 1u);
  EXPECT_EQ(unreferenced[0].sha256, b);
  COHORT_ASSERT_OK_AND_ASSIGN(bool forgot, store().ForgetBlob(kEntity, a, later));
  EXPECT_FALSE(forgot);
  COHORT_ASSERT_OK_AND_ASSIGN(forgot, store().ForgetBlob(kEntity, b, later));
  EXPECT_TRUE(forgot);
  // Never backwards; and a blob not held (forgotten, or never uploaded) stays not held.
  COHORT_ASSERT_OK(store().TouchBlob(kEntity, a, kNow));
  COHORT_ASSERT_OK_AND_ASSIGN(unreferenced, store().UnreferencedBlobs(later));
  EXPECT_TRUE(unreferenced.empty());
  COHORT_ASSERT_OK(store().TouchBlob(kEntity, b, later * 2));
  COHORT_ASSERT_OK(store().TouchBlob(kEntity, c, later * 2));
  COHORT_ASSERT_OK(store().TouchBlob("other", a, later * 2));
  COHORT_ASSERT_OK_AND_ASSIGN(auto held, store().HeldBlobs(kEntity, {a, b, c}));
  EXPECT_EQ(held, (std::map<std::string, int64_t>{{a, 1}}));
  COHORT_ASSERT_OK_AND_ASSIGN(held, store().HeldBlobs("other", {a}));
  EXPECT_TRUE(held.empty());
}

// A blob uploaded again (the vendor clients' uploads record it without a touch first) takes
// the later time: a record left from an old upload must not let gc forget the bytes before the
// commit that names them arrives. Never backwards.
TEST_P(StoreConformanceTest, RecordingAHeldBlobAgainMovesItsTimeForward) {
  const std::string a = Sha256::Hex("a");
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, a, 1, kNow, ""));
  const int64_t later = kNow + 10 * limits::kBlobRetouchMs;
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, a, 1, later, "bWQ1"));
  COHORT_ASSERT_OK_AND_ASSIGN(auto unreferenced, store().UnreferencedBlobs(later));
  EXPECT_TRUE(unreferenced.empty());
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, a, 1, kNow, ""));
  COHORT_ASSERT_OK_AND_ASSIGN(unreferenced, store().UnreferencedBlobs(later));
  EXPECT_TRUE(unreferenced.empty());
  COHORT_ASSERT_OK_AND_ASSIGN(unreferenced, store().UnreferencedBlobs(later + 1));
  ASSERT_EQ(unreferenced.size(), 1u);
  EXPECT_EQ(unreferenced[0].sha256, a);
}

TEST_P(StoreConformanceTest, BlobMd5sAreLookedUpBothWaysPerEntity) {
  const std::string a = Sha256::Hex("a"), b = Sha256::Hex("b"), c = Sha256::Hex("c");
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, a, 1, kNow, "md5-of-a"));
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, b, 1, kNow, ""));  // no MD5 known
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, b, 1, kNow, "md5-of-b"));  // learnt later
  COHORT_ASSERT_OK(store().RecordBlob("other", c, 1, kNow, "md5-of-c"));
  COHORT_ASSERT_OK_AND_ASSIGN(auto by_md5,
                              store().BlobsByMd5(kEntity, {"md5-of-a", "md5-of-b", "md5-of-c"}));
  ASSERT_EQ(by_md5.size(), 2u);
  EXPECT_EQ(by_md5.at("md5-of-a").sha256, a);
  EXPECT_EQ(by_md5.at("md5-of-b").sha256, b);
  COHORT_ASSERT_OK_AND_ASSIGN(auto by_sha, store().Md5sOfBlobs(kEntity, {a, b, c}));
  EXPECT_EQ(by_sha, (std::map<std::string, std::string>{{a, "md5-of-a"}, {b, "md5-of-b"}}));
  COHORT_ASSERT_OK_AND_ASSIGN(by_sha, store().Md5sOfBlobs("other", {a, c}));
  EXPECT_EQ(by_sha, (std::map<std::string, std::string>{{c, "md5-of-c"}}));
}

TEST_P(StoreConformanceTest, ConcurrentCommitsToOneCollectionGetDistinctVersions) {
  constexpr int kThreads = 4, kEach = 5;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kEach; ++i) {
      std::string c = "w" + std::to_string(t) + "-" + std::to_string(i);
      COHORT_ASSERT_OK(store().RecordBlob(kEntity, Sha256::Hex(c), int64_t(c.size()), kNow, ""));
    }
  }
  std::vector<std::thread> threads;
  std::vector<Status> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        std::string c = "w" + std::to_string(t) + "-" + std::to_string(i);
        Result<ArtifactLogged> r = store().CommitArtifact(Commit("shared", {Blob("f", c)}));
        if (!r.ok()) errors[size_t(t)] = r.status();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const Status& s : errors) EXPECT_TRUE(s.ok()) << s.ToString();
  COHORT_ASSERT_OK_AND_ASSIGN(auto versions,
                              store().ListArtifactVersions(kEntity, kProject, "shared"));
  ASSERT_EQ(versions.size(), size_t(kThreads * kEach));
  for (size_t i = 0; i < versions.size(); ++i) {
    EXPECT_EQ(versions[i].index, int64_t(versions.size() - 1 - i));
  }
  EXPECT_EQ(versions[0].aliases, (std::vector<std::string>{"latest"}));
}

}  // namespace cohort::store

namespace cohort::store {

TEST_P(StoreConformanceTest, GarbageCollectionForgetsOnlyUnreferencedOldBlobs) {
  for (const char* c : {"kept", "dropped", "young"}) {
    COHORT_ASSERT_OK(store().RecordBlob(kEntity, Sha256::Hex(c), int64_t(std::string(c).size()),
                                        std::string(c) == "young" ? kNow + 100 : kNow, ""));
  }
  COHORT_ASSERT_OK(store().RecordBlob("other", Sha256::Hex("dropped"), 7, kNow, ""));
  COHORT_ASSERT_OK(store().CommitArtifact(Commit("m", {Blob("a", "kept")})).status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto unreferenced, store().UnreferencedBlobs(kNow + 50));
  std::vector<std::pair<std::string, std::string>> got;
  for (const HeldBlob& b : unreferenced) got.emplace_back(b.entity, b.sha256);
  EXPECT_EQ(got, (std::vector<std::pair<std::string, std::string>>{
                     {kEntity, Sha256::Hex("dropped")}, {"other", Sha256::Hex("dropped")}}));
  // A referenced or young blob is never forgotten, even when asked.
  EXPECT_FALSE(*store().ForgetBlob(kEntity, Sha256::Hex("kept"), kNow + 50));
  EXPECT_FALSE(*store().ForgetBlob(kEntity, Sha256::Hex("young"), kNow + 50));
  EXPECT_TRUE(*store().ForgetBlob(kEntity, Sha256::Hex("dropped"), kNow + 50));
  EXPECT_FALSE(*store().ForgetBlob(kEntity, Sha256::Hex("dropped"), kNow + 50));
  EXPECT_TRUE(*store().BlobHeldByAnyEntity(Sha256::Hex("dropped")));  // "other" holds it
  EXPECT_TRUE(*store().ForgetBlob("other", Sha256::Hex("dropped"), kNow + 50));
  EXPECT_FALSE(*store().BlobHeldByAnyEntity(Sha256::Hex("dropped")));
  // A commit after the record was forgotten must upload again.
  EXPECT_EQ(store().CommitArtifact(Commit("m", {Blob("a", "dropped")})).status().code(),
            StatusCode::kFailedPrecondition);
  // Deleting the version that referenced a blob makes it collectable.
  COHORT_ASSERT_OK(store().DeleteArtifactVersion(kEntity, kProject, "m", "v0"));
  EXPECT_TRUE(*store().ForgetBlob(kEntity, Sha256::Hex("kept"), kNow + 50));
}

// A W&B client names a committed artifact by its own client ID (a vendor table's artifact_path):
// the draft that carries it, once committed, or a draft made committed at once (an artifact
// equal to the latest version); the newest draft wins, another entity's is not found.
TEST_P(StoreConformanceTest, AClientIdNamesTheVersionItsDraftCommitted) {
  MakeRun("r1");
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, Sha256::Hex("t1"), 2, kNow, ""));
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactLogged v0,
                              store().CommitArtifact(Commit("tab", {Blob("t.json", "t1")}, "r1")));
  ArtifactDraft d;
  d.entity = kEntity;
  d.project = "vision";
  d.name = "tab";
  d.type = "model";
  d.client_id = "client-1";
  d.created_ms = kNow;
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactDraft pending, store().CreateArtifactDraft(d));
  EXPECT_EQ(pending.client_id, "client-1");
  EXPECT_EQ(store().ArtifactVersionOfClientId(kEntity, "client-1").status().code(),
            StatusCode::kNotFound);  // not committed yet
  COHORT_ASSERT_OK(store().SetArtifactDraftVersion(kEntity, pending.pk, v0.version.pk));
  COHORT_ASSERT_OK_AND_ASSIGN(ArtifactVersion got,
                              store().ArtifactVersionOfClientId(kEntity, "client-1"));
  EXPECT_EQ(got.pk, v0.version.pk);
  EXPECT_EQ(got.name, "tab");
  d.client_id = "client-2";
  d.version_pk = v0.version.pk;  // committed at once
  COHORT_ASSERT_OK(store().CreateArtifactDraft(d).status());
  COHORT_ASSERT_OK_AND_ASSIGN(got, store().ArtifactVersionOfClientId(kEntity, "client-2"));
  EXPECT_EQ(got.index, 0);
  EXPECT_EQ(store().ArtifactVersionOfClientId("other", "client-2").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store().ArtifactVersionOfClientId(kEntity, "").status().code(),
            StatusCode::kNotFound);
  // Deleting the version deletes its drafts: their manifest blob becomes collectable.
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, Sha256::Hex("manifest"), 8, kNow, ""));
  COHORT_ASSERT_OK(store().SetArtifactDraftManifest(kEntity, pending.pk, Sha256::Hex("manifest")));
  COHORT_ASSERT_OK_AND_ASSIGN(auto unreferenced, store().UnreferencedBlobs(kNow + 1));
  EXPECT_TRUE(unreferenced.empty());
  COHORT_ASSERT_OK(store().DeleteArtifactVersion(kEntity, "vision", "tab", "v0"));
  EXPECT_EQ(store().ArtifactVersionOfClientId(kEntity, "client-1").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store().GetArtifactDraft(kEntity, pending.pk).status().code(), StatusCode::kNotFound);
  COHORT_ASSERT_OK_AND_ASSIGN(unreferenced, store().UnreferencedBlobs(kNow + 1));
  std::vector<std::string> shas;
  for (const HeldBlob& b : unreferenced) shas.push_back(b.sha256);
  std::sort(shas.begin(), shas.end());
  std::vector<std::string> want = {Sha256::Hex("manifest"), Sha256::Hex("t1")};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(shas, want);
}

}  // namespace cohort::store

