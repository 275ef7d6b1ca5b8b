// The checks of an ingest batch's histogram and media rows that both decoders apply (JSON:
// ingest_decode.h; binary: ingest_binary_decode.h) once a row is read, so that the two forms
// refuse the same data with the same words. Errors are kInvalidArgument and name the row
// ("histograms[2] (key 'grad/w'): ..."). Wire-format problems (truncation, unknown flags, a
// field of the wrong JSON type) stay with each decoder. Pure; thread-safe.
#pragma once

#include <string_view>

#include "cohort/status.h"
#include "store/ingest_batch.h"

namespace cohort::api {

// A valid histogram (core/histogram.h InvalidReason: 1 to kMaxHistogramBins bins, finite counts
// >= 0, a finite non-empty range or bins + 1 finite ascending edges) at a step >= 0. `where`:
// "histograms[2]".
Status CheckHistogramRow(std::string_view where, const store::HistogramPoint& h);

// A media row the store may hold: a known type ("image", ...), index 0 to 2^32-1, and what
// batch::InvalidMediaReason asks (64 lowercase hex digits of SHA-256, size, dimensions and step
// >= 0, a plain MIME type/subtype of at most 128 bytes, a caption of at most 4 KiB of UTF-8).
Status CheckMediaRow(std::string_view where, const store::MediaPoint& m);

// A key has one type in a batch: a histogram row under a key of the batch's history rows, a
// media row under a key of its history or histogram rows, or media rows of one key with two
// types, are refused, naming the first such row in order ("media[1]: key 'm' is logged as
// image and as audio in the same batch (a key has one type)"). System keys, stored with their
// "system/" prefix, never meet the others.
Status CheckKeyTypes(const store::IngestBatch& batch);

}  // namespace cohort::api
