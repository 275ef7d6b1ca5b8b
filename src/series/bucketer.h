// Bucketer: folds points and whole-chunk summaries into N equal-width step buckets over an
// inclusive step range, giving exact min/max/sum/count/first/last per bucket.
//
// A store asks FitsOneBucket() for each chunk in range: when true it adds the chunk's summary
// (no decoding), otherwise it decodes the chunk and adds its points. Single-threaded.
#pragma once

#include <cstdint>
#include <vector>

#include "series/chunk.h"
#include "store/types.h"

namespace cohort::series {

class Bucketer {
 public:
  // Buckets cover [lo, hi] (inclusive, lo <= hi) in `n` >= 1 buckets of equal integer width
  // ceil((hi - lo + 1) / n); fewer buckets when the range is shorter than n.
  Bucketer(int64_t lo, int64_t hi, int n);

  bool FitsOneBucket(const ChunkSummary& s) const;
  void AddSummary(const ChunkSummary& s);  // requires FitsOneBucket(s)
  void AddPoint(const store::Point& p);    // points outside [lo, hi] are ignored
  // The non-empty buckets in step order. NaN values count in `count` but not in min/max/sum.
  std::vector<store::Bucket> Finish() const;

 private:
  // (the implementation may change these)
  int64_t lo_, hi_, width_;
  struct Acc {
    ChunkSummary s;
  };
  std::vector<Acc> acc_;
};

}  // namespace cohort::series
