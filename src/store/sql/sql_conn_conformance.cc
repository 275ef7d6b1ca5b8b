#include "store/sql/sql_conn_conformance.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cohort::store::sql::conn_cases {
namespace {

using IntPair = std::pair<int64_t, int64_t>;

}  // namespace

void CreateTable(Conn& conn, Engine engine) {
  const Status s = conn.ExecScript(RenderSchema(
      "CREATE TABLE t (pk {{pk}}, name {{key}} UNIQUE, flag {{bool}}, v {{real}}, n {{int}}, "
      "data {{blob}}, doc {{json}})",
      engine));
  ASSERT_TRUE(s.ok()) << s.ToString();
}

void ParametersBindByTypeAndRowsReadThemBack(Conn& conn) {
  const std::string blob("a\0b", 3);
  // $1 used twice; a NULL integer; a boolean; a blob with a NUL byte; JSON.
  Result<int64_t> inserted = conn.Exec(
      "INSERT INTO t (name, flag, v, n, data, doc) VALUES ($1, $2, $3, $4, $5, $6), "
      "($1 || '-copy', false, NULL, 7, $5, '[]')",
      Params().Add("row").Add(true).Add(2.5).AddNull(Type::kInt).AddBlob(blob).AddJson(
          R"(["x"])"));
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  EXPECT_EQ(*inserted, 2);

  Result<std::unique_ptr<Rows>> rows =
      conn.Query("SELECT name, flag, v, n, data, doc FROM t ORDER BY pk");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  Rows& r = **rows;
  ASSERT_TRUE(r.Next().value());
  EXPECT_EQ(r.Text(0), "row");
  EXPECT_EQ(r.Int(1), 1);  // booleans read as 0/1
  EXPECT_EQ(r.Double(2), 2.5);
  EXPECT_TRUE(r.IsNull(3));
  EXPECT_EQ(r.OptInt(3), std::nullopt);
  EXPECT_EQ(r.Bytes(4), blob);
  EXPECT_EQ(r.Text(5), R"(["x"])");
  ASSERT_TRUE(r.Next().value());
  EXPECT_EQ(r.Text(0), "row-copy");
  EXPECT_EQ(r.Int(1), 0);
  EXPECT_TRUE(std::isnan(r.Double(2)));  // NULL reads as NaN
  EXPECT_EQ(r.OptInt(3), 7);
  EXPECT_EQ(r.Text(5), "[]");
  EXPECT_FALSE(r.Next().value());
}

void StoredDoublesKeepTheirBits(Conn& conn) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double v : {-0.0, 0.0, nan, -1.5, std::numeric_limits<double>::infinity()}) {
    ASSERT_TRUE(conn.Exec("DELETE FROM t").ok());
    ASSERT_TRUE(conn.Exec("INSERT INTO t (v) VALUES ($1)", Params().AddStored(v)).ok());
    Result<double> got = QueryOne<double>(
        conn, "SELECT v FROM t", Params(), [](const Row& row) { return row.Double(0); },
        Status::NotFound("no row"));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(*got));
    } else {
      EXPECT_EQ(*got, v);
      EXPECT_EQ(std::signbit(*got), std::signbit(v)) << v;
    }
  }
}

