#include "server/api/table_cell_cache.h"

#include <gtest/gtest.h>

namespace cohort::api {
namespace {

TableCellCache::Loaded Cells(const std::string& sha, bool final = true) {
  batch::MediaRow m;
  m.sha256 = sha;
  return TableCellCache::Loaded{{m}, final};
}

TEST(TableCellCacheTest, LoadsOnceAndKeepsTheMostRecentlyUsed) {
  TableCellCache cache(2);
  int loads = 0;
  auto get = [&](const std::string& key) {
    auto got = cache.Get(key, [&]() -> Result<TableCellCache::Loaded> {
      ++loads;
      return Cells(key);
    });
    EXPECT_TRUE(got.ok());
    return (*got)->at(0).sha256;
  };
  EXPECT_EQ(get("a"), "a");
  EXPECT_EQ(get("a"), "a");
  EXPECT_EQ(loads, 1);
  get("b");
  get("a");  // a is now the most recently used
  get("c");  // b goes
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(loads, 3);
  get("a");
  EXPECT_EQ(loads, 3);
  get("b");
  EXPECT_EQ(loads, 4);
}

TEST(TableCellCacheTest, WhatIsNotFinalAndErrorsAreNotKept) {
  TableCellCache cache;
  int loads = 0;
  for (int i = 0; i < 2; ++i) {
    auto got = cache.Get("t", [&]() -> Result<TableCellCache::Loaded> {
      ++loads;
      return Cells("x", /*final=*/false);
    });
    ASSERT_TRUE(got.ok());
  }
  EXPECT_EQ(loads, 2);
  auto failed = cache.Get("u", []() -> Result<TableCellCache::Loaded> {
    return Status::NotFound("no table");
  });
  EXPECT_EQ(failed.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace cohort::api
