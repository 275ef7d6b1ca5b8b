// S3Client: the few S3 REST calls the S3 blob store makes (objects, listing, server-side copy,
// multipart uploads), path-style, signed with AWS Signature Version 4, over libcurl. Transient
// failures (connection errors, HTTP 5xx, 429) are retried a bounded number of times with backoff.
// Errors name the operation, the key, the HTTP status and the S3 error code; never the secret.
//
// Threading: thread-safe; each call takes a libcurl handle from a pool (keep-alive per handle).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "blob/s3_blob_store.h"
#include "cohort/status.h"
#include "core/mutex.h"

namespace cohort::blob {

// SigV4 building blocks, exposed for tests and presigning.
namespace sigv4 {
// RFC 3986 unreserved characters kept, everything else %XX (uppercase); '/' kept if `keep_slash`.
std::string UriEncode(std::string_view s, bool keep_slash);
// The Authorization header value of a request. `headers`: lowercase names, trimmed values,
// sorted by name, each signed (host, x-amz-content-sha256, x-amz-date and any x-amz-*).
// `query`: already encoded name=value pairs sorted by name.
std::string Authorization(std::string_view access_key, std::string_view secret_key,
                          std::string_view region, std::string_view amz_date,
                          std::string_view method, std::string_view canonical_uri,
                          std::string_view canonical_query,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          std::string_view payload_hash);
// The host header of requests to `endpoint` ("http(s)://host[:port]"), as libcurl sends it: the
// scheme's default port (80, 443) left out.
std::string HostHeader(std::string_view endpoint);
// "20261202T205711Z" for now.
std::string AmzDateNow();
}  // namespace sigv4

// Runs fn(0) .. fn(n - 1) on up to `workers` threads (requests to the object store overlap);
// the first error stops handing out more and is returned.
Status ParallelFor(size_t n, int workers, const std::function<Status(size_t)>& fn);

struct S3Object {
  std::string key;
  uint64_t size = 0;
  int64_t last_modified_ms = 0;
  std::string etag;
};

class S3Client {
 public:
  explicit S3Client(S3Config config);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  const S3Config& config() const { return config_; }

  // Lists one key of the bucket; creates the bucket when it does not exist.
  Status CheckOrCreateBucket();
  // `bytes` are sent from where they are (libcurl is pointed at them, not given a copy).
  Status PutObject(const std::string& key, std::string_view bytes);
  // The bytes of a body as they arrive: each call hands out the next ones (valid until the next
  // call), empty at the end; an error ends the body (blob_store.h PartSource).
  using BodySource = std::function<Result<std::string_view>()>;
  // PutObject of `length` bytes read from `source` while they are sent, never held whole. The
  // object is stored only when `source` hands out exactly `length` bytes and then ends: else the
  // request is cut off before its last byte (the object store keeps nothing) and the source's
  // error, or kInvalidArgument naming the count, is returned. Retried only while no byte of the
  // body was taken (the connection failed): the bytes cannot be read twice, so a failure after
  // that is kUnavailable for the caller's client to send again. `length` > 0.
  Status PutObjectFrom(const std::string& key, uint64_t length, const BodySource& source);
  // Bytes [offset, offset + length) (fewer at the end; "" past it); kNotFound without the object.
  // `etag`, when given, receives the object's ETag.
  Result<std::string> GetRange(const std::string& key, uint64_t offset, uint64_t length,
                               std::string* etag = nullptr);
  // GetRange without holding the bytes: they are handed to `sink` as they arrive, in pieces of
  // libcurl's receive buffer (CURLOPT_BUFFERSIZE), in order. A request retried after a failure
  // midway starts over: `restart` is called before every attempt, and must take back what the
  // earlier ones handed to `sink`. Returns the bytes handed out by the last attempt.
  Result<uint64_t> StreamRange(const std::string& key, uint64_t offset, uint64_t length,
                               const std::function<void()>& restart,
                               const std::function<void(std::string_view)>& sink,
                               std::string* etag = nullptr);
  // The object's size; kNotFound without it.
  Result<uint64_t> HeadObject(const std::string& key);
  // OK when there is none.
  Status DeleteObject(const std::string& key);
  // Every object whose key starts with `prefix`, ascending by key, page by page.
  Status ListObjects(const std::string& prefix, const std::function<Status(const S3Object&)>& fn);
  // A multipart upload begun and neither completed nor aborted (ListMultipartUploads).
  struct PendingMultipart {
    std::string key;
    std::string upload_id;
    int64_t initiated_ms = 0;
  };
  // Begins a multipart upload of `key`; its upload id.
  Result<std::string> CreateMultipartUpload(const std::string& key);
  // Every such upload whose key starts with `prefix`, page by page. kPermissionDenied when the
  // credentials may not list them (403).
  Status ListMultipartUploads(const std::string& prefix,
                              const std::function<Status(const PendingMultipart&)>& fn);
  // Aborts one (its parts' storage goes); OK when it is gone already.
  Status AbortMultipartUpload(const std::string& key, const std::string& upload_id);
  // Server-side copy of `size` bytes (a multipart copy above 5 GiB); kNotFound without `src`.
  Status CopyObject(const std::string& src, const std::string& dst, uint64_t size);
  // Makes `dst` the concatenation of `sources` (each at least 5 MiB but the last; at most
  // 10000) by a multipart upload of server-side part copies; a source whose ETag is given is
  // copied only while it still has it (kFailedPrecondition otherwise). kNotFound when a source
  // is gone.
  struct Source {
    std::string key;
    std::string etag;                 // empty: any
    uint64_t offset = 0, length = 0;  // a range of it; length 0: all of it
  };
  Status Compose(const std::string& dst, const std::vector<Source>& sources);

  // "s3 http://host:port/bucket/prefix"
  std::string Describe() const;

  struct Response;
  struct Request;

 private:
  Result<Response> Send(const Request& request);
  // One attempt; `body_taken`: whether libcurl asked a streamed body (Request::upload) for bytes.
  Result<Response> SendOnce(const Request& request, bool* body_taken);
  void* TakeHandle();
  void GiveBack(void* handle);
  Status Failure(std::string_view op, const std::string& key, const Response& r) const;

  const S3Config config_;
  std::string host_;  // host[:port], as signed
  Mutex mu_;
  std::vector<void*> idle_ COHORT_GUARDED_BY(mu_);  // CURL*
};

}  // namespace cohort::blob
