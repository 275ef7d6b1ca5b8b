// S3Client over libcurl with its own SigV4 signer (s3_client.h). Requests are path-style
// (endpoint/bucket/key); bodies are sent as UNSIGNED-PAYLOAD when they are object bytes (a part:
// hashing it for the signature would read it once more) and signed otherwise.
#include "blob/s3_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>

#include "core/hmac_sha256.h"
#include "core/sha256.h"

namespace cohort::blob {

namespace sigv4 {

std::string UriEncode(std::string_view s, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(char(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

}  // namespace

std::string Authorization(std::string_view access_key, std::string_view secret_key,
                          std::string_view region, std::string_view amz_date,
                          std::string_view method, std::string_view canonical_uri,
                          std::string_view canonical_query,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          std::string_view payload_hash) {
  std::string canonical_headers, signed_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + value + "\n";
    if (!signed_headers.empty()) signed_headers += ";";
    signed_headers += name;
  }
  std::string canonical = std::string(method) + "\n" + std::string(canonical_uri) + "\n" +
                          std::string(canonical_query) + "\n" + canonical_headers + "\n" +
                          signed_headers + "\n" + std::string(payload_hash);
  const std::string date(amz_date.substr(0, 8));
  const std::string scope = date + "/" + std::string(region) + "/s3/aws4_request";
  const std::string to_sign =
      "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + scope + "\n" + Sha256::Hex(canonical);
  std::string key = HmacSha256("AWS4" + std::string(secret_key), date);
  key = HmacSha256(key, region);
  key = HmacSha256(key, "s3");
  key = HmacSha256(key, "aws4_request");
  return "AWS4-HMAC-SHA256 Credential=" + std::string(access_key) + "/" + scope +
         ", SignedHeaders=" + signed_headers + ", Signature=" + Hex(HmacSha256(key, to_sign));
}

std::string AmzDateNow() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

std::string HostHeader(std::string_view endpoint) {
  std::string_view scheme, rest = endpoint;
  if (size_t p = rest.find("://"); p != std::string_view::npos) {
    scheme = rest.substr(0, p);
    rest.remove_prefix(p + 3);
  }
  std::string host(rest.substr(0, rest.find('/')));
  // libcurl leaves the scheme's default port out of the Host header it sends: so must the
  // signature, or every request is refused (SignatureDoesNotMatch).
  const std::string_view default_port = scheme == "https" ? ":443" : scheme == "http" ? ":80" : "";
  if (!default_port.empty() && host.size() > default_port.size() && host.ends_with(default_port)) {
    host.resize(host.size() - default_port.size());
  }
  return host;
}

}  // namespace sigv4

namespace {

constexpr std::string_view kEmptySha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr uint64_t kMaxSingleCopyBytes = uint64_t{5} << 30;
constexpr uint64_t kCopyPartBytes = uint64_t{1} << 30;
constexpr int kMaxAttempts = 5;
constexpr int kCopyWorkers = 4;
constexpr uint64_t kMaxReserveBytes = uint64_t{64} << 20;  // part copies in flight at once

void GlobalInitOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// The text of the first <tag>...</tag> in `xml` from `from` (XML entities decoded); "" if none.
std::string XmlText(std::string_view xml, std::string_view tag, size_t* from = nullptr) {
  const std::string open = "<" + std::string(tag) + ">", close = "</" + std::string(tag) + ">";
  size_t start = xml.find(open, from ? *from : 0);
  if (start == std::string_view::npos) return "";
  start += open.size();
  size_t end = xml.find(close, start);
  if (end == std::string_view::npos) return "";
  if (from) *from = end + close.size();
  std::string_view raw = xml.substr(start, end - start);
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '&') {
      out.push_back(raw[i]);
      continue;
    }
    static constexpr std::pair<std::string_view, char> kEntities[] = {
        {"&amp;", '&'},  {"&lt;", '<'},    {"&gt;", '>'},
        {"&quot;", '"'}, {"&apos;", '\''}, {"&#34;", '"'}};
    bool done = false;
    for (const auto& [name, c] : kEntities) {
      if (raw.substr(i).starts_with(name)) {
        out.push_back(c);
        i += name.size() - 1;
        done = true;
        break;
      }
    }
    if (!done) out.push_back('&');
  }
  return out;
}

// "2026-12-02T20:57:11.000Z" -> ms since the epoch (0 when malformed).
int64_t ParseIsoMillis(const std::string& s) {
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return 0;
  int64_t ms = int64_t(timegm(&tm)) * 1000;
  if (*end == '.') {
    int64_t frac = 0, scale = 100;
    for (++end; *end >= '0' && *end <= '9'; ++end, scale /= 10) frac += (*end - '0') * scale;
    ms += frac;
  }
  return ms;
}

// Where a response body goes: Response::body, or for a streamed GET (Request::sink) the sink
// once the status says the bytes are the object's (2xx; an error's body stays in `body`).
struct BodyTarget {
  CURL* curl;
  std::string* body;
  const std::function<void(std::string_view)>* sink;  // null: all to `body`
  uint64_t offset = 0, length = 0;  // the range asked for, for a server that ignores it (200)
  uint64_t seen = 0;                // body bytes received
  uint64_t handed = 0;              // bytes handed to `sink`
  int streaming = -1;               // -1: not decided yet (before the first body byte)
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<BodyTarget*>(user);
  std::string_view bytes(data, size * n);
  if (t->sink != nullptr && t->streaming < 0) {
    long http = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &http);
    t->streaming = (http == 206 || http == 200) ? (http == 206 ? 1 : 2) : 0;
  }
  if (t->streaming <= 0) {
    t->body->append(bytes);
  } else {
    // 206: the range itself. 200: the whole object (the range ignored): only the range's bytes.
    uint64_t at = t->seen;
    if (t->streaming == 2) {
      uint64_t from = std::max(at, t->offset),
               to = std::min(at + bytes.size(), t->offset + t->length);
      if (from < to) (*t->sink)(bytes.substr(from - at, to - from));
      t->handed += from < to ? to - from : 0;
    } else {
      (*t->sink)(bytes);
      t->handed += bytes.size();
    }
  }
  t->seen += bytes.size();
  return size * n;
}

