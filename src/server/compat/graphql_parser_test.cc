#include "server/compat/graphql_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace cohort::compat::gql {
namespace {

// The vendor Go client's UpsertBucket, as sent (tabs, inline input object, no commas).
constexpr const char* kUpsert = R"(mutation UpsertBucket ($id: String, $name: String, $project: String, $entity: String, $groupName: String, $config: JSONString, $tags: [String!], $summaryMetrics: JSONString) {
	upsertBucket(input: {id:$id,name:$name,groupName:$groupName,modelName:$project,entityName:$entity,config:$config,tags:$tags,summaryMetrics:$summaryMetrics}) {
		bucket {
			id
			name
			project {
				id
				name
				entity {
					id
					name
				}
			}
			historyLineCount
		}
		inserted
	}
}
)";

TEST(GraphqlParser, ParsesTheUpsertBucketMutation) {
  auto doc = Parse(kUpsert);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  ASSERT_EQ(doc->operations.size(), 1u);
  const Operation& op = doc->operations[0];
  EXPECT_EQ(op.type, "mutation");
  EXPECT_EQ(op.name, "UpsertBucket");
  ASSERT_EQ(op.variables.size(), 8u);
  EXPECT_EQ(op.variables[6].name, "tags");
  EXPECT_EQ(op.variables[6].type, "[String!]");
  ASSERT_EQ(op.selections.size(), 1u);
  const Selection& upsert = op.selections[0];
  EXPECT_EQ(upsert.name, "upsertBucket");
  const Value* input = upsert.Arg("input");
  ASSERT_NE(input, nullptr);
  ASSERT_EQ(input->kind, Value::Kind::kObject);
  ASSERT_EQ(input->fields.size(), 8u);
  EXPECT_EQ(input->fields[3].name, "modelName");
  EXPECT_EQ(input->fields[3].value.kind, Value::Kind::kVariable);
  EXPECT_EQ(input->fields[3].value.text, "project");
  ASSERT_EQ(upsert.selections.size(), 2u);
  EXPECT_EQ(upsert.selections[0].name, "bucket");
  EXPECT_EQ(upsert.selections[0].selections[2].selections[2].name, "entity");
}

TEST(GraphqlParser, AliasesFragmentsAndDirectives) {
  auto doc = Parse(R"(
    query ProbeServerCapabilities {
      QueryType: __type(name: "Query") { ...fieldData }
      ServerInfoType: __type(name: "ServerInfo") { ...fieldData @include(if: true) }
      ... on Query { viewer { entity } }
    }
    fragment fieldData on __Type { fields { name } }
  )");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const Operation& op = doc->operations[0];
  ASSERT_EQ(op.selections.size(), 3u);
  EXPECT_EQ(op.selections[0].alias, "QueryType");
  EXPECT_EQ(op.selections[0].name, "__type");
  EXPECT_EQ(op.selections[0].ResponseKey(), "QueryType");
  EXPECT_EQ(op.selections[0].Arg("name")->text, "Query");
  EXPECT_EQ(op.selections[0].selections[0].kind, Selection::Kind::kFragmentSpread);
  EXPECT_EQ(op.selections[1].selections[0].directives[0].name, "include");
  EXPECT_EQ(op.selections[2].kind, Selection::Kind::kInlineFragment);
  EXPECT_EQ(op.selections[2].type_condition, "Query");
  ASSERT_NE(doc->FindFragment("fieldData"), nullptr);
  EXPECT_EQ(doc->FindFragment("fieldData")->type_condition, "__Type");
}

TEST(GraphqlParser, ValueKinds) {
  auto doc = Parse(R"({ f(a: 1, b: -2.5e3, c: "x\"\u00e9\ud83d\ude00", d: true, e: null, g: ENUM,
                           h: [1, [2]], i: {j: {k: $v}}, l: """
      block
        indented
    """) })");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  const Selection& f = doc->operations[0].selections[0];
  EXPECT_EQ(f.Arg("a")->kind, Value::Kind::kInt);
  EXPECT_EQ(f.Arg("a")->text, "1");
  EXPECT_EQ(f.Arg("b")->kind, Value::Kind::kFloat);
  EXPECT_EQ(f.Arg("c")->text, "x\"\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_TRUE(f.Arg("d")->boolean);
  EXPECT_EQ(f.Arg("e")->kind, Value::Kind::kNull);
  EXPECT_EQ(f.Arg("g")->kind, Value::Kind::kEnum);
  EXPECT_EQ(f.Arg("h")->list[1].list[0].text, "2");
  EXPECT_EQ(f.Arg("i")->fields[0].value.fields[0].value.kind, Value::Kind::kVariable);
  EXPECT_EQ(f.Arg("l")->text, "block\n  indented");
}

