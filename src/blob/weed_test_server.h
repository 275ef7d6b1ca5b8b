// A real S3-compatible server for tests and benchmarks: SeaweedFS's `weed server -s3`, started
// on free ports (each of which has its gRPC twin at port + 10000 free too) in a fresh temporary
// directory, with one identity (access key "cohort-test", secret "cohort-test-secret"), and
// stopped (SIGTERM, then SIGKILL) with the directory removed on destruction.
//
// The binary: $COHORT_WEED, else ${COHORT_CACHE_DIR:-$HOME/.cache/cohort}/weed/weed, built by
// scripts/build-weed.sh. tests/s3/weed.py is the Python equivalent.
//
// Threading: create and destroy on one thread; the endpoint may be used from any.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "blob/s3_blob_store.h"
#include "cohort/status.h"

namespace cohort::blob {

class WeedServerForTest {
 public:
  // The binary's path; kNotFound saying how to build it when there is none.
  static Result<std::string> FindBinary();
  // Starts weed and waits until its S3 API answers (kUnavailable with the log's tail if not).
  static Result<std::unique_ptr<WeedServerForTest>> Start();
  ~WeedServerForTest();
  WeedServerForTest(const WeedServerForTest&) = delete;
  WeedServerForTest& operator=(const WeedServerForTest&) = delete;

  // Settings of a store in `bucket` under `prefix` with the test identity.
  S3Config Config(const std::string& bucket, const std::string& prefix = "") const;
  const std::string& endpoint() const { return endpoint_; }
  std::string LogTail() const;

 private:
  WeedServerForTest() = default;
  std::string dir_;
  std::string endpoint_;
  pid_t pid_ = -1;
};

}  // namespace cohort::blob