// A streamed PUT's body: pieces of the source copied into libcurl's buffer. The very last byte
// is held back (copied) while the source is asked once more, which must answer its end: it goes
// out only then, so a body that is too long (or fails at its end) is cut off before the object
// store has all of it. A piece is used up before the source is called again (it is valid only
// until then).
struct UploadSource {
  const S3Client::BodySource* source;
  uint64_t length = 0;
  uint64_t pulled = 0;     // bytes taken from the source
  std::string_view piece;  // what is left of the current piece
  char last = 0;           // the final byte, once pulled
  bool holding_last = false;
  bool ended = false;
  bool started = false;  // the source was called
  Status error;

  size_t Abort(Status s) {
    error = std::move(s);
    return CURL_READFUNC_ABORT;
  }
};

size_t OnUpload(char* buffer, size_t size, size_t n, void* user) {
  auto* u = static_cast<UploadSource*>(user);
  u->started = true;
  while (u->piece.empty()) {
    if (u->ended) return 0;
    if (u->holding_last) {
      Result<std::string_view> end = (*u->source)();
      if (!end.ok()) return u->Abort(end.status());
      if (!end->empty()) {
        return u->Abort(Status::InvalidArgument("more than its " + std::to_string(u->length) +
                                                " bytes were sent"));
      }
      u->ended = true;
      buffer[0] = u->last;
      return 1;
    }
    Result<std::string_view> next = (*u->source)();
    if (!next.ok()) return u->Abort(next.status());
    if (next->empty()) {
      return u->Abort(Status::InvalidArgument("the body ended after " + std::to_string(u->pulled) +
                                              " of its " + std::to_string(u->length) + " bytes"));
    }
    if (next->size() > u->length - u->pulled) {
      return u->Abort(Status::InvalidArgument("more than its " + std::to_string(u->length) +
                                              " bytes were sent"));
    }
    u->pulled += next->size();
    u->piece = *next;
    if (u->pulled == u->length) {
      u->last = u->piece.back();
      u->piece.remove_suffix(1);
      u->holding_last = true;
    }
  }
  const size_t k = std::min(size * n, u->piece.size());
  std::memcpy(buffer, u->piece.data(), k);
  u->piece.remove_prefix(k);
  return k;
}

