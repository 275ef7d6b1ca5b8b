#include "store/sqlite/sqlite_checkpointer.h"

#include <cstdio>

namespace cohort::store::sqlite {

Checkpointer::~Checkpointer() { Stop(); }

Status Checkpointer::Start(Db* writer, const std::string& path, int busy_timeout_ms) {
  COHORT_ASSIGN_OR_RETURN(own_, Db::Open(path, SQLITE_OPEN_READWRITE, busy_timeout_ms));
  writer_ = writer;
  COHORT_RETURN_IF_ERROR(writer_->Exec("PRAGMA wal_autocheckpoint=0"));
  // Replaces the hook wal_autocheckpoint installed (that one is gone with the pragma above).
  sqlite3_wal_hook(writer_->raw(), &Checkpointer::WalHook, this);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void Checkpointer::Stop() {
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
  if (writer_ != nullptr) {
    sqlite3_wal_hook(writer_->raw(), nullptr, nullptr);
    (void)writer_->Exec("PRAGMA wal_autocheckpoint=1000");
  }
  own_.reset();
}

int Checkpointer::WalHook(void* self, sqlite3* db, const char* name, int frames) {
  auto* c = static_cast<Checkpointer*>(self);
  if (frames >= kWriterFrames) {
    // The thread has not kept up: checkpoint here, as SQLite's own hook would.
    int log = 0, done = 0;
    sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    MutexLock lock(&c->mu_);
    ++c->by_writer_;
    return SQLITE_OK;
  }
  if (frames >= kStartFrames) {
    MutexLock lock(&c->mu_);
    if (!c->wanted_) {
      c->wanted_ = true;
      c->cv_.Signal();
    }
  }
  return SQLITE_OK;
}

void Checkpointer::Loop() {
  MutexLock lock(&mu_);
  while (true) {
    while (!(wanted_ || stopping_)) cv_.Wait(mu_);
    if (stopping_) return;
    wanted_ = false;
    lock.Unlock();
    int log = 0, done = 0;
    int rc =
        sqlite3_wal_checkpoint_v2(own_->raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY && rc != SQLITE_LOCKED) {
      std::fprintf(stderr, "cohort: sqlite checkpoint failed: %s\n",
                   SqliteError(rc, sqlite3_errmsg(own_->raw())).ToString().c_str());
    }
    lock.Lock();
    ++background_;
  }
}

int64_t Checkpointer::background_checkpoints() const {
  MutexLock lock(&mu_);
  return background_;
}

int64_t Checkpointer::writer_checkpoints() const {
  MutexLock lock(&mu_);
  return by_writer_;
}

}  // namespace cohort::store::sqlite
