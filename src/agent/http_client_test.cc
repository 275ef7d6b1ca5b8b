// FindCaBundle: where the agent's TLS peers are verified from when libcurl has no default.
#include "agent/http_client.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

namespace cohort::agent {
namespace {

class FindCaBundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cohort-ca-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { (void)fs_->RemoveAll(dir_); }

  std::string MakeFile(const std::string& name) {
    const std::string path = dir_ + "/" + name;
    auto file = fs_->NewWritableFile(path, wal::WriteMode::kCreateExclusive);
    EXPECT_TRUE(file.ok());
    EXPECT_TRUE((*file)->Append("-----BEGIN CERTIFICATE-----\n").ok());
    EXPECT_TRUE((*file)->Close().ok());
    return path;
  }

  wal::FileSystem* fs_ = wal::FileSystem::Default();
  std::string dir_;
};

TEST_F(FindCaBundleTest, TakesTheFirstCandidateThatExists) {
  const std::string second = MakeFile("second.pem");
  const std::string third = MakeFile("third.pem");
  const std::string missing = dir_ + "/missing.pem";
  const std::vector<std::string_view> candidates = {missing, second, third};
  EXPECT_EQ(FindCaBundle(*fs_, "", candidates), second);
}

TEST_F(FindCaBundleTest, SslCertFileWinsAndNoneFoundIsEmpty) {
  const std::string present = MakeFile("present.pem");
  const std::string missing = dir_ + "/missing.pem";
  const std::vector<std::string_view> candidates = {present};
  EXPECT_EQ(FindCaBundle(*fs_, "/custom/ca.pem", candidates), "/custom/ca.pem");
  const std::vector<std::string_view> none = {missing};
  EXPECT_EQ(FindCaBundle(*fs_, "", none), "");
}

}  // namespace
}  // namespace cohort::agent
