// The Store conformance suite: one value-parameterized gtest fixture whose cases every Store
// backend must pass. A backend's test file instantiates it with a StoreBackend:
//
//   namespace cohort::store {
//   class MyTarget : public StoreTarget { ... };
//   COHORT_INSTANTIATE_STORE_CONFORMANCE(
//       Sqlite, (StoreBackend{"sqlite", [] { return std::make_unique<MyTarget>(); }}));
//   }
//
// The cases live in store_conformance_runs.cc (runs, writers, states, lists, views, keys) and
// store_conformance_data.cc (ingest, history, console, concurrency); link the
// cohort_store_conformance object library.
//
// Threading: the fixture is used by gtest's single test thread; cases that test concurrency
// start their own threads against the Store, which is thread-safe.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "store/store.h"

namespace cohort::store {

// Fresh, empty storage for one test case (a temporary file, a scratch database). Open() may be
// called again after the previous Store was destroyed and must then see the same data. Used
// from the test thread only.
class StoreTarget {
 public:
  virtual ~StoreTarget() = default;
  virtual Result<std::unique_ptr<Store>> Open() = 0;
};

struct StoreBackend {
  std::string name;  // [A-Za-z0-9_]+, used in test names
  std::function<std::unique_ptr<StoreTarget>()> make_target;
};

inline void PrintTo(const StoreBackend& b, std::ostream* os) { *os << b.name; }

class StoreConformanceTest : public ::testing::TestWithParam<StoreBackend> {
 protected:
  static constexpr const char* kEntity = "acme";
  static constexpr const char* kProject = "vision";

  void SetUp() override;
  void TearDown() override;

  Store& store() { return *store_; }
  // Closes the store and opens it again on the same storage.
  void Reopen();
  // Exports store() and imports the records into a fresh store of the same backend (one Import,
  // then FinishImport): the copy a dump round trip makes. Its storage lives until TearDown.
  Result<std::unique_ptr<Store>> DumpCopy();

  static RunRef Ref(const std::string& run_id) { return RunRef{kEntity, kProject, run_id}; }
  // Creates run `run_id` (fails the test on error).
  RunRecord MakeRun(const std::string& run_id, const std::string& group = "",
                    const std::string& job_type = "");
  // Joins a writer to `run_id` (fails the test on error).
  WriterRecord Join(const std::string& run_id, const std::string& label, bool primary = true,
                    bool update_finish_state = true);
  // A batch of `rows` rows of `key` with server-assigned steps, values v0, v0+1, ...
  static IngestBatch Rows(int64_t seq, const std::string& key, int rows, double v0 = 0);
  // The same, to add more rows to.
  static IngestBatchBuilder RowsBuilder(int64_t seq, const std::string& key, int rows,
                                        double v0 = 0);

 private:
  std::unique_ptr<StoreTarget> target_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<StoreTarget> copy_target_;  // DumpCopy's
};

}  // namespace cohort::store

// Instantiates every conformance case for `backend` (a StoreBackend). Use it at namespace scope
// where StoreConformanceTest names the fixture (inside namespace cohort::store, or after
// `using cohort::store::StoreConformanceTest;`).
#define COHORT_INSTANTIATE_STORE_CONFORMANCE(prefix, backend)                   \
  INSTANTIATE_TEST_SUITE_P(                                                     \
      prefix, StoreConformanceTest, ::testing::Values(backend),                 \
      [](const ::testing::TestParamInfo<::cohort::store::StoreBackend>& info) { \
        return info.param.name;                                                 \
      })

// Test helpers for Status / Result expressions.
#define COHORT_ASSERT_OK(expr)                           \
  do {                                                   \
    const ::cohort::Status cohort_s_ = (expr);           \
    ASSERT_TRUE(cohort_s_.ok()) << cohort_s_.ToString(); \
  } while (0)

#define COHORT_ASSERT_OK_AND_ASSIGN(lhs, expr)                    \
  auto COHORT_CONCAT_(cohort_r_, __LINE__) = (expr);              \
  ASSERT_TRUE(COHORT_CONCAT_(cohort_r_, __LINE__).ok())           \
      << COHORT_CONCAT_(cohort_r_, __LINE__).status().ToString(); \
  lhs = std::move(COHORT_CONCAT_(cohort_r_, __LINE__)).value()
