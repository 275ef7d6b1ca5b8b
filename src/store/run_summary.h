// The run summary's last values, the same in every Store backend (docs/api.md, "Summary").
//
// A summary key that has a user series in the run and that nobody set explicitly follows the
// last stored point of that series (the value at the highest step of the newest chunk of the
// run's primary writer), also when the process that logged it died before sending its last
// summary. A key is
// explicitly set when a summary update (PATCH, a client's run.summary update, a W&B client's
// wandb-summary.json) gives it a value that differs from that last stored point, or deletes it;
// an update that carries the last stored value (what clients send as their automatic
// last-value summary) leaves the key following the series. The backend keeps the explicit keys
// in runs.summary_explicit (a JSON array of key names) and applies the last points whenever a
// writer of the run ends (finish, a crash the agent reports, a heartbeat timeout).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "cohort/status.h"

namespace cohort::store {

// The last stored point of one series.
struct LastPoint {
  double value = 0;
  int64_t step = 0;
  int64_t time_ms = 0;
};

// Key -> its last point. Add() keeps, per key, the point with the highest step (then time).
class LastPoints {
 public:
  void Add(const std::string& key, const LastPoint& p);
  const std::map<std::string, LastPoint>& points() const { return points_; }

 private:
  std::map<std::string, LastPoint> points_;
};

// runs.summary_explicit <-> a set of keys. Reading tolerates bad text (an empty set).
std::set<std::string> ExplicitKeysFromJson(std::string_view text);
std::string ExplicitKeysToJson(const std::set<std::string>& keys);

// The keys of a summary patch (a JSON object), for the backend to look their last points up.
// kInvalidArgument when `patch` is not a JSON object.
Result<std::set<std::string>> SummaryPatchKeys(std::string_view patch);

// Updates the explicit keys for a summary patch: a key the patch deletes, or sets to a value
// other than its last point in `last`, becomes explicit; a key set to its last point does not.
Status ClassifySummaryPatch(std::string_view patch, const LastPoints& last,
                            std::set<std::string>* explicit_keys);

// Sets every key of `last` that is not explicit to its last point (a number, or "NaN",
// "Infinity", "-Infinity": JSON has none of them, and null would delete the key). Returns the
// new summary text, or nullopt when nothing changed.
std::optional<std::string> FollowLastPoints(std::string_view summary_json, const LastPoints& last,
                                            const std::set<std::string>& explicit_keys);

}  // namespace cohort::store
