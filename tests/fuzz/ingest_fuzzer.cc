// Fuzz target: the JSON layer of ingest, on arbitrary request bodies.
//  - core/json.h json::Parse: never crashes (deep nesting is an error, not a stack overflow);
//    a value it accepts serializes to text that parses back to an equal value.
//  - server/api/ingest_decode.h DecodeIngestBatch (the streaming decoder): an error is a 400 or
//    413 status with a message; a decoded batch respects every limit it was given (small limits
//    here, so that the fuzzer reaches them) and the key rule;
//  - the two decoders agree: a decoded JSON batch, encoded as batch v4, decodes with the binary
//    decoder to the same columns, bit for bit.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/json.h"
#include "fuzz_check.h"
#include "ingest_batch_checks.h"
#include "server/api/ingest_decode.h"

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

void CheckDecode(std::string_view body, const cohort::api::ApiLimits& limits) {
  auto batch = cohort::api::DecodeIngestBatch(body, limits);
  if (!batch.ok()) {
    cohort::fuzz::CheckDecodeError(batch.status());
    return;
  }
  cohort::fuzz::CheckBatchLimits(*batch, limits);
  cohort::fuzz::CheckReencodes(*batch, limits);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  CheckJsonRoundTrip(body);
  CheckDecode(body, cohort::fuzz::SmallIngestLimits());
  CheckDecode(body, cohort::api::ApiLimits{});
  return 0;
}
