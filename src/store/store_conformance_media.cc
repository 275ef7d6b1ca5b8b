// Conformance cases: media values (issue 15) — stored with the batch's scalars per writer, a
// place (key, step, index) logged again keeps the last, one type per key and run (media types,
// scalars and histograms; across writers; nothing of a refused batch written), the media limits,
// the reads (keys, rows by key/writer/step, one row by blob), the blobs a media row keeps from
// garbage collection, and the store dump round trip of the media table.
#include <algorithm>

#include "core/sha256.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

MediaPoint Media(const std::string& key, int64_t step, int64_t index, const std::string& type,
                 const std::string& content, const std::string& caption = "") {
  MediaPoint m;
  m.key = key;
  m.step = step;
  m.time_ms = 100 + step;
  m.index = index;
  m.type = type;
  m.sha256 = Sha256::Hex(content);
  m.size = int64_t(content.size());
  m.mime = type == "image" ? "image/png" : type == "table" ? "application/json" : "audio/wav";
  m.width = type == "image" ? 4 : 2;
  m.height = 3;
  m.duration_ms = type == "audio" ? 1500 : 0;
  m.caption = caption;
  return m;
}

}  // namespace

TEST_P(StoreConformanceTest, MediaRowsAreStoredPerWriterWithTheirBatch) {
  MakeRun("run1");
  Join("run1", "rank_0");
  Join("run1", "rank_1", /*primary=*/false);
  IngestBatchBuilder b0(1);
  b0.AddHistoryRow(0, 10, {{"loss", 0.5}});
  b0.AddMedia(Media("samples", 0, 0, "image", "a", "first"));
  b0.AddMedia(Media("samples", 0, 1, "image", "b"));
  b0.AddMedia(Media("preds", 0, 0, "table", "{\"columns\":[]}"));
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r, store().Ingest(Ref("run1"), "rank_0", b0.Finish(), 1));
  EXPECT_EQ(r.next_step, 1);
  // A media row at a later step moves the writer's step on, as histograms do.
  IngestBatchBuilder b1(1);
  b1.AddMedia(Media("samples", 5, 0, "image", "c", "rank 1"));
  COHORT_ASSERT_OK_AND_ASSIGN(r, store().Ingest(Ref("run1"), "rank_1", b1.Finish(), 2));
  EXPECT_EQ(r.next_step, 6);
  // The same seq again changes nothing.
  IngestBatchBuilder again(1);
  again.AddMedia(Media("samples", 5, 0, "image", "zzz"));
  COHORT_ASSERT_OK_AND_ASSIGN(r, store().Ingest(Ref("run1"), "rank_1", again.Finish(), 3));
  EXPECT_TRUE(r.duplicate);

  COHORT_ASSERT_OK_AND_ASSIGN(auto keys, store().ListMedia(Ref("run1")));
  ASSERT_EQ(keys.size(), 3u);
  EXPECT_EQ(keys[0].key, "preds");
  EXPECT_EQ(keys[0].type, "table");
  EXPECT_EQ(keys[1].key, "samples");
  EXPECT_EQ(keys[1].writer, "rank_0");
  EXPECT_EQ(keys[1].count, 2);
  EXPECT_EQ(keys[2].writer, "rank_1");
  EXPECT_EQ(keys[2].min_step, 5);
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), 1u);  // media are not scalar series
  EXPECT_EQ(series[0].key, "loss");

  COHORT_ASSERT_OK_AND_ASSIGN(auto rows,
                              store().QueryMedia(MediaQuery{.run = Ref("run1"), .keys = {"samples"}}));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].writer, "rank_0");
  EXPECT_EQ(rows[0].index, 0);
  EXPECT_EQ(rows[0].caption, "first");
  EXPECT_EQ(rows[0].sha256, Sha256::Hex("a"));
  EXPECT_EQ(rows[0].mime, "image/png");
  EXPECT_EQ(rows[0].width, 4);
  EXPECT_EQ(rows[0].height, 3);
  EXPECT_EQ(rows[0].time_ms, 100);
  EXPECT_EQ(rows[1].index, 1);
  EXPECT_EQ(rows[2].writer, "rank_1");
  EXPECT_EQ(rows[2].sha256, Sha256::Hex("c"));  // not the duplicate's
  COHORT_ASSERT_OK_AND_ASSIGN(
      rows, store().QueryMedia(MediaQuery{.run = Ref("run1"), .writers = {"rank_1"}}));
  ASSERT_EQ(rows.size(), 1u);
  COHORT_ASSERT_OK_AND_ASSIGN(
      rows, store().QueryMedia(MediaQuery{.run = Ref("run1"), .min_step = 1, .max_step = 4}));
  EXPECT_TRUE(rows.empty());

  COHORT_ASSERT_OK_AND_ASSIGN(MediaRecord found, store().FindMedia(Ref("run1"), Sha256::Hex("b")));
  EXPECT_EQ(found.key, "samples");
  EXPECT_EQ(found.index, 1);
  EXPECT_EQ(store().FindMedia(Ref("run1"), Sha256::Hex("nope")).status().code(),
            StatusCode::kNotFound);

  // A place logged again keeps the last.
  IngestBatchBuilder b2(2);
  b2.AddMedia(Media("samples", 0, 1, "image", "b2", "replaced"));
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", b2.Finish(), 4).status());
  COHORT_ASSERT_OK_AND_ASSIGN(
      rows, store().QueryMedia(MediaQuery{.run = Ref("run1"), .keys = {"samples"},
                                          .writers = {"rank_0"}}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].caption, "replaced");
  EXPECT_EQ(rows[1].sha256, Sha256::Hex("b2"));
}

