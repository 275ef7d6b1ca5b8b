// The store dump: a backend-independent copy of everything a Store holds, table by table, row
// by row (Store::Export / Store::Import, `cohort export | import | migrate`). This file defines
// the logical tables (their columns in dump order, the same for every backend), the values of a
// row, and the dump file (docs/formats.md, "Store dump"): a magic, then length-prefixed records
// each with its own CRC-32C, the first a header, the last an end record with the row count of
// every table. A file cut short (a torn tail) reads back as the intact records before the cut,
// flagged as truncated.
//
// Threading: plain values and pure functions; DumpFileReader / DumpFileWriter belong to one
// thread at a time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cohort/status.h"

namespace cohort::store {

// The type of a dump column; also how a backend binds it.
enum class DumpType { kInt, kDouble, kText, kBlob };

struct DumpColumn {
  const char* name;
  DumpType type;
  bool nullable = false;
};

// A logical table: the same name in both backends' schemas.
struct DumpTable {
  const char* name;
  std::vector<DumpColumn> columns;
};

// The tables in dump order: a row only refers (by key) to rows of tables before it.
enum DumpTableId : int {
  kDumpRuns,
  kDumpWriters,
  kDumpBatches,
  kDumpStreamPositions,
  kDumpSeries,
  kDumpChunks,
  kDumpConsole,
  kDumpRunFiles,
  kDumpViews,
  kDumpApiKeys,
  kDumpBlobs,
  kDumpArtifactCollections,
  kDumpArtifactVersions,
  kDumpArtifactFiles,
  kDumpArtifactAliases,
  kDumpArtifactUses,
  kDumpBlobMd5,
  kDumpHistograms,
  kDumpMedia,
  kDumpAlertRules,
  kDumpAlertRuleDefaults,
  kDumpAlerts,
  kDumpAlertEvents,
  kDumpAlertWebhooks,
  kDumpAlertDeliveries,
  // One row at most: exported (and counted) only once it moved past 0; an import moves the
  // target's cursor up to it, never back (docs/formats.md "Store dump").
  kDumpAlertDeliveryCursor,
  kDumpOrderedStreams,
  kDumpTableCount,
};

const std::vector<DumpTable>& DumpTables();

// NULL, an integer (also booleans, 0/1), a double (bit-exact: NaN payloads, -0.0) or bytes (text
// or blob, as the column's type says).
using DumpValue = std::variant<std::monostate, int64_t, double, std::string>;

struct DumpRecord {
  int table = 0;                  // DumpTableId
  std::vector<DumpValue> values;  // one per column of the table, in order
};

// Checks that `rec` has the table's columns with values of their types.
Status ValidateDumpRecord(const DumpRecord& rec);

// Rows per table name.
using DumpCounts = std::map<std::string, int64_t>;

// The first record of a dump file.
struct DumpHeader {
  int version = 1;     // of the dump format
  std::string source;  // "sqlite" | "postgres": the exporting backend
  int64_t created_ms = 0;
};

// How a dump's console ids were numbered: SQLite's are unique in the store, PostgreSQL's per
// run (Store::Import needs to know when the target numbers them the other way).
inline bool ConsoleIdsPerRun(const DumpHeader& h) { return h.source == "postgres"; }

inline constexpr int kDumpFormatVersion = 1;
inline constexpr char kDumpMagic[] = "COHORTDUMP\n\x01\x00\x00\x00";  // 15 bytes + NUL
inline constexpr size_t kDumpMagicSize = 15;

// Record payload encodings (exposed for tests and tools).
std::string EncodeDumpRow(const DumpRecord& rec);
Status DecodeDumpRow(std::string_view payload, DumpRecord* rec);
// A row of a dump written before columns were added to its table (k values fewer: the last k
// added) gets those columns' values for old rows: runs.summary_explicit "[]" (every summary key
// follows its series), media.artifact_ref "" (no vendor table artifact), media.cell_bytes 0 (no
// media cells counted). Other rows are left as they are (ValidateDumpRecord reports a wrong
// count). DumpFileReader::Next applies it.
void UpgradeDumpRecord(DumpRecord* rec);

// Writes a dump file: magic, header, rows, end record. Close() writes the end record with the
// row counts and flushes; a file without it reads back as truncated.
class DumpFileWriter {
 public:
  // `out` stays owned by the caller and must be open for writing.
  DumpFileWriter(std::FILE* out, const DumpHeader& header) : out_(out), header_(header) {}
  Status Begin();
  Status Add(const DumpRecord& rec);
  Status Close();
  const DumpCounts& counts() const { return counts_; }
  int64_t bytes() const { return bytes_; }

 private:
  Status Frame(char kind, std::string_view body);
  std::FILE* out_;
  DumpHeader header_;
  DumpCounts counts_;
  int64_t bytes_ = 0;
};

// Reads a dump file record by record.
class DumpFileReader {
 public:
  explicit DumpFileReader(std::FILE* in) : in_(in) {}
  // Reads the magic and the header record.
  Status Begin();
  // The next row into *rec; false at the end (the end record, or a torn tail: see truncated()).
  // A damaged record followed by more data is a kCorruption error.
  Result<bool> Next(DumpRecord* rec);
  const DumpHeader& header() const { return header_; }
  // Counts from the end record (valid once Next returned false and !truncated()).
  const DumpCounts& end_counts() const { return end_counts_; }
  // Rows read so far, per table.
  const DumpCounts& counts() const { return counts_; }
  // Whether the rows read match the end record's counts: a table the end record does not name (a
  // dump written before the table existed) must have no rows.
  bool CountsMatchEnd() const;
  bool truncated() const { return truncated_; }
  int64_t offset() const { return offset_; }

 private:
  // Reads one frame; false at a clean or torn end (truncated_ set for a torn one).
  Result<bool> ReadFrame(char* kind, std::string* body);
  std::FILE* in_;
  DumpHeader header_;
  DumpCounts end_counts_, counts_;
  bool truncated_ = false;
  bool ended_ = false;
  int64_t offset_ = 0;
};

}  // namespace cohort::store
