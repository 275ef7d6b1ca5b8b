#include "server/compat/graphql_exec.h"

#include <gtest/gtest.h>

namespace cohort::compat::gql {
namespace {

// A root whose fields answer plain JSON, a nested object, a list or an error.
class TestRoot : public Object {
 public:
  std::string TypeName() const override { return "Query"; }
  Result<Resolved> Resolve(const FieldInfo& f) override {
    last_args = f.args();
    if (f.name() == "viewer") {
      return Resolved::Json(bj::object{{"entity", "alice"},
                                       {"username", "al"},
                                       {"teams", bj::object{{"edges", bj::array{}}}}});
    }
    if (f.name() == "echo") return Resolved::Json(f.args());
    if (f.name() == "child") return Resolved::Of(std::make_shared<TestRoot>());
    if (f.name() == "children") {
      return Resolved::List({std::make_shared<TestRoot>(), nullptr});
    }
    if (f.name() == "nothing") return Resolved::Of(nullptr);
    if (f.name() == "big") return Resolved::Json(bj::string(std::string(100000, 'c')));
    return Status::InvalidArgument("Cannot query field \"" + f.name() + "\" on type \"Query\"");
  }
  bj::object last_args;
};

bj::object Exec(const std::string& query, bj::object variables = {},
               const std::string& operation = "", ExecLimits limits = {}) {
  auto doc = Parse(query);
  EXPECT_TRUE(doc.ok()) << doc.status().ToString();
  if (!doc.ok()) return {};
  TestRoot q, m;
  ExecRequest req;
  req.document = &*doc;
  req.variables = std::move(variables);
  req.operation_name = operation;
  return Execute(req, q, m, limits);
}

TEST(GraphqlExec, AnswersOnlyTheFieldsAskedFor) {
  bj::object out = Exec("query Viewer { viewer { entity teams { edges { node { name } } } } }");
  EXPECT_EQ(bj::serialize(out), R"({"data":{"viewer":{"entity":"alice","teams":{"edges":[]}}}})");
}

TEST(GraphqlExec, AliasesFragmentsTypenameAndUnknownSubfields) {
  bj::object out = Exec(R"(
    query { a: viewer { ...f missing __typename } b: viewer { username } }
    fragment f on User { entity }
  )");
  EXPECT_EQ(bj::serialize(out),
            R"({"data":{"a":{"entity":"alice","missing":null,"__typename":null},)"
            R"("b":{"username":"al"}}})");
}

TEST(GraphqlExec, VariablesDefaultsAndInlineObjects) {
  bj::object vars{{"name", "run1"}, {"tags", bj::array{"x"}}};
  bj::object out = Exec(R"(mutation M($name: String, $missing: String, $d: Int = 7, $tags: [String!]) {
      echo(input: {name: $name, missing: $missing, d: $d, tags: $tags, lit: [1, 2.5, "s", RED]})
    })",
                       vars);
  EXPECT_EQ(bj::serialize(out),
            R"({"data":{"echo":{"input":{"name":"run1","missing":null,"d":7,"tags":["x"],)"
            R"("lit":[1,2.5E0,"s","RED"]}}}})");
}

// A mutation of many aliased fields (each a write) is refused before any runs: one request must
// not make thousands of writes past the per-request rate limit, nor leave some done when a
// limit stops it midway. Queries keep their own, larger limits.
TEST(GraphqlExec, AMutationOfTooManyFieldsRunsNone) {
  auto doc = Parse("mutation { a: echo(x: 1) b: echo(x: 2) c: echo(x: 3) }");
  ASSERT_TRUE(doc.ok());
  TestRoot q, m;
  ExecRequest req;
  req.document = &*doc;
  ExecLimits limits;
  limits.max_mutation_fields = 2;
  bj::object out = Execute(req, q, m, limits);
  EXPECT_TRUE(out.at("data").is_null()) << bj::serialize(out);
  EXPECT_NE(bj::serialize(out).find("a mutation of 3 fields: at most 2"), std::string::npos)
      << bj::serialize(out);
  EXPECT_TRUE(m.last_args.empty());  // no resolver ran
  limits.max_mutation_fields = 3;
  out = Execute(req, q, m, limits);
  EXPECT_EQ(bj::serialize(out.at("data")), R"({"a":{"x":1},"b":{"x":2},"c":{"x":3}})");
  auto query = Parse("query { a: echo(x: 1) b: echo(x: 2) c: echo(x: 3) }");
  ASSERT_TRUE(query.ok());
  req.document = &*query;
  limits.max_mutation_fields = 2;
  EXPECT_FALSE(Execute(req, q, m, limits).at("data").is_null());
}