TEST_P(StoreConformanceTest, MediaKeysHaveOneTypePerRun) {
  MakeRun("run1");
  Join("run1", "a");
  Join("run1", "b", /*primary=*/false);
  IngestBatchBuilder first(1);
  first.AddHistoryRow(0, 1, {{"loss", 1}});
  first.AddMedia(Media("img", 0, 0, "image", "x"));
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "a", first.Finish(), 1).status());

  // Another writer logs "img" as audio: refused whole, naming the key and both types.
  IngestBatchBuilder audio(1);
  audio.AddHistoryRow(0, 1, {{"acc", 1}});
  audio.AddMedia(Media("img", 0, 0, "audio", "y"));
  Status s = store().Ingest(Ref("run1"), "b", audio.Finish(), 2).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("key 'img' is an image"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("as audio"), std::string::npos) << s.ToString();
  // ... as a scalar, and a scalar key as media, and a histogram key.
  IngestBatchBuilder scalar(2);
  scalar.AddHistoryRow(0, 1, {{"img", 1}});
  s = store().Ingest(Ref("run1"), "b", scalar.Finish(), 2).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("key 'img' is an image"), std::string::npos) << s.ToString();
  IngestBatchBuilder on_scalar(3);
  on_scalar.AddMedia(Media("loss", 0, 0, "table", "t"));
  s = store().Ingest(Ref("run1"), "b", on_scalar.Finish(), 2).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("key 'loss' is a scalar"), std::string::npos) << s.ToString();
  IngestBatchBuilder hist(4);
  Histogram h;
  h.lo = 0;
  h.hi = 1;
  h.counts = {1};
  hist.AddHistogram({"img", 0, 1, h});
  s = store().Ingest(Ref("run1"), "b", hist.Finish(), 2).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("key 'img' is an image"), std::string::npos) << s.ToString();
  // Within one batch.
  IngestBatchBuilder mixed(5);
  mixed.AddMedia(Media("new", 0, 0, "image", "p"));
  mixed.AddMedia(Media("new", 0, 1, "video", "q"));
  s = store().Ingest(Ref("run1"), "b", mixed.Finish(), 2).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'new'"), std::string::npos) << s.ToString();

  // Nothing of the refused batches was written.
  COHORT_ASSERT_OK_AND_ASSIGN(auto rows, store().QueryMedia(MediaQuery{.run = Ref("run1")}));
  ASSERT_EQ(rows.size(), 1u);
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  ASSERT_EQ(series.size(), 1u);
  // A bad row (digest) is refused naming its place and key.
  IngestBatchBuilder bad(6);
  MediaPoint m = Media("other", 0, 0, "image", "r");
  m.sha256 = "xyz";
  bad.AddMedia(m);
  s = store().Ingest(Ref("run1"), "b", bad.Finish(), 2).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("media[0] (key 'other'): sha256"), std::string::npos)
      << s.ToString();
}