// A streamed body cannot be sent twice: libcurl is told so (rather than failing to rewind).
int CannotSeek(void*, curl_off_t, int) { return CURL_SEEKFUNC_CANTSEEK; }

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  constexpr std::string_view kName = "etag:";
  if (line.size() > kName.size()) {
    std::string lower(line.substr(0, kName.size()));
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (lower == kName) {
      std::string_view v = line.substr(kName.size());
      while (!v.empty() && (v.front() == ' ')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' ')) {
        v.remove_suffix(1);
      }
      *static_cast<std::string*>(user) = std::string(v);
    }
  }
  return size * n;
}

}  // namespace

Status ParallelFor(size_t n, int workers, const std::function<Status(size_t)>& fn) {
  Mutex mu;
  size_t next = 0;
  Status first;
  auto work = [&] {
    while (true) {
      size_t i;
      {
        MutexLock lock(&mu);
        if (next >= n || !first.ok()) return;
        i = next++;
      }
      Status s = fn(i);
      if (!s.ok()) {
        MutexLock lock(&mu);
        if (first.ok()) first = s;
      }
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < workers && size_t(w) < n; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return first;
}

struct S3Client::Request {
  std::string method;                                            // GET, PUT, POST, DELETE, HEAD
  std::string key;                                               // empty: the bucket
  std::vector<std::pair<std::string, std::string>> query;        // raw names and values
  std::vector<std::pair<std::string, std::string>> amz_headers;  // x-amz-* (lowercase names)
  std::string_view body;
  bool sign_body = true;  // false: UNSIGNED-PAYLOAD
  std::string range;      // "bytes=a-b"
  // The most body bytes expected back (a ranged GET), reserved at once: a body grown by
  // doubling would leave 1 + 2 + ... + 16 MiB of freed blocks in the allocator's arenas per part.
  uint64_t expect_bytes = 0;
  // A streamed GET (StreamRange): a 2xx body goes to `sink` (only bytes [offset, offset +
  // length) of it if the server ignored the range), never into Response::body; `restart` is
  // called before each attempt.
  const std::function<void(std::string_view)>* sink = nullptr;
  const std::function<void()>* restart = nullptr;
  uint64_t sink_offset = 0, sink_length = 0;
  // A streamed PUT (PutObjectFrom): the body is `upload_length` bytes read from `upload`.
  const BodySource* upload = nullptr;
  uint64_t upload_length = 0;
};

struct S3Client::Response {
  long http = 0;
  std::string body;
  std::string etag;
  uint64_t content_length = 0;
  uint64_t streamed = 0;      // bytes handed to Request::sink
  std::string code, message;  // of an S3 <Error>
};

S3Client::S3Client(S3Config config) : config_(std::move(config)) {
  GlobalInitOnce();
  host_ = sigv4::HostHeader(config_.endpoint);
}

S3Client::~S3Client() {
  MutexLock lock(&mu_);
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* S3Client::TakeHandle() {
  {
    MutexLock lock(&mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void S3Client::GiveBack(void* handle) {
  MutexLock lock(&mu_);
  idle_.push_back(handle);
}

std::string S3Client::Describe() const {
  std::string endpoint = config_.endpoint;
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  return "s3 " + endpoint + "/" + config_.bucket + "/" + config_.prefix;
}

Result<S3Client::Response> S3Client::SendOnce(const Request& req, bool* body_taken) {
  std::string uri = "/" + sigv4::UriEncode(config_.bucket, false);
  if (!req.key.empty()) uri += "/" + sigv4::UriEncode(req.key, true);
  std::vector<std::pair<std::string, std::string>> query;
  for (const auto& [k, v] : req.query) {
    query.emplace_back(sigv4::UriEncode(k, false), sigv4::UriEncode(v, false));
  }
  std::sort(query.begin(), query.end());
  std::string canonical_query;
  for (const auto& [k, v] : query) {
    if (!canonical_query.empty()) canonical_query += "&";
    canonical_query += k + "=" + v;
  }
  const std::string payload_hash =
      !req.sign_body ? std::string("UNSIGNED-PAYLOAD")
                     : (req.body.empty() ? std::string(kEmptySha256) : Sha256::Hex(req.body));
  const std::string amz_date = sigv4::AmzDateNow();
  std::vector<std::pair<std::string, std::string>> signed_headers = {
      {"host", host_}, {"x-amz-content-sha256", payload_hash}, {"x-amz-date", amz_date}};
  for (const auto& h : req.amz_headers) signed_headers.push_back(h);
  std::sort(signed_headers.begin(), signed_headers.end());
  const std::string authorization =
      sigv4::Authorization(config_.access_key, config_.secret_key, config_.region, amz_date,
                           req.method, uri, canonical_query, signed_headers, payload_hash);

  std::string endpoint = config_.endpoint;
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  std::string url = endpoint + uri + (canonical_query.empty() ? "" : "?" + canonical_query);

  CURL* c = static_cast<CURL*>(TakeHandle());
  if (c == nullptr) return Status::Internal("S3: curl_easy_init failed");
  curl_easy_reset(c);  // keeps the connection cache
  curl_slist* headers = nullptr;
  auto add = [&](const std::string& line) { headers = curl_slist_append(headers, line.c_str()); };
  add("Authorization: " + authorization);
  for (const auto& [name, value] : signed_headers) {
    if (name != "host") add(name + ": " + value);
  }
  add("Expect:");
  add("Content-Type: application/octet-stream");
  if (!req.range.empty()) add("Range: " + req.range);
  Response r;
  if (req.sink == nullptr) r.body.reserve(std::min<uint64_t>(req.expect_bytes, kMaxReserveBytes));
  if (req.restart != nullptr) (*req.restart)();
  BodyTarget target{.curl = c,
                    .body = &r.body,
                    .sink = req.sink,
                    .offset = req.sink_offset,
                    .length = req.sink_length};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 120L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &target);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.etag);
  UploadSource upload{.source = req.upload, .length = req.upload_length};
  if (req.upload != nullptr) {
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, OnUpload);
    curl_easy_setopt(c, CURLOPT_READDATA, &upload);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, curl_off_t(req.upload_length));
    curl_easy_setopt(c, CURLOPT_SEEKFUNCTION, CannotSeek);
  } else if (req.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (req.method == "GET") {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    if (req.method == "PUT" || req.method == "POST") {
      // Never null: a null body would make libcurl read the body from stdin.
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.empty() ? "" : req.body.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(req.body.size()));
    }
  }
  CURLcode rc = curl_easy_perform(c);
  *body_taken = upload.started;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.http);
  curl_off_t length = -1;
  curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  if (length > 0) r.content_length = uint64_t(length);
  r.streamed = target.handed;
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    curl_easy_cleanup(c);
    if (!upload.error.ok()) return upload.error;  // the body's own failure, not the store's
    return Status::Unavailable("S3 " + req.method + " " + config_.endpoint + "/" + config_.bucket +
                               "/" + req.key + ": " + curl_easy_strerror(rc) +
                               " (is --blob-s3-endpoint right and the object store up?)");
  }
  GiveBack(c);
  if (r.http >= 300 || r.body.starts_with("<?xml") || r.body.starts_with("<Error>")) {
    r.code = XmlText(r.body, "Code");
    r.message = XmlText(r.body, "Message");
  }
  return r;
}

