#include "pg_environment.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>

namespace cohort::store::pg {
namespace {

std::unique_ptr<PgTestCluster> g_cluster;
std::string g_error;

class ClusterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    auto started = PgTestCluster::Start();
    if (started.ok()) {
      g_cluster = std::move(started).value();
    } else {
      g_error = started.status().ToString();
    }
  }
  void TearDown() override { g_cluster.reset(); }
};

// Registered before main() runs RUN_ALL_TESTS (gtest_main); gtest owns the object.
[[maybe_unused]] ::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new ClusterEnvironment);

}  // namespace

PgTestCluster* TestCluster() { return g_cluster.get(); }
const std::string& TestClusterError() { return g_error; }

std::string FreshDatabase() {
  static std::atomic<int> next{0};
  if (g_cluster == nullptr) {
    ADD_FAILURE() << "no PostgreSQL cluster: " << g_error;
    return "";
  }
  std::string name = "t" + std::to_string(++next);
  Status s = g_cluster->CreateDatabase(name);
  if (!s.ok()) {
    ADD_FAILURE() << "create database " << name << ": " << s.ToString();
    return "";
  }
  return name;
}

}  // namespace cohort::store::pg
