// A minimal Apache Parquet writer (written from the format specification, parquet-format's
// parquet.thrift and Encodings.md; no Arrow/Parquet library): flat schemas of string (BYTE_ARRAY,
// UTF8), int64, timestamp-millis (INT64) and double columns, each required or nullable; data pages
// v1 with PLAIN values and RLE/bit-packed hybrid definition levels, each with its CRC-32 in the
// page header; pages compressed with zstd
// when the build has libzstd (COHORT_PARQUET_ZSTD), else uncompressed; the FileMetaData footer in
// the Thrift compact protocol. `cohort runs export --format parquet` uses it (docs/formats.md,
// "Parquet export").
//
// Rows are appended cell by cell; a column chunk's values are cut into pages of about
// `page_bytes` (each page encoded and compressed when it is cut), and a row group is written to
// the sink when it reaches `group_rows` rows or `group_bytes` of uncompressed page bytes, so
// memory stays bounded for any number of rows. Bytes go to a caller's sink (a file, a string);
// the writer does no I/O of its own.
//
// Threading: not thread-safe; one writer per file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"

namespace cohort::parquet {

enum class ColumnType { kString, kInt64, kTimestampMillis, kDouble };
enum class Compression { kNone, kZstd };

struct Column {
  std::string name;
  ColumnType type = ColumnType::kDouble;
  bool nullable = false;
};

struct WriterOptions {
  Compression compression = Compression::kNone;
  int zstd_level = 3;
  size_t page_bytes = 1 << 20;          // values bytes a page holds before it is cut
  int64_t group_rows = 1 << 20;         // rows a row group holds at most
  size_t group_bytes = size_t(64) << 20;  // uncompressed page bytes a row group holds at most
  std::string created_by = "cohort";
  std::vector<std::pair<std::string, std::string>> metadata;  // key_value_metadata of the file
};

// Whether this build can write zstd pages.
bool HaveZstd();

class Writer {
 public:
  // Receives the file's bytes in order; an error stops the writer (every later call returns it).
  using Sink = std::function<Status(std::string_view)>;

  // Column names must be non-empty; InvalidArgument from Start otherwise, or for zstd without
  // HaveZstd().
  Writer(std::vector<Column> schema, WriterOptions options, Sink sink);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Writes the magic; call once, first.
  Status Start();

  // The cells of the current row, in any order; each column set exactly once per row (a nullable
  // column left unset is null). A setter of the wrong type for the column is a programming error
  // reported by EndRow.
  void SetString(size_t column, std::string_view value);
  void SetInt64(size_t column, int64_t value);
  void SetDouble(size_t column, double value);  // bits kept exactly (NaN payloads, -0.0)

  // Ends the row: InvalidArgument when a required column was not set (or set twice, or with the
  // wrong type); writes a row group when one is full.
  Status EndRow();

  // Writes the last row group, the footer and the closing magic. The writer is done after it.
  Status Finish();

  int64_t rows() const { return total_rows_; }
  int64_t row_groups() const;  // written so far

  struct ColumnState;
  struct GroupMeta;

 private:
  Status FlushGroup();
  Status Emit(std::string_view bytes);

  std::vector<Column> schema_;
  WriterOptions opts_;
  Sink sink_;
  Status error_;
  bool started_ = false, finished_ = false;
  int64_t offset_ = 0;  // bytes written so far
  int64_t total_rows_ = 0, group_rows_ = 0;
  size_t group_bytes_ = 0;
  std::vector<ColumnState> columns_;
  std::vector<GroupMeta> groups_;
  std::string row_error_;
};

namespace internal {

// The Thrift compact protocol, as much of it as the footer and page headers need.
class CompactWriter {
 public:
  enum Type : uint8_t {
    kTrue = 1, kFalse = 2, kByte = 3, kI16 = 4, kI32 = 5, kI64 = 6, kDouble = 7, kBinary = 8,
    kList = 9, kSet = 10, kMap = 11, kStruct = 12
  };
  void BeginStruct() { last_.push_back(0); }
  void EndStruct();  // the stop field
  void FieldI32(int16_t id, int32_t v);
  void FieldI64(int16_t id, int64_t v);
  void FieldBool(int16_t id, bool v);
  void FieldBinary(int16_t id, std::string_view v);
  void FieldStruct(int16_t id);                 // then the struct's fields, then EndStruct
  void FieldList(int16_t id, Type elem, size_t size);  // then the elements
  void ListBegin(Type elem, size_t size);
  void I32(int32_t v) { Varint(ZigZag(v)); }
  void Binary(std::string_view v);
  const std::string& bytes() const { return out_; }

  static uint64_t ZigZag(int64_t v) { return (uint64_t(v) << 1) ^ uint64_t(v >> 63); }
  void Varint(uint64_t v);

 private:
  void FieldHeader(int16_t id, uint8_t type);
  std::string out_;
  std::vector<int16_t> last_{0};
};

// CRC-32 (ISO-HDLC, zlib's: polynomial 0x04C11DB7 reflected), the page checksum Parquet names.
uint32_t Crc32(std::string_view data);

// The RLE/bit-packed hybrid encoding of bit-width-1 levels (0 or 1 each), without the 4-byte
// length prefix: runs of 8 or more equal values as RLE runs, the rest bit-packed in groups of 8
// (the last group padded with zeros).
std::string EncodeLevels(const std::vector<uint8_t>& levels);

}  // namespace internal
}  // namespace cohort::parquet