// The type check answers keys a committed batch stored from the run cache (no query) and looks
// up the others: both give the same errors, before the store is reopened (cache warm) and after
// (cache empty: every key looked up).
TEST_P(StoreConformanceTest, KeyTypesHoldWhetherKnownToTheRunCacheOrLookedUp) {
  MakeRun("run1");
  Join("run1", "a");
  Join("run1", "b", /*primary=*/false);
  Histogram h;
  h.lo = 0;
  h.hi = 1;
  h.counts = {1};
  IngestBatchBuilder first(1);
  first.AddHistoryRow(0, 1, {{"loss", 1}});
  first.AddMedia(Media("img", 0, 0, "image", "x"));
  first.AddHistogram({"grad", 0, 1, h});
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "a", first.Finish(), 1).status());
  int64_t seq = 1;
  auto refused = [&](IngestBatchBuilder& b, const std::string& needle) {
    Status s = store().Ingest(Ref("run1"), "b", b.Finish(), 2).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.ToString();
  };
  for (int pass = 0; pass < 2; ++pass) {
    SCOPED_TRACE(pass == 0 ? "run cache warm" : "after reopen");
    IngestBatchBuilder video(++seq);
    video.AddMedia(Media("img", 1, 0, "video", "v"));
    refused(video, "key 'img' is an image in this run and cannot be logged as a video");
    IngestBatchBuilder hist_on_img(++seq);
    hist_on_img.AddHistogram({"img", 1, 1, h});
    refused(hist_on_img, "key 'img' is an image in this run and cannot be logged as a histogram");
    IngestBatchBuilder img_on_grad(++seq);
    img_on_grad.AddMedia(Media("grad", 1, 0, "image", "g"));
    refused(img_on_grad, "key 'grad' is a histogram in this run and cannot be logged as an image");
    IngestBatchBuilder scalar_on_grad(++seq);
    scalar_on_grad.AddHistoryRow(1, 1, {{"grad", 1}});
    refused(scalar_on_grad, "key 'grad' is a histogram in this run and cannot be logged as a scalar");
    IngestBatchBuilder hist_on_loss(++seq);
    hist_on_loss.AddHistogram({"loss", 1, 1, h});
    refused(hist_on_loss, "key 'loss' is a scalar in this run and cannot be logged as a histogram");
    // The same types from the other writer are fine.
    IngestBatchBuilder same(pass + 1);
    same.AddMedia(Media("img", pass + 1, 0, "image", "y"));
    same.AddHistogram({"grad", pass + 1, 1, h});
    same.AddHistoryRow(pass + 1, 1, {{"loss", 2}});
    COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "b", same.Finish(), 2).status());
    if (pass == 0) Reopen();
  }
  COHORT_ASSERT_OK_AND_ASSIGN(auto rows, store().QueryMedia(MediaQuery{.run = Ref("run1")}));
  EXPECT_EQ(rows.size(), 3u);
}

// Rows past the per-file or per-step limit, and a batch's rows past the run's budget, are
// refused; the rest of the batch is stored.
TEST_P(StoreConformanceTest, MediaPastTheLimitsIsRefused) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatchBuilder many(1);
  for (int i = 0; i < 3; ++i) many.AddMedia(Media("img", 0, i, "image", std::to_string(i)));
  many.AddMedia(Media("big", 0, 0, "image", std::string(11, 'b')));
  many.batch().max_media_per_step = 2;
  many.batch().max_media_file_bytes = 10;
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult past,
                              store().Ingest(Ref("run1"), "w", many.Finish(), 1));
  EXPECT_EQ(past.media_refused, 2);  // img's third, big
  EXPECT_NE(past.media_refused_reason.find("more than 2 media in one step"), std::string::npos)
      << past.media_refused_reason;

  IngestBatchBuilder first(2);
  first.AddMedia(Media("img", 0, 0, "image", "0123456789"));
  first.batch().max_run_media_bytes = 15;
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", first.Finish(), 1).status());
  IngestBatchBuilder over(3);
  over.AddMedia(Media("img", 1, 0, "image", "0123456789"));
  over.AddHistoryRow(1, 1, {{"loss", 0.5}});
  over.batch().max_run_media_bytes = 15;
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r, store().Ingest(Ref("run1"), "w", over.Finish(), 1));
  EXPECT_FALSE(r.duplicate);
  EXPECT_EQ(r.points, 1);
  EXPECT_EQ(r.media_refused, 1);
  EXPECT_NE(r.media_refused_reason.find("budget of 15"), std::string::npos)
      << r.media_refused_reason;
  COHORT_ASSERT_OK_AND_ASSIGN(auto rows, store().QueryMedia(MediaQuery{.run = Ref("run1")}));
  EXPECT_EQ(rows.size(), 2u);  // img at step 0, indexes 0 and 1
  COHORT_ASSERT_OK_AND_ASSIGN(auto series, store().ListSeries(Ref("run1")));
  EXPECT_NE(std::find_if(series.begin(), series.end(),
                         [](const SeriesInfo& i) { return i.key == "loss"; }),
            series.end());
  // A key whose only media rows were refused is no media key of the run: another writer may
  // log it as a scalar (the ingest cache had noted it as an image).
  Join("run1", "v", /*primary=*/false);
  IngestBatchBuilder refused_only(4);
  refused_only.AddMedia(Media("clip", 1, 0, "image", "0123456789"));
  refused_only.batch().max_run_media_bytes = 15;
  COHORT_ASSERT_OK_AND_ASSIGN(r, store().Ingest(Ref("run1"), "w", refused_only.Finish(), 1));
  EXPECT_EQ(r.media_refused, 1);
  IngestBatchBuilder scalar(1);
  scalar.AddHistoryRow(1, 1, {{"clip", 2.0}});
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "v", scalar.Finish(), 1).status());
}

