// The Store conformance suite (src/store/store_conformance.h) against PostgresStore: each case
// gets a fresh database in the binary's throwaway cluster (pg_environment.h).
#include "pg_environment.h"
#include "store/postgres/pg_store.h"
#include "store/store_conformance.h"

namespace cohort::store {
namespace {

// A fresh database per test case, dropped afterwards. Single-threaded.
class PostgresTarget : public StoreTarget {
 public:
  PostgresTarget() : db_(pg::FreshDatabase()) {}
  ~PostgresTarget() override {
    if (!db_.empty() && pg::TestCluster() != nullptr) (void)pg::TestCluster()->DropDatabase(db_);
  }
  Result<std::unique_ptr<Store>> Open() override {
    if (db_.empty()) return Status::Unavailable("no database: " + pg::TestClusterError());
    COHORT_ASSIGN_OR_RETURN(auto store,
                            PostgresStore::OpenUrl(pg::TestCluster()->Url(db_, "pool_size=8")));
    return std::unique_ptr<Store>(std::move(store));
  }

 private:
  std::string db_;
};

COHORT_INSTANTIATE_STORE_CONFORMANCE(
    Postgres, (StoreBackend{"postgres", [] { return std::make_unique<PostgresTarget>(); }}));

}  // namespace
}  // namespace cohort::store
