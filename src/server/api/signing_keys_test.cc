#include "server/api/signing_keys.h"

#include <gtest/gtest.h>

#include <string>

namespace cohort::api {
namespace {

const std::string kOld(40, 'a');
const std::string kNew(40, 'b');

// The keys Load made from `env` accept what `key` alone signs.
bool Accepts(const SigningKeys& keys, const std::string& key) {
  auto one = SigningKeys::FromKeys({key}, "test");
  EXPECT_TRUE(one.ok());
  return keys.Verify("message", one->Sign("message"));
}

TEST(SigningKeysTest, EnvironmentKeysAreSeparatedByCommasOrNewlines) {
  // "$(cat file)" of a key file: one key a line (the shell drops the last newline).
  for (const std::string& env : {kNew + "\n" + kOld, kNew + "," + kOld, kNew + "\r\n" + kOld + "\n",
                                "# rotated on Monday\n" + kNew + "\n\n" + kOld}) {
    bool created = true;
    auto keys = SigningKeys::Load("/nonexistent/signing.key", env.c_str(), &created);
    ASSERT_TRUE(keys.ok()) << keys.status().ToString();
    EXPECT_FALSE(created);
    EXPECT_EQ(keys->size(), 2u) << env;
    EXPECT_TRUE(Accepts(*keys, kOld)) << env;
    EXPECT_TRUE(Accepts(*keys, kNew)) << env;
    // The first signs.
    EXPECT_EQ(keys->Sign("m"), SigningKeys::FromKeys({kNew}, "t")->Sign("m"));
  }
}

TEST(SigningKeysTest, EnvironmentKeyWithWhitespaceIsRefusedNamingWhere) {
  bool created = false;
  const std::string env = kNew + "," + kOld + " " + kNew;
  auto keys = SigningKeys::Load("/nonexistent/signing.key", env.c_str(), &created);
  ASSERT_FALSE(keys.ok());
  EXPECT_EQ(keys.status().code(), StatusCode::kInvalidArgument);
  const std::string& msg = keys.status().message();
  EXPECT_NE(msg.find("COHORT_SIGNING_KEYS: signing key 2 holds whitespace at its character 41"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("commas or newlines"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(kOld), std::string::npos) << "a key is never printed: " << msg;
}

}  // namespace
}  // namespace cohort::api
