// Conformance cases for what the W&B compatibility layer uses: stream positions guarding
// ingest, numbered console lines that replace each other, renaming writers, and run files.
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

StreamPosition Pos(const std::string& stream, int64_t expect, int64_t next) {
  return StreamPosition{stream, expect, next};
}

int64_t PointCount(Store& store, const RunRef& ref, const std::string& key) {
  auto hist = store.QueryHistory(HistoryQuery{.run = ref, .keys = {key}});
  if (!hist.ok()) return -1;
  int64_t n = 0;
  for (const SeriesData& s : *hist) n += int64_t(s.points.size());
  return n;
}

TEST_P(StoreConformanceTest, StreamPositionsMakeIngestExactlyOnce) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatch b = Rows(0, "loss", 5);
  b.positions = {Pos("c1/history", 0, 5), Pos("c1/events", 0, 0)};
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r, store().Ingest(Ref("run1"), "w", b, 1));
  EXPECT_FALSE(r.duplicate);
  EXPECT_EQ(r.next_step, 5);

  // The same batch again (a retry): the positions no longer match, nothing is stored.
  auto again = store().Ingest(Ref("run1"), "w", b, 2);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(PointCount(store(), Ref("run1"), "loss"), 5);

  IngestBatch next = Rows(0, "loss", 3, 100);
  next.positions = {Pos("c1/history", 5, 8)};
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", next, 3).status());
  EXPECT_EQ(PointCount(store(), Ref("run1"), "loss"), 8);

  COHORT_ASSERT_OK_AND_ASSIGN(auto positions, store().ListStreamPositions(Ref("run1")));
  ASSERT_EQ(positions.size(), 1u);
  EXPECT_EQ(positions["w"]["c1/history"], 8);
  EXPECT_EQ(positions["w"]["c1/events"], 0);

  // A batch without seq needs positions; a stream may not be named twice.
  IngestBatch bare = Rows(0, "loss", 1);
  EXPECT_EQ(store().Ingest(Ref("run1"), "w", bare, 4).status().code(),
            StatusCode::kInvalidArgument);
  IngestBatch twice = Rows(0, "loss", 1);
  twice.positions = {Pos("s", 0, 1), Pos("s", 1, 2)};
  EXPECT_EQ(store().Ingest(Ref("run1"), "w", twice, 5).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PointCount(store(), Ref("run1"), "loss"), 8);

  // Positions survive a restart.
  Reopen();
  COHORT_ASSERT_OK_AND_ASSIGN(auto reopened, store().ListStreamPositions(Ref("run1")));
  EXPECT_EQ(reopened["w"]["c1/history"], 8);
}

TEST_P(StoreConformanceTest, StreamPositionsArePerWriter) {
  MakeRun("run1");
  Join("run1", "a");
  Join("run1", "b", false, false);
  IngestBatch b = Rows(0, "loss", 2);
  b.positions = {Pos("history", 0, 2)};
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "a", b, 1).status());
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "b", b, 1).status());  // b's stream is its own
  COHORT_ASSERT_OK_AND_ASSIGN(auto positions, store().ListStreamPositions(Ref("run1")));
  EXPECT_EQ(positions["a"]["history"], 2);
  EXPECT_EQ(positions["b"]["history"], 2);
  EXPECT_EQ(PointCount(store(), Ref("run1"), "loss"), 4);
}

TEST_P(StoreConformanceTest, NumberedConsoleLinesReplaceInPlace) {
  MakeRun("run1");
  Join("run1", "a");
  Join("run1", "b", false, false);
  IngestBatch b;
  b.seq = 1;
  b.console = {ConsoleLine{.time_ms = 1, .text = "first", .line = 0},
               ConsoleLine{.time_ms = 2, .text = "progress 10%", .line = 1},
               ConsoleLine{.time_ms = 3, .text = "appended"}};
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "a", b, 1).status());
  IngestBatch other;
  other.seq = 1;
  other.console = {ConsoleLine{.time_ms = 4, .text = "b's line 1", .line = 1}};
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "b", other, 1).status());
  IngestBatch update;
  update.seq = 2;
  update.console = {
      ConsoleLine{.time_ms = 5, .stream = "stderr", .text = "progress 100%", .line = 1}};
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "a", update, 2).status());

  COHORT_ASSERT_OK_AND_ASSIGN(auto lines,
                              store().QueryConsole(ConsoleQuery{.run = Ref("run1")}));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].text, "first");
  EXPECT_EQ(lines[1].text, "progress 100%");  // replaced where it was
  EXPECT_EQ(lines[1].stream, "stderr");
  EXPECT_EQ(lines[1].time_ms, 5);
  EXPECT_EQ(lines[1].label, "a");
  EXPECT_EQ(lines[2].text, "appended");
  EXPECT_EQ(lines[3].text, "b's line 1");  // another writer's line 1 is its own
  EXPECT_EQ(lines[3].label, "b");
}