// The run's media bytes are counted once and then kept up to date by each batch: several
// batches fill the budget to the byte, a row logged again at its place counts its new size only,
// and after a restart (the count loaded again) and for another writer the limit is the same.
// A row naming a blob the entity holds counts the blob's size, not the size the row says: the
// limits took a row's word, so a 1,000-byte blob named with "size": 10 passed a limit of 100
// (and the row served 1,000 bytes as 10).
TEST_P(StoreConformanceTest, MediaLimitsCountTheSizeOfTheBlobHeldNotTheRowsWord) {
  MakeRun("run1");
  Join("run1", "w");
  MediaPoint lying = Media("img", 0, 0, "image", std::string(1000, 'x'));
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, lying.sha256, 1000, 1000, ""));
  lying.size = 10;
  IngestBatchBuilder b(1);
  b.AddMedia(lying);
  b.AddMedia(Media("img", 0, 1, "image", "small, not held"));
  b.batch().max_media_file_bytes = 100;
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult r, store().Ingest(Ref("run1"), "w", b.Finish(), 1));
  EXPECT_EQ(r.media_refused, 1);
  EXPECT_NE(r.media_refused_reason.find("1000 bytes"), std::string::npos) << r.media_refused_reason;
  // Within the limit it is kept with the blob's size, which the run's budget counts.
  IngestBatchBuilder again(2);
  again.AddMedia(lying);
  again.batch().max_media_file_bytes = 2000;
  again.batch().max_run_media_bytes = 1020;
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult kept,
                              store().Ingest(Ref("run1"), "w", again.Finish(), 1));
  EXPECT_EQ(kept.media_refused, 0);
  COHORT_ASSERT_OK_AND_ASSIGN(auto rows, store().QueryMedia(MediaQuery{.run = Ref("run1")}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].size, 1000);
  IngestBatchBuilder over(3);
  over.AddMedia(Media("img", 1, 0, "image", "0123456789"));
  over.batch().max_run_media_bytes = 1020;
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult past,
                              store().Ingest(Ref("run1"), "w", over.Finish(), 1));
  EXPECT_EQ(past.media_refused, 1);  // 1000 + 15 + 10 > 1020
}

TEST_P(StoreConformanceTest, MediaBudgetIsExactAcrossBatchesAndRestarts) {
  MakeRun("run1");
  Join("run1", "w");
  Join("run1", "v", /*primary=*/false);
  const RunRef ref = Ref("run1");
  auto batch = [](int64_t seq, int64_t step, const std::string& content, int64_t index = 0) {
    IngestBatchBuilder b(seq);
    b.AddMedia(Media("img", step, index, "image", content));
    b.batch().max_run_media_bytes = 40;
    return b.Finish();
  };
  auto refused = [&](const std::string& label, IngestBatch b, int64_t would_hold) {
    auto r = store().Ingest(ref, label, std::move(b), 1);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->media_refused, 1);
    EXPECT_NE(r->media_refused_reason.find("would hold " + std::to_string(would_hold) + " bytes"),
              std::string::npos)
        << r->media_refused_reason;
  };
  COHORT_ASSERT_OK(store().Ingest(ref, "w", batch(1, 0, std::string(10, 'a')), 1).status());
  COHORT_ASSERT_OK(store().Ingest(ref, "w", batch(2, 1, std::string(10, 'b')), 1).status());
  // Logged again at step 1 with 5 bytes: the run holds 15, not 25.
  COHORT_ASSERT_OK(store().Ingest(ref, "w", batch(3, 1, std::string(5, 'c')), 1).status());
  // Two rows at one place in one batch: the last stays (15 + 4 = 19 held after it).
  IngestBatchBuilder twice(4);
  twice.AddMedia(Media("img", 2, 0, "image", std::string(9, 'd')));
  twice.AddMedia(Media("img", 2, 0, "image", std::string(4, 'e')));
  twice.batch().max_run_media_bytes = 40;
  COHORT_ASSERT_OK(store().Ingest(ref, "w", twice.Finish(), 1).status());
  refused("w", batch(5, 3, std::string(22, 'f')), 41);
  COHORT_ASSERT_OK(store().Ingest(ref, "v", batch(1, 0, std::string(11, 'g')), 1).status());
  refused("v", batch(2, 1, std::string(11, 'h')), 41);
  Reopen();
  refused("w", batch(6, 3, std::string(11, 'i')), 41);
  COHORT_ASSERT_OK(store().Ingest(ref, "w", batch(7, 3, std::string(10, 'j')), 1).status());
  refused("v", batch(3, 1, std::string(1, 'k')), 41);  // exactly full: 40 bytes
  int64_t held = 0;
  COHORT_ASSERT_OK_AND_ASSIGN(auto rows, store().QueryMedia(MediaQuery{.run = ref}));
  for (const MediaRecord& r : rows) held += r.size;
  EXPECT_EQ(held, 40);
}

