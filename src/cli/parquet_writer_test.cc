#include "cli/parquet_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

namespace cohort::parquet {
namespace {

using internal::CompactWriter;

std::string Hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (!out.empty()) out += ' ';
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(char(x));
  return s;
}

// A Thrift compact-protocol reader written for these tests (structs, lists, ints, binaries,
// bools): the footer and the page headers are checked field by field.
struct Node {
  int type = 0;
  int64_t i = 0;
  std::string bin;
  std::map<int, Node> fields;
  std::vector<Node> elems;
  const Node& F(int id) const {
    static const Node kMissing{-1};
    auto it = fields.find(id);
    return it == fields.end() ? kMissing : it->second;
  }
  bool Has(int id) const { return fields.count(id) > 0; }
};

class Reader {
 public:
  Reader(std::string_view data, size_t pos) : d_(data), pos_(pos) {}
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      uint8_t b = uint8_t(d_.at(pos_++));
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
  }
  int64_t ZigZag() {
    uint64_t v = Varint();
    return int64_t(v >> 1) ^ -int64_t(v & 1);
  }
  Node Value(int type) {
    Node n;
    n.type = type;
    switch (type) {
      case 1:
      case 2:
        n.i = type == 1;
        break;
      case 4:
      case 5:
      case 6:
        n.i = ZigZag();
        break;
      case 8: {
        size_t len = Varint();
        n.bin = std::string(d_.substr(pos_, len));
        pos_ += len;
        break;
      }
      case 9: {
        uint8_t h = uint8_t(d_.at(pos_++));
        size_t size = h >> 4;
        if (size == 15) size = Varint();
        for (size_t k = 0; k < size; ++k) n.elems.push_back(Value(h & 15));
        break;
      }
      case 12: {
        int last = 0;
        while (true) {
          uint8_t h = uint8_t(d_.at(pos_++));
          if (h == 0) break;
          int id = (h >> 4) ? last + (h >> 4) : int(ZigZag());
          n.fields[id] = Value(h & 15);
          last = id;
        }
        break;
      }
      default:
        ADD_FAILURE() << "unexpected type " << type;
    }
    return n;
  }
  size_t pos() const { return pos_; }

 private:
  std::string_view d_;
  size_t pos_;
};

// Decodes bit-width-1 RLE/bit-packed hybrid levels.
std::vector<uint8_t> DecodeLevels(std::string_view data, size_t count) {
  std::vector<uint8_t> out;
  size_t pos = 0;
  while (out.size() < count) {
    Reader h(data, pos);
    uint64_t header = h.Varint();
    pos = h.pos();
    if (header & 1) {
      size_t groups = header >> 1;
      for (size_t g = 0; g < groups; ++g) {
        uint8_t byte = uint8_t(data.at(pos++));
        for (int b = 0; b < 8 && out.size() < count; ++b) out.push_back((byte >> b) & 1);
      }
    } else {
      uint8_t v = uint8_t(data.at(pos++));
      for (size_t k = 0; k < (header >> 1); ++k) out.push_back(v);
    }
  }
  EXPECT_EQ(pos, data.size());
  return out;
}

TEST(CompactWriter, FieldHeadersShortAndLongForm) {
  CompactWriter w;
  w.BeginStruct();
  w.FieldI32(1, 1);     // delta 1, i32: 0x15, zigzag(1) = 2
  w.FieldI32(3, -1);    // delta 2: 0x25, zigzag(-1) = 1
  w.FieldI64(20, 300);  // delta 17: long form 0x06, zigzag(20) = 40, zigzag(300) = 600
  w.FieldBool(21, true);
  w.FieldBool(22, false);
  w.FieldBinary(23, "ab");
  w.FieldI32(5, 0);  // going back: long form
  w.EndStruct();
  EXPECT_EQ(Hex(w.bytes()), Hex(Bytes({0x15, 0x02, 0x25, 0x01, 0x06, 0x28, 0xd8, 0x04, 0x11,
                                       0x12, 0x18, 0x02, 'a', 'b', 0x05, 0x0a, 0x00, 0x00})));
}