TEST_P(StoreConformanceTest, RenameWriterKeepsItsData) {
  MakeRun("run1");
  Join("run1", "client-1", false, false);
  Join("run1", "rank_0");
  IngestBatchBuilder bb = RowsBuilder(0, "loss", 3);
  bb.AddSystemRow(10, {{"cpu", 5}});
  IngestBatch b = bb.Finish();
  b.positions = {Pos("c/history", 0, 3)};
  b.console = {ConsoleLine{.time_ms = 1, .text = "hello", .line = 0}};
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "client-1", b, 1).status());

  COHORT_ASSERT_OK_AND_ASSIGN(WriterRecord w,
                              store().RenameWriter(Ref("run1"), "client-1", "rank_1"));
  EXPECT_EQ(w.label, "rank_1");
  EXPECT_EQ(w.next_step, 3);
  EXPECT_FALSE(w.primary);

  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  for (const SeriesInfo& s : series) EXPECT_EQ(s.writer, "rank_1") << s.key;
  EXPECT_EQ(series.size(), 2u);
  COHORT_ASSERT_OK_AND_ASSIGN(auto lines,
                              store().QueryConsole(ConsoleQuery{.run = Ref("run1")}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].label, "rank_1");
  COHORT_ASSERT_OK_AND_ASSIGN(auto positions, store().ListStreamPositions(Ref("run1")));
  EXPECT_EQ(positions["rank_1"]["c/history"], 3);
  EXPECT_FALSE(positions.count("client-1"));

  EXPECT_EQ(store().RenameWriter(Ref("run1"), "rank_1", "rank_0").status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(store().RenameWriter(Ref("run1"), "nobody", "x").status().code(),
            StatusCode::kNotFound);
  COHORT_ASSERT_OK_AND_ASSIGN(auto writers, store().ListWriters(Ref("run1")));
  EXPECT_EQ(writers.size(), 2u);
}

// A writer renamed away from a label: batches for the old label are refused as for any label
// the run lacks, even where the store had the writer cached under it (PostgreSQL's ingest
// cache; batches without stream positions take its one-round-trip path).
TEST_P(StoreConformanceTest, BatchesForARenamedWritersOldLabelAreRefused) {
  MakeRun("run1");
  Join("run1", "client-1", false, false);
  for (int64_t seq = 1; seq <= 3; ++seq) {  // the writer cached, then stored through the cache
    COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "client-1", Rows(seq, "loss", 2), 1).status());
  }
  COHORT_ASSERT_OK(store().RenameWriter(Ref("run1"), "client-1", "rank_1").status());
  EXPECT_EQ(store().Ingest(Ref("run1"), "client-1", Rows(4, "loss", 2), 1).status().code(),
            StatusCode::kNotFound);
  COHORT_ASSERT_OK_AND_ASSIGN(auto hist, store().QueryHistory(HistoryQuery{.run = Ref("run1")}));
  ASSERT_EQ(hist.size(), 1u);
  EXPECT_EQ(hist[0].points.size(), 6u);
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_1", Rows(4, "loss", 2), 1).status());
}

TEST_P(StoreConformanceTest, RunFilesRoundTrip) {
  MakeRun("run1");
  COHORT_ASSERT_OK_AND_ASSIGN(
      RunFile put, store().PutRunFile(Ref("run1"), RunFile{.name = "config.yaml",
                                                           .content_type = "text/yaml",
                                                           .updated_ms = 100,
                                                           .data = "lr: 0.1\n"}));
  EXPECT_EQ(put.size, 8);
  EXPECT_TRUE(put.data.empty());
  std::string binary("\0\x01\xff", 3);
  COHORT_ASSERT_OK(store()
                       .PutRunFile(Ref("run1"), RunFile{.name = "media/a b.bin", .data = binary})
                       .status());
  COHORT_ASSERT_OK(store()
                       .PutRunFile(Ref("run1"), RunFile{.name = "config.yaml",
                                                        .updated_ms = 200,
                                                        .data = "lr: 0.2\n"})
                       .status());

  COHORT_ASSERT_OK_AND_ASSIGN(auto files, store().ListRunFiles(Ref("run1")));
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].name, "config.yaml");
  EXPECT_EQ(files[0].updated_ms, 200);
  EXPECT_TRUE(files[0].data.empty());
  EXPECT_EQ(files[1].name, "media/a b.bin");
  EXPECT_EQ(files[1].size, 3);

  COHORT_ASSERT_OK_AND_ASSIGN(RunFile got, store().GetRunFile(Ref("run1"), "media/a b.bin"));
  EXPECT_EQ(got.data, binary);
  COHORT_ASSERT_OK_AND_ASSIGN(RunFile cfg, store().GetRunFile(Ref("run1"), "config.yaml"));
  EXPECT_EQ(cfg.data, "lr: 0.2\n");
  EXPECT_EQ(store().GetRunFile(Ref("run1"), "missing").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store().PutRunFile(Ref("nope"), RunFile{.name = "x"}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store().PutRunFile(Ref("run1"), RunFile{.name = ""}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, DeleteRunRemovesPositionsAndFiles) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatch b = Rows(0, "loss", 2);
  b.positions = {Pos("history", 0, 2)};
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", b, 1).status());
  COHORT_ASSERT_OK(store().PutRunFile(Ref("run1"), RunFile{.name = "f", .data = "x"}).status());
  COHORT_ASSERT_OK(store().DeleteRun(Ref("run1")));

  MakeRun("run1");
  Join("run1", "w");
  COHORT_ASSERT_OK_AND_ASSIGN(auto positions, store().ListStreamPositions(Ref("run1")));
  EXPECT_TRUE(positions.empty());
  COHORT_ASSERT_OK_AND_ASSIGN(auto files, store().ListRunFiles(Ref("run1")));
  EXPECT_TRUE(files.empty());
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", b, 2).status());  // starts from 0 again
}

}  // namespace
}  // namespace cohort::store
