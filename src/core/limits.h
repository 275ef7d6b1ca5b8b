// Limits and names of the data model and its formats, defined once for every tier: the client
// library, the agent, the server (API and W&B compat) and the CLI. docs/api.md ("Limits") and
// docs/formats.md give them to users. Where a tier stops earlier than another on purpose (the
// client flushes long before a batch reaches the server's limits), the constant says so in its
// name and is derived from, or checked against, the other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace cohort::limits {

// ---- metric keys (every key of a batch, history and system alike) ----
inline constexpr size_t kMaxKeyBytes = 256;
// System metrics (the agent's monitor) are stored under this prefix; batches carry their keys
// without it, and no logged key may start with it.
inline constexpr std::string_view kSystemKeyPrefix = "system/";

// ---- one ingest batch (binary or JSON body, one agent log frame) ----
inline constexpr size_t kMaxKeysPerBatch = 10000;     // distinct keys (--max-keys-per-batch)
inline constexpr size_t kMaxRowsPerBatch = 1000000;   // history + system rows + console lines
inline constexpr size_t kMaxConsoleLineBytes = 64 << 10;
// The HTTP server's default request body limit (--max-body-bytes); a binary batch is sent as
// one body, so it is also the largest batch the client library and the agent accept.
inline constexpr size_t kMaxBodyBytes = 32 << 20;
inline constexpr size_t kMaxBatchBytes = kMaxBodyBytes;

// ---- the client library: flushes early, so that its batches stay far below the above ----
inline constexpr size_t kClientFlushCells = 65536;        // a flush is due at this many values
inline constexpr size_t kClientFlushKeys = 4096;          // ... or distinct keys
inline constexpr size_t kClientFlushConsoleBytes = 256 << 10;
inline constexpr size_t kClientMaxBatchCells = 100000;    // values in one batch
inline constexpr size_t kClientMaxBatchKeys = kMaxKeysPerBatch;
inline constexpr size_t kClientMaxBatchConsoleBytes = 4 << 20;
// 9 bytes per value at most (an index and 8 bytes), the key table and the console text: a
// batch the client makes always fits the server's body limit.
static_assert(kClientMaxBatchCells * 10 + kClientMaxBatchKeys * (kMaxKeyBytes + 2) +
                      kClientMaxBatchConsoleBytes + (1 << 20) + (8 << 19) +
                      4096 * (4096 + 128 + 96) <
                  kMaxBatchBytes,
              "client batches must fit the server's body limit");
static_assert(kClientFlushKeys <= kClientMaxBatchKeys && kClientFlushCells <= kClientMaxBatchCells);

// ---- the agent protocol (docs/formats.md, "Agent protocol") and the WAL ----
// A frame: type byte, frame number (varint) and a batch; control messages are far smaller.
inline constexpr size_t kMaxFrameBytes = kMaxBatchBytes + 16;
// A WAL record: a frame's body plus the record header (u8 kind, u64 seq, u64 session, varint).
inline constexpr size_t kMaxWalRecordBytes = 64 << 20;
static_assert(kMaxFrameBytes + 32 <= kMaxWalRecordBytes, "a frame must fit one WAL record");

// ---- histogram values (include/cohort/histogram.h) ----
inline constexpr size_t kMaxHistogramBins = 512;
// What histograms may take of one client batch, in 8-byte words: a histogram of n bins costs
// 2n + 6 (explicit edges, counts and its row header at most); a flush is due at half of it.
inline constexpr size_t kClientMaxBatchHistogramWords = 1 << 19;
inline constexpr size_t HistogramWords(size_t bins) { return 2 * bins + 6; }

// ---- media values: images, audio, video, html, tables (docs/formats.md "Batch v4") ----
// A media row names a blob (SHA-256) the agent uploads to the blob store beside the batch; the
// batch carries only the row. Caption and MIME type of a row, bytes.
inline constexpr size_t kMaxMediaCaptionBytes = 4096;
inline constexpr size_t kMaxMediaMimeBytes = 128;
// The path by which a vendor client's history line names a media file until its upload.
inline constexpr size_t kMaxMediaPathBytes = 1024;
// Defaults of the server's per-deployment media limits (--max-media-file-bytes,
// --max-media-per-step, --max-run-media-bytes; docs/operations.md).
inline constexpr uint64_t kDefaultMaxMediaFileBytes = uint64_t{64} << 20;
inline constexpr int64_t kDefaultMaxMediaPerStep = 1024;
inline constexpr uint64_t kDefaultMaxRunMediaBytes = uint64_t{10} << 30;
// A table's cell_bytes (the blobs its media cells name) at most: 2^50 (1 PiB), so that sums of
// sizes stay far from int64's end; the run's media budget refuses far less.
inline constexpr int64_t kMaxMediaCellBytes = int64_t{1} << 50;
// Media rows in one client batch (a flush is due at a quarter of it).
inline constexpr size_t kClientMaxBatchMedia = 4096;
// Rows of a table a reader gets per request (GET .../tables/{key}?limit=).
inline constexpr int64_t kMaxTableRowsPerPage = 10000;
inline constexpr int64_t kDefaultTableRowsPerPage = 1000;

