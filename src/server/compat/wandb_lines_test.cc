#include "server/compat/wandb_lines.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace cohort::compat {
namespace {

double ValueOf(const std::vector<std::pair<std::string, double>>& values, const std::string& k) {
  for (const auto& [key, v] : values) {
    if (key == k) return v;
  }
  ADD_FAILURE() << "no key " << k;
  return 0;
}

bool Has(const std::vector<std::pair<std::string, double>>& values, const std::string& k) {
  for (const auto& kv : values) {
    if (kv.first == k) return true;
  }
  return false;
}

TEST(WandbLines, QuoteNonFiniteOnlyOutsideStrings) {
  EXPECT_EQ(QuoteNonFinite(R"({"a":1})"), R"({"a":1})");
  EXPECT_EQ(QuoteNonFinite(R"({"x":NaN,"y":Infinity,"z":-Infinity,"s":"NaN \"Infinity\""})"),
            R"({"x":"NaN","y":"Infinity","z":"-Infinity","s":"NaN \"Infinity\""})");
  EXPECT_EQ(QuoteNonFinite(R"([NaN,-Infinity])"), R"(["NaN","-Infinity"])");
}

TEST(WandbLines, HistoryLineToRow) {
  auto line = ParseLine(
      R"({"loss":0.5,"acc":1,"b":true,"x":NaN,"y":-Infinity,"s":"text","nested":{"a":{"b":2}},)"
      R"("h":{"_type":"histogram","values":[1]},"list":[1,2],"_step":7,"_runtime":1.5,)"
      R"("_timestamp":1700000000.25,"_wandb":{"runtime":1}})");
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  int64_t skipped = 0;
  MetricRow row = HistoryRowFromLine(*line, 42, KeyLimits{}, &skipped);
  EXPECT_EQ(row.step, 7);
  EXPECT_EQ(row.time_ms, 1700000000250);
  EXPECT_EQ(ValueOf(row.values, "loss"), 0.5);
  EXPECT_EQ(ValueOf(row.values, "acc"), 1.0);
  EXPECT_EQ(ValueOf(row.values, "b"), 1.0);
  EXPECT_TRUE(std::isnan(ValueOf(row.values, "x")));
  EXPECT_EQ(ValueOf(row.values, "y"), -INFINITY);
  EXPECT_EQ(ValueOf(row.values, "nested.a.b"), 2.0);
  EXPECT_FALSE(Has(row.values, "s"));
  EXPECT_FALSE(Has(row.values, "h"));
  EXPECT_FALSE(Has(row.values, "list"));
  EXPECT_FALSE(Has(row.values, "_runtime"));
  EXPECT_FALSE(Has(row.values, "_step"));
  EXPECT_EQ(skipped, 3);  // s, h, list
}

