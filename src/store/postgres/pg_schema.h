// Versioned schema migrations of the PostgreSQL store. The schema_version table holds the version
// the database is at; Migrate() applies every newer migration in order, each in its own
// transaction that first takes a transaction-scoped advisory lock, so that several servers
// starting at once against one database apply each migration exactly once (the others wait,
// then see the new version and skip it).
//
// Threading: call with a connection the caller owns and that is not inside a transaction.
#pragma once

#include <cstdint>

#include "cohort/status.h"
#include "store/postgres/pg_conn.h"

namespace cohort::store::pg {

// The version this build writes; a database at a newer version is refused.
int64_t LatestSchemaVersion();

// The advisory lock key held while migrating (pg_advisory_xact_lock).
inline constexpr int64_t kMigrationLockKey = 0x636f686f72740001;  // "cohort" 0001

// Brings the database to LatestSchemaVersion(). kFailedPrecondition when it is newer.
Status Migrate(Conn* conn);

// The version the database is at (0 for an empty database).
Result<int64_t> SchemaVersion(Conn* conn);

}  // namespace cohort::store::pg