// What the rate limiter charges: a mutation's top-level writes after fragments and @skip, none
// for a query, an error for a document Execute would refuse.
TEST(GraphqlExec, CountMutationFieldsCountsTheWritesThatWouldRun) {
  auto count = [](std::string_view text, bj::object vars = {}) -> Result<size_t> {
    auto doc = Parse(text);
    if (!doc.ok()) return doc.status();
    ExecRequest req;
    req.document = &*doc;
    req.variables = std::move(vars);
    return CountMutationFields(req);
  };
  EXPECT_EQ(*count("mutation { a: echo(x: 1) b: echo(x: 2) }"), 2u);
  EXPECT_EQ(*count("mutation { ...W c: echo(x: 3) } fragment W on Mutation { a: echo(x: 1) "
                   "b: echo(x: 2) }"),
            3u);
  EXPECT_EQ(*count("mutation($no: Boolean) { a: echo(x: 1) b: echo(x: 2) @skip(if: $no) }",
                   bj::object{{"no", true}}),
            1u);
  EXPECT_EQ(*count("query { a: echo(x: 1) b: echo(x: 2) }"), 0u);
  EXPECT_FALSE(count("mutation A { a: echo(x: 1) } mutation B { b: echo(x: 1) }").ok());
}

TEST(GraphqlExec, SkipAndInclude) {
  bj::object out = Exec(R"(query($yes: Boolean) {
      viewer { entity @skip(if: $yes) username @include(if: $yes) }
    })",
                       bj::object{{"yes", true}});
  EXPECT_EQ(bj::serialize(out), R"({"data":{"viewer":{"username":"al"}}})");
}

TEST(GraphqlExec, UnknownRootFieldsAreErrorsWithPaths) {
  bj::object out = Exec("{ viewer { entity } bogus { x } }");
  EXPECT_EQ(bj::serialize(out["data"]), R"({"viewer":{"entity":"alice"},"bogus":null})");
  ASSERT_TRUE(out.contains("errors"));
  EXPECT_EQ(bj::serialize(out["errors"]),
            R"([{"message":"Cannot query field \"bogus\" on type \"Query\"","path":["bogus"]}])");
}

TEST(GraphqlExec, NestedObjectsAndLists) {
  bj::object out = Exec("{ child { child { viewer { entity } } } children { __typename } nothing { x } }");
  EXPECT_EQ(bj::serialize(out),
            R"({"data":{"child":{"child":{"viewer":{"entity":"alice"}}},)"
            R"("children":[{"__typename":"Query"},null],"nothing":null}})");
  bj::object missing_sub = Exec("{ child }");
  EXPECT_TRUE(missing_sub.contains("errors"));
}

TEST(GraphqlExec, OperationSelection) {
  auto doc = Parse("query A { viewer { entity } } query B { viewer { username } }");
  ASSERT_TRUE(doc.ok());
  EXPECT_FALSE(SelectOperation(*doc, "").ok());
  EXPECT_FALSE(SelectOperation(*doc, "C").ok());
  ASSERT_TRUE(SelectOperation(*doc, "B").ok());
  EXPECT_EQ((*SelectOperation(*doc, "B"))->name, "B");
  bj::object out = Exec("query A { viewer { entity } } query B { viewer { username } }", {}, "B");
  EXPECT_EQ(bj::serialize(out), R"({"data":{"viewer":{"username":"al"}}})");
  bj::object ambiguous = Exec("query A { viewer { entity } } query B { viewer { username } }");
  EXPECT_FALSE(ambiguous.contains("data"));
  EXPECT_TRUE(ambiguous.contains("errors"));
  bj::object sub = Exec("subscription S { viewer { entity } }");
  EXPECT_TRUE(sub.contains("errors"));
}