// A table's media cells (their blobs' bytes, cell_bytes) count against the run's media budget
// with the document: logged, replaced at their place, and summed again after a restart.
TEST_P(StoreConformanceTest, MediaBudgetCountsTheBytesOfATablesCells) {
  MakeRun("run1");
  Join("run1", "w");
  const RunRef ref = Ref("run1");
  auto table = [](int64_t seq, int64_t step, const std::string& doc, int64_t cells) {
    IngestBatchBuilder b(seq);
    MediaPoint m = Media("preds", step, 0, "table", doc);
    m.cell_bytes = cells;
    b.AddMedia(m);
    b.batch().max_run_media_bytes = 100;
    return b.Finish();
  };
  auto refused = [&](IngestBatch b, int64_t would_hold) {
    auto r = store().Ingest(ref, "w", std::move(b), 1);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->media_refused, 1);
    EXPECT_NE(r->media_refused_reason.find("would hold " + std::to_string(would_hold) + " bytes"),
              std::string::npos)
        << r->media_refused_reason;
  };
  COHORT_ASSERT_OK(store().Ingest(ref, "w", table(1, 0, "{doc-0}", 50), 1).status());  // 57
  refused(table(2, 1, "{doc-1}", 40), 104);  // a second table: 57 + 47
  // The table at step 0 logged again with fewer cells: 7 + 10 replace 57.
  COHORT_ASSERT_OK(store().Ingest(ref, "w", table(3, 0, "{doc-2}", 10), 1).status());
  COHORT_ASSERT_OK(store().Ingest(ref, "w", table(4, 1, "{doc-1}", 40), 1).status());  // 64
  Reopen();
  refused(table(5, 2, "{doc-3}", 30), 101);
  COHORT_ASSERT_OK(store().Ingest(ref, "w", table(6, 2, "{doc-3}", 29), 1).status());  // 100
}

// The run's media bytes are not dumped: an import counts them again from the imported rows.
TEST_P(StoreConformanceTest, MediaBudgetCountsTheImportedRows) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatchBuilder b(1);
  MediaPoint table = Media("preds", 0, 0, "table", "{doc}");
  table.cell_bytes = 90;
  b.AddMedia(table);
  b.batch().max_run_media_bytes = 100;
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", b.Finish(), 1).status());  // 95
  COHORT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> copy, DumpCopy());
  auto image = [](int64_t seq, const std::string& content) {
    IngestBatchBuilder i(seq);
    i.AddMedia(Media("img", seq, 0, "image", content));
    i.batch().max_run_media_bytes = 100;
    return i.Finish();
  };
  COHORT_ASSERT_OK_AND_ASSIGN(IngestResult over,
                              copy->Ingest(Ref("run1"), "w", image(2, "012345"), 1));
  EXPECT_EQ(over.media_refused, 1);
  EXPECT_NE(over.media_refused_reason.find("would hold 101 bytes"), std::string::npos)
      << over.media_refused_reason;
  COHORT_ASSERT_OK(copy->Ingest(Ref("run1"), "w", image(3, "01234"), 1).status());  // 100
}

TEST_P(StoreConformanceTest, MediaRowsKeepTheirBlobsFromGarbageCollection) {
  MakeRun("run1");
  Join("run1", "w");
  const std::string held = Sha256::Hex("pixels"), loose = Sha256::Hex("loose");
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, held, 6, 1000, ""));
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, loose, 5, 1000, ""));
  IngestBatchBuilder b(1);
  b.AddMedia(Media("img", 0, 0, "image", "pixels"));
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", b.Finish(), 2000).status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto unreferenced, store().UnreferencedBlobs(5000));
  ASSERT_EQ(unreferenced.size(), 1u);
  EXPECT_EQ(unreferenced[0].sha256, loose);
  // Once the run is gone, its media's blobs may go too.
  COHORT_ASSERT_OK(store().DeleteRun(Ref("run1")));
  COHORT_ASSERT_OK_AND_ASSIGN(unreferenced, store().UnreferencedBlobs(5000));
  EXPECT_EQ(unreferenced.size(), 2u);
}

