#include "store/dump_format.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/coding.h"
#include "core/crc32c.h"

namespace cohort::store {
namespace {

DumpRecord ChunkRow(int64_t idx, double v) {
  return DumpRecord{kDumpChunks,
                    {int64_t{1}, idx, int64_t{3}, int64_t{0}, int64_t{2}, int64_t{-5}, int64_t{9},
                     v, v, v, v, v, int64_t{0}, std::string("\0\xff", 2)}};
}

DumpRecord ViewRow(int64_t pk) {
  return DumpRecord{kDumpViews,
                    {pk, std::string("e"), std::string("p"), "v" + std::to_string(pk),
                     std::string("{}"), int64_t{1}, int64_t{2}}};
}

// Writes `rows` to a fresh file and reopens it for reading; `close` writes the end record.
// `cut` bytes are cut off the end first (a torn tail).
std::FILE* WriteDump(const std::vector<DumpRecord>& rows, bool close = true, long cut = 0) {
  static int n = 0;
  const std::string path = ::testing::TempDir() + "/dump_format_test_" +
                           std::to_string(::getpid()) + "_" + std::to_string(n++);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  DumpFileWriter w(f, DumpHeader{.source = "sqlite", .created_ms = 42});
  EXPECT_TRUE(w.Begin().ok());
  for (const auto& r : rows) EXPECT_TRUE(w.Add(r).ok());
  if (close) {
    EXPECT_TRUE(w.Close().ok());
  }
  std::fclose(f);
  if (cut > 0) {
    EXPECT_EQ(::truncate(path.c_str(), long(w.bytes()) - cut), 0);
  }
  f = std::fopen(path.c_str(), "r+b");
  std::remove(path.c_str());  // stays readable while open
  return f;
}

long FileSize(std::FILE* f) {
  std::fseek(f, 0, SEEK_END);
  return std::ftell(f);
}

std::vector<DumpRecord> ReadAll(std::FILE* f, DumpFileReader* r, Status* status) {
  std::rewind(f);
  std::vector<DumpRecord> out;
  *status = r->Begin();
  if (!status->ok()) return out;
  DumpRecord rec;
  while (true) {
    auto more = r->Next(&rec);
    if (!more.ok()) {
      *status = more.status();
      return out;
    }
    if (!*more) break;
    out.push_back(rec);
  }
  return out;
}

TEST(DumpFormatTest, FileRoundTripIsBitExact) {
  const double nan_payload = std::bit_cast<double>(uint64_t{0x7ff8000000abcdef});
  std::vector<DumpRecord> rows = {ViewRow(1), ChunkRow(0, -0.0), ChunkRow(1, nan_payload),
                                  ChunkRow(2, -std::numeric_limits<double>::infinity())};
  std::FILE* f = WriteDump(rows);
  DumpFileReader r(f);
  Status s;
  auto back = ReadAll(f, &r, &s);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(r.truncated());
  EXPECT_EQ(r.header().source, "sqlite");
  EXPECT_EQ(r.header().created_ms, 42);
  ASSERT_EQ(back.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(back[i].table, rows[i].table);
    ASSERT_EQ(back[i].values.size(), rows[i].values.size());
    for (size_t j = 0; j < rows[i].values.size(); ++j) {
      if (const auto* d = std::get_if<double>(&rows[i].values[j])) {
        EXPECT_EQ(std::bit_cast<uint64_t>(*d),
                  std::bit_cast<uint64_t>(std::get<double>(back[i].values[j])));
      } else {
        EXPECT_EQ(back[i].values[j], rows[i].values[j]);
      }
    }
  }
  EXPECT_EQ(r.end_counts().at("chunks"), 3);
  EXPECT_EQ(r.end_counts().at("views"), 1);
  EXPECT_EQ(r.end_counts(), r.counts());
  std::fclose(f);
}

TEST(DumpFormatTest, TornTailReadsIntactPrefixAsTruncated) {
  // The last record cut short.
  std::FILE* f = WriteDump({ViewRow(1), ViewRow(2), ViewRow(3)}, /*close=*/false, /*cut=*/3);
  DumpFileReader r(f);
  Status s;
  auto back = ReadAll(f, &r, &s);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(r.truncated());
  EXPECT_EQ(back.size(), 2u);
  std::fclose(f);
}

TEST(DumpFormatTest, MissingEndRecordIsTruncated) {
  std::FILE* f = WriteDump({ViewRow(1)}, /*close=*/false);
  DumpFileReader r(f);
  Status s;
  auto back = ReadAll(f, &r, &s);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(r.truncated());
  EXPECT_EQ(back.size(), 1u);
  std::fclose(f);
}

TEST(DumpFormatTest, DamagedRecordBeforeOthersIsCorruption) {
  std::FILE* f = WriteDump({ViewRow(1), ViewRow(2)});
  // Flip a byte inside the first row (after magic, header frame and the row's 9-byte prefix).
  std::rewind(f);
  std::string all(size_t(FileSize(f)), '\0');
  std::rewind(f);
  ASSERT_EQ(std::fread(all.data(), 1, all.size(), f), all.size());
  const size_t header_len =
      8 + size_t(all[kDumpMagicSize]) + (size_t(uint8_t(all[kDumpMagicSize + 1])) << 8);
  const size_t row = kDumpMagicSize + header_len + 10;
  std::fseek(f, long(row), SEEK_SET);
  std::fputc(all[row] ^ 0x55, f);
  std::fflush(f);
  DumpFileReader r(f);
  Status s;
  ReadAll(f, &r, &s);
  EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
  std::fclose(f);
}

TEST(DumpFormatTest, NotADumpIsInvalidArgument) {
  std::FILE* f = std::tmpfile();
  std::fputs("SQLite format 3\0 definitely not a dump", f);
  DumpFileReader r(f);
  Status s;
  ReadAll(f, &r, &s);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  std::fclose(f);
}

TEST(DumpFormatTest, RowWithWrongTypeIsRejected) {
  DumpRecord bad = ViewRow(1);
  bad.values[0] = std::string("not a key");
  EXPECT_EQ(ValidateDumpRecord(bad).code(), StatusCode::kCorruption);
  DumpRecord decoded;
  EXPECT_EQ(DecodeDumpRow(EncodeDumpRow(bad), &decoded).code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeDumpRow("\x05", &decoded).code(), StatusCode::kCorruption);
}

// Table ids are the format: tables are only appended (docs/formats.md, "Store dump").
TEST(DumpFormatTest, TableIdsAreStable) {
  const std::vector<std::string> names = {"runs",
                                          "writers",
                                          "batches",
                                          "stream_positions",
                                          "series",
                                          "chunks",
                                          "console",
                                          "run_files",
                                          "views",
                                          "api_keys",
                                          "blobs",
                                          "artifact_collections",
                                          "artifact_versions",
                                          "artifact_files",
                                          "artifact_aliases",
                                          "artifact_uses",
                                          "blob_md5",
                                          "histograms",
                                          "media",
                                          "alert_rules",
                                          "alert_rule_defaults",
                                          "alerts",
                                          "alert_events",
                                          "alert_webhooks",
                                          "alert_deliveries",
                                          "alert_delivery_cursor",
                                          "ordered_streams"};
  ASSERT_EQ(DumpTables().size(), names.size());
  ASSERT_EQ(int(names.size()), kDumpTableCount);
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(DumpTables()[i].name, names[i]) << i;
  EXPECT_EQ(kDumpAlertRules, 19);
  EXPECT_EQ(kDumpAlertDeliveryCursor, 25);
  EXPECT_EQ(kDumpOrderedStreams, 26);
}

TEST(DumpFormatTest, WebhookRowWithItsSecretRoundTrips) {
  const DumpRecord hook{kDumpAlertWebhooks,
                        {int64_t{3}, std::string("e"), std::string("p"), std::string("ops"),
                         std::string("https://example.com/h"), std::string("generic"),
                         std::string("s3cret"), std::string("WARN"), int64_t{1}, int64_t{5}}};
  DumpRecord back;
  ASSERT_TRUE(DecodeDumpRow(EncodeDumpRow(hook), &back).ok());
  EXPECT_EQ(back.table, kDumpAlertWebhooks);
  EXPECT_EQ(back.values, hook.values);
}

// A dump written before runs.summary_explicit existed, and before a table existed (its end record
// does not name it), is read: its rows are upgraded (the upgrade came after a check that refused
// them as short) and its counts match (a table it never named was counted as a mismatch).
TEST(DumpFormatTest, AnOlderDumpFileIsReadWithItsRowsUpgradedAndItsCountsMatched) {
  const auto& columns = DumpTables()[kDumpRuns].columns;
  size_t added = columns.size();
  for (size_t i = 0; i < columns.size(); ++i) {
    if (std::string_view(columns[i].name) == "summary_explicit") added = i;
  }
  ASSERT_LT(added, columns.size());
  DumpRecord run{kDumpRuns, {}};
  for (const DumpColumn& c : columns) {
    if (c.nullable) {
      run.values.emplace_back(std::monostate{});
    } else if (c.type == DumpType::kInt) {
      run.values.emplace_back(int64_t{1});
    } else if (c.type == DumpType::kDouble) {
      run.values.emplace_back(1.0);
    } else {
      run.values.emplace_back(std::string("{}"));
    }
  }
  run.values.erase(run.values.begin() + long(added));  // as written before summary_explicit
  // The frames by hand: the writer checks rows against today's columns.
  std::string file(kDumpMagic, kDumpMagicSize);
  auto frame = [&](char kind, const std::string& body) {
    std::string payload(1, kind);
    payload += body;
    coding::PutFixed32(&file, uint32_t(payload.size()));
    coding::PutFixed32(&file, crc32c::Value(payload));
    file += payload;
  };
  frame('H', R"({"version":)" + std::to_string(kDumpFormatVersion) + R"(,"source":"sqlite"})");
  frame('R', EncodeDumpRow(run));
  frame('E', R"({"counts":{"runs":1}})");
  const std::string path = ::testing::TempDir() + "/dump_format_old_" + std::to_string(::getpid());
  {
    std::FILE* w = std::fopen(path.c_str(), "wb");
    ASSERT_EQ(std::fwrite(file.data(), 1, file.size(), w), file.size());
    std::fclose(w);
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  std::remove(path.c_str());
  DumpFileReader r(f);
  Status s;
  auto back = ReadAll(f, &r, &s);
  std::fclose(f);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(back.size(), 1u);
  ASSERT_EQ(back[0].values.size(), columns.size());
  EXPECT_EQ(std::get<std::string>(back[0].values[added]), "[]");
  EXPECT_TRUE(r.CountsMatchEnd());
}

// A media row of a dump written before media.cell_bytes reads with it 0, one written before
// media.artifact_ref too with that empty; a row of today's shape, and a row short by more, are
// left for ValidateDumpRecord.
TEST(DumpFormatTest, AnOlderMediaRowGetsTheColumnsAddedSince) {
  const size_t n = DumpTables()[kDumpMedia].columns.size();
  ASSERT_EQ(std::string(DumpTables()[kDumpMedia].columns[n - 2].name), "artifact_ref");
  ASSERT_EQ(std::string(DumpTables()[kDumpMedia].columns[n - 1].name), "cell_bytes");
  DumpRecord old{kDumpMedia, {}};
  for (size_t i = 0; i + 1 < n; ++i) old.values.emplace_back(std::to_string(i));
  UpgradeDumpRecord(&old);
  ASSERT_EQ(old.values.size(), n);
  EXPECT_EQ(std::get<std::string>(old.values[n - 2]), std::to_string(n - 2));
  EXPECT_EQ(std::get<int64_t>(old.values.back()), 0);
  DumpRecord older{kDumpMedia, {}};
  for (size_t i = 0; i + 2 < n; ++i) older.values.emplace_back(std::to_string(i));
  UpgradeDumpRecord(&older);
  ASSERT_EQ(older.values.size(), n);
  EXPECT_EQ(std::get<std::string>(older.values[n - 3]), std::to_string(n - 3));
  EXPECT_EQ(std::get<std::string>(older.values[n - 2]), "");
  EXPECT_EQ(std::get<int64_t>(older.values.back()), 0);
  DumpRecord today = old;
  UpgradeDumpRecord(&today);
  EXPECT_EQ(today.values, old.values);
  DumpRecord shorter{kDumpMedia, {int64_t{1}}};
  UpgradeDumpRecord(&shorter);
  EXPECT_EQ(shorter.values.size(), 1u);
  DumpRecord runs{kDumpRuns, {}};
  const size_t r = DumpTables()[kDumpRuns].columns.size();
  for (size_t i = 0; i + 1 < r; ++i) runs.values.emplace_back(int64_t(i));
  UpgradeDumpRecord(&runs);
  ASSERT_EQ(runs.values.size(), r);
}

}  // namespace
}  // namespace cohort::store
