// Versioned schema migrations of the SQLite store. The schema_version table holds the version a
// database is at; Migrate() applies every newer migration in order, each in its own write
// transaction, so that a crash mid-way leaves a database at some complete version.
//
// Threading: call on the store's write connection while no one else uses it.
#pragma once

#include <cstdint>

#include "cohort/status.h"
#include "store/sqlite/sqlite_db.h"

namespace cohort::store::sqlite {

// The version this build writes; a database at a newer version is refused.
int64_t LatestSchemaVersion();

// Brings `db` to LatestSchemaVersion(). kFailedPrecondition when the database is newer.
Status Migrate(Db* db);

// The version `db` is at (0 for an empty database).
Result<int64_t> SchemaVersion(Db* db);

}  // namespace cohort::store::sqlite