TEST(GraphqlExec, FragmentCyclesAndUnknownFragmentsAreErrors) {
  bj::object cycle = Exec("{ viewer { ...a } } fragment a on User { ...b } fragment b on User { ...a }");
  ASSERT_TRUE(cycle.contains("errors"));
  EXPECT_NE(bj::serialize(cycle["errors"]).find("within itself"), std::string::npos);
  bj::object unknown = Exec("{ viewer { ...nope } }");
  ASSERT_TRUE(unknown.contains("errors"));
  EXPECT_NE(bj::serialize(unknown["errors"]).find("Unknown fragment"), std::string::npos);
}

TEST(GraphqlExec, ExponentialFragmentExpansionIsCapped) {
  // Each fragment spreads the next one twice: 2^30 fields if expanded naively.
  std::string q = "{ viewer { ...f0 } }";
  for (int i = 0; i < 30; ++i) {
    q += " fragment f" + std::to_string(i) + " on User { ...f" + std::to_string(i + 1) +
         " ...f" + std::to_string(i + 1) + " }";
  }
  q += " fragment f30 on User { entity }";
  bj::object out = Exec(q);
  ASSERT_TRUE(out.contains("errors"));
  EXPECT_NE(bj::serialize(out["errors"]).find("too complex"), std::string::npos);

  std::string aliases = "{";
  for (int i = 0; i < 30000; ++i) aliases += " a" + std::to_string(i) + ": viewer { entity }";
  aliases += " }";
  bj::object wide = Exec(aliases);
  ASSERT_TRUE(wide.contains("errors"));
  EXPECT_NE(bj::serialize(wide["errors"]).find("too complex"), std::string::npos);
}

TEST(GraphqlExec, OneLargeValueUnderManyAliasesIsCappedWithoutPartialData) {
  // 400 aliases of a 100 KB value: a 40 MB answer from a 4 KB query.
  std::string query = "{";
  for (int i = 0; i < 400; ++i) query += " a" + std::to_string(i) + ": big";
  query += " }";
  ExecLimits limits;
  limits.max_answer_bytes = 1 << 20;
  bj::object out = Exec(query, {}, "", limits);
  ASSERT_TRUE(out.contains("errors"));
  EXPECT_TRUE(out.at("data").is_null());
  const std::string text = bj::serialize(out);
  EXPECT_LT(text.size(), 4096u);
  EXPECT_NE(text.find("answer too large: more than 1048576 bytes"), std::string::npos) << text;
  // Under the cap the same field answers.
  out = Exec("{ a: big b: big }", {}, "", limits);
  EXPECT_FALSE(out.contains("errors"));
  EXPECT_EQ(out.at("data").at("b").as_string().size(), 100000u);
}

TEST(GraphqlExec, FieldResolutionsPerRequestAreCapped) {
  std::string query = "{";
  for (int i = 0; i < 50; ++i) query += " c" + std::to_string(i) + ": child { viewer { entity } }";
  query += " }";
  ExecLimits limits;
  limits.max_resolutions = 60;  // 50 children + 50 viewers is over
  bj::object out = Exec(query, {}, "", limits);
  ASSERT_TRUE(out.contains("errors"));
  EXPECT_TRUE(out.at("data").is_null());
  EXPECT_NE(bj::serialize(out).find("more than 60 fields resolved"), std::string::npos);
  limits.max_resolutions = 100;
  out = Exec(query, {}, "", limits);
  EXPECT_FALSE(out.contains("errors")) << bj::serialize(out);
}

}  // namespace
}  // namespace cohort::compat::gql