Result<S3Client::Response> S3Client::Send(const Request& req) {
  Status last;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    if (attempt > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(3000, 100 << attempt)));
    }
    bool body_taken = false;
    Result<Response> r = SendOnce(req, &body_taken);
    // A streamed body (PutObjectFrom) cannot be read twice: tried again only while libcurl took
    // none of it (no connection, an answer before the body).
    if (body_taken) return r;
    if (!r.ok()) {
      last = r.status();
      continue;
    }
    const bool transient =
        r->http >= 500 || r->http == 429 || r->code == "SlowDown" || r->code == "InternalError";
    if (!transient) return r;
    last = Failure(req.method, req.key, *r);
  }
  return Status(last.code(),
                last.message() + " (after " + std::to_string(kMaxAttempts) + " attempts)");
}

Status S3Client::Failure(std::string_view op, const std::string& key, const Response& r) const {
  std::string msg =
      "S3 " + std::string(op) + " " + config_.bucket + "/" + key + ": " + std::to_string(r.http);
  if (!r.code.empty()) msg += " " + r.code;
  if (!r.message.empty()) msg += ": " + r.message;
  if (r.http == 403 || r.code == "InvalidAccessKeyId" || r.code == "SignatureDoesNotMatch" ||
      r.code == "AccessDenied") {
    msg +=
        " (check the credentials: --blob-s3-access-key / COHORT_S3_ACCESS_KEY and "
        "--blob-s3-secret-key / COHORT_S3_SECRET_KEY, and that they may use bucket " +
        config_.bucket + ")";
  }
  if (r.http == 404 || r.code == "NoSuchKey") return Status::NotFound(msg);
  if (r.http == 412 || r.code == "PreconditionFailed") return Status::FailedPrecondition(msg);
  return Status::Unavailable(msg);
}