TEST(WandbLines, HistogramValuesBecomeHistograms) {
  auto line = ParseLine(
      R"({"h":{"_type":"histogram","values":[1,2],"bins":[0,0.5,1]},)"
      R"("p":{"_type":"histogram","values":[3,4,5],"packedBins":{"min":-1,"size":0.5,"count":3}},)"
      R"("same":{"_type":"histogram","values":[10],"bins":[2,2]},)"
      R"("nested":{"g":{"_type":"histogram","values":[1],"bins":[0,1]}},)"
      R"("bad":{"_type":"histogram","values":[1,NaN],"bins":[0,1,2]},)"
      R"("img":{"_type":"image-file","path":"x.png"},"_step":3})");
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  int64_t skipped = 0;
  MetricRow row = HistoryRowFromLine(*line, 42, KeyLimits{}, &skipped);
  EXPECT_EQ(skipped, 2);  // bad, img
  ASSERT_EQ(row.histograms.size(), 4u);
  std::map<std::string, Histogram> by_key(row.histograms.begin(), row.histograms.end());
  EXPECT_EQ(by_key["h"].edges, (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(by_key["h"].counts, (std::vector<double>{1, 2}));
  EXPECT_TRUE(by_key["p"].uniform());
  EXPECT_EQ(by_key["p"].lo, -1);
  EXPECT_EQ(by_key["p"].hi, 0.5);
  EXPECT_EQ(by_key["same"].lo, 1.5);
  EXPECT_EQ(by_key["same"].hi, 2.5);
  EXPECT_EQ(by_key["nested.g"].counts, (std::vector<double>{1}));
  EXPECT_TRUE(row.values.empty());
}

TEST(WandbLines, MediaFileValuesBecomeMediaRows) {
  const std::string sha(64, 'e');
  auto line = ParseLine(
      R"({"img":{"_type":"image-file","path":"media/images/img_3_ab.png","sha256":")" + sha +
      R"(","size":120,"width":6,"height":4,"format":"png","caption":"cat"},)"
      R"("tab":{"_type":"table-file","path":"media/table/tab_3_cd.table.json","sha256":")" +
      sha + R"(","size":99,"ncols":2,"nrows":7},)"
      R"("clip":{"_type":"audio-file","path":"media/audio/clip_3.wav","sha256":")" + sha +
      R"(","size":1644},)"
      R"("set":{"_type":"images/separated","count":2,"filenames":["media/images/s_3_0.png",)"
      R"("media/images/s_3_1.jpg"],"width":8,"height":5,"captions":["one","two"]},)"
      R"("out":{"_type":"images/separated","count":1,"filenames":["../a.png"]},)"
      R"("bad":{"_type":"image-file","path":"x.png","sha256":"XYZ","size":1},"_step":3})");
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  int64_t skipped = 0;
  MetricRow row = HistoryRowFromLine(*line, 42, KeyLimits{}, &skipped);
  EXPECT_EQ(skipped, 2);  // the list with a path outside media/images/, the bad digest
  ASSERT_EQ(row.media.size(), 5u);
  std::map<std::string, store::MediaPoint> by_key;
  std::vector<store::MediaPoint> set;
  for (const auto& m : row.media) {
    by_key[m.key] = m;
    if (m.key == "set") set.push_back(m);
  }
  // A list of images: one row per image, named by path until its upload gives its blob.
  ASSERT_EQ(set.size(), 2u);
  EXPECT_EQ(set[0].index, 0);
  EXPECT_EQ(set[1].index, 1);
  EXPECT_EQ(set[0].path, "media/images/s_3_0.png");
  EXPECT_EQ(set[0].sha256, "");
  EXPECT_EQ(set[0].size, 0);
  EXPECT_EQ(set[0].mime, "image/png");
  EXPECT_EQ(set[1].mime, "image/jpeg");
  EXPECT_EQ(set[1].caption, "two");
  EXPECT_EQ(set[1].width, 8);
  EXPECT_EQ(set[1].height, 5);
  EXPECT_EQ(by_key["img"].path, "");
  EXPECT_EQ(by_key["img"].type, "image");
  EXPECT_EQ(by_key["img"].mime, "image/png");
  EXPECT_EQ(by_key["img"].sha256, sha);
  EXPECT_EQ(by_key["img"].size, 120);
  EXPECT_EQ(by_key["img"].width, 6);
  EXPECT_EQ(by_key["img"].height, 4);
  EXPECT_EQ(by_key["img"].caption, "cat");
  EXPECT_EQ(by_key["tab"].type, "table");
  EXPECT_EQ(by_key["tab"].mime, "application/json");
  EXPECT_EQ(by_key["tab"].width, 2);
  EXPECT_EQ(by_key["tab"].height, 7);
  EXPECT_EQ(by_key["clip"].mime, "audio/wav");
}

