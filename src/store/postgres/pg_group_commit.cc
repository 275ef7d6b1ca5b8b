#include "store/postgres/pg_group_commit.h"

#include <algorithm>
#include <set>

namespace cohort::store::pg {

GroupCommit::Answer GroupCommit::Run(const Member& member) {
  Call me{&member, Answer{}, false, false, {}};
  MutexLock lock(&mu_);
  queue_.push_back(&me);
  while (!me.done) {
    if (me.taken || leading_ >= max_in_flight_) {
      me.wake.Wait(mu_);
      continue;
    }
    // Lead: take what waits, in arrival order, one call per key (a later call of a key already
    // in the group stays queued for the next one).
    ++leading_;
    std::vector<Call*> group;
    std::set<std::string_view> keys;
    for (auto it = queue_.begin(); it != queue_.end() && group.size() < max_group_;) {
      if (keys.insert((*it)->member->key).second) {
        (*it)->taken = true;
        group.push_back(*it);
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    lock.Unlock();
    Write(group);
    lock.Lock();
    size_t committed = 0;
    for (Call* c : group) {
      c->done = true;
      if (c != &me) c->wake.Signal();
      switch (c->answer.outcome) {
        case Outcome::kCommitted:
          ++committed;
          break;
        case Outcome::kRefused:
          ++counters_.refused;
          break;
        case Outcome::kFailed:
          ++counters_.failed;
          break;
      }
    }
    if (committed > 0) ++counters_.transactions;
    counters_.committed += int64_t(committed);
    counters_.largest_group = std::max(counters_.largest_group, committed);
    --leading_;
    // The next leader: the first waiting call (only it, so that a group's end wakes no more
    // threads than it must on a busy machine).
    if (!queue_.empty()) queue_.front()->wake.Signal();
  }
  return me.answer;
}

GroupCommit::Counters GroupCommit::counters() const {
  MutexLock lock(&mu_);
  return counters_;
}

size_t GroupCommit::queued() const {
  MutexLock lock(&mu_);
  return queue_.size();
}

void GroupCommit::Write(std::vector<Call*> group) {
  while (!group.empty()) {
    // Lock statements by writer, then write statements by run (and writer): one global lock
    // order for every group.
    std::vector<Call*> by_lock = group, by_write = group;
    std::stable_sort(by_lock.begin(), by_lock.end(), [](const Call* a, const Call* b) {
      return a->member->lock_order < b->member->lock_order;
    });
    std::stable_sort(by_write.begin(), by_write.end(), [](const Call* a, const Call* b) {
      return std::pair(a->member->write_order, a->member->lock_order) <
             std::pair(b->member->write_order, b->member->lock_order);
    });
    std::vector<Conn::Statement> statements;
    std::vector<Call*> owner;  // of each statement
    for (Call* c : by_lock) {
      for (const Conn::Statement& s : c->member->lock) {
        statements.push_back(s);
        owner.push_back(c);
      }
    }
    for (Call* c : by_write) {
      for (const Conn::Statement& s : c->member->write) {
        statements.push_back(s);
        owner.push_back(c);
      }
    }
    int failed = -1;  // the statement whose own error ended the last attempt
    std::vector<PgResult> answers;
    const Status status = RunTransaction(pool_, TxnMode::kWrite, [&](Conn* conn) -> Status {
      failed = -1;
      Result<std::vector<PgResult>> results = conn->ExecPipeline(statements, /*commit=*/true);
      if (!results.ok() && !conn->broken() && !IsRetryableSqlState(conn->last_sqlstate())) {
        failed = conn->failed_statement();
      }
      if (results.ok()) answers = std::move(*results);
      return results.status();
    });
    if (status.ok()) {
      for (Call* c : group) c->answer = Answer{Outcome::kCommitted, Status::Ok(), {}};
      for (size_t i = 0; i < owner.size() && i < answers.size(); ++i) {
        owner[i]->answer.results.push_back(std::move(answers[i]));
      }
      return;
    }
    if (failed < 0 || size_t(failed) >= owner.size()) {  // the transaction itself failed
      for (Call* c : group) c->answer = Answer{Outcome::kFailed, status, {}};
      return;
    }
    // One member's statement failed: nothing committed. Refuse it, write the others again.
    Call* bad = owner[size_t(failed)];
    bad->answer = Answer{Outcome::kRefused, status, {}};
    group.erase(std::find(group.begin(), group.end(), bad));
  }
}

}  // namespace cohort::store::pg
