// Where SQLite's and PostgreSQL's SQL differ for the shared store: the rendering of shared
// statements for SQLite, and the rendering of the schema (sql_schema.cc) for either engine.
// Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace cohort::store::sql {

enum class Engine { kSqlite, kPostgres };

// The engine's name in dumps and messages: "sqlite" | "postgres".
std::string_view EngineName(Engine engine);

// A statement in the shared syntax (sql_conn.h) as SQLite runs it: $n -> ?n, greatest( / least(
// -> max( / min(, strpos( -> instr(, `x = ANY($n)` -> `x IN (SELECT value FROM json_each(?n))`,
// `x <> ALL($n)` -> `x NOT IN (...)` (array parameters bind as JSON arrays), and `FOR UPDATE`
// or `FOR NO KEY UPDATE` [OF t, ...] dropped (a SQLite write transaction excludes every other writer already). Text in quotes is
// left as it is.
std::string RenderForSqlite(std::string_view sql);

// Schema text for one engine. {{token}} names a type or table option:
//   {{pk}}    the integer primary key (SQLite: rowid; PostgreSQL: identity)
//   {{serial}} an integer primary key never given twice, even after the highest row is deleted
//             (SQLite: AUTOINCREMENT; PostgreSQL: identity): ids other rows or readers keep
//   {{int}}   64-bit integer          {{real}}  double
//   {{text}}  text                    {{key}}   text compared and sorted bytewise
//   {{blob}}  bytes                   {{bool}}  boolean (SQLite: 0/1)
//   {{json}}  JSON (PostgreSQL: jsonb, for filters; SQLite: text)
//   {{hot}}   options of rows updated by every ingest (PostgreSQL: fillfactor 70)
//   {{norowid}} options of tables keyed by their primary key alone (SQLite: WITHOUT ROWID)
// A line that starts with "pg: " or "sqlite: " belongs to that engine only. `values` names the
// schema's own constants ({{name}} -> its text, e.g. a threshold the code uses too), the same
// for both engines.
std::string RenderSchema(
    std::string_view ddl, Engine engine,
    const std::map<std::string, std::string, std::less<>>& values = {});

}  // namespace cohort::store::sql