Status S3Client::CheckOrCreateBucket() {
  Request list{.method = "GET", .query = {{"list-type", "2"}, {"max-keys", "1"}}};
  COHORT_ASSIGN_OR_RETURN(Response r, Send(list));
  if (r.http == 200) return Status::Ok();
  if (r.http != 404 && r.code != "NoSuchBucket") return Failure("ListObjectsV2", "", r);
  COHORT_ASSIGN_OR_RETURN(Response made, Send(Request{.method = "PUT"}));
  if (made.http == 200 || made.code == "BucketAlreadyOwnedByYou") return Status::Ok();
  Status s = Failure("CreateBucket", "", made);
  return Status(s.code(), "bucket " + config_.bucket +
                              " does not exist and could not be made: " + s.message());
}

Status S3Client::PutObject(const std::string& key, std::string_view bytes) {
  COHORT_ASSIGN_OR_RETURN(
      Response r, Send(Request{.method = "PUT", .key = key, .body = bytes, .sign_body = false}));
  if (r.http != 200) return Failure("PUT", key, r);
  return Status::Ok();
}

Status S3Client::PutObjectFrom(const std::string& key, uint64_t length, const BodySource& source) {
  if (length == 0) {  // libcurl would ask the source for nothing (parts are never empty)
    return Status::InvalidArgument("a streamed PUT of 0 bytes (an empty object: PutObject)");
  }
  COHORT_ASSIGN_OR_RETURN(Response r, Send(Request{.method = "PUT",
                                                   .key = key,
                                                   .sign_body = false,
                                                   .upload = &source,
                                                   .upload_length = length}));
  if (r.http != 200) return Failure("PUT", key, r);
  return Status::Ok();
}

Result<std::string> S3Client::GetRange(const std::string& key, uint64_t offset, uint64_t length,
                                       std::string* etag) {
  if (length == 0) {
    COHORT_RETURN_IF_ERROR(HeadObject(key).status());
    return std::string();
  }
  Request req{.method = "GET", .key = key, .expect_bytes = length};
  req.range = "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1);
  COHORT_ASSIGN_OR_RETURN(Response r, Send(req));
  if (r.http == 416) {  // past the end (or an empty object)
    COHORT_RETURN_IF_ERROR(HeadObject(key).status());
    return std::string();
  }
  if (r.http != 200 && r.http != 206) return Failure("GET", key, r);
  if (etag) *etag = r.etag;
  if (r.http == 200 && (offset > 0 || r.body.size() > length)) {
    // A server that ignored the range.
    r.body = offset >= r.body.size() ? std::string() : r.body.substr(offset, length);
  }
  return std::move(r.body);
}

