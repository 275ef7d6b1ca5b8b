// Batch v4: the one binary form of a batch of logged data (docs/formats.md, "Batch v3"). The
// client library encodes it once; it is the payload of the client's log frame (after the frame
// number), the body of the agent's WAL batch record and the HTTP body the agent's Sender posts
// (Content-Type application/vnd.cohort.batch, its seq in the Cohort-Batch-Seq header), byte for
// byte. The server decodes it (src/server/api/ingest_binary_decode.h); the agent only checks
// its header and checksum (CheckBatchHeader).
//
//   header   "CBAT" | u8 version 4 | u8 flags 0 | u16 reserved 0 | u32 crc32c of the payload
//   payload  key table, history rows, system rows, console lines, histograms, media rows
//            (formats.md)
//
// Pure functions and value types; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/histogram.h"
#include "cohort/status.h"

namespace cohort::batch {

inline constexpr std::string_view kMagic = "CBAT";
inline constexpr size_t kHeaderBytes = 12;  // magic, version, flags, reserved, crc32c
// Row flags.
inline constexpr uint8_t kRowHasStep = 1;   // history rows: a step follows (else the server
                                            // assigns the writer's next step)
inline constexpr uint8_t kRowSameKeys = 2;  // the keys of the previous row of the section
// Histogram row flags.
inline constexpr uint8_t kHistogramHasStep = 1;  // required: a histogram row carries its step
inline constexpr uint8_t kHistogramEdges = 2;    // explicit edges follow (else lo, hi)
// Media row flags.
inline constexpr uint8_t kMediaCellBytes = 1;  // tables: cell_bytes follows the caption

// The types of a media row (docs/formats.md "Batch v4"); a key has one type per run.
enum class MediaType : uint8_t { kImage = 1, kAudio = 2, kVideo = 3, kHtml = 4, kTable = 5 };
// "image", "audio", "video", "html", "table"; empty for anything else.
std::string_view MediaTypeName(MediaType type);
// The type named so; nullopt for anything else.
std::optional<MediaType> ParseMediaType(std::string_view name);

// One media value: a row that names its bytes by SHA-256; the bytes travel to the blob store
// apart from the batch (docs/formats.md "Media").
struct MediaRow {
  int64_t step = 0;     // >= 0: the step of the log call it came with
  int64_t time_ms = 0;
  uint32_t key = 0;     // index into the batch's keys (LogBuffer: its global key id)
  uint32_t index = 0;   // its place in the step's set under the key (a list of images: 0..n-1)
  MediaType type = MediaType::kImage;
  std::string sha256;   // 64 lowercase hex digits
  int64_t size = 0;     // bytes of the blob
  std::string mime;     // "image/png", "audio/wav", "application/json" (tables), ...
  int64_t width = 0;    // images and video: pixels (0: unknown); tables: columns
  int64_t height = 0;   // images and video: pixels; tables: rows
  int64_t duration_ms = 0;  // audio and video (0: unknown)
  std::string caption;
  // Tables: the bytes of the blobs their media cells name (docs/formats.md "Tables"), each
  // distinct blob once; they count against the run's media budget with `size`. 0 otherwise.
  int64_t cell_bytes = 0;
};
// Why a media row cannot be sent (an empty string: it can): a bad digest, size, MIME type or
// caption, a negative step or dimension.
std::string InvalidMediaReason(const MediaRow& row);
// The same checks but the digest's: for a row whose digest comes later (a vendor file named by
// path until its upload, store::MediaPoint::path).
std::string InvalidMediaFieldsReason(const MediaRow& row);

// What the encoder takes: rows whose values refer to a per-batch key table. A plain value type
// that a caller fills (the client's LogBuffer, the agent's system monitor, tests).
struct Batch {
  struct Cell {
    uint32_t key = 0;  // index into keys
    double value = 0;
  };
  struct Row {
    int64_t step = 0;  // history rows: < 0 sends the row without a step (the server assigns it)
    int64_t time_ms = 0;
    uint32_t begin = 0;  // first cell in cells
    uint32_t count = 0;  // number of cells
  };
  struct Line {
    int64_t time_ms = 0;
    bool is_stderr = false;
    std::string text;
  };

  struct HistogramRow {
    int64_t step = 0;  // >= 0: the step of the history rows logged with it
    int64_t time_ms = 0;
    uint32_t key = 0;  // index into keys
    Histogram value;
  };

  std::vector<std::string> keys;  // system rows' keys without "system/"
  std::vector<Cell> cells;
  std::vector<Row> history;
  std::vector<Row> system;
  std::vector<Line> console;
  std::vector<HistogramRow> histograms;
  std::vector<MediaRow> media;

  bool empty() const {
    return history.empty() && system.empty() && console.empty() && histograms.empty() &&
           media.empty();
  }
  void clear();
};

struct EncodeStats {
  int64_t points = 0;        // values written
  int64_t dropped_keys = 0;  // values left out: their key breaks the key rule (metric_key.h)
  int64_t histograms = 0;          // histograms written
  int64_t dropped_histograms = 0;  // left out: invalid (core/histogram.h), a negative step or
                                   // a key that breaks the key rule
  int64_t media = 0;               // media rows written
  int64_t dropped_media = 0;       // left out: InvalidMediaReason, or a key that breaks the rule
};

// Appends the batch v4 encoding of `batch` (header, checksum included) to `out`. The result is
// always a batch the server accepts for its form: values of an invalid key are left out
// (counted), a key repeated within one row keeps its last value, a repeated key table entry is
// merged, console text is made valid UTF-8 (U+FFFD) and cut to the line limit. Values keep their
// exact bits (NaN, infinities, -0.0).
EncodeStats Encode(const Batch& batch, std::string* out);

// The version byte of something that starts with the magic; nullopt otherwise.
std::optional<uint8_t> Version(std::string_view bytes);

// Checks a batch's header and checksum without decoding it (what the agent does with a log
// frame): kInvalidArgument naming the problem ("binary batch: bad checksum ..."); a version
// other than 4 is kFailedPrecondition ("binary batch version 1 is not supported ...").
Status CheckHeader(std::string_view bytes);

}  // namespace cohort::batch
