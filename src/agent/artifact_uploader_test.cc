// ArtifactUploader against a real Cohort server (server::ServerApp in this process, on a free
// port, its own data directory): multi-part upload and commit, resumption by a new uploader after
// the first stopped in the middle (only the missing parts are sent), a re-logged version that
// sends nothing, and failures carried with the server's message.
#include "agent/artifact_uploader.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

#include "core/clock.h"
#include "core/limits.h"
#include "core/sha256.h"
#include "server/server_app.h"
#include "wal/fault_file_system.h"

namespace cohort::agent {
namespace {

namespace fs = std::filesystem;

class ArtifactUploaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cohort-uploader-XXXXXX";
    root_ = mkdtemp(tmpl);
    server::ServerConfig c;
    c.data_dir = root_ + "/server";
    c.http.port = 0;
    c.http.worker_threads = 8;
    c.write_user_config = false;
    c.entity = "alice";
    c.sweep_interval_s = 3600;
    app_ = std::make_unique<server::ServerApp>(c);
    Status st = app_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    target_ = ArtifactTarget{app_->url(), app_->bootstrap_key(), "alice", "p"};
  }

  void TearDown() override {
    if (app_) app_->Stop();
    fs::remove_all(root_);
  }

  std::string WriteFile(const std::string& name, size_t bytes, uint32_t seed) {
    std::string data(bytes, '\0');
    std::mt19937 rng(seed);
    for (auto& c : data) c = char(rng());
    const std::string path = root_ + "/" + name;
    std::ofstream(path, std::ios::binary) << data;
    return path;
  }