TEST(CompactWriter, NestedStructsKeepTheirOwnFieldIdsAndListsTheirSizes) {
  CompactWriter w;
  w.BeginStruct();
  w.FieldI32(4, 7);
  w.FieldStruct(5);
  w.FieldI32(1, 1);  // delta from 0 inside the nested struct
  w.EndStruct();
  w.FieldList(6, CompactWriter::kI32, 2);  // delta from 5 outside
  w.I32(0);
  w.I32(3);
  w.FieldList(7, CompactWriter::kBinary, 15);  // 15 elements: the long list header
  for (int i = 0; i < 15; ++i) w.Binary("");
  w.EndStruct();
  std::string want = Bytes({0x45, 0x0e, 0x1c, 0x15, 0x02, 0x00, 0x19, 0x25, 0x00, 0x06,
                            0x19, 0xf8, 0x0f});
  want += std::string(15, '\0');
  want += '\0';
  EXPECT_EQ(Hex(w.bytes()), Hex(want));
  EXPECT_EQ(CompactWriter::ZigZag(std::numeric_limits<int64_t>::min()),
            std::numeric_limits<uint64_t>::max());
}

TEST(Crc32, CheckValue) {
  EXPECT_EQ(internal::Crc32("123456789"), 0xcbf43926u);  // the catalogued check value
  EXPECT_EQ(internal::Crc32(""), 0u);
  // Every length and alignment of the 8-byte blocks against the bytewise definition.
  std::string data;
  for (int i = 0; i < 100; ++i) data.push_back(char(i * 37 + 11));
  for (size_t len = 0; len <= data.size(); ++len) {
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < len; ++i) {
      crc ^= uint8_t(data[i]);
      for (int k = 0; k < 8; ++k) crc = (crc & 1) ? 0xedb88320u ^ (crc >> 1) : crc >> 1;
    }
    EXPECT_EQ(internal::Crc32(std::string_view(data).substr(0, len)), crc ^ 0xffffffffu) << len;
  }
}

TEST(EncodeLevels, RunsAndBitPackedGroups) {
  using internal::EncodeLevels;
  EXPECT_EQ(Hex(EncodeLevels(std::vector<uint8_t>(10, 1))), "14 01");  // RLE: 10 << 1, value 1
  EXPECT_EQ(Hex(EncodeLevels({1, 0, 1})), "03 05");  // one bit-packed group, zero-padded
  // Three literals topped up to a group of eight from the run; the run's rest (5) stays literal.
  std::vector<uint8_t> v = {1, 0, 1};
  v.resize(13, 1);
  EXPECT_EQ(Hex(EncodeLevels(v)), "05 fd 1f");
  v.resize(23, 1);  // now 15 of the run are left after the top-up: an RLE run
  EXPECT_EQ(Hex(EncodeLevels(v)), "03 fd 1e 01");
  EXPECT_EQ(EncodeLevels({}), "");
  // Random mixes of runs and noise decode to themselves.
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<uint8_t> levels;
    size_t n = rng() % 300;
    while (levels.size() < n) {
      size_t run = rng() % 3 == 0 ? rng() % 40 : 1;
      uint8_t bit = rng() & 1;
      for (size_t k = 0; k < run; ++k) levels.push_back(bit);
    }
    EXPECT_EQ(DecodeLevels(EncodeLevels(levels), levels.size()), levels);
  }
}

// A file written into a string, and its footer parsed back.
struct File {
  std::string bytes;
  Node meta;
};