// The table rows of every run are listed for `cohort gc` (it reads their documents for the
// blobs their media cells name); a vendor table's artifact reference is kept with its row.
TEST_P(StoreConformanceTest, TableBlobsListTheTablesOfEveryRunWithTheirArtifactReference) {
  MakeRun("run1");
  MakeRun("run2");
  Join("run1", "w");
  Join("run2", "w");
  IngestBatchBuilder one(1);
  one.AddMedia(Media("preds", 0, 0, "table", "doc-a"));
  one.AddMedia(Media("img", 0, 0, "image", "pixels"));
  MediaPoint vendor = Media("preds", 1, 0, "table", "doc-b");
  vendor.artifact_ref = "wandb-client-artifact://abc123/preds.table.json";
  one.AddMedia(vendor);
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", one.Finish(), 2000).status());
  IngestBatchBuilder two(1);
  two.AddMedia(Media("eval", 3, 0, "table", "doc-a"));  // the same document in another run
  COHORT_ASSERT_OK(store().Ingest(Ref("run2"), "w", two.Finish(), 2000).status());
  COHORT_ASSERT_OK_AND_ASSIGN(auto tables, store().TableBlobs());
  std::vector<std::pair<std::string, int64_t>> got;
  for (const HeldBlob& t : tables) {
    EXPECT_EQ(t.entity, kEntity);
    got.emplace_back(t.sha256, t.size);
  }
  std::vector<std::pair<std::string, int64_t>> want{{Sha256::Hex("doc-a"), 5},
                                                    {Sha256::Hex("doc-b"), 5}};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  COHORT_ASSERT_OK_AND_ASSIGN(auto rows,
                              store().QueryMedia(MediaQuery{.run = Ref("run1"), .keys = {"preds"}}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].artifact_ref, "");
  EXPECT_EQ(rows[1].artifact_ref, vendor.artifact_ref);
}

// A vendor client's media file is kept once, as a blob the media rows name: its run file names
// the blob and holds no data, keeps the blob from garbage collection like a media row, and goes
// back to holding data when uploaded again as an ordinary file.
TEST_P(StoreConformanceTest, ARunFileKeptAsABlobHoldsNoDataAndKeepsTheBlob) {
  MakeRun("run1");
  const std::string sha = Sha256::Hex("pixels");
  COHORT_ASSERT_OK(store().RecordBlob(kEntity, sha, 6, 1000, ""));
  RunFile file{.name = "media/images/a.png", .content_type = "image/png", .size = 6};
  file.sha256 = sha;
  COHORT_ASSERT_OK_AND_ASSIGN(RunFile put, store().PutRunFile(Ref("run1"), file));
  EXPECT_EQ(put.size, 6);
  EXPECT_EQ(put.sha256, sha);
  COHORT_ASSERT_OK_AND_ASSIGN(auto files, store().ListRunFiles(Ref("run1")));
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].size, 6);
  EXPECT_EQ(files[0].sha256, sha);
  COHORT_ASSERT_OK_AND_ASSIGN(RunFile got, store().GetRunFile(Ref("run1"), file.name));
  EXPECT_TRUE(got.data.empty());
  EXPECT_EQ(got.sha256, sha);
  COHORT_ASSERT_OK_AND_ASSIGN(auto unreferenced, store().UnreferencedBlobs(5000));
  EXPECT_TRUE(unreferenced.empty());
  // Data and a blob at once is not a file.
  RunFile both = file;
  both.data = "pixels";
  EXPECT_EQ(store().PutRunFile(Ref("run1"), both).status().code(), StatusCode::kInvalidArgument);
  // The dump keeps what the file names.
  COHORT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> copy, DumpCopy());
  COHORT_ASSERT_OK_AND_ASSIGN(RunFile copied, copy->GetRunFile(Ref("run1"), file.name));
  EXPECT_EQ(copied.sha256, sha);
  EXPECT_EQ(copied.size, 6);
  // Uploaded again as an ordinary file: its data, and the blob is no longer held by it.
  COHORT_ASSERT_OK(
      store().PutRunFile(Ref("run1"), RunFile{.name = file.name, .data = "other"}).status());
  COHORT_ASSERT_OK_AND_ASSIGN(got, store().GetRunFile(Ref("run1"), file.name));
  EXPECT_EQ(got.data, "other");
  EXPECT_TRUE(got.sha256.empty());
  COHORT_ASSERT_OK_AND_ASSIGN(unreferenced, store().UnreferencedBlobs(5000));
  ASSERT_EQ(unreferenced.size(), 1u);
  EXPECT_EQ(unreferenced[0].sha256, sha);
}

TEST_P(StoreConformanceTest, DumpRoundTripKeepsMedia) {
  MakeRun("run1");
  Join("run1", "w");
  IngestBatchBuilder bb(1);
  bb.AddMedia(Media("img", 3, 0, "image", "a", "caption é"));
  bb.AddMedia(Media("clip", 4, 0, "audio", "b"));
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "w", bb.Finish(), 1).status());
  COHORT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> copy, DumpCopy());
  COHORT_ASSERT_OK_AND_ASSIGN(DumpCounts counts, copy->CountRows());
  EXPECT_EQ(counts["media"], 2);
  COHORT_ASSERT_OK_AND_ASSIGN(auto a, store().QueryMedia(MediaQuery{.run = Ref("run1")}));
  COHORT_ASSERT_OK_AND_ASSIGN(auto b, copy->QueryMedia(MediaQuery{.run = Ref("run1")}));
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(a[i].step, b[i].step);
    EXPECT_EQ(a[i].type, b[i].type);
    EXPECT_EQ(a[i].sha256, b[i].sha256);
    EXPECT_EQ(a[i].caption, b[i].caption);
    EXPECT_EQ(a[i].duration_ms, b[i].duration_ms);
  }
}

}  // namespace cohort::store

