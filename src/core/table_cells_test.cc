#include "core/table_cells.h"

#include <gtest/gtest.h>

namespace cohort::batch {
namespace {

const std::string kA(64, 'a');
const std::string kB(64, 'b');

std::string Cell(const std::string& type, const std::string& sha, const std::string& extra = "") {
  return R"({"_type":")" + type + R"(","sha256":")" + sha + R"(","size":12,"mime":"image/png")" +
         extra + "}";
}

TEST(TableCellsTest, AMediaCellIsTheRowItStandsFor) {
  auto v = json::Parse(Cell("image", kA, R"(,"width":6,"height":2,"caption":"g1")"));
  ASSERT_TRUE(v.ok());
  auto m = MediaCellOf(*v);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->type, MediaType::kImage);
  EXPECT_EQ(m->sha256, kA);
  EXPECT_EQ(m->size, 12);
  EXPECT_EQ(m->mime, "image/png");
  EXPECT_EQ(m->width, 6);
  EXPECT_EQ(m->height, 2);
  EXPECT_EQ(m->caption, "g1");
}

TEST(TableCellsTest, OtherCellsAreNotMedia) {
  for (const std::string& text :
       {std::string("3"), std::string("\"Image\""), std::string("null"), std::string("{}"),
        Cell("table", kA), Cell("image-file", kA), Cell("image", "ABC"),
        Cell("image", kA, R"(,"size":-1)"), std::string(R"({"_type":"image","sha256":")") + kA +
                                                  R"(","size":1,"mime":"no slash"})"}) {
    auto v = json::Parse(text);
    ASSERT_TRUE(v.ok()) << text;
    EXPECT_FALSE(MediaCellOf(*v).has_value()) << text;
  }
}

TEST(TableCellsTest, TheDigestsOfADocumentOnceEach) {
  const std::string doc = R"({"columns":["i","img","ref"],"data":[[0,)" + Cell("image", kA) +
                          "," + Cell("image", kB) + "],[1," + Cell("audio", kB) +
                          R"(,null],[2,"Image",{"_type":"table","sha256":"x"}],"ragged"]})";
  auto digests = MediaCellDigests(doc);
  ASSERT_TRUE(digests.ok()) << digests.status().ToString();
  EXPECT_EQ(*digests, (std::vector<std::string>{kA, kB}));
  auto none = MediaCellDigests(R"({"columns":[],"data":[]})");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  for (const char* bad : {"[]", "{\"columns\":[]}", "not json"}) {
    EXPECT_FALSE(MediaCellDigests(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace cohort::batch
