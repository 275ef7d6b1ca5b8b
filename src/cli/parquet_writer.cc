#include "cli/parquet_writer.h"

#include <array>
#include <cstring>
#include <utility>

#include "core/coding.h"

#ifdef COHORT_PARQUET_ZSTD
#include <zstd.h>
#endif

namespace cohort::parquet {
namespace {

// parquet.thrift enum values.
constexpr int32_t kTypeInt64 = 2, kTypeDouble = 5, kTypeByteArray = 6;
constexpr int32_t kRequired = 0, kOptional = 1;
constexpr int32_t kConvertedUtf8 = 0, kConvertedTimestampMillis = 9;
constexpr int32_t kEncodingPlain = 0, kEncodingRle = 3;
constexpr int32_t kCodecUncompressed = 0, kCodecZstd = 6;
constexpr int32_t kPageData = 0;
constexpr std::string_view kMagic = "PAR1";

int32_t PhysicalType(ColumnType t) {
  switch (t) {
    case ColumnType::kString:
      return kTypeByteArray;
    case ColumnType::kDouble:
      return kTypeDouble;
    default:
      return kTypeInt64;
  }
}

}  // namespace

bool HaveZstd() {
#ifdef COHORT_PARQUET_ZSTD
  return true;
#else
  return false;
#endif
}

namespace internal {

void CompactWriter::Varint(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(char((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out_.push_back(char(v));
}

void CompactWriter::FieldHeader(int16_t id, uint8_t type) {
  int16_t& last = last_.back();
  int delta = id - last;
  if (delta > 0 && delta <= 15) {
    out_.push_back(char((delta << 4) | type));
  } else {
    out_.push_back(char(type));
    Varint(ZigZag(id));
  }
  last = id;
}

void CompactWriter::EndStruct() {
  out_.push_back(0);
  last_.pop_back();
}

void CompactWriter::FieldI32(int16_t id, int32_t v) {
  FieldHeader(id, kI32);
  Varint(ZigZag(v));
}

void CompactWriter::FieldI64(int16_t id, int64_t v) {
  FieldHeader(id, kI64);
  Varint(ZigZag(v));
}

void CompactWriter::FieldBool(int16_t id, bool v) { FieldHeader(id, v ? kTrue : kFalse); }

void CompactWriter::FieldBinary(int16_t id, std::string_view v) {
  FieldHeader(id, kBinary);
  Binary(v);
}

void CompactWriter::Binary(std::string_view v) {
  Varint(v.size());
  out_.append(v);
}

void CompactWriter::FieldStruct(int16_t id) {
  FieldHeader(id, kStruct);
  BeginStruct();
}

void CompactWriter::FieldList(int16_t id, Type elem, size_t size) {
  FieldHeader(id, kList);
  ListBegin(elem, size);
}

void CompactWriter::ListBegin(Type elem, size_t size) {
  if (size < 15) {
    out_.push_back(char((size << 4) | elem));
  } else {
    out_.push_back(char(0xf0 | elem));
    Varint(size);
  }
}

uint32_t Crc32(std::string_view data) {
  // Slicing by 8: table k maps a byte k positions before the end of an 8-byte block.
  static const auto kTables = [] {
    std::array<std::array<uint32_t, 256>, 8> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (int k = 1; k < 8; ++k) {
      for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
    }
    return t;
  }();
  const auto& t = kTables;
  uint32_t crc = 0xffffffffu;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo = crc ^ (uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
                         uint32_t(p[3]) << 24);
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
          t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
  }
  for (; n > 0; --n, ++p) crc = t[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

std::string EncodeLevels(const std::vector<uint8_t>& levels) {
  std::string out;
  auto varint = [&out](uint64_t v) {
    while (v >= 0x80) {
      out.push_back(char((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(char(v));
  };
  std::vector<uint8_t> literals;  // pending bit-packed values; a multiple of 8 when flushed early
  auto flush_literals = [&] {
    if (literals.empty()) return;
    size_t groups = (literals.size() + 7) / 8;
    varint((uint64_t(groups) << 1) | 1);
    for (size_t g = 0; g < groups; ++g) {
      uint8_t byte = 0;
      for (size_t b = 0; b < 8 && g * 8 + b < literals.size(); ++b) {
        byte |= uint8_t((literals[g * 8 + b] & 1) << b);
      }
      out.push_back(char(byte));
    }
    literals.clear();
  };
  size_t i = 0;
  while (i < levels.size()) {
    size_t run = 1;
    while (i + run < levels.size() && levels[i + run] == levels[i]) ++run;
    if (run >= 8) {
      // Top the literals up to a whole group so that they can be flushed before the RLE run.
      size_t need = (8 - literals.size() % 8) % 8;
      for (size_t k = 0; k < need; ++k) literals.push_back(levels[i]);
      i += need;
      run -= need;
      if (run >= 8) {
        flush_literals();
        varint(uint64_t(run) << 1);
        out.push_back(char(levels[i] & 1));
        i += run;
        continue;
      }
    }
    for (size_t k = 0; k < run; ++k) literals.push_back(levels[i + k]);
    i += run;
  }
  flush_literals();
  return out;
}

}  // namespace internal

using internal::CompactWriter;

struct Writer::ColumnState {
  // The open page.
  std::string values;           // PLAIN-encoded non-null values
  std::vector<uint8_t> levels;  // definition levels (nullable columns)
  int64_t page_count = 0;       // values in the page, nulls included
  bool set = false;             // set in the current row
  // The row group's finished pages (headers and bodies).
  std::string chunk;
  int64_t chunk_uncompressed = 0, chunk_values = 0;
};

struct Writer::GroupMeta {
  struct Chunk {
    int64_t offset, uncompressed, compressed, values;
  };
  std::vector<Chunk> chunks;
  int64_t rows = 0;
};

Writer::Writer(std::vector<Column> schema, WriterOptions options, Sink sink)
    : schema_(std::move(schema)),
      opts_(std::move(options)),
      sink_(std::move(sink)),
      columns_(schema_.size()) {}

Writer::~Writer() = default;

int64_t Writer::row_groups() const { return int64_t(groups_.size()); }

Status Writer::Emit(std::string_view bytes) {
  if (!error_.ok()) return error_;
  error_ = sink_(bytes);
  if (error_.ok()) offset_ += int64_t(bytes.size());
  return error_;
}

Status Writer::Start() {
  if (started_) return Status::FailedPrecondition("parquet: Start called twice");
  started_ = true;
  if (schema_.empty()) error_ = Status::InvalidArgument("parquet: a file needs a column");
  for (const auto& c : schema_) {
    if (c.name.empty()) error_ = Status::InvalidArgument("parquet: a column has no name");
  }
  if (opts_.compression == Compression::kZstd && !HaveZstd()) {
    error_ = Status::InvalidArgument("parquet: this build has no zstd");
  }
  if (!error_.ok()) return error_;
  return Emit(kMagic);
}

void Writer::SetString(size_t column, std::string_view value) {
  if (column >= columns_.size() || schema_[column].type != ColumnType::kString) {
    row_error_ = "parquet: SetString on a column that is not a string";
    return;
  }
  ColumnState& c = columns_[column];
  if (c.set) row_error_ = "parquet: column " + schema_[column].name + " set twice in a row";
  c.set = true;
  coding::PutFixed32(&c.values, uint32_t(value.size()));
  c.values.append(value);
}

void Writer::SetInt64(size_t column, int64_t value) {
  if (column >= columns_.size() || (schema_[column].type != ColumnType::kInt64 &&
                                    schema_[column].type != ColumnType::kTimestampMillis)) {
    row_error_ = "parquet: SetInt64 on a column that is not an int64";
    return;
  }
  ColumnState& c = columns_[column];
  if (c.set) row_error_ = "parquet: column " + schema_[column].name + " set twice in a row";
  c.set = true;
  coding::PutFixed64(&c.values, uint64_t(value));
}

void Writer::SetDouble(size_t column, double value) {
  if (column >= columns_.size() || schema_[column].type != ColumnType::kDouble) {
    row_error_ = "parquet: SetDouble on a column that is not a double";
    return;
  }
  ColumnState& c = columns_[column];
  if (c.set) row_error_ = "parquet: column " + schema_[column].name + " set twice in a row";
  c.set = true;
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  coding::PutFixed64(&c.values, bits);
}

namespace {

// Encodes (and compresses) the open page of `c` into its chunk; returns the uncompressed bytes.
Result<size_t> CutPage(Writer::ColumnState* c, bool nullable, const WriterOptions& opts);

}  // namespace

Status Writer::EndRow() {
  if (!error_.ok()) return error_;
  if (!started_ || finished_) return Status::FailedPrecondition("parquet: EndRow outside a file");
  for (size_t i = 0; i < columns_.size() && row_error_.empty(); ++i) {
    if (!columns_[i].set && !schema_[i].nullable) {
      row_error_ = "parquet: required column " + schema_[i].name + " not set";
    }
  }
  if (!row_error_.empty()) {
    // The row's cells cannot be taken back out of the pages: the file is abandoned.
    error_ = Status::InvalidArgument(row_error_);
    return error_;
  }
  for (size_t i = 0; i < columns_.size(); ++i) {
    ColumnState& c = columns_[i];
    if (schema_[i].nullable) c.levels.push_back(c.set ? 1 : 0);
    c.set = false;
    ++c.page_count;
    if (c.values.size() >= opts_.page_bytes) {
      auto n = CutPage(&c, schema_[i].nullable, opts_);
      if (!n.ok()) return error_ = n.status();
      group_bytes_ += *n;
    }
  }
  ++group_rows_;
  ++total_rows_;
  size_t open_bytes = 0;
  for (const auto& c : columns_) open_bytes += c.values.size() + c.levels.size() / 8;
  if (group_rows_ >= opts_.group_rows || group_bytes_ + open_bytes >= opts_.group_bytes) {
    return FlushGroup();
  }
  return Status::Ok();
}

namespace {

Result<size_t> CutPage(Writer::ColumnState* c, bool nullable, const WriterOptions& opts) {
  std::string body;
  if (nullable) {
    std::string levels = internal::EncodeLevels(c->levels);
    coding::PutFixed32(&body, uint32_t(levels.size()));
    body += levels;
  }
  body += c->values;
  std::string stored;
  if (opts.compression == Compression::kZstd) {
#ifdef COHORT_PARQUET_ZSTD
    stored.resize(ZSTD_compressBound(body.size()));
    size_t n = ZSTD_compress(stored.data(), stored.size(), body.data(), body.size(),
                             opts.zstd_level);
    if (ZSTD_isError(n)) {
      return Status::Internal(std::string("parquet: zstd: ") + ZSTD_getErrorName(n));
    }
    stored.resize(n);
#endif
  } else {
    stored = body;
  }
  if (body.size() > INT32_MAX || stored.size() > INT32_MAX) {
    return Status::Internal("parquet: a page over 2 GiB");
  }
  CompactWriter h;  // PageHeader
  h.BeginStruct();
  h.FieldI32(1, kPageData);
  h.FieldI32(2, int32_t(body.size()));
  h.FieldI32(3, int32_t(stored.size()));
  h.FieldI32(4, int32_t(internal::Crc32(stored)));  // of the page's bytes as stored
  h.FieldStruct(5);  // DataPageHeader
  h.FieldI32(1, int32_t(c->page_count));
  h.FieldI32(2, kEncodingPlain);
  h.FieldI32(3, kEncodingRle);
  h.FieldI32(4, kEncodingRle);
  h.EndStruct();
  h.EndStruct();
  c->chunk += h.bytes();
  c->chunk += stored;
  c->chunk_uncompressed += int64_t(h.bytes().size() + body.size());
  c->chunk_values += c->page_count;
  c->values.clear();
  c->levels.clear();
  c->page_count = 0;
  return h.bytes().size() + body.size();
}

}  // namespace

Status Writer::FlushGroup() {
  if (group_rows_ == 0) return Status::Ok();
  GroupMeta g;
  g.rows = group_rows_;
  for (size_t i = 0; i < columns_.size(); ++i) {
    ColumnState& c = columns_[i];
    if (c.page_count > 0) {
      auto n = CutPage(&c, schema_[i].nullable, opts_);
      if (!n.ok()) return error_ = n.status();
    }
    g.chunks.push_back(
        {offset_, c.chunk_uncompressed, int64_t(c.chunk.size()), c.chunk_values});
    COHORT_RETURN_IF_ERROR(Emit(c.chunk));
    c.chunk.clear();
    c.chunk.shrink_to_fit();
    c.chunk_uncompressed = c.chunk_values = 0;
  }
  groups_.push_back(std::move(g));
  group_rows_ = 0;
  group_bytes_ = 0;
  return Status::Ok();
}

Status Writer::Finish() {
  if (!error_.ok()) return error_;
  if (!started_ || finished_) return Status::FailedPrecondition("parquet: Finish outside a file");
  finished_ = true;
  COHORT_RETURN_IF_ERROR(FlushGroup());
  const int32_t codec =
      opts_.compression == Compression::kZstd ? kCodecZstd : kCodecUncompressed;
  CompactWriter w;  // FileMetaData
  w.BeginStruct();
  w.FieldI32(1, 1);  // version
  w.FieldList(2, CompactWriter::kStruct, schema_.size() + 1);
  w.BeginStruct();  // the root
  w.FieldBinary(4, "schema");
  w.FieldI32(5, int32_t(schema_.size()));
  w.EndStruct();
  for (const Column& c : schema_) {
    w.BeginStruct();  // SchemaElement
    w.FieldI32(1, PhysicalType(c.type));
    w.FieldI32(3, c.nullable ? kOptional : kRequired);
    w.FieldBinary(4, c.name);
    if (c.type == ColumnType::kString) {
      w.FieldI32(6, kConvertedUtf8);
      w.FieldStruct(10);  // LogicalType
      w.FieldStruct(1);   // STRING
      w.EndStruct();
      w.EndStruct();
    } else if (c.type == ColumnType::kTimestampMillis) {
      w.FieldI32(6, kConvertedTimestampMillis);
      w.FieldStruct(10);  // LogicalType
      w.FieldStruct(8);   // TIMESTAMP
      w.FieldBool(1, true);  // isAdjustedToUTC
      w.FieldStruct(2);      // unit
      w.FieldStruct(1);      // MILLIS
      w.EndStruct();
      w.EndStruct();
      w.EndStruct();
      w.EndStruct();
    }
    w.EndStruct();
  }
  w.FieldI64(3, total_rows_);
  w.FieldList(4, CompactWriter::kStruct, groups_.size());
  for (const GroupMeta& g : groups_) {
    w.BeginStruct();  // RowGroup
    w.FieldList(1, CompactWriter::kStruct, g.chunks.size());
    int64_t uncompressed = 0, compressed = 0;
    for (size_t i = 0; i < g.chunks.size(); ++i) {
      const auto& ch = g.chunks[i];
      uncompressed += ch.uncompressed;
      compressed += ch.compressed;
      w.BeginStruct();  // ColumnChunk
      w.FieldI64(2, ch.offset);
      w.FieldStruct(3);  // ColumnMetaData
      w.FieldI32(1, PhysicalType(schema_[i].type));
      const bool nullable = schema_[i].nullable;
      w.FieldList(2, CompactWriter::kI32, nullable ? 2 : 1);
      w.I32(kEncodingPlain);
      if (nullable) w.I32(kEncodingRle);
      w.FieldList(3, CompactWriter::kBinary, 1);
      w.Binary(schema_[i].name);
      w.FieldI32(4, codec);
      w.FieldI64(5, ch.values);
      w.FieldI64(6, ch.uncompressed);
      w.FieldI64(7, ch.compressed);
      w.FieldI64(9, ch.offset);
      w.EndStruct();
      w.EndStruct();
    }
    w.FieldI64(2, uncompressed);
    w.FieldI64(3, g.rows);
    w.FieldI64(5, g.chunks.empty() ? 0 : g.chunks[0].offset);
    w.FieldI64(6, compressed);
    w.EndStruct();
  }
  if (!opts_.metadata.empty()) {
    w.FieldList(5, CompactWriter::kStruct, opts_.metadata.size());
    for (const auto& [k, v] : opts_.metadata) {
      w.BeginStruct();  // KeyValue
      w.FieldBinary(1, k);
      w.FieldBinary(2, v);
      w.EndStruct();
    }
  }
  w.FieldBinary(6, opts_.created_by);
  w.EndStruct();
  std::string tail = w.bytes();
  coding::PutFixed32(&tail, uint32_t(tail.size()));
  tail += kMagic;
  return Emit(tail);
}

}  // namespace cohort::parquet
