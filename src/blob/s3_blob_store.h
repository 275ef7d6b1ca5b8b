// The S3 blob store: blobs as objects of any S3-compatible object store (AWS S3, SeaweedFS,
// MinIO, ...), for servers that share one PostgreSQL store (docs/artifacts.md, "S3";
// docs/operations.md, "Object storage (S3-compatible)").
#pragma once

#include <memory>
#include <string>

#include "blob/blob_store.h"
#include "cohort/status.h"

namespace cohort::blob {

struct S3Config {
  // http(s)://host[:port] of the S3 API; requests are path-style (endpoint/bucket/key).
  std::string endpoint;
  std::string region = "us-east-1";
  std::string bucket;
  // Prepended to every key ("cohort/" puts the blobs under cohort/sha256/...); a '/' is added
  // when it does not end with one.
  std::string prefix;
  std::string access_key;
  std::string secret_key;  // never logged, never in a Status

  // Whether any S3 setting was given (the S3 backend is wanted).
  bool requested() const { return !endpoint.empty() || !bucket.empty(); }
};

// kInvalidArgument naming what is missing or malformed (endpoint, bucket, credentials).
Status CheckS3Config(const S3Config& config);

// Opens the store: checks the settings, then that the bucket answers with these credentials,
// creating the bucket when it does not exist (kUnavailable naming the operation, the HTTP status
// and the S3 error code otherwise, e.g. "403 InvalidAccessKeyId").
Result<std::unique_ptr<BlobStore>> OpenS3BlobStore(S3Config config);

// The blob store a server (or `cohort gc`) is configured with: S3 when `s3.requested()`, else
// the local one in `blob_dir` (or `default_dir` when empty), through `fs`, `shared` with other
// servers when the store is (LocalBlobStoreOptions). kInvalidArgument when both a blob directory
// and S3 settings are given; kFailedPrecondition when the store is `shared` and neither is (the
// default directory is this process's own, which the other servers do not see).
Result<std::unique_ptr<BlobStore>> OpenConfiguredBlobStore(wal::FileSystem* fs,
                                                           const std::string& blob_dir,
                                                           const std::string& default_dir,
                                                           const S3Config& s3, bool shared = false);

}  // namespace cohort::blob
