// LineSplitter: turns a captured byte stream into console lines the way a terminal shows them.
// A newline ends a line; a carriage return rewrites the current line (what follows replaces
// it), so a progress bar that redraws itself yields one line when it ends, not one per redraw;
// "\r\n" is a plain line end. A partial line (no newline yet) is emitted once it has been
// pending for `partial_flush_ms` (prompts, long-running progress bars), and again only if it
// changed. Lines longer than `max_line_bytes` are cut into pieces.
//
// Threading: not thread-safe (one capture thread per stream owns one splitter).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cohort::client {

class LineSplitter {
 public:
  struct Options {
    size_t max_line_bytes = 64 * 1024 - 1;
    int64_t partial_flush_ms = 2000;
  };
  LineSplitter() : LineSplitter(Options{}) {}
  explicit LineSplitter(Options options) : options_(options) {}

  // Consumes bytes that arrived at `now_ms`; appends finished lines to `out`.
  void Feed(std::string_view bytes, int64_t now_ms, std::vector<std::string>* out);
  // Emits the partial line if it has waited long enough.
  void FlushIfStale(int64_t now_ms, std::vector<std::string>* out);
  // Emits whatever is pending (end of the stream).
  void FlushAll(std::vector<std::string>* out);

 private:
  void EndLine(std::vector<std::string>* out);

  const Options options_;
  std::string line_;
  bool pending_cr_ = false;     // a '\r' was seen: the next byte decides (CRLF or rewrite)
  bool pending_ = false;          // content not yet emitted since pending_since_ms_
  int64_t pending_since_ms_ = 0;  // when the unemitted content began
  std::string emitted_partial_;   // the partial content already emitted
  bool has_emitted_partial_ = false;
};

}  // namespace cohort::client