File Write(const std::vector<Column>& schema, WriterOptions opts,
           const std::function<void(Writer&)>& rows) {
  File f;
  Writer w(schema, opts, [&f](std::string_view b) {
    f.bytes.append(b);
    return Status::Ok();
  });
  EXPECT_TRUE(w.Start().ok());
  rows(w);
  Status s = w.Finish();
  EXPECT_TRUE(s.ok()) << s.message();
  const std::string& b = f.bytes;
  EXPECT_EQ(b.substr(0, 4), "PAR1");
  EXPECT_EQ(b.substr(b.size() - 4), "PAR1");
  uint32_t len;
  std::memcpy(&len, b.data() + b.size() - 8, 4);
  size_t start = b.size() - 8 - len;
  Reader r(b, start);
  f.meta = r.Value(12);
  EXPECT_EQ(r.pos(), start + len);  // the footer length is exact
  return f;
}

// Every page of column `col` across the row groups: (levels, values bytes), uncompressed files.
struct ColumnData {
  std::vector<uint8_t> levels;
  std::string values;
  int64_t count = 0;
  int pages = 0;
};

ColumnData ReadColumn(const File& f, size_t col, bool nullable) {
  ColumnData out;
  for (const Node& g : f.meta.F(4).elems) {
    const Node& md = g.F(1).elems.at(col).F(3);
    EXPECT_EQ(md.F(4).i, 0);  // uncompressed
    int64_t pos = md.F(9).i, end = pos + md.F(7).i, values = 0;
    EXPECT_EQ(g.F(1).elems.at(col).F(2).i, pos);
    while (pos < end) {
      Reader r(f.bytes, size_t(pos));
      Node h = r.Value(12);
      EXPECT_EQ(h.F(1).i, 0);  // DATA_PAGE
      EXPECT_EQ(h.F(2).i, h.F(3).i);
      const Node& dp = h.F(5);
      std::string_view body(f.bytes.data() + r.pos(), size_t(h.F(3).i));
      EXPECT_EQ(uint32_t(h.F(4).i), internal::Crc32(body));
      int64_t n = dp.F(1).i;
      if (nullable) {
        uint32_t len;
        std::memcpy(&len, body.data(), 4);
        auto lv = DecodeLevels(body.substr(4, len), size_t(n));
        out.levels.insert(out.levels.end(), lv.begin(), lv.end());
        body.remove_prefix(4 + len);
      }
      out.values.append(body);
      values += n;
      out.count += n;
      ++out.pages;
      pos = int64_t(r.pos()) + h.F(3).i;
    }
    EXPECT_EQ(pos, end);
    EXPECT_EQ(values, md.F(5).i);
  }
  return out;
}

