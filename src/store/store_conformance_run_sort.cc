// Conformance cases: run lists sorted by a config./summary. key (run_filter.h JsonSortClass):
// numbers, then "NaN", then strings, then runs without a value, with exact keyset pages.
#include <algorithm>
#include <string>
#include <vector>

#include "store/store_conformance.h"

namespace cohort::store {
namespace {

using V = std::vector<std::string>;

// Runs whose summary.loss and config.optim.lr hold every kind of value; created in this order
// (so store keys ascend with the ids' order).
void MakeMixedRuns(Store& s, const std::string& entity, const std::string& project) {
  const std::vector<std::pair<const char*, const char*>> values = {
      {"m00", "0.5"},           {"m01", "2"},
      {"m02", "\"abc\""},       {"m03", ""},
      {"m04", "-1.5"},          {"m05", "\"Infinity\""},
      {"m06", "\"NaN\""},       {"m07", "2.0"},
      {"m08", "\"Abc\""},       {"m09", "true"},
      {"m10", "{\"x\": 1}"},    {"m11", "[3]"},
      {"m12", "\"-Infinity\""}, {"m13", "1e300"},
      {"m14", "-0.0"},
  };
  for (const auto& [id, v] : values) {
    RunUpsert u;
    u.ref = RunRef{entity, project, id};
    std::string value = v;
    u.config_json = value.empty() ? R"({"other": 1})" : R"({"optim": {"lr": )" + value + "}}";
    ASSERT_TRUE(s.UpsertRun(u).ok()) << id;
    if (!value.empty()) {
      ASSERT_TRUE(s.PatchRun(u.ref, RunPatch{.summary_json = R"({"loss": )" + value + "}"}).ok())
          << id;
    }
  }
}

std::vector<std::string> Ids(const RunPage& page) {
  std::vector<std::string> out;
  for (const RunRecord& r : page.runs) out.push_back(r.run_id);
  return out;
}

// Every run of the project in the given sort, page by page (`limit` a page), checking that the
// total is the same on every page.
V ListAll(Store& s, const std::string& entity, const std::string& project, const std::string& sort,
          bool descending, int limit) {
  RunQuery q{
      .entity = entity, .project = project, .sort = sort, .descending = descending, .limit = limit};
  V out;
  for (int pages = 0; pages < 100; ++pages) {
    auto page = s.ListRuns(q);
    EXPECT_TRUE(page.ok()) << sort << ": " << page.status().ToString();
    if (!page.ok()) return {"<error>"};
    for (const std::string& id : Ids(*page)) out.push_back(id);
    if (page->next_cursor.empty()) return out;
    q.cursor = page->next_cursor;
  }
  return {"<endless>"};
}

TEST_P(StoreConformanceTest, ListRunsSortsByJsonKeyNumbersNaNStringsThenMissing) {
  MakeMixedRuns(store(), kEntity, kProject);
  // Numbers (true as 1, "-Infinity"/"Infinity" as infinities, ties by store key), "NaN",
  // strings by bytes, then no value (no key, an object, an array) by store key.
  const V ascending = {"m12", "m04", "m14", "m00", "m09", "m01", "m07", "m13",
                       "m05", "m06", "m08", "m02", "m03", "m10", "m11"};
  const V descending = {"m05", "m13", "m07", "m01", "m09", "m00", "m14", "m04",
                        "m12", "m06", "m02", "m08", "m11", "m10", "m03"};
  for (const char* sort : {"summary.loss", "config.optim.lr"}) {
    EXPECT_EQ(ListAll(store(), kEntity, kProject, sort, false, 100), ascending) << sort;
    EXPECT_EQ(ListAll(store(), kEntity, kProject, sort, true, 100), descending) << sort;
    for (int limit : {1, 2, 3}) {
      EXPECT_EQ(ListAll(store(), kEntity, kProject, sort, false, limit), ascending)
          << sort << " limit " << limit;
      EXPECT_EQ(ListAll(store(), kEntity, kProject, sort, true, limit), descending)
          << sort << " limit " << limit;
    }
  }
  // A key no run has: every run, in store-key order either way.
  V by_pk = ascending;
  std::sort(by_pk.begin(), by_pk.end());
  EXPECT_EQ(ListAll(store(), kEntity, kProject, "summary.nope", false, 2), by_pk);
  std::reverse(by_pk.begin(), by_pk.end());
  EXPECT_EQ(ListAll(store(), kEntity, kProject, "summary.nope", true, 2), by_pk);
}

// A key whose name holds a dot ({"optim.lr": 0.1}, as flattened configs and summaries are) was
// out of reach of filters and sorts: config.optim.lr read only {"optim": {"lr": ...}}. The key
// itself is read first, then the nested path (as the web UI does).
TEST_P(StoreConformanceTest, JsonKeysWithADotInTheirNameAreFilteredAndSorted) {
  const std::vector<std::pair<const char*, const char*>> runs = {
      {"d1", R"({"optim.lr": 0.3})"},
      {"d2", R"({"optim": {"lr": 0.1}})"},
      {"d3", R"({"optim.lr": 0.2, "optim": {"lr": 9}})"},  // the key itself wins
      {"d4", R"({"other": 1})"},
  };
  for (const auto& [id, config] : runs) {
    RunUpsert u;
    u.ref = RunRef{kEntity, kProject, id};
    u.config_json = config;
    ASSERT_TRUE(store().UpsertRun(u).ok()) << id;
    ASSERT_TRUE(store().PatchRun(u.ref, RunPatch{.summary_json = config}).ok()) << id;
  }
  for (const char* field : {"config.optim.lr", "summary.optim.lr"}) {
    EXPECT_EQ(ListAll(store(), kEntity, kProject, field, false, 2), (V{"d2", "d3", "d1", "d4"}))
        << field;
    RunQuery q{.entity = kEntity,
               .project = kProject,
               .filters = {{field, ">", {"0.15"}}},
               .sort = "created",
               .descending = false,
               .limit = 10};
    COHORT_ASSERT_OK_AND_ASSIGN(RunPage page, store().ListRuns(q));
    EXPECT_EQ(Ids(page), (V{"d1", "d3"})) << field;
    q.filters = {{field, "==", {"0.1"}}};
    COHORT_ASSERT_OK_AND_ASSIGN(page, store().ListRuns(q));
    EXPECT_EQ(Ids(page), (V{"d2"})) << field;
  }
}

TEST_P(StoreConformanceTest, ListRunsSortedByJsonKeyKeepsFiltersAndTotal) {
  MakeMixedRuns(store(), kEntity, kProject);
  RunQuery q{.entity = kEntity,
             .project = kProject,
             .filters = {{"summary.loss", "<", {"1.5"}}},
             .sort = "summary.loss",
             .descending = false,
             .limit = 2};
  COHORT_ASSERT_OK_AND_ASSIGN(RunPage page, store().ListRuns(q));
  EXPECT_EQ(Ids(page), (V{"m04", "m14"}));  // "-Infinity" is a string to the filter
  EXPECT_EQ(page.total, 4);
  q.cursor = page.next_cursor;
  COHORT_ASSERT_OK_AND_ASSIGN(page, store().ListRuns(q));
  EXPECT_EQ(Ids(page), (V{"m00", "m09"}));
  EXPECT_TRUE(page.next_cursor.empty());
}

TEST_P(StoreConformanceTest, ListRunsSortedByJsonKeyRejectsBadKeyAndOtherCursor) {
  MakeMixedRuns(store(), kEntity, kProject);
  RunQuery q{.entity = kEntity, .project = kProject, .sort = "summary.", .limit = 2};
  for (const char* bad : {"summary.", "config.a..b", "summary.\"x\"", "summaries.loss"}) {
    q.sort = bad;
    auto r = store().ListRuns(q);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().ToString();
  }
  q.sort = "summary.loss";
  COHORT_ASSERT_OK_AND_ASSIGN(RunPage page, store().ListRuns(q));
  ASSERT_FALSE(page.next_cursor.empty());
  q.cursor = page.next_cursor;
  EXPECT_TRUE(store().ListRuns(q).ok());
  for (const char* other : {"summary.acc", "config.loss", "name", "created", "summary.loss.x"}) {
    q.sort = other;
    EXPECT_EQ(store().ListRuns(q).status().code(), StatusCode::kInvalidArgument) << other;
  }
  q.sort = "summary.loss";
  q.descending = !q.descending;
  EXPECT_EQ(store().ListRuns(q).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cohort::store
