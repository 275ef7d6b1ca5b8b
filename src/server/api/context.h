// ApiContext: what every API resource handler needs (store, auth, limits, metrics), and the
// shared plumbing of handlers: authentication, run references from the path, JSON bodies,
// Status -> HTTP error mapping.
//
// Threading: ApiContext is immutable after set-up apart from its thread-safe members.
#pragma once

#include <functional>
#include <string>

#include "core/json.h"
#include "core/limits.h"
#include "core/list_param.h"  // SplitListParam: the list query parameters (keys=, writers=, ...)
#include "server/api/auth.h"
#include "server/api/heartbeat_coalescer.h"
#include "server/api/signing_keys.h"
#include "server/http/message.h"
#include "server/http/router.h"
#include "server/limits/rate_limiter.h"
#include "server/metrics.h"
#include "store/store.h"

namespace cohort::blob {
class BlobStore;
}
namespace cohort::alerts {
class AlertEngine;
}

namespace cohort::api {

class TableCellCache;

// The server's limits, defaults from core/limits.h (one place for every tier); fields so that a
// flag (--max-keys-per-batch) or a test can change one.
struct ApiLimits {
  size_t max_keys_per_batch = limits::kMaxKeysPerBatch;
  size_t max_key_bytes = limits::kMaxKeyBytes;
  size_t max_label_bytes = limits::kMaxLabelBytes;
  size_t max_console_line_bytes = limits::kMaxConsoleLineBytes;
  size_t max_rows_per_batch = limits::kMaxRowsPerBatch;
  int max_buckets = limits::kMaxBuckets;
  int64_t max_raw_points = limits::kMaxRawPoints;
  int64_t max_answer_points = limits::kDefaultMaxAnswerPoints;  // --max-answer-points
  uint64_t max_artifact_file_bytes = limits::kDefaultMaxArtifactFileBytes;
  // Media (docs/operations.md, `cohort server` flags): bytes per media file (a row naming a bigger
  // blob is refused), rows per (key, step) of a writer, bytes of all the media rows of one run.
  uint64_t max_media_file_bytes = limits::kDefaultMaxMediaFileBytes;
  int64_t max_media_per_step = limits::kDefaultMaxMediaPerStep;
  uint64_t max_run_media_bytes = limits::kDefaultMaxRunMediaBytes;
};

// Sets the batch's media limits from the server's flags (--max-media-file-bytes,
// --max-media-per-step, --max-run-media-bytes): the store refuses the media rows past them and
// stores the rest of the batch (IngestResult::media_refused; ingest_api.cc).
void SetMediaLimits(const ApiLimits& limits, store::IngestBatch* batch);

// kPayloadTooLarge naming `what` (a file, a blob) and the limit unless `size` is within
// --max-artifact-file-bytes.
Status CheckArtifactFileSize(const ApiLimits& limits, std::string_view what, uint64_t size);

// kInvalidArgument unless `label` is a writer label: 1..--max-label-bytes bytes, no control
// characters, no '/'.
Status CheckWriterLabel(const std::string& label, const ApiLimits& limits);

struct ApiContext {
  store::Store* store = nullptr;
  blob::BlobStore* blobs = nullptr;  // artifact (and media) bytes; null: those routes answer 503
  Authenticator* auth = nullptr;
  server::Metrics* metrics = nullptr;
  limits::RateLimiter* limiter = nullptr;     // per-entity rate limits; null: none
  HeartbeatCoalescer* heartbeats = nullptr;   // coalesced heartbeats; null: straight to the store
  const SigningKeys* signing_keys = nullptr;  // signs upload URLs; null: none are handed out
  // Evaluates alert rules on ingest and writer ends (server/alerts); null: no rule alerts.
  alerts::AlertEngine* alerts = nullptr;
  // Readiness for GET /healthz: Ok when the server takes requests; null: always ready.
  std::function<Status()> ready;
  // The document of a table whose cells live elsewhere (store::MediaRecord::artifact_ref: a
  // vendor client's run_table artifact), its media cells in Cohort's form (core/table_cells.h);
  // kNotFound while that is not committed. Set by the compat layer (compat/vendor_tables.h);
  // null, or kNotFound: the row's own blob is the document.
  std::function<Result<std::string>(const std::string& entity, const std::string& artifact_ref)>
      table_document;
  // The media cells of recently served tables (table_cell_cache.h); null: parsed per request.
  TableCellCache* table_cells = nullptr;
  // The server's own entity (--entity, whose admin key the first start made): its admin keys see
  // every entity's series in GET /metrics; another entity's admin keys see their own.
  std::string operator_entity;
  ApiLimits limits;
};

namespace bj = boost::json;

// Maps a Status code to its HTTP status.
int HttpStatusFor(StatusCode code);

// Whether the entity holds the blob: it is recorded (the store) and readable (the blob store;
// a blob recorded whose publication then failed is uploaded again). kInvalidArgument when the
// entity holds it with another size. Its record is touched first (Store::TouchBlob): a caller
// told it is held skips the upload and logs what names the blob next (a media row, a run file,
// a version), which gc must not race (blobs_api.cc).
Result<bool> HoldsBlob(ApiContext* ctx, const std::string& entity, const std::string& sha256,
                       int64_t size);

http::HttpResponse ErrorResponse(const Status& s);
http::HttpResponse JsonResponse(int status, const bj::value& v);

using AuthedHandler = std::function<http::HttpResponse(http::HttpRequest&, const AuthContext&)>;

// Wraps a handler so that it runs only with a valid key; admin_only additionally requires an
// admin key. Handlers may return errors; Status results are mapped by ErrorResponse. Each
// request is charged one against the entity's rate (ThrottleRequest) before the handler runs.
http::Handler Authed(ApiContext* ctx, AuthedHandler h, bool admin_only = false);
// The same without the charge: for a handler that charges the request itself, once, at the
// point where its refusal is answered the way the route needs (a streamed part drains its body).
http::Handler AuthedChargedByHandler(ApiContext* ctx, AuthedHandler h);

// The {entity}/{project}/{run} of the path, checked against the caller's entity (another
// entity's data is reported as not found). run may be absent from the pattern.
Result<store::RunRef> RunRefFromPath(const http::HttpRequest& req, const AuthContext& who);

// Parses the request body as a JSON object ("body: expected a JSON object" otherwise).
Result<bj::object> ParseBodyObject(const http::HttpRequest& req);

// Parses an integer query parameter; InvalidArgument naming it when malformed.
Result<std::optional<int64_t>> IntParam(const http::HttpRequest& req, std::string_view name);
// A value from the request for an error message: valid UTF-8 (bad bytes replaced), at most 64
// bytes ("..." marking a cut): an answer echoing raw bytes was not valid JSON.
std::string ShownValue(std::string_view v);

// JSON of records.
bj::value RunToJson(const store::RunRecord& r, int64_t now_ms);
bj::value WriterToJson(const store::WriterRecord& w);
// Parses stored JSON text, falling back to an empty object.
bj::value ParseStoredJson(const std::string& text);

// Route registration, one function per resource file.
void RegisterHealthRoutes(http::Router& r, ApiContext* ctx);
void RegisterViewerRoutes(http::Router& r, ApiContext* ctx);
void RegisterRunRoutes(http::Router& r, ApiContext* ctx);
void RegisterGroupRoutes(http::Router& r, ApiContext* ctx);
void RegisterWriterRoutes(http::Router& r, ApiContext* ctx);
void RegisterIngestRoutes(http::Router& r, ApiContext* ctx);
void RegisterHistoryRoutes(http::Router& r, ApiContext* ctx);
void RegisterHistogramRoutes(http::Router& r, ApiContext* ctx);
void RegisterMediaRoutes(http::Router& r, ApiContext* ctx);
void RegisterConsoleRoutes(http::Router& r, ApiContext* ctx);
void RegisterViewRoutes(http::Router& r, ApiContext* ctx);
void RegisterKeyRoutes(http::Router& r, ApiContext* ctx);
void RegisterSessionRoutes(http::Router& r, ApiContext* ctx);
void RegisterConsoleIndexRoutes(http::Router& r, ApiContext* ctx);
void RegisterRanksRoutes(http::Router& r, ApiContext* ctx);
void RegisterBlobRoutes(http::Router& r, ApiContext* ctx);
// The bytes of a blob as a download named after `path`'s last segment: whole, or the range a
// Range header asks for (206), with ETag and safe headers; more than one blob part
// (limits::kBlobPartBytes) goes out in parts as they are read, one part in memory at a time.
http::HttpResponse ServeBlobBytes(ApiContext* ctx, const http::HttpRequest& req,
                                  const std::string& sha256, uint64_t size,
                                  const std::string& path);
void RegisterArtifactRoutes(http::Router& r, ApiContext* ctx);
void RegisterAlertRoutes(http::Router& r, ApiContext* ctx);
void RegisterAlertRuleRoutes(http::Router& r, ApiContext* ctx);

// All of the above.
void RegisterApiRoutes(http::Router& r, ApiContext* ctx);

}  // namespace cohort::api
