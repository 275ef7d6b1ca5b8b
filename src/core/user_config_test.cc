#include "core/user_config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace cohort {
namespace {

TEST(UserCacheDir, FollowsTheEnvironmentAsThePythonSdkReadsIt) {
  const char* saved[3] = {std::getenv("COHORT_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"),
                          std::getenv("HOME")};
  std::string keep[3];
  for (int i = 0; i < 3; ++i) keep[i] = saved[i] ? saved[i] : "";
  ::setenv("COHORT_CACHE_DIR", "/c", 1);
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  ::setenv("HOME", "/h", 1);
  EXPECT_EQ(UserCacheDir(), "/c");
  ::setenv("COHORT_CACHE_DIR", "~/c", 1);  // as the Python SDK reads it (expanduser, abspath)
  EXPECT_EQ(UserCacheDir(), "/h/c");
  ::setenv("COHORT_CACHE_DIR", "rel/c", 1);
  EXPECT_EQ(UserCacheDir(), (std::filesystem::current_path() / "rel/c").string());
  ::unsetenv("COHORT_CACHE_DIR");
  EXPECT_EQ(UserCacheDir(), "/x/cohort");
  ::setenv("XDG_CACHE_HOME", "", 1);
  EXPECT_EQ(UserCacheDir(), "/h/.cache/cohort");
  ::unsetenv("HOME");  // the password database's home directory
  EXPECT_TRUE(UserCacheDir().ends_with("/.cache/cohort")) << UserCacheDir();
  const char* names[3] = {"COHORT_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  for (int i = 0; i < 3; ++i) {
    if (saved[i]) {
      ::setenv(names[i], keep[i].c_str(), 1);
    } else {
      ::unsetenv(names[i]);
    }
  }
}

}  // namespace
}  // namespace cohort
