// Binding the vendor's clients to Cohort writers.
//
// Each client (one process; shared-mode processes send a client id, plain clients count as one
// client "default") writes through one writer of the run. The binding is kept in the store as
// the client's marker stream "<client>" among the writer's stream positions, next to the
// client's file offsets "<client>/wandb-history.jsonl", ...: so it survives restarts, is the
// same for every server sharing the store, and follows the writer through a rename.
//
// A new client first gets a deterministic label (plain: the run's host, else "main"; shared:
// "client-<last 8 of its id>"), so that concurrent first requests of one client agree. When a
// shared client's label shows up in its data (the "/l:<label>" suffix of system metrics, the
// "[label]" prefix or structured label of console lines), the writer is renamed to it; a label
// that another client already uses gets "~<last 6 of the id>" appended.
//
// Flags: a plain client's writer is primary and ends the run. A shared client's writer starts
// as a worker (neither flag) and is promoted when the client shows it is the primary (it
// uploads the run's metadata files) or sends `complete` (it ends the run).
//
// Threading: a ClientWriter is used by one request; the store calls are thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "server/compat/compat_context.h"
#include "store/store.h"

namespace cohort::compat {

class ClientWriter {
 public:
  ClientWriter(store::Store* store, store::RunRecord run, ClientId client)
      : store_(store), run_(std::move(run)), client_(std::move(client)) {}

  // Reads the run's positions and writers.
  Status Load();
  // Makes sure the client has a writer (joining and binding one when it has none) and, for a
  // shared client, renames a default label to `label_hint` when that is valid. Reloads.
  Status Ensure(std::string_view label_hint);

  bool bound() const { return !label_.empty(); }
  const std::string& label() const { return label_; }
  // The bound writer's record (valid after Load/Ensure when bound).
  const store::WriterRecord& writer() const { return writer_; }
  const ClientId& client() const { return client_; }
  const store::RunRecord& run() const { return run_; }

  // The stream of the client's `file` and its next offset (0 when never written).
  std::string Stream(std::string_view file) const { return client_.key + "/" + std::string(file); }
  int64_t Position(std::string_view file) const;

  // Raises the bound writer's flags (a flag that is set stays set); re-joins it when a flag
  // changes.
  Status Promote(bool primary, bool update_finish_state);
  // Re-joins a bound writer that had ended (crashed, preempted, finished) and sends data again;
  // true when it did (the caller tells the alert engine, as the native join route does).
  Result<bool> Revive();

  // The label a client starts with (see the file comment).
  static std::string DefaultLabel(const ClientId& client, const store::RunRecord& run);

 private:
  Status Bind();
  // Returns whether it joined (only_if_ended: false when the writer runs).
  Result<bool> Rejoin(bool primary, bool update_finish_state, bool only_if_ended);
  Status RenameTo(std::string_view hint);
  bool LabelTaken(std::string_view label) const;

  store::Store* store_;
  store::RunRecord run_;
  ClientId client_;
  std::map<std::string, std::map<std::string, int64_t>> positions_;  // label -> stream -> next
  std::vector<store::WriterRecord> writers_;
  std::string label_;
  store::WriterRecord writer_;
};

}  // namespace cohort::compat