// A key with '/' puts its files in subfolders of the media folder (the vendor's _wb_filename).
TEST(WandbLines, ListsOfImagesUnderKeysWithSlashes) {
  auto line = ParseLine(
      R"({"val/list":{"_type":"images/separated","count":2,"filenames":)"
      R"(["media/images/val/list_3_0.png","media/images/val/list_3_1.png"]},)"
      R"("a":{"_type":"images/separated","count":1,"filenames":["media/images/x/../../a.png"]},)"
      R"("b":{"_type":"images/separated","count":1,"filenames":["media/images/x//a.png"]},)"
      R"("c":{"_type":"images/separated","count":1,"filenames":["media/images/x/\ta.png"]},)"
      R"("d":{"_type":"images/separated","count":1,"filenames":["media/images/"]},"_step":3})");
  ASSERT_TRUE(line.ok()) << line.status().ToString();
  int64_t skipped = 0;
  MetricRow row = HistoryRowFromLine(*line, 42, KeyLimits{}, &skipped);
  EXPECT_EQ(skipped, 4);  // "..", an empty segment, a control character, no file name
  ASSERT_EQ(row.media.size(), 2u);
  EXPECT_EQ(row.media[0].key, "val/list");
  EXPECT_EQ(row.media[0].path, "media/images/val/list_3_0.png");
  EXPECT_EQ(row.media[1].path, "media/images/val/list_3_1.png");
  EXPECT_EQ(row.media[1].index, 1);
}

TEST(WandbLines, HistoryLineWithoutStepOrTime) {
  auto line = ParseLine(R"({"loss":1,"system/cpu":3,"_timestamp":"soon"})");
  ASSERT_TRUE(line.ok());
  int64_t skipped = 0;
  MetricRow row = HistoryRowFromLine(*line, 42, KeyLimits{}, &skipped);
  EXPECT_EQ(row.step, -1);  // the server assigns it
  EXPECT_EQ(row.time_ms, 42);
  ASSERT_EQ(row.values.size(), 1u);  // "system/" is reserved for system metrics
  EXPECT_EQ(skipped, 1);
}

TEST(WandbLines, EventsLineToSystemRow) {
  auto line = ParseLine(
      R"({"system.gpu.0.temp/l:rank_1":61,"system.cpu/l:rank_1":12.5,"system.disk./.usageGB/l:rank_1":3,)"
      R"("_wandb":true,"_timestamp":1700000001.5,"_runtime":2})");
  ASSERT_TRUE(line.ok());
  SystemLine s = SystemRowFromLine(*line, 0, KeyLimits{});
  EXPECT_EQ(s.label, "rank_1");
  EXPECT_EQ(s.row.time_ms, 1700000001500);
  EXPECT_EQ(ValueOf(s.row.values, "gpu.0.temp"), 61);
  EXPECT_EQ(ValueOf(s.row.values, "cpu"), 12.5);
  EXPECT_EQ(ValueOf(s.row.values, "disk./.usageGB"), 3);
  EXPECT_EQ(s.row.values.size(), 3u);

  auto plain = ParseLine(R"({"system.memory_percent":14.2,"_wandb":true})");
  SystemLine p = SystemRowFromLine(*plain, 5, KeyLimits{});
  EXPECT_EQ(p.label, "");
  EXPECT_EQ(ValueOf(p.row.values, "memory_percent"), 14.2);
  EXPECT_EQ(p.row.time_ms, 5);
}

