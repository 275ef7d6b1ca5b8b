// The media values of a run (images, audio, video, html, tables) and the queries over them
// (DataStore::ListMedia, QueryMedia, FindMedia; GET .../{run}/media, .../tables/{key},
// .../media/{sha256}, docs/api.md). The bytes are blobs (src/blob), named by SHA-256.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/run_types.h"

namespace cohort::store {

struct MediaQuery {
  RunRef run;
  std::vector<std::string> keys;     // empty: every media key
  std::vector<std::string> writers;  // labels; empty: all
  int64_t min_step = 0;
  int64_t max_step = INT64_MAX;
  int64_t limit = 100000;            // rows at most (the answer says when more matched)
};

// One stored media row.
struct MediaRecord {
  std::string key, writer;
  int64_t step = 0;
  int64_t index = 0;
  int64_t time_ms = 0;
  std::string type;  // image, audio, video, html, table
  std::string mime;
  std::string sha256;
  int64_t size = 0;
  int64_t width = 0;   // tables: columns
  int64_t height = 0;  // tables: rows
  int64_t duration_ms = 0;
  std::string caption;
  std::string artifact_ref;  // MediaPoint::artifact_ref
  int64_t cell_bytes = 0;    // tables: MediaPoint::cell_bytes
};

// A media row that names a blob with another size than the blob has (FindMediaOfOtherSize).
struct MisSizedMedia {
  std::string run_id, key;
  int64_t step = 0, index = 0;
  int64_t size = 0;  // as the row says
};

struct MediaKeyInfo {
  std::string key, type, writer;
  int64_t count = 0;  // rows
  int64_t min_step = 0, max_step = 0;
};

}  // namespace cohort::store