Result<uint64_t> S3Client::StreamRange(const std::string& key, uint64_t offset, uint64_t length,
                                       const std::function<void()>& restart,
                                       const std::function<void(std::string_view)>& sink,
                                       std::string* etag) {
  if (length == 0) {
    restart();
    COHORT_RETURN_IF_ERROR(HeadObject(key).status());
    return 0;
  }
  Request req{.method = "GET",
              .key = key,
              .sink = &sink,
              .restart = &restart,
              .sink_offset = offset,
              .sink_length = length};
  req.range = "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1);
  COHORT_ASSIGN_OR_RETURN(Response r, Send(req));
  if (r.http == 416) {  // past the end (or an empty object)
    restart();
    COHORT_RETURN_IF_ERROR(HeadObject(key).status());
    return 0;
  }
  if (r.http != 200 && r.http != 206) return Failure("GET", key, r);
  if (etag) *etag = r.etag;
  return r.streamed;
}

Result<uint64_t> S3Client::HeadObject(const std::string& key) {
  COHORT_ASSIGN_OR_RETURN(Response r, Send(Request{.method = "HEAD", .key = key}));
  if (r.http != 200) return Failure("HEAD", key, r);
  return r.content_length;
}

Status S3Client::DeleteObject(const std::string& key) {
  COHORT_ASSIGN_OR_RETURN(Response r, Send(Request{.method = "DELETE", .key = key}));
  if (r.http == 204 || r.http == 200 || r.http == 404) return Status::Ok();
  return Failure("DELETE", key, r);
}

Status S3Client::ListObjects(const std::string& prefix,
                             const std::function<Status(const S3Object&)>& fn) {
  std::string token;
  while (true) {
    Request req{.method = "GET", .query = {{"list-type", "2"}, {"prefix", prefix}}};
    if (!token.empty()) req.query.emplace_back("continuation-token", token);
    COHORT_ASSIGN_OR_RETURN(Response r, Send(req));
    if (r.http != 200) return Failure("ListObjectsV2", prefix, r);
    size_t pos = 0;
    while (true) {
      std::string contents = XmlText(r.body, "Contents", &pos);
      if (contents.empty()) break;
      S3Object o;
      o.key = XmlText(contents, "Key");
      o.size = std::strtoull(XmlText(contents, "Size").c_str(), nullptr, 10);
      o.last_modified_ms = ParseIsoMillis(XmlText(contents, "LastModified"));
      o.etag = XmlText(contents, "ETag");
      COHORT_RETURN_IF_ERROR(fn(o));
    }
    if (XmlText(r.body, "IsTruncated") != "true") return Status::Ok();
    token = XmlText(r.body, "NextContinuationToken");
    if (token.empty()) {
      return Status::Unavailable("S3 ListObjectsV2 " + prefix +
                                 ": a truncated page without NextContinuationToken");
    }
  }
}

Result<std::string> S3Client::CreateMultipartUpload(const std::string& key) {
  COHORT_ASSIGN_OR_RETURN(Response init,
                          Send(Request{.method = "POST", .key = key, .query = {{"uploads", ""}}}));
  std::string upload_id = XmlText(init.body, "UploadId");
  if (init.http != 200 || upload_id.empty()) return Failure("CreateMultipartUpload", key, init);
  return upload_id;
}

Status S3Client::ListMultipartUploads(const std::string& prefix,
                                      const std::function<Status(const PendingMultipart&)>& fn) {
  std::string key_marker, id_marker;
  while (true) {
    Request req{.method = "GET", .query = {{"uploads", ""}, {"prefix", prefix}}};
    if (!key_marker.empty()) req.query.emplace_back("key-marker", key_marker);
    if (!id_marker.empty()) req.query.emplace_back("upload-id-marker", id_marker);
    COHORT_ASSIGN_OR_RETURN(Response r, Send(req));
    if (r.http == 403 || r.code == "AccessDenied") {  // a permission the credentials may lack
      return Status::PermissionDenied(Failure("ListMultipartUploads", prefix, r).message());
    }
    if (r.http != 200) return Failure("ListMultipartUploads", prefix, r);
    size_t pos = 0;
    while (true) {
      std::string upload = XmlText(r.body, "Upload", &pos);
      if (upload.empty()) break;
      PendingMultipart u;
      u.key = XmlText(upload, "Key");
      u.upload_id = XmlText(upload, "UploadId");
      u.initiated_ms = ParseIsoMillis(XmlText(upload, "Initiated"));
      COHORT_RETURN_IF_ERROR(fn(u));
    }
    if (XmlText(r.body, "IsTruncated") != "true") return Status::Ok();
    key_marker = XmlText(r.body, "NextKeyMarker");
    id_marker = XmlText(r.body, "NextUploadIdMarker");
    if (key_marker.empty()) {
      return Status::Unavailable("S3 ListMultipartUploads " + prefix +
                                 ": a truncated page without NextKeyMarker");
    }
  }
}