TEST(GraphqlParser, CommentsCommasAndAnonymousQueries) {
  auto doc = Parse("# a comment\n{ a, b # trailing\n ,c }");
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->operations[0].name, "");
  EXPECT_EQ(doc->operations[0].selections.size(), 3u);
}

TEST(GraphqlParser, SyntaxErrorsSayWhere) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"", "no operation"},
           {"{", "Expected Name"},
           {"{ a ", "Expected Name, found <EOF>"},
           {"query Q { }", "Expected Name, found \"}\""},
           {"{ a(b: ) }", "Unexpected \")\""},
           {"{ a(b: \"unterminated) }", "Unterminated string"},
           {"{ a(b: 01) }", "unexpected digit after 0"},
           {"{ a(b: 1.) }", "expected digit"},
           {"{ a(b: \"\\q\") }", "Invalid escape"},
           {"{ a(b: \"\\ud800\") }", "unpaired surrogate"},
           {"{ a } }", "Unexpected \"}\""},
           {"type Query { a: Int }", "only executable definitions"},
           {"fragment on on X { a }", "Unexpected Name \"on\""},
           {"query ($a: Int = $b) { a }", "Unexpected variable"},
           {"{ a ^ }", "Unexpected character"},
       }) {
    auto doc = Parse(c.text);
    ASSERT_FALSE(doc.ok()) << c.text;
    EXPECT_EQ(doc.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(doc.status().message().find(c.message), std::string::npos)
        << c.text << " -> " << doc.status().message();
    EXPECT_NE(doc.status().message().find("line "), std::string::npos);
  }
}

TEST(GraphqlParser, DeepNestingIsAnErrorNotACrash) {
  for (const std::string& open : {std::string("{a"), std::string("[")}) {
    std::string text;
    if (open == "[") {
      text = "{ f(x: " + std::string(200000, '[') + std::string(200000, ']') + ") }";
    } else {
      for (int i = 0; i < 200000; ++i) text += "{a";
      text += std::string(200000, '}');
      text = "query Q " + text.substr(2);
    }
    auto doc = Parse(text);
    ASSERT_FALSE(doc.ok());
    EXPECT_NE(doc.status().message().find("nested more than"), std::string::npos)
        << doc.status().message();
  }
  std::string objects = "{ f(x: ";
  for (int i = 0; i < 100000; ++i) objects += "{a: ";
  auto doc = Parse(objects);
  ASSERT_FALSE(doc.ok());
  // Within the limit it parses.
  std::string ok = "{ f(x: " + std::string(40, '[') + std::string(40, ']') + ") }";
  EXPECT_TRUE(Parse(ok).ok());
}

TEST(GraphqlParser, HugeInputsAreBounded) {
  std::string big(8 << 20, 'x');
  auto doc = Parse("{ f(s: \"" + big + "\") }");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("String too long"), std::string::npos);

  ParseLimits small;
  small.max_tokens = 1000;
  std::string many = "{";
  for (int i = 0; i < 2000; ++i) many += " a";
  many += " }";
  auto tokens = Parse(many, small);
  ASSERT_FALSE(tokens.ok());
  EXPECT_NE(tokens.status().message().find("tokens"), std::string::npos);

  std::string name(1 << 20, 'n');  // one long name is fine
  EXPECT_TRUE(Parse("{ " + name + " }").ok());
}

TEST(GraphqlParser, BinaryGarbageNeverCrashes) {
  uint32_t state = 12345;
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    int n = int(state % 200);
    for (int i = 0; i < n; ++i) {
      state = state * 1103515245 + 12345;
      static constexpr char kAlphabet[] = "{}()[]:$@!.=\"\\#,\n aZ_09-eE|&\x01\xff";
      text.push_back(kAlphabet[(state >> 16) % (sizeof(kAlphabet) - 1)]);
    }
    auto doc = Parse(text);  // must return, ok or not
    if (!doc.ok()) {
      EXPECT_EQ(doc.status().code(), StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace cohort::compat::gql