// ---- runs and writers (docs/api.md) ----
inline constexpr size_t kMaxLabelBytes = 128;
inline constexpr size_t kMaxRunNameBytes = 256;
inline constexpr size_t kMaxGroupBytes = 256;
inline constexpr size_t kMaxJobTypeBytes = 128;
inline constexpr size_t kMaxNotesBytes = 64 << 10;
inline constexpr size_t kMaxHostBytes = 256;
inline constexpr size_t kMaxTags = 256;
inline constexpr size_t kMaxTagBytes = 128;

// ---- reads ----
inline constexpr int kMaxBuckets = 10000;
inline constexpr int64_t kMaxRawPoints = 1000000;
// Points and buckets of one history or system answer, all its series (and runs) together
// (`cohort server --max-answer-points`): `limit` and `buckets` are per series, and a read of every
// key of every writer of a large job would otherwise build billions in memory.
inline constexpr int64_t kDefaultMaxAnswerPoints = 10'000'000;

// ---- the binary batch format (docs/formats.md, "Batch v4") ----
inline constexpr std::string_view kBatchMediaType = "application/vnd.cohort.batch";
// What GET /healthz lists in "ingest_formats" for the binary batch this build reads and writes.
inline constexpr std::string_view kBatchFormatName = "cohort-batch-v4";
inline constexpr uint8_t kBatchVersion = 4;
// The HTTP header that carries a binary batch's seq (the batch bytes do not: the agent assigns
// it when it appends the batch to its WAL).
inline constexpr std::string_view kBatchSeqHeader = "Cohort-Batch-Seq";
// Its value names the sender's stream (the agent sends its WAL stream's id): the stream posts this
// writer's batches one at a time in seq order, each only once every lower seq of the stream is
// settled (stored, refused, or not a batch). The store then keeps the stream's highest stored seq
// for the writer (a seq of the stream at or below it is a duplicate) instead of a record per
// batch (docs/api.md). The id follows the rule of ids (ids::IsValidId).
inline constexpr std::string_view kBatchOrderedHeader = "Cohort-Batch-Ordered";
// Ids users and clients name things by (entity, project, run, a batch's stream): at most this many
// of [A-Za-z0-9._-] (ids::IsValidId).
inline constexpr size_t kMaxIdBytes = 64;

// ---- artifacts and the blob store (docs/artifacts.md) ----
// A blob is uploaded in parts of this size, all but the last full (one part per request body).
inline constexpr size_t kBlobPartBytes = size_t{8} << 20;
static_assert(kBlobPartBytes <= kMaxBodyBytes, "a blob part must fit one request body");
// A blob an upload finds held already (status, part, completion: the client then skips it and
// logs what names it) has its recorded time moved to now, at most once per this interval, so
// that `cohort gc --grace-hours H` keeps it for the H hours (less this) in which the row or
// version naming it arrives (docs/artifacts.md, "Garbage collection").
inline constexpr int64_t kBlobRetouchMs = 60'000;
// The largest file of an artifact version by default (--max-artifact-file-bytes): a commit,
// upload or W&B createArtifactFiles of a bigger file is refused naming the file and the limit.
inline constexpr uint64_t kDefaultMaxArtifactFileBytes = uint64_t{64} << 30;
// Collection and alias names: 1 to this many bytes of A-Z a-z 0-9 . _ -
inline constexpr size_t kMaxArtifactNameBytes = 128;
// Files in one version's manifest; a bigger set is split into several artifacts.
inline constexpr size_t kMaxArtifactFiles = 100000;
// Aliases given with one version.
inline constexpr size_t kMaxArtifactAliases = 64;
// An artifact's metadata (JSON text) and description.
inline constexpr size_t kMaxArtifactMetadataBytes = 1 << 20;
inline constexpr size_t kMaxArtifactDescriptionBytes = 64 << 10;

// Saved views (docs/api.md, "Saved views"): a listing answers every view of a project, so both
// the spec and the count are bounded (at most 500 x 64 KiB in one answer).
inline constexpr size_t kMaxViewNameBytes = 256;
inline constexpr size_t kMaxViewSpecBytes = 64 << 10;
inline constexpr int64_t kMaxViewsPerProject = 500;

// Alerts raised by code (the SDKs, the agent, the stock client's run.alert).
inline constexpr size_t kMaxAlertTitleBytes = 256;
inline constexpr size_t kMaxAlertTextBytes = 64 << 10;

}  // namespace cohort::limits
