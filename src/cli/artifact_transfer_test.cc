#include "cli/artifact_transfer.h"

#include <gtest/gtest.h>

#include "wal/test_util.h"

namespace cohort::cli {
namespace {

using wal::testing::TempDir;

void Write(const std::string& path, std::string_view bytes) {
  ASSERT_TRUE(wal::WriteFileAtomically(wal::FileSystem::Default(), path, bytes).ok()) << path;
}

TEST(CollectFiles, ADirectoryGivesEveryFileByRelativePathSorted) {
  TempDir dir;
  wal::FileSystem* fs = wal::FileSystem::Default();
  ASSERT_TRUE(fs->CreateDir(dir.File("root/sub/deeper")).ok());
  Write(dir.File("root/b.txt"), "bb");
  Write(dir.File("root/a.bin"), "a");
  Write(dir.File("root/sub/deeper/c"), "ccc");
  auto files = CollectFiles(fs, dir.File("root") + "/");
  ASSERT_TRUE(files.ok()) << files.status().message();
  ASSERT_EQ(files->size(), 3u);
  EXPECT_EQ((*files)[0].name, "a.bin");
  EXPECT_EQ((*files)[1].name, "b.txt");
  EXPECT_EQ((*files)[2].name, "sub/deeper/c");
  EXPECT_EQ((*files)[2].disk_path, dir.File("root/sub/deeper/c"));
  EXPECT_EQ((*files)[2].size, 3u);
}

TEST(CollectFiles, AFileIsNamedByItsBaseName) {
  TempDir dir;
  Write(dir.File("model.pt"), "weights");
  auto files = CollectFiles(wal::FileSystem::Default(), dir.File("model.pt"));
  ASSERT_TRUE(files.ok()) << files.status().message();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].name, "model.pt");
  EXPECT_EQ((*files)[0].size, 7u);
}

TEST(CollectFiles, MissingPathsAndEmptyDirectoriesAreErrorsNamingThem) {
  TempDir dir;
  wal::FileSystem* fs = wal::FileSystem::Default();
  auto missing = CollectFiles(fs, dir.File("nope"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir.File("nope")), std::string::npos);
  ASSERT_TRUE(fs->CreateDir(dir.File("empty")).ok());
  auto empty = CollectFiles(fs, dir.File("empty"));
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("no file"), std::string::npos);
}

TEST(ParentDir, OfPaths) {
  EXPECT_EQ(ParentDir("a/b/c"), "a/b");
  EXPECT_EQ(ParentDir("c"), "");
  EXPECT_EQ(ParentDir("/c"), "/");
}

}  // namespace
}  // namespace cohort::cli
