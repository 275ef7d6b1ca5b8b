// SqlStore: alert rules, alerts and their events (the alert_rules, alert_rule_defaults, alerts
// and alert_events tables, sql_schema.cc), written once for both engines.
#include <string>
#include <vector>

#include "core/clock.h"
#include "store/run_ref.h"
#include "store/sql/sql_store.h"

namespace cohort::store {

using sql::Conn;
using sql::Params;
using sql::Row;

namespace {

// pg_advisory_xact_lock key that orders alert event appends across servers ("cohort" 0a1e).
constexpr int64_t kAlertEventLockKey = 0x636f686f72740a1e;

constexpr const char* kAlertColumns =
    "id, entity, project, run_id, writer_label, rule_id, source, condition_key, level, title, "
    "text, evidence_json, state, opened_ms, resolved_ms, acked_ms, acked_by, last_seen_ms, count";
constexpr const char* kRuleColumns =
    "id, entity, project, name, kind, spec_json, level, enabled, builtin, created_ms, updated_ms";

AlertRecord ReadAlert(const Row& row) {
  AlertRecord a;
  a.id = row.Int(0);
  a.entity = row.Text(1);
  a.project = row.Text(2);
  a.run_id = row.Text(3);
  a.writer_label = row.Text(4);
  a.rule_id = row.OptInt(5);
  a.source = row.Text(6);
  a.condition_key = row.Text(7);
  a.level = row.Text(8);
  a.title = row.Text(9);
  a.text = row.Text(10);
  a.evidence_json = row.Text(11);
  a.state = row.Text(12);
  a.opened_ms = row.Int(13);
  a.resolved_ms = row.OptInt(14);
  a.acked_ms = row.OptInt(15);
  if (!row.IsNull(16)) a.acked_by = row.Text(16);
  a.last_seen_ms = row.Int(17);
  a.count = row.Int(18);
  return a;
}

AlertRule ReadRule(const Row& row) {
  AlertRule r;
  r.id = row.Int(0);
  r.entity = row.Text(1);
  r.project = row.Text(2);
  r.name = row.Text(3);
  r.kind = row.Text(4);
  r.spec_json = row.Text(5);
  r.level = row.Text(6);
  r.enabled = row.Int(7) != 0;
  r.builtin = row.Int(8) != 0;
  r.created_ms = row.Int(9);
  r.updated_ms = row.Int(10);
  return r;
}

AlertEvent ReadEvent(const Row& row) {
  return AlertEvent{.id = row.Int(0),
                    .entity = row.Text(1),
                    .project = row.Text(2),
                    .alert_id = row.Int(3),
                    .kind = row.Text(4),
                    .created_ms = row.Int(5)};
}

bool IsLevel(const std::string& level) {
  return level == "INFO" || level == "WARN" || level == "ERROR";
}

Status CheckRaise(const AlertRaise& r) {
  if (r.entity.empty() || r.project.empty() || r.run_id.empty()) {
    return Status::InvalidArgument("alert: entity, project and run must be set");
  }
  if (r.source != "rule" && r.source != "code") {
    return Status::InvalidArgument("source: expected 'rule' or 'code', got '" + r.source + "'");
  }
  if (!IsLevel(r.level)) {
    return Status::InvalidArgument("level: expected INFO, WARN or ERROR, got '" + r.level + "'");
  }
  if (r.condition_key.empty()) return Status::InvalidArgument("condition: must not be empty");
  if (r.title.empty()) return Status::InvalidArgument("title: must not be empty");
  return Status::Ok();
}

Status CheckRule(const AlertRule& r) {
  if (r.name.empty()) return Status::InvalidArgument("name: must not be empty");
  if (r.kind.empty()) return Status::InvalidArgument("kind: must not be empty");
  if (!IsLevel(r.level)) {
    return Status::InvalidArgument("level: expected INFO, WARN or ERROR, got '" + r.level + "'");
  }
  return Status::Ok();
}

Status AlertNotFound(const std::string& entity, const std::string& project, int64_t id) {
  return Status::NotFound("alert " + std::to_string(id) + " not found in " + entity + "/" +
                          project);
}
Status RuleNotFound(const std::string& entity, const std::string& project, int64_t id) {
  return Status::NotFound("alert rule " + std::to_string(id) + " not found in " + entity + "/" +
                          project);
}
Status RuleNameTaken(const AlertRule& r) {
  return Status::AlreadyExists("name: the project has an alert rule named '" + r.name + "'");
}

const std::string& SelectOpen() {
  static const std::string kSql =
      std::string("SELECT ") + kAlertColumns +
      " FROM alerts WHERE entity = $1 AND project = $2 AND run_id = $3 AND writer_label = $4 "
      "AND condition_key = $5 AND state = 'open' FOR UPDATE";
  return kSql;
}

Result<std::optional<AlertRecord>> LoadOpen(Conn& conn, const std::string& entity,
                                            const std::string& project, const std::string& run_id,
                                            const std::string& label, const std::string& key) {
  COHORT_ASSIGN_OR_RETURN(
      std::vector<AlertRecord> open,
      sql::QueryAll<AlertRecord>(conn, SelectOpen(),
                                 Params().Add(entity).Add(project).Add(run_id).Add(label).Add(key),
                                 ReadAlert));
  if (open.empty()) return std::optional<AlertRecord>();
  return std::optional<AlertRecord>(std::move(open.front()));
}

// Bumps the open alert `a` with what `r` saw: its title, text and evidence are the latest (a
// run's "3 writers crashed" revised to "2 writers crashed" when one came back).
Result<AlertRecord> Bump(Conn& conn, const AlertRecord& a, const AlertRaise& r) {
  static const std::string kSql =
      std::string(
          "UPDATE alerts SET count = count + 1, last_seen_ms = greatest(last_seen_ms, $1), "
          "evidence_json = $2, title = $3, text = $4 WHERE id = $5 RETURNING ") +
      kAlertColumns;
  return sql::QueryOne<AlertRecord>(
      conn, kSql, Params().Add(r.now_ms).Add(r.evidence_json).Add(r.title).Add(r.text).Add(a.id),
      ReadAlert, Status::Internal("alert vanished while bumped"));
}

}  // namespace

Status SqlStore::AppendAlertEvent(Conn& conn, const std::string& entity, const std::string& project,
                                  int64_t alert_id, const char* kind, int64_t now_ms) {
  if (engine() == sql::Engine::kPostgres) {
    // Held to commit: the next appender gets a higher id and commits after us.
    COHORT_RETURN_IF_ERROR(
        conn.Exec("SELECT pg_advisory_xact_lock($1)", Params().Add(kAlertEventLockKey)).status());
  }
  return conn
      .Exec(
          "INSERT INTO alert_events (entity, project, alert_id, kind, created_ms) "
          "VALUES ($1, $2, $3, $4, $5)",
          Params().Add(entity).Add(project).Add(alert_id).Add(kind).Add(now_ms))
      .status();
}

namespace {
// Whether `select` (a SELECT of one row with a row lock) finds its row, locked to the
// transaction's end.
Result<bool> LockedRowExists(Conn& conn, const std::string& select, const Params& params) {
  COHORT_ASSIGN_OR_RETURN(
      std::vector<int64_t> rows,
      sql::QueryAll<int64_t>(conn, select, params, [](const Row& row) { return row.Int(0); }));
  return !rows.empty();
}

Status RuleGone(int64_t rule_id) {
  return Status::FailedPrecondition("alert rule " + std::to_string(rule_id) +
                                    " was deleted or disabled: no alert opened");
}
}  // namespace

Result<std::pair<AlertRecord, bool>> SqlStore::RaiseAlert(const AlertRaise& r) {
  COHORT_RETURN_IF_ERROR(CheckRaise(r));
  static const std::string kInsert =
      std::string(
          "INSERT INTO alerts (entity, project, run_id, writer_label, rule_id, source, "
          "condition_key, level, title, text, evidence_json, state, opened_ms, last_seen_ms, "
          "count) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'open', $12, $12, 1) "
          "ON CONFLICT DO NOTHING RETURNING ") +
      kAlertColumns;
  using Out = std::pair<AlertRecord, bool>;
  return RunFor<Out>(Access::kWrite, [&](Conn& conn) -> Result<Out> {
    // A run deleted, or a rule deleted or disabled, since the caller saw it (a code alert
    // checked its writer, a rule alert's batch committed, another server's cached rules) opens
    // nothing: its deletion resolved its alerts already and would never see this one. Their rows
    // stay locked (shared) to commit, so a deletion or a disabling waits for us and then resolves
    // what we opened. Taken first, in the order deletions take them (run or rule, then alert
    // rows, then the event lock); the run's KEY SHARE lock leaves ingest's updates of the row free.
    COHORT_ASSIGN_OR_RETURN(
        bool run_lives,
        LockedRowExists(conn,
                        "SELECT pk FROM runs WHERE entity = $1 AND project = $2 AND run_id = $3 "
                        "FOR KEY SHARE",
                        Params().Add(r.entity).Add(r.project).Add(r.run_id)));
    if (!run_lives) return RunNotFound(RunRef{r.entity, r.project, r.run_id});
    if (r.rule_id) {
      COHORT_ASSIGN_OR_RETURN(
          bool rule_lives,
          LockedRowExists(conn,
                          "SELECT id FROM alert_rules WHERE id = $1 AND entity = $2 AND "
                          "project = $3 AND enabled = $4 FOR SHARE",
                          Params().Add(*r.rule_id).Add(r.entity).Add(r.project).Add(true)));
      if (!rule_lives) return RuleGone(*r.rule_id);
    }
    for (int attempt = 0; attempt < 2; ++attempt) {
      COHORT_ASSIGN_OR_RETURN(
          std::optional<AlertRecord> open,
          LoadOpen(conn, r.entity, r.project, r.run_id, r.writer_label, r.condition_key));
      // A condition seen again bumps its open alert; an alert raised again by code (which
      // applied its wait_duration already) is a new notification: it replaces the open one,
      // closed quietly (no event: nothing to notify about it), unless it is the same call
      // retried (the same evidence: the client's time of the call).
      if (open && (r.source != "code" || open->evidence_json == r.evidence_json)) {
        COHORT_ASSIGN_OR_RETURN(AlertRecord bumped, Bump(conn, *open, r));
        return Out(std::move(bumped), false);
      }
      if (engine() == sql::Engine::kPostgres) {
        // The count and the insert under the event lock (AppendAlertEvent takes it anyway), so
        // that servers opening alerts at once cannot each see room under the limit.
        COHORT_RETURN_IF_ERROR(
            conn.Exec("SELECT pg_advisory_xact_lock($1)", Params().Add(kAlertEventLockKey))
                .status());
      }
      COHORT_ASSIGN_OR_RETURN(
          int64_t recent,
          sql::QueryInt(conn,
                        "SELECT count(*) FROM alerts WHERE entity = $1 AND project = $2 AND "
                        "opened_ms > $3",
                        Params().Add(r.entity).Add(r.project).Add(r.now_ms - 60'000)));
      if (r.counts_against_limit && recent >= kMaxAlertsOpenedPerProjectPerMinute) {
        return Status::ResourceExhausted("alerts: project " + r.entity + "/" + r.project +
                                         " opened " + std::to_string(recent) +
                                         " alerts in the last minute (the limit is " +
                                         std::to_string(kMaxAlertsOpenedPerProjectPerMinute) + ")");
      }
      if (open) {
        COHORT_RETURN_IF_ERROR(
            conn.Exec("UPDATE alerts SET state = 'resolved', resolved_ms = $1 WHERE id = $2",
                      Params().Add(r.now_ms).Add(open->id))
                .status());
      }
      COHORT_ASSIGN_OR_RETURN(std::vector<AlertRecord> inserted,
                              sql::QueryAll<AlertRecord>(conn, kInsert,
                                                         Params()
                                                             .Add(r.entity)
                                                             .Add(r.project)
                                                             .Add(r.run_id)
                                                             .Add(r.writer_label)
                                                             .Add(r.rule_id)
                                                             .Add(r.source)
                                                             .Add(r.condition_key)
                                                             .Add(r.level)
                                                             .Add(r.title)
                                                             .Add(r.text)
                                                             .Add(r.evidence_json)
                                                             .Add(r.now_ms),
                                                         ReadAlert));
      if (!inserted.empty()) {
        COHORT_RETURN_IF_ERROR(
            AppendAlertEvent(conn, r.entity, r.project, inserted.front().id, "opened", r.now_ms));
        return Out(std::move(inserted.front()), true);
      }
      // Another server opened it meanwhile (PostgreSQL): bump that one.
    }
    return Status::Unavailable("alert: the open alert changed concurrently, try again");
  });
}

Result<int64_t> SqlStore::ResolveOpenAlerts(Conn& conn, const std::string& where, Params params,
                                            int64_t now_ms) {
  struct Resolved {
    int64_t id;
    std::string entity, project;
  };
  const std::string now = params.Add(now_ms).Last();
  COHORT_ASSIGN_OR_RETURN(
      std::vector<Resolved> resolved,
      sql::QueryAll<Resolved>(conn,
                              "UPDATE alerts SET state = 'resolved', resolved_ms = " + now +
                                  " WHERE state = 'open' AND " + where +
                                  " RETURNING id, entity, project",
                              params, [](const Row& row) {
                                return Resolved{row.Int(0), row.Text(1), row.Text(2)};
                              }));
  for (const Resolved& a : resolved) {
    COHORT_RETURN_IF_ERROR(AppendAlertEvent(conn, a.entity, a.project, a.id, "resolved", now_ms));
  }
  return int64_t(resolved.size());
}

Result<bool> SqlStore::ResolveAlert(const std::string& entity, const std::string& project,
                                    const std::string& run_id, const std::string& writer_label,
                                    const std::string& condition_key, int64_t now_ms) {
  return RunFor<bool>(Access::kWrite, [&](Conn& conn) -> Result<bool> {
    COHORT_ASSIGN_OR_RETURN(
        int64_t n,
        ResolveOpenAlerts(conn,
                          "entity = $1 AND project = $2 AND run_id = $3 AND writer_label = $4 AND "
                          "condition_key = $5",
                          Params().Add(entity).Add(project).Add(run_id).Add(writer_label).Add(
                              condition_key),
                          now_ms));
    return n > 0;
  });
}

Result<int64_t> SqlStore::ResolveWriterAlerts(const std::string& entity, const std::string& project,
                                              const std::string& run_id,
                                              const std::string& writer_label,
                                              const std::string& source, int64_t now_ms) {
  return RunFor<int64_t>(Access::kWrite, [&](Conn& conn) {
    return ResolveOpenAlerts(conn,
                             "entity = $1 AND project = $2 AND run_id = $3 AND writer_label = $4 "
                             "AND source = $5",
                             Params().Add(entity).Add(project).Add(run_id).Add(writer_label).Add(
                                 source),
                             now_ms);
  });
}

Result<int64_t> SqlStore::ResolveRuleAlerts(const std::string& entity, const std::string& project,
                                            const std::vector<int64_t>& rule_ids,
                                            const std::optional<std::string>& run_id,
                                            const std::optional<std::string>& writer_label,
                                            int64_t now_ms) {
  if (rule_ids.empty()) return int64_t{0};
  Params params;
  params.Add(entity).Add(project).AddArray(rule_ids);
  std::string where = "entity = $1 AND project = $2 AND rule_id = ANY($3)";
  if (run_id) where += " AND run_id = " + params.Add(*run_id).Last();
  if (writer_label) where += " AND writer_label = " + params.Add(*writer_label).Last();
  return RunFor<int64_t>(Access::kWrite, [&](Conn& conn) {
    return ResolveOpenAlerts(conn, where, params, now_ms);
  });
}

Result<std::vector<OpenRuleAlert>> SqlStore::ListOpenRuleAlerts(
    const std::vector<std::string>& kinds, int limit) {
  // Whether the alert's writer (its run, for a run-level alert) still runs.
  static const std::string kSql = [] {
    std::string cols = std::string("a.") + kAlertColumns;
    for (size_t at = cols.find(", "); at != std::string::npos; at = cols.find(", ", at + 4)) {
      cols.replace(at, 2, ", a.");
    }
    return "SELECT " + cols +
           ", r.kind, CASE WHEN a.writer_label = '' THEN (SELECT count(*) FROM runs u WHERE "
           "u.entity = a.entity AND u.project = a.project AND u.run_id = a.run_id AND "
           "u.state = 'running') ELSE (SELECT count(*) FROM writers w JOIN runs u ON "
           "w.run_pk = u.pk WHERE u.entity = a.entity AND u.project = a.project AND "
           "u.run_id = a.run_id AND w.label = a.writer_label AND w.state = 'running') END "
           "FROM alerts a JOIN alert_rules r ON r.id = a.rule_id "
           "WHERE a.state = 'open' AND r.kind = ANY($1) ORDER BY a.id LIMIT $2";
  }();
  using Out = std::vector<OpenRuleAlert>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryAll<OpenRuleAlert>(
        conn, kSql, Params().AddTextArray(kinds).Add(int64_t(limit > 0 ? limit : 1000)),
        [](const Row& row) {
          return OpenRuleAlert{.alert = ReadAlert(row),
                               .rule_kind = row.Text(19),
                               .live = row.Int(20) > 0};
        });
  });
}

Result<AlertRecord> SqlStore::GetAlert(const std::string& entity, const std::string& project,
                                       int64_t id) {
  static const std::string kSql = std::string("SELECT ") + kAlertColumns +
                                  " FROM alerts WHERE id = $1 AND entity = $2 AND project = $3";
  return RunFor<AlertRecord>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryOne<AlertRecord>(conn, kSql, Params().Add(id).Add(entity).Add(project),
                                      ReadAlert, AlertNotFound(entity, project, id));
  });
}