void ArrayParametersMatchWithAnyAndAll(Conn& conn) {
  for (const char* name : {"a", "b", "c", "d"}) {
    ASSERT_TRUE(
        conn.Exec("INSERT INTO t (name, n, v) VALUES ($1, 1, 0.5)", Params().Add(name)).ok());
  }
  auto names = [&](const std::string& where, const Params& params) {
    Result<std::vector<std::string>> out = QueryAll<std::string>(
        conn, "SELECT name FROM t WHERE " + where + " ORDER BY name", params,
        [](const Row& row) { return row.Text(0); }, Prepare::kOnce);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    return out.ok() ? *out : std::vector<std::string>{"<error>"};
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names("name = ANY($1)", Params().AddTextArray({"b", "d", "zz", "it's"})),
            (V{"b", "d"}));
  EXPECT_EQ(names("name <> ALL($1)", Params().AddTextArray({"b"})), (V{"a", "c", "d"}));
  const int64_t first = QueryInt(conn, "SELECT min(pk) FROM t").value();
  EXPECT_EQ(names("pk = ANY($1)", Params().AddArray(std::vector<int64_t>{first, first + 2})),
            (V{"a", "c"}));
  EXPECT_EQ(names("v = ANY($1)", Params().AddArray(std::vector<double>{0.5})),
            (V{"a", "b", "c", "d"}));
  EXPECT_EQ(names("name = ANY($1)", Params().AddTextArray({})), V{});
}

void UpsertReturningAndChangedRowCounts(Conn& conn) {
  const char* upsert =
      "INSERT INTO t (name, n) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET "
      "n = greatest(t.n, excluded.n) RETURNING pk, n";
  auto read = [](const Row& row) { return IntPair(row.Int(0), row.Int(1)); };
  Result<IntPair> first =
      QueryOne<IntPair>(conn, upsert, Params().Add("k").Add(5), read, Status::NotFound("none"));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Result<IntPair> second =
      QueryOne<IntPair>(conn, upsert, Params().Add("k").Add(3), read, Status::NotFound("none"));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->first, first->first);  // the same row
  EXPECT_EQ(second->second, 5);            // greatest() kept the larger value
  EXPECT_EQ(
      conn.Exec("UPDATE t SET n = least(n, $1) WHERE name = $2", Params().Add(1).Add("k")).value(),
      1);
  EXPECT_EQ(conn.Exec("UPDATE t SET n = 0 WHERE name = $1", Params().Add("missing")).value(), 0);
  EXPECT_EQ(QueryInt(conn, "SELECT n FROM t WHERE name = $1", Params().Add("k")).value(), 1);
  EXPECT_EQ(QueryInt(conn, "SELECT n FROM t WHERE name = 'none'").value(), 0);  // no row: 0
  Result<int64_t> missing = QueryOne<int64_t>(
      conn, "SELECT n FROM t WHERE name = 'none' FOR UPDATE", Params(),
      [](const Row& row) { return row.Int(0); }, Status::NotFound("none here"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "none here");
}

void ScanStopsAtTheFirstErrorOfItsCallback(Conn& conn) {
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(conn.Exec("INSERT INTO t (n) VALUES ($1)", Params().Add(i)).ok());
  }
  ASSERT_TRUE(conn.ExecScript("BEGIN").ok());  // PostgreSQL scans through a cursor
  int64_t sum = 0;
  Status all = conn.Scan("SELECT n FROM t ORDER BY n", [&](const Row& row) -> Status {
    sum += row.Int(0);
    return Status::Ok();
  });
  EXPECT_TRUE(all.ok()) << all.ToString();
  EXPECT_EQ(sum, 10);
  ASSERT_TRUE(conn.ExecScript("COMMIT").ok());
  ASSERT_TRUE(conn.ExecScript("BEGIN").ok());
  int seen = 0;
  Status stopped = conn.Scan("SELECT n FROM t ORDER BY n", [&](const Row& row) -> Status {
    ++seen;
    if (row.Int(0) == 2) return Status::Internal("stop at 2");
    return Status::Ok();
  });
  EXPECT_EQ(stopped.code(), StatusCode::kInternal);
  EXPECT_EQ(seen, 3);
  ASSERT_TRUE(conn.ExecScript("ROLLBACK").ok());
  // An SQL error names what it is about.
  Result<int64_t> bad = conn.Exec("INSERT INTO missing_table (x) VALUES ($1)", Params().Add(1));
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("missing_table"), std::string::npos)
      << bad.status().ToString();
}

}  // namespace cohort::store::sql::conn_cases
