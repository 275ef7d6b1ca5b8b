// SqlStore: alert webhooks and their delivery log (the alert_webhooks, alert_deliveries and
// alert_delivery_cursor tables, sql_schema.cc; store.h WebhookStore).
//
// Exactly one sender per attempt: a delivery is claimed by a conditional UPDATE (pending, due,
// not claimed or its claim expired) whose affected rows decide who sends it. On SQLite the write
// transaction excludes every other writer; on PostgreSQL (READ COMMITTED) a concurrent claim of
// the same row waits for the first to commit and then re-checks the condition, which no longer
// holds, so it updates nothing.
#include "core/clock.h"
#include "store/sql/sql_store.h"
#include "store/webhook_checks.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

namespace {

constexpr const char* kWebhookColumns =
    "id, entity, project, name, url, format, secret, min_level, enabled, created_ms";

WebhookRecord ReadWebhook(const Row& row) {
  WebhookRecord w;
  w.id = row.Int(0);
  w.entity = row.Text(1);
  w.project = row.Text(2);
  w.name = row.Text(3);
  w.url = row.Text(4);
  w.format = row.Text(5);
  w.secret = row.Text(6);
  w.min_level = row.Text(7);
  w.enabled = row.Int(8) != 0;
  w.created_ms = row.Int(9);
  return w;
}

constexpr const char* kDeliveryColumns =
    "id, webhook_id, entity, project, event_id, alert_id, event_kind, state, attempts, "
    "next_attempt_ms, last_status, last_error, claimed_by, claim_until_ms, delivered_ms, "
    "created_ms";

DeliveryRecord ReadDelivery(const Row& row) {
  DeliveryRecord d;
  d.id = row.Int(0);
  d.webhook_id = row.Int(1);
  d.entity = row.Text(2);
  d.project = row.Text(3);
  d.event_id = row.Int(4);
  d.alert_id = row.Int(5);
  d.event_kind = row.Text(6);
  d.state = row.Text(7);
  d.attempts = row.Int(8);
  d.next_attempt_ms = row.Int(9);
  d.last_status = row.OptInt(10);
  d.last_error = row.Text(11);
  d.claimed_by = row.Text(12);
  d.claim_until_ms = row.Int(13);
  d.delivered_ms = row.OptInt(14);
  d.created_ms = row.Int(15);
  return d;
}

// Unique-name violations surface as kAlreadyExists from both engines' connections.
bool IsConflict(const Status& s) { return s.code() == StatusCode::kAlreadyExists; }

}  // namespace

Result<WebhookRecord> SqlStore::CreateWebhook(const WebhookRecord& w) {
  COHORT_RETURN_IF_ERROR(ValidateWebhook(w));
  const int64_t now = w.created_ms > 0 ? w.created_ms : NowMillis();
  static const std::string kSql =
      std::string(
          "INSERT INTO alert_webhooks (entity, project, name, url, format, secret, min_level, "
          "enabled, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
          "ON CONFLICT DO NOTHING RETURNING ") +
      kWebhookColumns;
  return RunFor<WebhookRecord>(Access::kWrite, [&](Conn& conn) {
    return sql::QueryOne<WebhookRecord>(conn, kSql,
                                        Params()
                                            .Add(w.entity)
                                            .Add(w.project)
                                            .Add(w.name)
                                            .Add(w.url)
                                            .Add(w.format)
                                            .Add(w.secret)
                                            .Add(w.min_level)
                                            .Add(w.enabled)
                                            .Add(now),
                                        ReadWebhook, WebhookNameTaken(w));
  });
}

Result<WebhookRecord> SqlStore::GetWebhook(const std::string& entity, const std::string& project,
                                           int64_t id) {
  static const std::string kSql = std::string("SELECT ") + kWebhookColumns +
                                  " FROM alert_webhooks WHERE entity = $1 AND project = $2 AND "
                                  "id = $3";
  return RunFor<WebhookRecord>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryOne<WebhookRecord>(conn, kSql, Params().Add(entity).Add(project).Add(id),
                                        ReadWebhook, WebhookNotFound(entity, project, id));
  });
}

Result<std::vector<WebhookRecord>> SqlStore::ListWebhooks(const std::string& entity,
                                                          const std::string& project) {
  static const std::string kSql = std::string("SELECT ") + kWebhookColumns +
                                  " FROM alert_webhooks WHERE entity = $1 AND project = $2 "
                                  "ORDER BY name, id";
  using Out = std::vector<WebhookRecord>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryAll<WebhookRecord>(conn, kSql, Params().Add(entity).Add(project), ReadWebhook);
  });
}