Result<std::vector<AlertRecord>> SqlStore::ListAlerts(const AlertQuery& q) {
  Params params;
  std::string sql =
      std::string("SELECT ") + kAlertColumns + " FROM alerts WHERE entity = $1 AND project = $2";
  params.Add(q.entity).Add(q.project);
  if (q.state) sql += " AND state = " + params.Add(*q.state).Last();
  if (q.level) sql += " AND level = " + params.Add(*q.level).Last();
  if (q.run_id) sql += " AND run_id = " + params.Add(*q.run_id).Last();
  if (q.writer_label) sql += " AND writer_label = " + params.Add(*q.writer_label).Last();
  sql += " ORDER BY id DESC LIMIT " + params.Add(int64_t(q.limit > 0 ? q.limit : 100)).Last();
  using Out = std::vector<AlertRecord>;
  return RunFor<Out>(Access::kReadOneAny, [&](Conn& conn) {
    return sql::QueryAll<AlertRecord>(conn, sql, params, ReadAlert, sql::Prepare::kOnce);
  });
}

Result<AlertRecord> SqlStore::AckAlert(const std::string& entity, const std::string& project,
                                       int64_t id, const std::string& by, int64_t now_ms) {
  static const std::string kSql =
      std::string(
          "UPDATE alerts SET acked_ms = coalesce(acked_ms, $4), acked_by = coalesce(acked_by, "
          "$5) WHERE id = $1 AND entity = $2 AND project = $3 RETURNING ") +
      kAlertColumns;
  return RunFor<AlertRecord>(Access::kWrite, [&](Conn& conn) {
    return sql::QueryOne<AlertRecord>(conn, kSql,
                                      Params().Add(id).Add(entity).Add(project).Add(now_ms).Add(by),
                                      ReadAlert, AlertNotFound(entity, project, id));
  });
}

