// The body of an alert raised by code (Run::Alert, the Python SDK's run.alert): what the client
// sends the agent in an alert frame, what the agent keeps as a kAlert WAL record and what the
// Sender posts, unchanged, to POST /api/v1/runs/{entity}/{project}/{run}/writers/{label}/alerts
// (docs/formats.md "Agent protocol", docs/api.md "Alerts"):
//   {"title": str (1..256 bytes of UTF-8), "text": str (<= 64 KiB of UTF-8),
//    "level": "INFO" | "WARN" | "ERROR", "time_ms": int (when the code raised it, Unix ms)}
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cohort/status.h"
#include "core/limits.h"

namespace cohort::agent {

using limits::kMaxAlertTextBytes;
using limits::kMaxAlertTitleBytes;

// kInvalidArgument naming the field ("alert title: ...") when one breaks the rules above.
Status CheckAlert(std::string_view title, std::string_view text, std::string_view level);
// The JSON body; the fields must have passed CheckAlert.
std::string AlertBody(std::string_view title, std::string_view text, std::string_view level,
                      int64_t time_ms);
// Checks a body as the agent receives it: an object with exactly the fields above, valid.
Status CheckAlertBody(std::string_view json);

}  // namespace cohort::agent
