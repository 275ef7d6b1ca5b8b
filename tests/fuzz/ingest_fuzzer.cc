// Fuzz target: the JSON layer of ingest, on arbitrary request bodies.
//  - core/json.h json::Parse: never crashes (deep nesting is an error, not a stack overflow);
//    a value it accepts serializes to text that parses back to an equal value.
//  - server/api/ingest_decode.h DecodeIngestBatch: an error is a 400 or 413 status with a
//    message; a decoded batch respects every limit it was given (small limits here, so that the
//    fuzzer reaches them);
//  - the streaming fast path (ingest_fast_decode.h) either declines or yields exactly what the
//    tree decoder yields (bit for bit), and never accepts what the tree decoder rejects.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/json.h"
#include "fuzz_check.h"
#include "ingest_batch_checks.h"
#include "server/api/ingest_decode.h"
#include "server/api/ingest_fast_decode.h"

namespace {

using cohort::StatusCode;

void CheckJsonRoundTrip(std::string_view text) {
  auto parsed = cohort::json::Parse(text, {.max_depth = 32});
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.status().code() == StatusCode::kInvalidArgument, "%s",
               parsed.status().ToString().c_str());
    FUZZ_CHECK(!parsed.status().message().empty(), "an error names the problem");
    return;
  }
  std::string again = cohort::json::Serialize(*parsed);
  auto reparsed = cohort::json::Parse(again, {.max_depth = 32});
  FUZZ_CHECK(reparsed.ok(), "serialized JSON does not parse back: %s (%s)", again.c_str(),
             reparsed.status().ToString().c_str());
  FUZZ_CHECK(*reparsed == *parsed, "round trip changed the value: %s", again.c_str());
}

void CheckFastPathAgrees(std::string_view body, const cohort::api::ApiLimits& limits) {
  auto fast = cohort::api::FastDecodeIngestBatch(body, limits);
  if (!fast) return;
  auto tree = cohort::api::DecodeIngestBatchWithTree(body, limits);
  FUZZ_CHECK(tree.ok(), "the fast path accepted what the tree decoder rejects: %s",
             tree.status().ToString().c_str());
  cohort::fuzz::CheckSameBatch(*fast, *tree);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  CheckJsonRoundTrip(body);

  const cohort::api::ApiLimits limits = cohort::fuzz::SmallIngestLimits();
  CheckFastPathAgrees(body, limits);
  cohort::api::ApiLimits defaults;
  CheckFastPathAgrees(body, defaults);
  auto batch = cohort::api::DecodeIngestBatch(body, limits);
  if (!batch.ok()) {
    cohort::fuzz::CheckDecodeError(batch.status());
    return 0;
  }
  cohort::fuzz::CheckBatchLimits(*batch, limits, /*keys_utf8_and_distinct=*/false);
  return 0;
}