namespace cohort::store {

// A vendor client's list of images names its files by path (MediaPoint::path): the rows are
// stored at once without a blob, and the upload of each path gives its rows their blob and
// size; another run's rows, and rows of another path, are left alone.
TEST_P(StoreConformanceTest, MediaRowsNamedByPathGetTheirBlobWhenTheFileIsUploaded) {
  MakeRun("run1");
  MakeRun("run2");
  Join("run1", "rank_0");
  Join("run2", "rank_0");
  auto by_path = [](int64_t index, const std::string& path) {
    MediaPoint m = Media("examples", 3, index, "image", "unused", "cap " + std::to_string(index));
    m.sha256.clear();
    m.size = 0;
    m.path = path;
    return m;
  };
  for (const char* run : {"run1", "run2"}) {
    IngestBatchBuilder b(1);
    b.AddMedia(by_path(0, "media/images/examples_3_0.png"));
    b.AddMedia(by_path(1, "media/images/examples_3_1.png"));
    COHORT_ASSERT_OK(store().Ingest(Ref(run), "rank_0", b.Finish(), 1).status());
  }
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto rows, store().QueryMedia(MediaQuery{.run = Ref("run1"), .keys = {"examples"}}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].sha256, "");
  EXPECT_EQ(rows[0].size, 0);
  EXPECT_EQ(rows[1].caption, "cap 1");

  // Both files are the run's now; the upload of _3_1 attaches its rows only.
  const std::string sha = Sha256::Hex("png bytes");
  for (const char* name : {"media/images/examples_3_0.png", "media/images/examples_3_1.png"}) {
    COHORT_ASSERT_OK(
        store().PutRunFile(Ref("run1"), RunFile{.name = name, .size = 9, .sha256 = sha}).status());
  }
  COHORT_ASSERT_OK_AND_ASSIGN(
      int64_t n, store().AttachUploadedMedia(Ref("run1"), "media/images/examples_3_1.png", 0));
  EXPECT_EQ(n, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(
      n, store().AttachUploadedMedia(Ref("run1"), "media/images/examples_3_1.png", 0));
  EXPECT_EQ(n, 0);  // attached already
  COHORT_ASSERT_OK_AND_ASSIGN(
      rows, store().QueryMedia(MediaQuery{.run = Ref("run1"), .keys = {"examples"}}));
  EXPECT_EQ(rows[0].sha256, "");
  EXPECT_EQ(rows[1].sha256, sha);
  EXPECT_EQ(rows[1].size, 9);
  COHORT_ASSERT_OK_AND_ASSIGN(MediaRecord found, store().FindMedia(Ref("run1"), sha));
  EXPECT_EQ(found.index, 1);
  COHORT_ASSERT_OK_AND_ASSIGN(
      rows, store().QueryMedia(MediaQuery{.run = Ref("run2"), .keys = {"examples"}}));
  EXPECT_EQ(rows[1].sha256, "");  // the other run's row awaits its own upload

  // A row named by path cannot claim a size, and its path is bounded.
  IngestBatchBuilder bad(2);
  MediaPoint sized = by_path(2, "media/images/x.png");
  sized.size = 5;
  bad.AddMedia(sized);
  EXPECT_EQ(store().Ingest(Ref("run1"), "rank_0", bad.Finish(), 2).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store().AttachUploadedMedia(Ref("nope"), "media/images/x.png", 0).status().code(),
            StatusCode::kNotFound);
}

// Files uploaded before the line that names them: one call gives every awaiting row of the run
// the blob of the run file at its path; rows whose file is not there yet, or is a plain run file
// without a blob, keep waiting.
TEST_P(StoreConformanceTest, MediaRowsNamedByPathGetTheRunsUploadedFilesInOneCall) {
  MakeRun("run1");
  Join("run1", "rank_0");
  IngestBatchBuilder b(1);
  for (int64_t i = 0; i < 3; ++i) {
    MediaPoint m = Media("examples", 4, i, "image", "unused", "");
    m.sha256.clear();
    m.size = 0;
    m.path = "media/images/e_" + std::to_string(i) + ".png";
    b.AddMedia(m);
  }
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", b.Finish(), 1).status());
  const std::string sha0 = Sha256::Hex("zero"), sha2 = Sha256::Hex("two!");
  COHORT_ASSERT_OK(store()
                       .PutRunFile(Ref("run1"), RunFile{.name = "media/images/e_0.png", .size = 4,
                                                        .sha256 = sha0})
                       .status());
  COHORT_ASSERT_OK(store()
                       .PutRunFile(Ref("run1"), RunFile{.name = "media/images/e_1.png",
                                                        .data = "not a blob"})
                       .status());
  COHORT_ASSERT_OK(store()
                       .PutRunFile(Ref("run1"), RunFile{.name = "media/images/e_2.png", .size = 4,
                                                        .sha256 = sha2})
                       .status());
  COHORT_ASSERT_OK_AND_ASSIGN(int64_t n, store().AttachUploadedMedia(Ref("run1"), "", 0));
  EXPECT_EQ(n, 2);
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto rows, store().QueryMedia(MediaQuery{.run = Ref("run1"), .keys = {"examples"}}));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].sha256, sha0);
  EXPECT_EQ(rows[0].size, 4);
  EXPECT_EQ(rows[1].sha256, "");
  EXPECT_EQ(rows[2].sha256, sha2);
  COHORT_ASSERT_OK_AND_ASSIGN(n, store().AttachUploadedMedia(Ref("run1"), "", 0));
  EXPECT_EQ(n, 0);
  EXPECT_EQ(store().AttachUploadedMedia(Ref("nope"), "", 0).status().code(), StatusCode::kNotFound);
}

