#include "store/store_conformance.h"

#include <vector>

namespace cohort::store {

void StoreConformanceTest::SetUp() {
  target_ = GetParam().make_target();
  ASSERT_NE(target_, nullptr);
  auto opened = target_->Open();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  store_ = std::move(opened).value();
}

void StoreConformanceTest::TearDown() {
  store_.reset();
  target_.reset();
  copy_target_.reset();
}

void StoreConformanceTest::Reopen() {
  store_.reset();
  auto opened = target_->Open();
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  store_ = std::move(opened).value();
}

Result<std::unique_ptr<Store>> StoreConformanceTest::DumpCopy() {
  std::vector<DumpRecord> records;
  COHORT_RETURN_IF_ERROR(store_->Export([&](const DumpRecord& rec) {
    records.push_back(rec);
    return Status::Ok();
  }));
  copy_target_ = GetParam().make_target();
  COHORT_ASSIGN_OR_RETURN(std::unique_ptr<Store> copy, copy_target_->Open());
  const DumpHeader header{.source = GetParam().name == "postgres" ? "postgres" : "sqlite"};
  COHORT_RETURN_IF_ERROR(copy->Import(records, header).status());
  COHORT_RETURN_IF_ERROR(copy->FinishImport());
  return copy;
}

RunRecord StoreConformanceTest::MakeRun(const std::string& run_id, const std::string& group,
                                        const std::string& job_type) {
  RunUpsert u;
  u.ref = Ref(run_id);
  if (!group.empty()) u.group = group;
  if (!job_type.empty()) u.job_type = job_type;
  auto r = store_->UpsertRun(u);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->first : RunRecord{};
}

WriterRecord StoreConformanceTest::Join(const std::string& run_id, const std::string& label,
                                        bool primary, bool update_finish_state) {
  WriterJoin j;
  j.label = label;
  j.primary = primary;
  j.update_finish_state = update_finish_state;
  j.host = "node-1";
  j.pid = 4242;
  auto w = store_->JoinWriter(Ref(run_id), j);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? *w : WriterRecord{};
}

IngestBatchBuilder StoreConformanceTest::RowsBuilder(int64_t seq, const std::string& key, int rows,
                                                     double v0) {
  IngestBatchBuilder b(seq);
  for (int i = 0; i < rows; ++i)
    b.AddHistoryRow(kAssignStep, 1000 + seq * 1000 + i, {{key, v0 + i}});
  return b;
}

IngestBatch StoreConformanceTest::Rows(int64_t seq, const std::string& key, int rows, double v0) {
  return RowsBuilder(seq, key, rows, v0).Finish();
}

}  // namespace cohort::store
