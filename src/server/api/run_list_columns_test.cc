#include "server/api/run_list_columns.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/coding.h"
#include "core/crc32c.h"
#include "core/history_columns.h"

namespace cohort::api {
namespace {

namespace bj = json::bj;

uint32_t U32(const std::string& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
uint64_t U64(const std::string& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

bj::object RunObject(const std::string& id, bj::value config, bj::value summary) {
  return bj::object{{"id", id},          {"name", "n-" + id}, {"group", ""},
                    {"job_type", ""},    {"state", "running"}, {"exit_code", nullptr},
                    {"host", "h"},       {"tags", bj::array{"a"}}, {"created_ms", 5},
                    {"updated_ms", 6},   {"runtime_ms", 1},   {"writer_count", 1},
                    {"config", std::move(config)}, {"summary", std::move(summary)}};
}

TEST(RunListColumnsTest, HeaderTypesPresenceAndValues) {
  bj::array runs{RunObject("a", bj::object{{"lr", 0.5}, {"opt", bj::object{{"name", "adam"}}}},
                     bj::object{{"acc", 1}}),
                 RunObject("b", bj::object{{"lr", 2}}, bj::object{{"acc", "NaN"}})};
  const std::string body = EncodeRunListColumns(runs, 7, "next");
  ASSERT_EQ(body.substr(0, 4), history_columns::kMagic);
  EXPECT_EQ(U32(body, 4), history_columns::kVersion);
  EXPECT_EQ(U32(body, 12), crc32c::Value(body.data() + 16, body.size() - 16));
  const uint32_t h = U32(body, 8);
  auto header = json::Parse(body.substr(16, h));
  ASSERT_TRUE(header.ok());
  const bj::object& o = header->as_object();
  EXPECT_EQ(o.at("total").as_int64(), 7);
  EXPECT_EQ(o.at("next_cursor").as_string(), "next");
  EXPECT_EQ(o.at("table").at("rows").as_int64(), 2);
  std::vector<std::pair<std::string, std::string>> columns;
  for (const bj::value& c : o.at("table").at("columns").as_array()) {
    columns.emplace_back(std::string(c.at("name").as_string()),
                         std::string(c.at("type").as_string()));
  }
  ASSERT_EQ(columns.size(), 15u);
  EXPECT_EQ(columns[0], (std::pair<std::string, std::string>{"id", "text"}));
  EXPECT_EQ(columns[5], (std::pair<std::string, std::string>{"exit_code", "i64"}));
  EXPECT_EQ(columns[7], (std::pair<std::string, std::string>{"tags", "json"}));
  // Flattened, in name order, typed by their values: lr mixes 0.5 and 2 (f64), the string
  // "NaN" beside a number is json, a field one run lacks is text with a missing row.
  EXPECT_EQ(columns[12], (std::pair<std::string, std::string>{"config.lr", "f64"}));
  EXPECT_EQ(columns[13], (std::pair<std::string, std::string>{"config.opt.name", "text"}));
  EXPECT_EQ(columns[14], (std::pair<std::string, std::string>{"summary.acc", "json"}));

  // Walk the columns up to config.lr and read its values.
  size_t at = 16 + (h + 7) / 8 * 8;
  auto pad = [](size_t n) { return (n + 7) / 8 * 8; };
  for (size_t c = 0; c < 12; ++c) {
    if (c == 5) {  // exit_code: null in both runs, so missing
      EXPECT_EQ(body.substr(at, 2), std::string("\0\0", 2));
    }
    at += pad(2);  // presence
    const std::string& type = columns[c].second;
    if (type == "i64") {
      at += 16;
    } else {  // text, json: offsets, then bytes
      const uint32_t size = U32(body, at + 8);
      at += pad(12) + pad(size);
    }
  }
  EXPECT_EQ(body.substr(at, 2), std::string("\1\1", 2));
  at += 8;
  EXPECT_EQ(U64(body, at), coding::DoubleBits(0.5));
  EXPECT_EQ(U64(body, at + 8), coding::DoubleBits(2.0));
  at += 16;
  EXPECT_EQ(body.substr(at, 2), std::string("\1\0", 2));  // config.opt.name: only run a
}

TEST(RunListColumnsTest, AnEmptyPageHasItsColumnsAndNoRows) {
  const std::string body = EncodeRunListColumns(bj::array{}, 0, "");
  const uint32_t h = U32(body, 8);
  auto header = json::Parse(body.substr(16, h));
  ASSERT_TRUE(header.ok());
  EXPECT_TRUE(header->at("next_cursor").is_null());
  EXPECT_EQ(header->at("table").at("columns").as_array().size(), 12u);
}

}  // namespace
}  // namespace cohort::api