Result<std::vector<AlertEvent>> SqlStore::ListAlertEvents(int64_t after_id, int limit) {
  using Out = std::vector<AlertEvent>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryAll<AlertEvent>(
        conn,
        "SELECT id, entity, project, alert_id, kind, created_ms FROM alert_events "
        "WHERE id > $1 ORDER BY id LIMIT $2",
        Params().Add(after_id).Add(int64_t(limit > 0 ? limit : 100)), ReadEvent);
  });
}

// ---- rules ----

Result<AlertRule> SqlStore::CreateAlertRule(const AlertRule& rule) {
  COHORT_RETURN_IF_ERROR(CheckRule(rule));
  static const std::string kSql =
      std::string(
          "INSERT INTO alert_rules (entity, project, name, kind, spec_json, level, enabled, "
          "builtin, created_ms, updated_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) "
          "ON CONFLICT DO NOTHING RETURNING ") +
      kRuleColumns;
  const int64_t now = rule.created_ms > 0 ? rule.created_ms : NowMillis();
  return RunFor<AlertRule>(Access::kWrite, [&](Conn& conn) {
    return sql::QueryOne<AlertRule>(conn, kSql,
                                    Params()
                                        .Add(rule.entity)
                                        .Add(rule.project)
                                        .Add(rule.name)
                                        .Add(rule.kind)
                                        .Add(rule.spec_json)
                                        .Add(rule.level)
                                        .Add(rule.enabled)
                                        .Add(rule.builtin)
                                        .Add(now),
                                    ReadRule, RuleNameTaken(rule));
  });
}

