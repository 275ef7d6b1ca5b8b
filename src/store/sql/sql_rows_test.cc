#include "store/sql/sql_rows.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

#include "store/memory_row_for_test.h"

namespace cohort::store {
namespace {

using MemoryRow = testing_rows::MemoryRow;

TEST(SqlRowsTest, WriterRowReadsNullExitCodeAsNone) {
  using S = std::string;
  MemoryRow row({int64_t{7}, int64_t{3}, S("rank_1"), int64_t{0}, int64_t{1}, S("h"), int64_t{99},
                 S("[0,1]"), S("nonsense"), std::monostate{}, int64_t{1}, int64_t{2},
                 std::monostate{}, int64_t{5}, int64_t{6}});
  WriterRecord w = ReadWriterRow(row);
  EXPECT_EQ(w.label, "rank_1");
  EXPECT_FALSE(w.primary);
  EXPECT_TRUE(w.update_finish_state);
  EXPECT_EQ(w.gpu_ids, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(w.state, RunState::kCrashed);  // an unreadable state reads as crashed
  EXPECT_FALSE(w.exit_code.has_value());
  EXPECT_FALSE(w.finished_ms.has_value());
  EXPECT_EQ(w.last_seq, 6);
}

TEST(SqlRowsTest, RunRowReadsEveryColumnInSelectListOrder) {
  using S = std::string;
  MemoryRow row({int64_t{11}, S("ent"), S("proj"), S("abc"), S("name"), S("grp"), S("train"),
                 S("notes"), S("host1"), S(R"(["a","b"])"), S(R"({"lr":0.1})"),
                 S(R"({"loss":1})"), S(R"({"os":"linux"})"), S("finished"), int64_t{3},
                 int64_t{100}, int64_t{200}, int64_t{150}, int64_t{210}, int64_t{4}});
  RunRecord r = ReadRunRow(row);
  EXPECT_EQ(r.pk, 11);
  EXPECT_EQ(r.entity, "ent");
  EXPECT_EQ(r.project, "proj");
  EXPECT_EQ(r.run_id, "abc");
  EXPECT_EQ(r.name, "name");
  EXPECT_EQ(r.group, "grp");
  EXPECT_EQ(r.job_type, "train");
  EXPECT_EQ(r.notes, "notes");
  EXPECT_EQ(r.host, "host1");
  EXPECT_EQ(r.tags, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.config_json, R"({"lr":0.1})");
  EXPECT_EQ(r.summary_json, R"({"loss":1})");
  EXPECT_EQ(r.metadata_json, R"({"os":"linux"})");
  EXPECT_EQ(r.state, RunState::kFinished);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.created_ms, 100);
  EXPECT_EQ(r.updated_ms, 200);
  EXPECT_EQ(r.heartbeat_ms, 150);
  EXPECT_EQ(r.finished_ms, 210);
  EXPECT_EQ(r.writer_count, 4);
  // The select list names as many columns as the reader reads, `r.` qualified.
  int commas = 0;
  for (char c : std::string(kRunColumns)) commas += c == ',';
  EXPECT_EQ(commas + 1, kRunColumnCount);
  EXPECT_EQ(std::string(kRunColumns).rfind("r.", 0), 0u);
}

TEST(SqlRowsTest, KeyAndViewRowsReadRolesAndFlags) {
  using S = std::string;
  MemoryRow admin({int64_t{5}, S("ent"), S("ci"), S("admin"), S("ab12"), S("ck_ab"), int64_t{9},
                   int64_t{1}});
  ApiKeyRecord k = ReadKeyRow(admin);
  EXPECT_EQ(k.id, 5);
  EXPECT_EQ(k.role, KeyRole::kAdmin);
  EXPECT_EQ(k.hash, "ab12");
  EXPECT_EQ(k.prefix, "ck_ab");
  EXPECT_EQ(k.created_ms, 9);
  EXPECT_TRUE(k.revoked);
  MemoryRow other({int64_t{6}, S("ent"), S(""), S("anything"), S("cd"), S(""), int64_t{1},
                   int64_t{0}});
  k = ReadKeyRow(other);
  EXPECT_EQ(k.role, KeyRole::kMember);  // only "admin" grants admin
  EXPECT_FALSE(k.revoked);

  MemoryRow view({int64_t{2}, S("ent"), S("proj"), S("loss view"), S(R"({"panels":[]})"),
                  int64_t{10}, int64_t{20}});
  ViewRecord v = ReadViewRow(view);
  EXPECT_EQ(v.id, 2);
  EXPECT_EQ(v.name, "loss view");
  EXPECT_EQ(v.spec_json, R"({"panels":[]})");
  EXPECT_EQ(v.created_ms, 10);
  EXPECT_EQ(v.updated_ms, 20);
}

TEST(SqlRowsTest, StoredRunFileReportsTheDataSizeWithoutTheData) {
  RunFile file;
  file.name = "model.bin";
  file.content_type = "application/octet-stream";
  file.data = std::string(1000, 'x');
  RunFile out = StoredRunFile(file, 1234);
  EXPECT_EQ(out.name, "model.bin");
  EXPECT_EQ(out.content_type, "application/octet-stream");
  EXPECT_EQ(out.size, 1000);
  EXPECT_EQ(out.updated_ms, 1234);
  EXPECT_TRUE(out.data.empty());
}

}  // namespace
}  // namespace cohort::store