TEST(WandbLines, ConsoleLines) {
  ConsoleEntry out = ConsoleFromLine("2024-05-01T12:00:00.250000 hello world", false, 0);
  EXPECT_EQ(out.line.text, "hello world");
  EXPECT_EQ(out.line.stream, "stdout");
  EXPECT_EQ(out.line.time_ms, 1714564800250);

  ConsoleEntry err = ConsoleFromLine("ERROR 2024-05-01T12:00:00.000000 oops", false, 0);
  EXPECT_EQ(err.line.stream, "stderr");
  EXPECT_EQ(err.line.text, "oops");

  ConsoleEntry labelled = ConsoleFromLine("2024-05-01T12:00:00 [rank_1] step 3", true, 0);
  EXPECT_EQ(labelled.label, "rank_1");
  EXPECT_EQ(labelled.line.text, "step 3");
  // Outside shared mode a bracket is the user's text.
  ConsoleEntry plain = ConsoleFromLine("2024-05-01T12:00:00 [INFO] ready", false, 0);
  EXPECT_EQ(plain.label, "");
  EXPECT_EQ(plain.line.text, "[INFO] ready");

  ConsoleEntry structured = ConsoleFromLine(
      R"({"level":"error","ts":"2024-05-01T12:00:01.5","label":"rank_7","content":"bad {json}"})",
      true, 0);
  EXPECT_EQ(structured.line.stream, "stderr");
  EXPECT_EQ(structured.label, "rank_7");
  EXPECT_EQ(structured.line.text, "bad {json}");
  EXPECT_EQ(structured.line.time_ms, 1714564801500);

  EXPECT_EQ(ConsoleFromLine("2024-05-01T12:00:00 kept newline\r\n", false, 0).line.text,
            "kept newline");
  ConsoleEntry no_stamp = ConsoleFromLine("just text", false, 99);
  EXPECT_EQ(no_stamp.line.text, "just text");
  EXPECT_EQ(no_stamp.line.time_ms, 99);
  EXPECT_EQ(ConsoleFromLine("", true, 1).line.text, "");
  EXPECT_EQ(ConsoleFromLine("{\"not\": \"structured\"}", true, 1).line.text,
            "{\"not\": \"structured\"}");
}

TEST(WandbLines, IsoTimestamps) {
  EXPECT_EQ(ParseIsoMillis("1970-01-01T00:00:00"), 0);
  EXPECT_EQ(ParseIsoMillis("1970-01-01T00:00:01.5Z"), 1500);
  EXPECT_EQ(ParseIsoMillis("1970-01-01T01:00:00+01:00"), 0);
  EXPECT_EQ(ParseIsoMillis("2000-02-29T00:00:00"), 951782400000);
  EXPECT_FALSE(ParseIsoMillis("2000-13-01T00:00:00"));
  EXPECT_FALSE(ParseIsoMillis("hello"));
  EXPECT_FALSE(ParseIsoMillis("2000-01-01T00:00:00junk"));
}

TEST(WandbLines, ConfigForms) {
  auto py = ParseLine(
      R"({"lr":{"value":0.1,"desc":null},"opt":{"value":{"name":"adam"}},"_wandb":{"value":{"t":{"1":2}}}})");
  SplitConfig split = SplitWandbConfig(*py);
  EXPECT_EQ(bj::serialize(split.user), R"({"lr":1E-1,"opt":{"name":"adam"}})");
  EXPECT_EQ(bj::serialize(split.telemetry), R"({"t":{"1":2}})");

  auto js = ParseLine(R"({"lr":0.01,"layers":{"value":3}})");
  SplitConfig plain = SplitWandbConfig(*js);
  EXPECT_EQ(bj::serialize(plain.user), R"({"lr":1E-2,"layers":{"value":3}})");
  EXPECT_TRUE(plain.telemetry.is_null());

  EXPECT_EQ(bj::serialize(ToWandbConfig(bj::object{{"lr", 1}})), R"({"lr":{"value":1}})");
}

TEST(WandbLines, SummaryAndLabels) {
  auto s = ParseLine(R"({"loss":1,"_step":4,"_wandb":{"runtime":1},"_runtime":1,"_timestamp":2})");
  EXPECT_EQ(bj::serialize(CleanSummary(*s)), R"({"loss":1})");
  // Nested objects as history flattens them (the summary of "d.y.z" is that series'); media
  // values stay whole.
  auto nested = ParseLine(
      R"({"d":{"x":1,"y":{"z":2}},"img":{"_type":"image-file","path":"p"},"e":{},"_step":1})");
  ASSERT_TRUE(nested.ok());
  EXPECT_EQ(bj::serialize(CleanSummary(*nested)),
            R"({"d.x":1,"d.y.z":2,"img":{"_type":"image-file","path":"p"},"e":{}})");
  EXPECT_TRUE(IsValidLabel("rank_0"));
  EXPECT_FALSE(IsValidLabel(""));
  EXPECT_FALSE(IsValidLabel("a/b"));
  EXPECT_FALSE(IsValidLabel(std::string(129, 'x')));
}

}  // namespace
}  // namespace cohort::compat