Result<AlertRule> SqlStore::UpdateAlertRule(const AlertRule& rule) {
  COHORT_RETURN_IF_ERROR(CheckRule(rule));
  static const std::string kSql =
      std::string(
          "UPDATE alert_rules SET name = $1, kind = $2, spec_json = $3, level = $4, "
          "enabled = $5, updated_ms = greatest(updated_ms, $6) "
          "WHERE id = $7 AND entity = $8 AND project = $9 RETURNING ") +
      kRuleColumns;
  return RunFor<AlertRule>(Access::kWrite, [&](Conn& conn) -> Result<AlertRule> {
    COHORT_ASSIGN_OR_RETURN(
        int64_t clash,
        sql::QueryInt(conn,
                      "SELECT 1 FROM alert_rules WHERE entity = $1 AND project = $2 AND "
                      "name = $3 AND id <> $4",
                      Params().Add(rule.entity).Add(rule.project).Add(rule.name).Add(rule.id)));
    if (clash != 0) return RuleNameTaken(rule);
    struct Before {
      std::string kind, spec_json;
    };
    COHORT_ASSIGN_OR_RETURN(
        std::vector<Before> before,
        sql::QueryAll<Before>(conn,
                              "SELECT kind, spec_json FROM alert_rules WHERE id = $1 AND "
                              "entity = $2 AND project = $3 FOR UPDATE",
                              Params().Add(rule.id).Add(rule.entity).Add(rule.project),
                              [](const Row& row) {
                                return Before{row.Text(0), row.Text(1)};
                              }));
    Result<AlertRule> updated =
        sql::QueryOne<AlertRule>(conn, kSql,
                                 Params()
                                     .Add(rule.name)
                                     .Add(rule.kind)
                                     .Add(rule.spec_json)
                                     .Add(rule.level)
                                     .Add(rule.enabled)
                                     .Add(rule.updated_ms > 0 ? rule.updated_ms : NowMillis())
                                     .Add(rule.id)
                                     .Add(rule.entity)
                                     .Add(rule.project),
                                 ReadRule, RuleNotFound(rule.entity, rule.project, rule.id));
    if (!updated.ok() && updated.status().code() == StatusCode::kAlreadyExists) {
      return RuleNameTaken(rule);
    }
    // Disabled, or watching something else (another key, kind or condition): its open alerts
    // would never be evaluated again, so they are resolved (a condition still true opens anew).
    const bool changed =
        !before.empty() && updated.ok() &&
        (before.front().kind != updated->kind || before.front().spec_json != updated->spec_json);
    if (updated.ok() && (!updated->enabled || changed)) {
      COHORT_RETURN_IF_ERROR(ResolveOpenAlerts(conn,
                                               "entity = $1 AND project = $2 AND rule_id = $3",
                                               Params().Add(rule.entity).Add(rule.project).Add(
                                                   updated->id),
                                               updated->updated_ms)
                                 .status());
    }
    return updated;
  });
}