TEST(Writer, SchemaAndFooterFieldByField) {
  WriterOptions opts;
  opts.created_by = "cohort test";
  opts.metadata = {{"cohort.run", "e/p/r"}};
  File f = Write({{"writer", ColumnType::kString, false},
                  {"time", ColumnType::kTimestampMillis, false},
                  {"v", ColumnType::kDouble, true}},
                 opts, [](Writer& w) {
                   w.SetString(0, "a");
                   w.SetInt64(1, 1000);
                   w.SetDouble(2, 1.5);
                   ASSERT_TRUE(w.EndRow().ok());
                   w.SetString(0, "bc");
                   w.SetInt64(1, -1);
                   ASSERT_TRUE(w.EndRow().ok());
                 });
  // The first page (writer): header, then the PLAIN byte arrays.
  // (the CRC-32 of the page body, 0x4970b1b1, as zlib computes it, zigzag varint)
  EXPECT_EQ(Hex(f.bytes.substr(4, 27)),
            Hex(Bytes({0x15, 0x00, 0x15, 0x16, 0x15, 0x16, 0x15, 0xe2, 0xc6, 0x85, 0x97, 0x09,
                       0x1c, 0x15, 0x04, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06, 0x00, 0x00, 1, 0,
                       0, 0})));
  EXPECT_EQ(f.bytes.substr(31, 7), std::string("a\x02\0\0\0bc", 7));
  // The timestamp column's SchemaElement, byte for byte: INT64, REQUIRED, "time",
  // TIMESTAMP_MILLIS, LogicalType TIMESTAMP{isAdjustedToUTC: true, unit: MILLIS}.
  std::string ts = Bytes({0x15, 0x04, 0x25, 0x00, 0x18, 0x04, 't', 'i', 'm', 'e', 0x25, 0x12,
                          0x4c, 0x8c, 0x11, 0x1c, 0x1c, 0x00, 0x00, 0x00, 0x00, 0x00});
  EXPECT_NE(f.bytes.find(ts), std::string::npos);
  const Node& m = f.meta;
  EXPECT_EQ(m.F(1).i, 1);
  EXPECT_EQ(m.F(3).i, 2);
  const auto& schema = m.F(2).elems;
  ASSERT_EQ(schema.size(), 4u);
  EXPECT_EQ(schema[0].F(5).i, 3);
  EXPECT_FALSE(schema[0].Has(1));
  EXPECT_EQ(schema[1].F(1).i, 6);  // BYTE_ARRAY
  EXPECT_EQ(schema[1].F(6).i, 0);  // UTF8
  EXPECT_TRUE(schema[1].F(10).Has(1));
  EXPECT_EQ(schema[3].F(1).i, 5);  // DOUBLE
  EXPECT_EQ(schema[3].F(3).i, 1);  // OPTIONAL
  EXPECT_EQ(schema[3].F(4).bin, "v");
  ASSERT_EQ(m.F(4).elems.size(), 1u);
  const Node& g = m.F(4).elems[0];
  EXPECT_EQ(g.F(3).i, 2);
  ASSERT_EQ(g.F(1).elems.size(), 3u);
  const Node& vmd = g.F(1).elems[2].F(3);
  EXPECT_EQ(vmd.F(1).i, 5);
  EXPECT_EQ(vmd.F(3).elems.at(0).bin, "v");
  EXPECT_EQ(vmd.F(2).elems.size(), 2u);  // PLAIN, RLE
  EXPECT_EQ(vmd.F(5).i, 2);              // values, the null included
  EXPECT_EQ(m.F(5).elems.at(0).F(1).bin, "cohort.run");
  EXPECT_EQ(m.F(5).elems.at(0).F(2).bin, "e/p/r");
  EXPECT_EQ(m.F(6).bin, "cohort test");
  ColumnData v = ReadColumn(f, 2, true);
  EXPECT_EQ(v.levels, (std::vector<uint8_t>{1, 0}));
  double x;
  ASSERT_EQ(v.values.size(), 8u);
  std::memcpy(&x, v.values.data(), 8);
  EXPECT_EQ(x, 1.5);
  ColumnData t = ReadColumn(f, 1, false);
  int64_t times[2];
  ASSERT_EQ(t.values.size(), 16u);
  std::memcpy(times, t.values.data(), 16);
  EXPECT_EQ(times[0], 1000);
  EXPECT_EQ(times[1], -1);
}

TEST(Writer, SpecialDoublesKeepTheirBits) {
  std::vector<uint64_t> bits = {0x7ff8000000000000ull, 0x7ff0000000000001ull,  // NaNs, payloads
                                0xfff8000000000abcull, 0x7ff0000000000000ull,  // -NaN, +inf
                                0xfff0000000000000ull, 0x8000000000000000ull,  // -inf, -0.0
                                0x0000000000000001ull, 0x3ff0000000000000ull};  // denormal, 1
  File f = Write({{"v", ColumnType::kDouble, true}}, {}, [&](Writer& w) {
    for (uint64_t b : bits) {
      double d;
      std::memcpy(&d, &b, 8);
      w.SetDouble(0, d);
      ASSERT_TRUE(w.EndRow().ok());
    }
  });
  ColumnData c = ReadColumn(f, 0, true);
  ASSERT_EQ(c.values.size(), bits.size() * 8);
  for (size_t i = 0; i < bits.size(); ++i) {
    uint64_t got;
    std::memcpy(&got, c.values.data() + 8 * i, 8);
    EXPECT_EQ(got, bits[i]) << i;
  }
  EXPECT_EQ(c.levels, std::vector<uint8_t>(bits.size(), 1));
}

