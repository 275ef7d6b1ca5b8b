#include "store/sqlite/sqlite_group_commit.h"

#include <algorithm>

namespace cohort::store::sqlite {

Status GroupCommit::Run(const Work& work) {
  Call me{&work, Status::Ok(), false};
  MutexLock lock(&mu_);
  queue_.push_back(&me);
  while (!me.done) {
    if (leading_) {
      cv_.Wait(mu_);
      continue;
    }
    // Lead: take what waits (this call among it, unless more than max_group_ came first).
    leading_ = true;
    std::vector<Call*> group;
    while (!queue_.empty() && group.size() < max_group_) {
      group.push_back(queue_.front());
      queue_.pop_front();
    }
    lock.Unlock();
    Commit(group);
    lock.Lock();
    for (Call* c : group) c->done = true;
    leading_ = false;
    ++counters_.transactions;
    counters_.calls += int64_t(group.size());
    counters_.largest_group = std::max(counters_.largest_group, group.size());
    cv_.SignalAll();  // the group's callers, and the next leader
  }
  return me.status;
}

GroupCommit::Counters GroupCommit::counters() const {
  MutexLock lock(&mu_);
  return counters_;
}

size_t GroupCommit::queued() const {
  MutexLock lock(&mu_);
  return queue_.size();
}

void GroupCommit::Commit(const std::vector<Call*>& group) {
  MutexLock write_lock(write_mu_);
  const bool committed = CommitGroup(writer_->get(), group);
  if (observer_ != nullptr) observer_->GroupEnded(committed);
}

bool GroupCommit::CommitGroup(Db* db, const std::vector<Call*>& group) {
  auto fail_all = [&](const Status& s) {
    for (Call* c : group) c->status = s;
    return false;
  };
  Result<Txn> txn = Txn::Begin(db, Txn::Mode::kWrite);
  if (!txn.ok()) return fail_all(txn.status());
  if (observer_ != nullptr) observer_->GroupBegan(db);
  auto call_ended = [&](bool kept) {
    if (observer_ != nullptr) observer_->CallEnded(kept);
  };

  if (group.size() == 1) {  // alone: the transaction is the call's own, no savepoint needed
    Call* c = group.front();
    Result<bool> keep = (*c->work)(db);
    call_ended(keep.ok() && *keep);
    if (!keep.ok()) {
      c->status = keep.status();
      return true;  // ~Txn rolls back the call's changes, nothing else was in the transaction
    }
    if (!*keep) return true;  // discarded: ~Txn rolls back
    c->status = txn->Commit();
    return c->status.ok();
  }

  for (Call* c : group) {
    Status s = db->Exec("SAVEPOINT call");
    Result<bool> keep = s.ok() ? (*c->work)(db) : Result<bool>(s);
    if (keep.ok() && *keep) {
      s = db->Exec("RELEASE call");
      call_ended(s.ok());
    } else {
      c->status = keep.ok() ? Status::Ok() : keep.status();
      call_ended(false);
      s = db->Exec("ROLLBACK TO call; RELEASE call");
    }
    // SQLite rolls the whole transaction back after some errors (I/O, full disk, out of
    // memory): then the changes of the calls before this one are gone too.
    if (!s.ok() || sqlite3_get_autocommit(db->raw())) {
      Status lost =
          s.ok()
              ? (c->status.ok() ? Status::Unavailable("sqlite: the group's transaction was rolled "
                                                      "back")
                                : c->status)
              : s;
      return fail_all(lost);  // ~Txn's ROLLBACK finds no transaction: harmless
    }
  }
  Status committed = txn->Commit();
  if (!committed.ok()) {
    for (Call* c : group) {
      if (c->status.ok()) c->status = committed;
    }
  }
  return committed.ok();
}

}  // namespace cohort::store::sqlite