Status SqlStore::DeleteAlertRule(const std::string& entity, const std::string& project,
                                 int64_t id) {
  return Run(Access::kWrite, [&](Conn& conn) -> Status {
    COHORT_ASSIGN_OR_RETURN(
        int64_t deleted,
        conn.Exec("DELETE FROM alert_rules WHERE id = $1 AND entity = $2 AND project = $3",
                  Params().Add(id).Add(entity).Add(project)));
    if (deleted == 0) return RuleNotFound(entity, project, id);
    return ResolveOpenAlerts(conn, "entity = $1 AND project = $2 AND rule_id = $3",
                             Params().Add(entity).Add(project).Add(id), NowMillis())
        .status();
  });
}

Result<std::vector<AlertRule>> SqlStore::ListAlertRules(const std::string& entity,
                                                        const std::string& project) {
  static const std::string kSql = std::string("SELECT ") + kRuleColumns +
                                  " FROM alert_rules WHERE entity = $1 AND project = $2 "
                                  "ORDER BY id";
  using Out = std::vector<AlertRule>;
  return RunFor<Out>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryAll<AlertRule>(conn, kSql, Params().Add(entity).Add(project), ReadRule);
  });
}

Result<AlertRule> SqlStore::GetAlertRule(const std::string& entity, const std::string& project,
                                         int64_t id) {
  static const std::string kSql =
      std::string("SELECT ") + kRuleColumns +
      " FROM alert_rules WHERE id = $1 AND entity = $2 AND project = $3";
  return RunFor<AlertRule>(Access::kReadOne, [&](Conn& conn) {
    return sql::QueryOne<AlertRule>(conn, kSql, Params().Add(id).Add(entity).Add(project), ReadRule,
                                    RuleNotFound(entity, project, id));
  });
}