TEST(Writer, PagesAndRowGroupsAreCutAndAccountedFor) {
  WriterOptions opts;
  opts.page_bytes = 40;  // five doubles a page
  opts.group_rows = 23;
  const int kRows = 100;
  File f = Write({{"step", ColumnType::kInt64, false}, {"v", ColumnType::kDouble, true}}, opts,
                 [&](Writer& w) {
                   for (int i = 0; i < kRows; ++i) {
                     w.SetInt64(0, i);
                     if (i % 3 != 0) w.SetDouble(1, i * 0.5);
                     ASSERT_TRUE(w.EndRow().ok());
                   }
                   EXPECT_EQ(w.rows(), kRows);
                   EXPECT_EQ(w.row_groups(), kRows / 23);  // the last one is written by Finish
                 });
  EXPECT_EQ(f.meta.F(3).i, kRows);
  ASSERT_EQ(f.meta.F(4).elems.size(), 5u);
  int64_t rows = 0;
  for (const Node& g : f.meta.F(4).elems) rows += g.F(3).i;
  EXPECT_EQ(rows, kRows);
  ColumnData steps = ReadColumn(f, 0, false);
  ColumnData v = ReadColumn(f, 1, true);
  EXPECT_GT(steps.pages, 5 * 4);
  ASSERT_EQ(steps.count, kRows);
  ASSERT_EQ(v.levels.size(), size_t(kRows));
  size_t k = 0;
  for (int i = 0; i < kRows; ++i) {
    int64_t s;
    std::memcpy(&s, steps.values.data() + 8 * i, 8);
    EXPECT_EQ(s, i);
    EXPECT_EQ(v.levels[i], i % 3 != 0) << i;
    if (v.levels[i]) {
      double d;
      std::memcpy(&d, v.values.data() + 8 * k++, 8);
      EXPECT_EQ(d, i * 0.5);
    }
  }
  EXPECT_EQ(k * 8, v.values.size());
}

TEST(Writer, EmptyFileHasASchemaAndNoRowGroups) {
  File f = Write({{"step", ColumnType::kInt64, false}}, {}, [](Writer&) {});
  EXPECT_EQ(f.meta.F(3).i, 0);
  EXPECT_TRUE(f.meta.F(4).elems.empty());
  EXPECT_EQ(f.meta.F(2).elems.size(), 2u);
}

TEST(Writer, RefusesMissingRequiredCellsAndWrongTypes) {
  std::string out;
  auto sink = [&out](std::string_view b) {
    out.append(b);
    return Status::Ok();
  };
  Writer w({{"step", ColumnType::kInt64, false}, {"v", ColumnType::kDouble, true}}, {}, sink);
  ASSERT_TRUE(w.Start().ok());
  w.SetDouble(1, 1);
  Status s = w.EndRow();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("step"), std::string::npos);
  EXPECT_FALSE(w.Finish().ok());  // the file is abandoned

  Writer w2({{"step", ColumnType::kInt64, false}}, {}, sink);
  ASSERT_TRUE(w2.Start().ok());
  w2.SetDouble(0, 1);
  EXPECT_EQ(w2.EndRow().code(), StatusCode::kInvalidArgument);

  Writer w3({{"", ColumnType::kInt64, false}}, {}, sink);
  EXPECT_EQ(w3.Start().code(), StatusCode::kInvalidArgument);
}

TEST(Writer, ASinkErrorStopsTheWriter) {
  int calls = 0;
  Writer w({{"step", ColumnType::kInt64, false}}, {}, [&calls](std::string_view) {
    ++calls;
    return calls > 1 ? Status::IOError("disk full") : Status::Ok();
  });
  ASSERT_TRUE(w.Start().ok());
  w.SetInt64(0, 1);
  ASSERT_TRUE(w.EndRow().ok());
  Status s = w.Finish();
  EXPECT_EQ(s.message(), "disk full");
  w.SetInt64(0, 2);
  EXPECT_EQ(w.EndRow().message(), "disk full");
}

}  // namespace
}  // namespace cohort::parquet
