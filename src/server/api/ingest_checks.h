// The checks of an ingest batch that both decoders apply (JSON: ingest_decode.h; binary:
// ingest_binary_decode.h) once it is read, so that the two forms refuse the same data with the
// same words. One row's checks are the store's (store/record_checks.h CheckHistogramPoint,
// CheckMediaPoint), which the store applies again to every batch. Errors are kInvalidArgument
// and name the row ("media[1]: ..."). Wire-format problems (truncation, unknown flags, a field
// of the wrong JSON type) stay with each decoder. Pure; thread-safe.
#pragma once

#include <string_view>

#include "cohort/status.h"
#include "store/ingest_batch.h"

namespace cohort::api {

// A key has one type in a batch: a histogram row under a key of the batch's history rows, a
// media row under a key of its history or histogram rows, or media rows of one key with two
// types, are refused, naming the first such row in order ("media[1]: key 'm' is logged as
// image and as audio in the same batch (a key has one type)"). System keys, stored with their
// "system/" prefix, never meet the others.
Status CheckKeyTypes(const store::IngestBatch& batch);

}  // namespace cohort::api