Result<bool> SqlStore::InstallDefaultAlertRules(const std::string& entity,
                                                const std::string& project,
                                                const std::vector<AlertRule>& defaults,
                                                int64_t now_ms) {
  for (const AlertRule& r : defaults) COHORT_RETURN_IF_ERROR(CheckRule(r));
  return RunFor<bool>(Access::kWrite, [&](Conn& conn) -> Result<bool> {
    COHORT_ASSIGN_OR_RETURN(
        int64_t marked, conn.Exec("INSERT INTO alert_rule_defaults (entity, project, created_ms) "
                                  "VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                                  Params().Add(entity).Add(project).Add(now_ms)));
    if (marked == 0) return false;
    for (const AlertRule& r : defaults) {
      COHORT_RETURN_IF_ERROR(
          conn.Exec("INSERT INTO alert_rules (entity, project, name, kind, spec_json, level, "
                    "enabled, builtin, created_ms, updated_ms) "
                    "VALUES ($1, $2, $3, $4, $5, $6, $7, true, $8, $8) ON CONFLICT DO NOTHING",
                    Params()
                        .Add(entity)
                        .Add(project)
                        .Add(r.name)
                        .Add(r.kind)
                        .Add(r.spec_json)
                        .Add(r.level)
                        .Add(r.enabled)
                        .Add(now_ms))
              .status());
    }
    return true;
  });
}

}  // namespace cohort::store