// Rows named by path enter with size 0: their bytes count against --max-run-media-bytes when
// their file is attached. Past the budget nothing is attached and the error names the budget.
TEST_P(StoreConformanceTest, AttachingUploadedMediaKeepsTheRunsMediaBudget) {
  MakeRun("run1");
  Join("run1", "rank_0");
  IngestBatchBuilder b(1);
  b.AddMedia(Media("direct", 1, 0, "image", Sha256::Hex("d"), ""));  // 64 bytes
  for (int64_t i = 0; i < 2; ++i) {
    MediaPoint m = Media("examples", 1, i, "image", "unused", "");
    m.sha256.clear();
    m.size = 0;
    m.path = i == 0 ? "media/images/same.png" : "media/images/other.png";
    b.AddMedia(m);
  }
  COHORT_ASSERT_OK(store().Ingest(Ref("run1"), "rank_0", b.Finish(), 1).status());
  COHORT_ASSERT_OK_AND_ASSIGN(
      auto rows, store().QueryMedia(MediaQuery{.run = Ref("run1"), .keys = {"direct"}}));
  ASSERT_EQ(rows.size(), 1u);
  const int64_t direct = rows[0].size;
  const std::string sha = Sha256::Hex("blob");
  COHORT_ASSERT_OK(store()
                       .PutRunFile(Ref("run1"), RunFile{.name = "media/images/same.png",
                                                        .size = 100, .sha256 = sha})
                       .status());
  auto refused = store().AttachUploadedMedia(Ref("run1"), "media/images/same.png", direct + 99);
  EXPECT_EQ(refused.status().code(), StatusCode::kPayloadTooLarge);
  EXPECT_NE(refused.status().message().find("--max-run-media-bytes"), std::string::npos)
      << refused.status().message();
  COHORT_ASSERT_OK_AND_ASSIGN(
      int64_t n, store().AttachUploadedMedia(Ref("run1"), "media/images/same.png", direct + 100));
  EXPECT_EQ(n, 1);
  // The other file, uploaded before its line: attaching all the run's files checks the same
  // budget.
  COHORT_ASSERT_OK(store()
                       .PutRunFile(Ref("run1"), RunFile{.name = "media/images/other.png",
                                                        .size = 50, .sha256 = sha})
                       .status());
  EXPECT_EQ(store().AttachUploadedMedia(Ref("run1"), "", direct + 149).status().code(),
            StatusCode::kPayloadTooLarge);
  COHORT_ASSERT_OK_AND_ASSIGN(
      rows, store().QueryMedia(MediaQuery{.run = Ref("run1"), .keys = {"examples"}}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].sha256, "");  // nothing attached
  COHORT_ASSERT_OK_AND_ASSIGN(n, store().AttachUploadedMedia(Ref("run1"), "", direct + 150));
  EXPECT_EQ(n, 1);
  // The ingest path's budget sees the attached bytes too (the run's total was re-read).
  IngestBatchBuilder more(2);
  more.AddMedia(Media("direct", 2, 0, "image", Sha256::Hex("e"), ""));
  auto over = store().Ingest(Ref("run1"), "rank_0", [&] {
    IngestBatch batch = more.Finish();
    batch.max_run_media_bytes = direct + 150 + direct - 1;
    return batch;
  }(), 2);
  ASSERT_TRUE(over.ok()) << over.status().ToString();
  EXPECT_EQ(over->media_refused, 1);  // the batch's media refused, the batch stored
}

}  // namespace cohort::store