Result<WebhookRecord> SqlStore::UpdateWebhook(const WebhookRecord& w, bool set_secret) {
  COHORT_RETURN_IF_ERROR(ValidateWebhook(w));
  static const std::string kSql =
      std::string(
          "UPDATE alert_webhooks SET name = $4, url = $5, format = $6, min_level = $7, "
          "enabled = $8, secret = CASE WHEN $9 THEN $10 ELSE secret END "
          "WHERE entity = $1 AND project = $2 AND id = $3 RETURNING ") +
      kWebhookColumns;
  Result<WebhookRecord> updated =
      RunFor<WebhookRecord>(Access::kWrite, [&](Conn& conn) -> Result<WebhookRecord> {
        COHORT_ASSIGN_OR_RETURN(
            int64_t clash,
            sql::QueryInt(conn,
                          "SELECT 1 FROM alert_webhooks WHERE entity = $1 AND project = $2 AND "
                          "name = $3 AND id <> $4",
                          Params().Add(w.entity).Add(w.project).Add(w.name).Add(w.id)));
        if (clash != 0) return WebhookNameTaken(w);
        return sql::QueryOne<WebhookRecord>(conn, kSql,
                                            Params()
                                                .Add(w.entity)
                                                .Add(w.project)
                                                .Add(w.id)
                                                .Add(w.name)
                                                .Add(w.url)
                                                .Add(w.format)
                                                .Add(w.min_level)
                                                .Add(w.enabled)
                                                .Add(set_secret)
                                                .Add(w.secret),
                                            ReadWebhook,
                                            WebhookNotFound(w.entity, w.project, w.id));
      });
  // A rename racing another server's create of the same name.
  if (!updated.ok() && IsConflict(updated.status())) return WebhookNameTaken(w);
  return updated;
}

Status SqlStore::DeleteWebhook(const std::string& entity, const std::string& project, int64_t id) {
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    // The delivery log goes with it (ON DELETE CASCADE; SQLite's foreign keys are on).
    COHORT_RETURN_IF_ERROR(
        conn.Exec("DELETE FROM alert_deliveries WHERE webhook_id = (SELECT id FROM "
                  "alert_webhooks WHERE entity = $1 AND project = $2 AND id = $3)",
                  Params().Add(entity).Add(project).Add(id))
            .status());
    COHORT_ASSIGN_OR_RETURN(
        int64_t deleted,
        conn.Exec("DELETE FROM alert_webhooks WHERE entity = $1 AND project = $2 AND id = $3",
                  Params().Add(entity).Add(project).Add(id)));
    if (deleted == 0) return WebhookNotFound(entity, project, id);
    return Status::Ok();
  });
}

Result<int64_t> SqlStore::GetDeliveryCursor() {
  return RunFor<int64_t>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryInt(conn, "SELECT last_event_id FROM alert_delivery_cursor WHERE id = 1");
  });
}

Result<int64_t> SqlStore::EnqueueDeliveries(const std::vector<DeliveryIntent>& intents,
                                            int64_t cursor) {
  // The SELECT's WHERE also keeps SQLite from reading ON CONFLICT as a join's ON.
  static const std::string kInsert =
      "INSERT INTO alert_deliveries (webhook_id, entity, project, event_id, alert_id, "
      "event_kind, next_attempt_ms, created_ms) SELECT id, entity, project, $2, $3, $4, $5, $5 "
      "FROM alert_webhooks WHERE id = $1 AND entity = $6 AND project = $7 "
      "ON CONFLICT (webhook_id, event_id) DO NOTHING";
  return RunFor<int64_t>(Access::kWrite, [&](Conn& conn) -> Result<int64_t> {
    int64_t added = 0;
    for (const DeliveryIntent& in : intents) {
      COHORT_ASSIGN_OR_RETURN(int64_t n, conn.Exec(kInsert, Params()
                                                                .Add(in.webhook_id)
                                                                .Add(in.event_id)
                                                                .Add(in.alert_id)
                                                                .Add(in.event_kind)
                                                                .Add(in.now_ms)
                                                                .Add(in.entity)
                                                                .Add(in.project)));
      added += n;
    }
    COHORT_RETURN_IF_ERROR(conn.Exec("UPDATE alert_delivery_cursor SET last_event_id = "
                                     "greatest(last_event_id, $1) WHERE id = 1",
                                     Params().Add(cursor))
                               .status());
    return added;
  });
}

