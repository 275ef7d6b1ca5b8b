// The schema of both SQL stores: one list of migrations, each written once and rendered for the
// engine (sql_dialect.h RenderSchema), and the runner that brings a database to the latest
// version. The schema_version table holds the version a database is at; Migrate() applies every
// newer migration in one write transaction that first takes the engine's migration lock (SQLite:
// the write transaction itself; PostgreSQL: an advisory lock), so that several servers opening
// one database at once apply each migration exactly once and a crash leaves a database at some
// complete version. A database at a newer version than this build knows is refused.
//
// Policy (docs/operations.md, "Schema versions"): the list starts at the pre-release baseline,
// version 1; every format change that ships from now on is a new migration, never an edit of a
// shipped one, and comes with a test that upgrades a database written by the version before.
//
// Threading: pure functions; Migrate runs on the caller's connection.
#pragma once

#include <cstdint>
#include <functional>

#include "cohort/status.h"
#include "store/sql/sql_conn.h"
#include "store/sql/sql_dialect.h"

namespace cohort::store::sql {

// The version this build writes.
int64_t LatestSchemaVersion();

// PostgreSQL: dead rows of chunks_tail between two VACUUMs of it, both the store's own
// (PostgresStore) and autovacuum's per-table threshold in the schema ({{tail_vacuum_rows}}).
inline constexpr int64_t kTailVacuumRows = 1000;

// The DDL of migration `version` (1..LatestSchemaVersion()) for `engine`.
std::string SchemaScript(int64_t version, Engine engine);

// How Migrate reaches the database: `read` runs a single-statement read, `write` one write
// transaction (sql_store.h Access).
struct MigrationRunner {
  std::function<Status(const std::function<Status(Conn&)>&)> read;
  std::function<Status(const std::function<Status(Conn&)>&)> write;
};

// Brings the database to LatestSchemaVersion(). kFailedPrecondition when it is newer.
Status Migrate(Engine engine, const MigrationRunner& runner);

// The version the database is at (0 for an empty database); on a connection.
Result<int64_t> SchemaVersion(Conn& conn);

}  // namespace cohort::store::sql
