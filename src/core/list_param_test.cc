#include "core/list_param.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cohort {
namespace {

using Items = std::vector<std::string>;

TEST(SplitListParam, SplitsOnCommasAndLeavesEmptyItemsOut) {
  EXPECT_EQ(SplitListParam(""), Items{});
  EXPECT_EQ(SplitListParam("loss"), Items{"loss"});
  EXPECT_EQ(SplitListParam("loss,acc"), (Items{"loss", "acc"}));
  EXPECT_EQ(SplitListParam(",loss,,acc,"), (Items{"loss", "acc"}));
  EXPECT_EQ(SplitListParam(",,"), Items{});
}

TEST(SplitListParam, AnEscapedCommaOrBackslashBelongsToItsItem) {
  EXPECT_EQ(SplitListParam(R"(acc\,top5)"), Items{"acc,top5"});
  EXPECT_EQ(SplitListParam(R"(acc\,top5,loss)"), (Items{"acc,top5", "loss"}));
  EXPECT_EQ(SplitListParam(R"(node\,1,node\,2)"), (Items{"node,1", "node,2"}));
  EXPECT_EQ(SplitListParam(R"(\,)"), Items{","});
  EXPECT_EQ(SplitListParam(R"(a\\,b)"), (Items{"a\\", "b"}));  // "\\" is one '\'
  EXPECT_EQ(SplitListParam(R"(a\\\,b)"), Items{"a\\,b"});      // '\' then ','
  EXPECT_EQ(SplitListParam(R"(C:\\dir\\x)"), Items{"C:\\dir\\x"});
}

TEST(SplitListParam, ABackslashBeforeAnythingElseStandsForItself) {
  EXPECT_EQ(SplitListParam(R"(a\b)"), Items{"a\\b"});
  EXPECT_EQ(SplitListParam(R"(a\)"), Items{"a\\"});
  EXPECT_EQ(SplitListParam(R"(a\,)"), Items{"a,"});
  EXPECT_EQ(SplitListParam("\\"), Items{"\\"});
}

TEST(JoinListParam, EscapesEachItemSoThatSplitGivesItBack) {
  EXPECT_EQ(JoinListParam({}), "");
  EXPECT_EQ(JoinListParam({"loss", "acc"}), "loss,acc");
  EXPECT_EQ(JoinListParam({"acc,top5", "loss"}), R"(acc\,top5,loss)");
  EXPECT_EQ(JoinListParam({"a\\", "b"}), R"(a\\,b)");
  for (const Items& items :
       {Items{"acc,top5"}, Items{"node,1", "node,2"}, Items{",", "\\", "\\,", ",\\"},
        Items{"a\\b", "c\\", "\\,d"}, Items{"eval/preds", "grad/w.0", "système"}}) {
    EXPECT_EQ(SplitListParam(JoinListParam(items)), items) << JoinListParam(items);
  }
}

}  // namespace
}  // namespace cohort