Status S3Client::AbortMultipartUpload(const std::string& key, const std::string& upload_id) {
  COHORT_ASSIGN_OR_RETURN(
      Response r,
      Send(Request{.method = "DELETE", .key = key, .query = {{"uploadId", upload_id}}}));
  if (r.http == 204 || r.http == 200 || r.http == 404) return Status::Ok();
  return Failure("AbortMultipartUpload", key, r);
}

Status S3Client::CopyObject(const std::string& src, const std::string& dst, uint64_t size) {
  if (size > kMaxSingleCopyBytes) {
    std::vector<Source> ranges;
    for (uint64_t at = 0; at < size; at += kCopyPartBytes) {
      ranges.push_back({.key = src, .offset = at, .length = std::min(kCopyPartBytes, size - at)});
    }
    return Compose(dst, ranges);
  }
  Request req{.method = "PUT", .key = dst};
  req.amz_headers = {
      {"x-amz-copy-source", "/" + config_.bucket + "/" + sigv4::UriEncode(src, true)}};
  COHORT_ASSIGN_OR_RETURN(Response r, Send(req));
  // A copy can fail after the 200 was sent: the error is then the body.
  if (r.http != 200 || !r.code.empty()) return Failure("CopyObject " + src + " ->", dst, r);
  return Status::Ok();
}

Status S3Client::Compose(const std::string& dst, const std::vector<Source>& sources) {
  if (sources.empty() || sources.size() > 10000) {
    return Status::InvalidArgument("S3 multipart copy to " + dst + ": " +
                                   std::to_string(sources.size()) +
                                   " parts (1 to 10000 can be copied)");
  }
  COHORT_ASSIGN_OR_RETURN(const std::string upload_id, CreateMultipartUpload(dst));
  auto abort = [&](Status s) {
    (void)AbortMultipartUpload(dst, upload_id);
    return s;
  };
  std::vector<std::string> etags(sources.size());
  Status copied = ParallelFor(sources.size(), kCopyWorkers, [&](size_t i) -> Status {
    const Source& src = sources[i];
    Request req{.method = "PUT",
                .key = dst,
                .query = {{"partNumber", std::to_string(i + 1)}, {"uploadId", upload_id}}};
    req.amz_headers.emplace_back("x-amz-copy-source",
                                 "/" + config_.bucket + "/" + sigv4::UriEncode(src.key, true));
    if (!src.etag.empty()) req.amz_headers.emplace_back("x-amz-copy-source-if-match", src.etag);
    if (src.length > 0) {
      req.amz_headers.emplace_back("x-amz-copy-source-range",
                                   "bytes=" + std::to_string(src.offset) + "-" +
                                       std::to_string(src.offset + src.length - 1));
    }
    std::sort(req.amz_headers.begin(), req.amz_headers.end());
    COHORT_ASSIGN_OR_RETURN(Response r, Send(req));
    etags[i] = XmlText(r.body, "ETag");
    if (r.http != 200 || etags[i].empty() || !r.code.empty()) {
      return Failure("UploadPartCopy " + src.key + " ->", dst, r);
    }
    return Status::Ok();
  });
  if (!copied.ok()) return abort(copied);
  std::string complete = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < sources.size(); ++i) {
    complete += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags[i] +
                "</ETag></Part>";
  }
  complete += "</CompleteMultipartUpload>";
  Result<Response> done = Send(
      Request{.method = "POST", .key = dst, .query = {{"uploadId", upload_id}}, .body = complete});
  if (!done.ok()) return abort(done.status());
  if (done->http != 200 || !done->code.empty()) {
    return abort(Failure("CompleteMultipartUpload", dst, *done));
  }
  return Status::Ok();
}

}  // namespace cohort::blob