  ArtifactIntent IntentFor(const std::string& id, const std::string& name, const std::string& type,
                           const std::string& path, const std::string& file_path = "model.bin") {
    std::ifstream in(path, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ArtifactIntent i;
    i.id = id;
    i.name = name;
    i.type = type;
    ArtifactFileEntry f;
    f.path = file_path;
    f.sha256 = Sha256::Hex(data);
    f.size = int64_t(data.size());
    f.source = path;
    i.files.push_back(f);
    return i;
  }

  static ArtifactStatus WaitDone(ArtifactUploader& u, const std::string& id, int64_t ms = 30000) {
    const int64_t deadline = NowMillis() + ms;
    ArtifactStatus s;
    while (NowMillis() < deadline) {
      s = u.StatusOf({id})[0];
      if (s.terminal()) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return s;
  }

  static bool WaitFor(const std::function<bool()>& cond, int64_t ms) {
    const int64_t deadline = NowMillis() + ms;
    while (NowMillis() < deadline) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return cond();
  }

  std::string root_;
  std::unique_ptr<server::ServerApp> app_;
  ArtifactTarget target_;
};

TEST_F(ArtifactUploaderTest, UploadsAMultiPartFileAndCommitsTheVersion) {
  const size_t size = 2 * limits::kBlobPartBytes + 12345;  // 3 parts
  const std::string file = WriteFile("model.bin", size, 1);
  ArtifactIntent in = IntentFor("a1", "ckpt", "model", file);
  ArtifactUploader up(root_ + "/agent/%artifacts", nullptr);
  up.Start();
  ASSERT_TRUE(up.Accept(target_, ToJson(in)).ok());
  ArtifactStatus s = WaitDone(up, "a1");
  ASSERT_EQ(s.state, "committed") << s.error << s.last_failure;
  EXPECT_EQ(s.version, "v0");
  EXPECT_EQ(s.digest, ManifestDigest(in));
  EXPECT_EQ(s.size, int64_t(size));
  EXPECT_TRUE(s.created);
  EXPECT_EQ(s.parts_uploaded, 3);
  EXPECT_EQ(s.bytes_done, int64_t(size));
  // Handed again (a WAL record read twice): the same outcome, nothing sent.
  ASSERT_TRUE(up.Accept(target_, ToJson(in)).ok());
  EXPECT_EQ(up.parts_uploaded(), 3);
  // A new version with the same file: committed as the same version, no part sent.
  ArtifactIntent again = IntentFor("a2", "ckpt", "model", file);
  ASSERT_TRUE(up.Accept(target_, ToJson(again)).ok());
  ArtifactStatus s2 = WaitDone(up, "a2");
  ASSERT_EQ(s2.state, "committed") << s2.error;
  EXPECT_EQ(s2.version, "v0");
  EXPECT_FALSE(s2.created);
  EXPECT_EQ(s2.parts_uploaded, 0);
  EXPECT_EQ(up.parts_uploaded(), 3);
  EXPECT_EQ(up.pending(), 0);
}

TEST_F(ArtifactUploaderTest, AnEmptyFileIsCommittedWithoutAnyPart) {
  // A model directory with an empty file (__init__.py, .gitkeep): the empty blob has no part,
  // so nothing is PUT for it (a PUT of part 0 was refused, failing the version).
  const std::string empty = WriteFile("empty", 0, 1);
  const std::string model = WriteFile("model.bin", 1000, 2);
  ArtifactIntent in = IntentFor("e1", "ckpt", "model", model);
  ArtifactIntent only_empty = IntentFor("x", "x", "x", empty, "pkg/__init__.py");
  in.files.push_back(only_empty.files[0]);
  ArtifactUploader up(root_ + "/agent/%artifacts", nullptr);
  up.Start();
  ASSERT_TRUE(up.Accept(target_, ToJson(in)).ok());
  ArtifactStatus s = WaitDone(up, "e1");
  ASSERT_EQ(s.state, "committed") << s.error << s.last_failure;
  EXPECT_EQ(s.size, 1000);
  EXPECT_EQ(s.parts_uploaded, 1);
  EXPECT_EQ(s.files_done, 2);
}

TEST_F(ArtifactUploaderTest, ABlobGoneBeforeTheCommitIsUploadedAgainNotAFailure) {
  // gc may forget a blob between the status call that found it held and the commit (while the
  // other files upload): the commit's 409 "upload it first" makes the uploader ask again and
  // upload it, where it failed the version.
  const std::string a = WriteFile("a.bin", 1000, 5), b = WriteFile("b.bin", 2000, 6);
  ArtifactUploaderOptions options;
  options.part_delay_ms = 300;
  ArtifactUploader up(root_ + "/agent/%artifacts", nullptr, options);
  up.Start();
  ArtifactIntent first = IntentFor("g1", "first", "model", a, "a.bin");
  ASSERT_TRUE(up.Accept(target_, ToJson(first)).ok());
  ASSERT_EQ(WaitDone(up, "g1").state, "committed");
  ArtifactIntent both = IntentFor("g2", "second", "model", a, "a.bin");
  both.files.push_back(IntentFor("x", "x", "x", b, "b.bin").files[0]);
  const std::string sha_a = both.files[0].sha256;
  const std::string blob_a = root_ + "/server/blobs/sha256/" + sha_a.substr(0, 2) + "/" + sha_a;
  ASSERT_TRUE(fs::exists(blob_a));
  ASSERT_TRUE(up.Accept(target_, ToJson(both)).ok());
  // a.bin was found held; while b.bin's part waits, a's blob goes.
  ASSERT_TRUE(WaitFor([&] { return up.StatusOf({"g2"})[0].current == "b.bin"; }, 10000));
  fs::remove(blob_a);
  ArtifactStatus s = WaitDone(up, "g2", 60000);
  ASSERT_EQ(s.state, "committed") << s.error << s.last_failure;
  EXPECT_TRUE(fs::exists(blob_a));
}

TEST_F(ArtifactUploaderTest, ANewUploaderResumesAfterTheFirstStoppedMidUpload) {
  const size_t size = 3 * limits::kBlobPartBytes;  // 3 parts
  const std::string file = WriteFile("big.bin", size, 2);
  ArtifactIntent in = IntentFor("r1", "ckpt", "model", file);
  const std::string dir = root_ + "/agent/%artifacts";
  int64_t first_parts = 0;
  {
    ArtifactUploaderOptions o;
    o.parallel_parts = 1;
    o.part_delay_ms = 200;
    ArtifactUploader up(dir, nullptr, o);
    up.Start();
    ASSERT_TRUE(up.Accept(target_, ToJson(in)).ok());
    ASSERT_TRUE(WaitFor([&] { return up.parts_uploaded() >= 1; }, 30000));
    up.Stop();  // the agent goes away with the intent pending
    first_parts = up.parts_uploaded();
    ASSERT_LT(first_parts, 3);
  }
  ArtifactUploader next(dir, nullptr);
  EXPECT_EQ(next.StatusOf({"r1"})[0].state, "pending");  // read back from its file
  next.Start();
  EXPECT_EQ(next.Recover(), 1);
  ArtifactStatus s = WaitDone(next, "r1");
  ASSERT_EQ(s.state, "committed") << s.error << s.last_failure;
  EXPECT_EQ(s.digest, ManifestDigest(in));
  // Only the parts the server did not hold.
  EXPECT_EQ(next.parts_uploaded(), 3 - first_parts);
}

TEST_F(ArtifactUploaderTest, AFileThatChangedFailsTheVersionWithTheServersMessage) {
  const std::string file = WriteFile("m.bin", 1000, 3);
  ArtifactIntent in = IntentFor("c1", "ckpt", "model", file);
  // Same size, other bytes: the server's check of the SHA-256 refuses it.
  WriteFile("m.bin", 1000, 4);
  ArtifactUploader up(root_ + "/agent/%artifacts", nullptr);
  up.Start();
  ASSERT_TRUE(up.Accept(target_, ToJson(in)).ok());
  ArtifactStatus s = WaitDone(up, "c1");
  ASSERT_EQ(s.state, "failed");
  EXPECT_NE(s.error.find("HTTP 400"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("upload the file again"), std::string::npos) << s.error;
  // Another size: refused before anything is sent.
  WriteFile("m.bin", 999, 5);
  ArtifactIntent grown = IntentFor("c2", "ckpt", "model", root_ + "/m.bin");
  // Grown after it was hashed (before the upload starts: appended after Accept, a fast uploader
  // read the 999 bytes first and committed them).
  std::ofstream(root_ + "/m.bin", std::ios::app) << "more";
  ASSERT_TRUE(up.Accept(target_, ToJson(grown)).ok());
  ArtifactStatus s2 = WaitDone(up, "c2");
  ASSERT_EQ(s2.state, "failed");
  EXPECT_NE(s2.error.find("log the artifact again"), std::string::npos) << s2.error;
}

TEST_F(ArtifactUploaderTest, ATypeThatIsNotTheCollectionsFailsWithTheServersMessage) {
  const std::string file = WriteFile("t.bin", 100, 6);
  ArtifactUploader up(root_ + "/agent/%artifacts", nullptr);
  up.Start();
  ASSERT_TRUE(up.Accept(target_, ToJson(IntentFor("t1", "coll", "model", file))).ok());
  ASSERT_EQ(WaitDone(up, "t1").state, "committed");
  const std::string other = WriteFile("u.bin", 100, 7);
  ASSERT_TRUE(up.Accept(target_, ToJson(IntentFor("t2", "coll", "dataset", other))).ok());
  ArtifactStatus s = WaitDone(up, "t2");
  ASSERT_EQ(s.state, "failed");
  EXPECT_NE(s.error.find("HTTP 409"), std::string::npos) << s.error;
}

TEST_F(ArtifactUploaderTest, StagingLeftByAClientThatEndedBeforeHandingItOverIsRemoved) {
  ArtifactUploader up(root_ + "/agent/%artifacts", nullptr);
  ASSERT_TRUE(up.PrepareDirs().ok());
  auto me = ThisProcessAsOwner(wal::FileSystem::Default());
  ASSERT_TRUE(me.has_value());
  StagingOwner gone = *me;
  gone.start_ticks += 1;  // this pid, another start: a process that has ended
  auto stage = [&](const std::string& id, const std::optional<StagingOwner>& owner) {
    const std::string dir = up.staging_dir() + "/" + id;
    fs::create_directories(dir);
    std::ofstream(dir + "/0") << "copy";
    if (owner) std::ofstream(dir + "/" + kStagingOwnerFile) << StagingOwnerText(*owner);
    return dir;
  };
  const std::string orphan = stage("dead", gone);
  const std::string live = stage("live", *me);
  const std::string handed = stage("handed", std::nullopt);
  const std::string released = stage("released", gone);
  up.ReleaseStaging(released);              // its intent became durable at the agent
  up.ReleaseStaging(root_ + "/elsewhere");  // outside the staging area: ignored
  EXPECT_EQ(up.RemoveOrphanedStaging(), 1);
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_TRUE(fs::exists(live + "/0"));
  EXPECT_TRUE(fs::exists(handed + "/0"));
  EXPECT_TRUE(fs::exists(released + "/0"));
  EXPECT_FALSE(fs::exists(released + "/" + kStagingOwnerFile));
}

// A client in another PID namespace than its agent (a container beside the agent's): the pid it
// writes names another process here, or none. Its directory is judged by its lock: kept while
// held, even when that pid names no live process here; deleted once free, even when that pid
// names a live process here. A lock file without a namespace (an older client's directory, the
// file made by the agent's look) leaves the pid to judge, as before.
TEST_F(ArtifactUploaderTest, StagingOfAClientInAnotherPidNamespaceIsJudgedByItsLock) {
  ArtifactUploader up(root_ + "/agent/%artifacts", nullptr);
  ASSERT_TRUE(up.PrepareDirs().ok());
  wal::FileSystem* fs = wal::FileSystem::Default();
  auto me = ThisProcessAsOwner(fs);
  ASSERT_TRUE(me.has_value());
  const uint64_t here = ThisPidNamespace(fs);
  ASSERT_NE(here, 0u);
  StagingOwner gone = *me;
  gone.start_ticks += 1;  // its pid names no such process here
  // Lock files of two processes of another namespace, as ClaimStaging makes them.
  const std::string clients = up.staging_dir() + "/" + kStagingClientsDir;
  fs::create_directories(clients);
  const std::string running = clients + "/" + std::to_string(here + 1) + ".1.100";
  const std::string ended = clients + "/" + std::to_string(here + 1) + ".2.100";
  std::ofstream(running) << here + 1 << "\n";
  std::ofstream(ended) << here + 1 << "\n";
  auto stage = [&](const std::string& id, const StagingOwner& owner, const std::string& lock) {
    const std::string dir = up.staging_dir() + "/" + id;
    fs::create_directories(dir);
    std::ofstream(dir + "/0") << "copy";
    if (!lock.empty()) fs::create_hard_link(lock, dir + "/" + kStagingLockFile);
    std::ofstream(dir + "/" + kStagingOwnerFile) << StagingOwnerText(owner);
    return dir;
  };
  const std::string held = stage("held", gone, running);
  const std::string held_too = stage("held-too", gone, running);
  const std::string free = stage("free", *me, ended);    // a pid alive here, of another process
  const std::string old_client = stage("old", *me, "");  // no lock: judged by the pid (alive)
  auto lock = fs->LockFile(running);                     // the client holds it: it runs
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  EXPECT_EQ(up.RemoveOrphanedStaging(), 1);
  EXPECT_TRUE(fs::exists(held + "/0"));
  EXPECT_TRUE(fs::exists(held_too + "/0"));
  EXPECT_TRUE(fs::exists(old_client + "/0"));
  EXPECT_FALSE(fs::exists(free)) << "a pid of another namespace named a process of this one";
  lock->reset();  // the client ended
  EXPECT_EQ(up.RemoveOrphanedStaging(), 2);
  EXPECT_FALSE(fs::exists(held));
  EXPECT_FALSE(fs::exists(held_too));
  EXPECT_TRUE(fs::exists(old_client + "/0"));
  // The ended clients' lock files go once an hour old (never one a client is about to lock).
  EXPECT_TRUE(fs::exists(running) && fs::exists(ended));
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(2);
  fs::last_write_time(running, old);
  fs::last_write_time(ended, old);
  auto again = fs->LockFile(ended);  // as if its process still ran
  ASSERT_TRUE(again.ok());
  up.RemoveOrphanedStaging();
  EXPECT_FALSE(fs::exists(running));
  EXPECT_TRUE(fs::exists(ended));
}

TEST(StagingClaimTest, OneLockFilePerProcessHardLinkedIntoEachDirectoryItClaims) {
  static int run = 0;  // a root of its own each time (the process keeps its lock file per root)
  const std::string root =
      testing::TempDir() + "/claim-" + std::to_string(getpid()) + "-" + std::to_string(++run);
  fs::remove_all(root);
  fs::create_directories(root + "/a");
  fs::create_directories(root + "/b");
  wal::FileSystem* fs = wal::FileSystem::Default();
  ASSERT_TRUE(ClaimStaging(fs, root + "/a").ok());
  ASSERT_TRUE(ClaimStaging(fs, root + "/b").ok());
  auto text = wal::ReadFileToString(fs, root + "/a/" + kStagingOwnerFile, 4096);
  ASSERT_TRUE(text.ok());
  auto owner = ParseStagingOwner(*text);
  ASSERT_TRUE(owner.has_value()) << *text;
  EXPECT_EQ(*owner, *ThisProcessAsOwner(fs));
  const uint64_t ns = ThisPidNamespace(fs);
  const std::string mine = root + "/" + kStagingClientsDir + "/" + std::to_string(ns) + "." +
                           std::to_string(getpid()) + "." + std::to_string(owner->start_ticks);
  ASSERT_TRUE(fs::exists(mine));
  EXPECT_EQ(fs::hard_link_count(mine), 3u);  // itself and the two directories' .lock
  auto lock_text = wal::ReadFileToString(fs, root + "/b/" + kStagingLockFile, 64);
  ASSERT_TRUE(lock_text.ok());
  EXPECT_EQ(ParseStagingLockNamespace(*lock_text), ns);
  // Held by this process: another taker (the agent's look) is refused.
  EXPECT_EQ(fs->LockFile(root + "/a/" + kStagingLockFile).status().code(),
            StatusCode::kFailedPrecondition);
  fs::remove_all(root);
}

TEST_F(ArtifactUploaderTest, ClaimsWhereHardLinksFailMakeNoLockFileEach) {
  // On a file system without hard links every claim's link fails: the directory stays
  // unclaimed, and no new lock file (with its held descriptor) is made for each claim.
  static int run = 0;
  const std::string root =
      testing::TempDir() + "/nolinks-" + std::to_string(getpid()) + "-" + std::to_string(++run);
  fs::remove_all(root);
  wal::FaultInjectingFileSystem fault(wal::FileSystem::Default());
  fault.FailLinks(EPERM);
  for (int i = 0; i < 20; ++i) {
    const std::string dir = root + "/d" + std::to_string(i);
    fs::create_directories(dir);
    ASSERT_TRUE(ClaimStaging(&fault, dir).ok());
    EXPECT_FALSE(fs::exists(dir + "/" + kStagingOwnerFile));  // unclaimed: kept till the outcome
  }
  size_t lock_files = 0;
  for (const auto& e : fs::directory_iterator(root + "/" + kStagingClientsDir)) {
    (void)e;
    ++lock_files;
  }
  EXPECT_EQ(lock_files, 1u);
  // Once links work again, the same lock file serves.
  fault.FailLinks(0);
  fs::create_directories(root + "/ok");
  ASSERT_TRUE(ClaimStaging(&fault, root + "/ok").ok());
  EXPECT_TRUE(fs::exists(root + "/ok/" + kStagingOwnerFile));
  fs::remove_all(root);
}

TEST_F(ArtifactUploaderTest, ReleasingAClaimedDirectoryRemovesItsOwnerThenItsLockLink) {
  ArtifactUploader up(root_ + "/agent/%artifacts", nullptr);
  ASSERT_TRUE(up.PrepareDirs().ok());
  wal::FileSystem* fs = wal::FileSystem::Default();
  const std::string dir = up.staging_dir() + "/handed";
  fs::create_directories(dir);
  ASSERT_TRUE(ClaimStaging(fs, dir).ok());
  ASSERT_TRUE(fs::exists(dir + "/" + kStagingOwnerFile));
  const auto links = fs::hard_link_count(dir + "/" + kStagingLockFile);
  ASSERT_GE(links, 2u);
  up.ReleaseStaging(dir);
  EXPECT_FALSE(fs::exists(dir + "/" + kStagingOwnerFile));
  EXPECT_FALSE(fs::exists(dir + "/" + kStagingLockFile));
  // The process's lock file lost that link (links do not gather one per directory ever claimed).
  std::string mine;
  for (const auto& e : fs::directory_iterator(up.staging_dir() + "/" + kStagingClientsDir)) {
    if (e.path().filename().string().find("." + std::to_string(getpid()) + ".") !=
        std::string::npos) {
      mine = e.path();
    }
  }
  ASSERT_FALSE(mine.empty());
  EXPECT_EQ(fs::hard_link_count(mine), links - 1);
}

TEST(StagingClaimTest, AForkedChildTakesALockFileOfItsOwnAndLeavesTheParentsLocked) {
  static int run = 0;
  const std::string root =
      testing::TempDir() + "/claim-fork-" + std::to_string(getpid()) + "-" + std::to_string(++run);
  fs::remove_all(root);
  fs::create_directories(root + "/parent");
  fs::create_directories(root + "/child");
  wal::FileSystem* fs = wal::FileSystem::Default();
  ASSERT_TRUE(ClaimStaging(fs, root + "/parent").ok());
  const std::string parent_lock = root + "/parent/" + kStagingLockFile;
  const std::string child_lock = root + "/child/" + kStagingLockFile;
  pid_t pid = fork();
  if (pid == 0) {  // the child: claims with its own file, then exits (nothing else here)
    int code = 1;
    if (ClaimStaging(fs, root + "/child").ok() && fs::exists(child_lock)) {
      code = fs::equivalent(child_lock, parent_lock) ? 2 : 0;
    }
    _exit(code);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: the child linked its parent's lock file";
  // The child's exit neither unlocked the parent's lock nor left its own held.
  EXPECT_EQ(fs->LockFile(parent_lock).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fs->LockFile(child_lock).ok());
  fs::remove_all(root);
}

TEST(StagingClaimTest, ParsesTheOwnerAndTheLockFileItWrites) {
  StagingOwner o{.pid = 42, .start_ticks = 7, .boot_id = "b-1"};
  auto back = ParseStagingOwner(StagingOwnerText(o));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, o);
  for (const char* bad : {"", "42 7\n", "0 7 b-1\n", "-4 7 b-1\n", "42 x b-1\n", "42 7 \n",
                          "42 7 b-1 extra\n", "99999999999999999999999 7 b-1\n"}) {
    EXPECT_FALSE(ParseStagingOwner(bad).has_value()) << bad;
  }
  EXPECT_EQ(ParseStagingLockNamespace("4026531836\n"), 4026531836u);
  EXPECT_EQ(ParseStagingLockNamespace(""), 0u);
  EXPECT_EQ(ParseStagingLockNamespace("ns\n"), 0u);
}

// A committed version's staged copies leave the staging area before the outcome is told (a
// rename), and the trash thread deletes them: the next intent never waits for a 2 GiB unlink.
TEST_F(ArtifactUploaderTest, StagedCopiesGoToTheTrashBeforeTheOutcomeAndAreDeletedThere) {
  ArtifactUploader up(root_ + "/agent/%artifacts", nullptr);
  ASSERT_TRUE(up.PrepareDirs().ok());
  const std::string trash = up.root() + "/" + ArtifactUploader::kTrashDir;
  fs::create_directories(trash + "/left-by-an-earlier-agent");
  std::ofstream(trash + "/left-by-an-earlier-agent/0") << "old copy";
  const std::string staging = up.staging_dir() + "/s1";
  fs::create_directories(staging);
  const std::string copy = WriteFile("agent/%artifacts/staging/s1/0", 3 * 1024, 5);
  ArtifactIntent in = IntentFor("s1", "staged", "model", copy);
  in.staging = staging;
  up.Start();
  ASSERT_TRUE(up.Accept(target_, ToJson(in)).ok());
  ArtifactStatus s = WaitDone(up, "s1");
  ASSERT_EQ(s.state, "committed") << s.error << s.last_failure;
  EXPECT_FALSE(fs::exists(staging));  // moved out before "committed" was told
  EXPECT_TRUE(WaitFor([&] { return fs::exists(trash) && fs::is_empty(trash); }, 30000))
      << "the trash thread deletes the copies (and what an earlier agent left)";
  EXPECT_TRUE(fs::exists(up.staging_dir()));
}

}  // namespace
}  // namespace cohort::agent