Result<std::vector<DeliveryRecord>> SqlStore::ClaimDeliveries(
    const std::string& owner, int64_t now_ms, int64_t lease_ms, int limit,
    const std::vector<int64_t>& skip_webhooks) {
  std::string due_sql =
      "SELECT id FROM alert_deliveries WHERE state = 'pending' AND next_attempt_ms <= $1 AND "
      "claim_until_ms <= $1";
  Params due_params;
  due_params.Add(now_ms);
  if (!skip_webhooks.empty()) {
    due_sql += " AND webhook_id NOT IN (";
    for (size_t i = 0; i < skip_webhooks.size(); ++i) {
      due_sql += (i ? ", $" : "$") + std::to_string(i + 2);
      due_params.Add(skip_webhooks[i]);
    }
    due_sql += ")";
  }
  // A few candidates more than `limit`: another server may claim some between the read and the
  // claim (a caller asking for one delivery would otherwise get none while others are due).
  constexpr int64_t kSpare = 8;
  due_sql += " ORDER BY next_attempt_ms, id LIMIT $" + std::to_string(skip_webhooks.size() + 2);
  due_params.Add(int64_t{limit} + kSpare);
  // The claim: the row counts only when this UPDATE changed it (RETURNING yields no row when a
  // concurrent claim got there first and the condition no longer holds).
  static const std::string kClaim =
      std::string(
          "UPDATE alert_deliveries SET claimed_by = $2, claim_until_ms = $3 WHERE id = $1 AND "
          "state = 'pending' AND next_attempt_ms <= $4 AND claim_until_ms <= $4 RETURNING ") +
      kDeliveryColumns;
  using Out = std::vector<DeliveryRecord>;
  using Ids = std::vector<int64_t>;
  // Every server asks about once a second: the common answer, nothing due, takes no write
  // transaction.
  COHORT_ASSIGN_OR_RETURN(Ids due, RunFor<Ids>(Access::kReadOne, [&](Conn& conn) {
                            return sql::QueryAll<int64_t>(
                                conn, due_sql, due_params,
                                [](const Row& row) { return row.Int(0); });
                          }));
  if (due.empty() || limit <= 0) return Out{};
  return RunFor<Out>(Access::kWrite, [&](Conn& conn) -> Result<Out> {
    Out claimed;
    for (int64_t id : due) {
      if (claimed.size() >= size_t(limit)) break;
      COHORT_ASSIGN_OR_RETURN(
          Out got, sql::QueryAll<DeliveryRecord>(
                       conn, kClaim, Params().Add(id).Add(owner).Add(now_ms + lease_ms).Add(now_ms),
                       ReadDelivery));
      for (DeliveryRecord& d : got) claimed.push_back(std::move(d));
    }
    return claimed;
  });
}

Result<bool> SqlStore::FinishDelivery(int64_t id, const std::string& owner,
                                      const DeliveryAttempt& a) {
  static const std::string kSql =
      "UPDATE alert_deliveries SET attempts = attempts + 1, last_status = $3, last_error = $4, "
      "state = $5, next_attempt_ms = $6, delivered_ms = $7, claimed_by = '', claim_until_ms = 0 "
      "WHERE id = $1 AND claimed_by = $2 AND state = 'pending'";
  const char* state = a.delivered ? "delivered" : (a.retry_at_ms ? "pending" : "failed");
  const int64_t next = (!a.delivered && a.retry_at_ms) ? *a.retry_at_ms : a.now_ms;
  std::optional<int64_t> delivered_ms;
  if (a.delivered) delivered_ms = a.now_ms;
  return RunFor<bool>(Access::kWrite, [&](Conn& conn) -> Result<bool> {
    COHORT_ASSIGN_OR_RETURN(
        int64_t n,
        conn.Exec(kSql,
                  Params().Add(id).Add(owner).Add(a.status).Add(a.error).Add(state).Add(next).Add(
                      delivered_ms)));
    return n > 0;
  });
}

Result<std::vector<DeliveryRecord>> SqlStore::ListDeliveries(const std::string& entity,
                                                             const std::string& project,
                                                             int64_t webhook_id, int limit) {
  static const std::string kSql =
      std::string("SELECT ") + kDeliveryColumns +
      " FROM alert_deliveries WHERE webhook_id = (SELECT id FROM alert_webhooks WHERE "
      "entity = $1 AND project = $2 AND id = $3) ORDER BY id DESC LIMIT $4";
  using Out = std::vector<DeliveryRecord>;
  return RunFor<Out>(Access::kRead, [&](Conn& conn) -> Result<Out> {
    COHORT_ASSIGN_OR_RETURN(
        int64_t found,
        sql::QueryInt(conn,
                      "SELECT count(*) FROM alert_webhooks WHERE entity = $1 AND project = $2 "
                      "AND id = $3",
                      Params().Add(entity).Add(project).Add(webhook_id)));
    if (found == 0) return WebhookNotFound(entity, project, webhook_id);
    return sql::QueryAll<DeliveryRecord>(
        conn, kSql, Params().Add(entity).Add(project).Add(webhook_id).Add(int64_t{limit}),
        ReadDelivery);
  });
}

Result<std::vector<DeliveryRecord>> SqlStore::ListProjectDeliveries(const std::string& entity,
                                                                    const std::string& project,
                                                                    std::optional<int64_t> alert_id,
                                                                    int limit) {
  static const std::string kAll = std::string("SELECT ") + kDeliveryColumns +
                                  " FROM alert_deliveries WHERE entity = $1 AND project = $2 "
                                  "ORDER BY id DESC LIMIT $3";
  static const std::string kOfAlert = std::string("SELECT ") + kDeliveryColumns +
                                      " FROM alert_deliveries WHERE entity = $1 AND "
                                      "project = $2 AND alert_id = $4 ORDER BY id DESC LIMIT $3";
  using Out = std::vector<DeliveryRecord>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    Params params = Params().Add(entity).Add(project).Add(int64_t{limit});
    if (alert_id) params.Add(*alert_id);
    return sql::QueryAll<DeliveryRecord>(conn, alert_id ? kOfAlert : kAll, params, ReadDelivery);
  });
}

}  // namespace cohort::store
