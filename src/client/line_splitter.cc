#include "client/line_splitter.h"

namespace cohort::client {

void LineSplitter::EndLine(std::vector<std::string>* out) {
  if (!(has_emitted_partial_ && line_ == emitted_partial_)) out->push_back(line_);
  line_.clear();
  emitted_partial_.clear();
  has_emitted_partial_ = false;
  pending_ = false;
}

void LineSplitter::Feed(std::string_view bytes, int64_t now_ms, std::vector<std::string>* out) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    char c = bytes[i];
    if (c == '\n') {
      pending_cr_ = false;
      EndLine(out);
      continue;
    }
    if (c == '\r') {
      pending_cr_ = true;
      continue;
    }
    if (pending_cr_) {  // a bare carriage return: the line is being redrawn
      pending_cr_ = false;
      line_.clear();
    }
    if (!pending_) {
      pending_ = true;
      pending_since_ms_ = now_ms;
    }
    // Copy the run of ordinary bytes at once.
    size_t j = i;
    while (j < bytes.size() && bytes[j] != '\n' && bytes[j] != '\r') ++j;
    std::string_view run = bytes.substr(i, j - i);
    while (!run.empty()) {
      size_t room = options_.max_line_bytes - line_.size();
      size_t take = std::min(room, run.size());
      line_.append(run.substr(0, take));
      run.remove_prefix(take);
      if (line_.size() >= options_.max_line_bytes) {
        EndLine(out);
        if (!run.empty()) {
          pending_ = true;
          pending_since_ms_ = now_ms;
        }
      }
    }
    i = j - 1;
  }
}

void LineSplitter::FlushIfStale(int64_t now_ms, std::vector<std::string>* out) {
  if (line_.empty() || !pending_) return;
  if (now_ms - pending_since_ms_ < options_.partial_flush_ms) return;
  if (!(has_emitted_partial_ && line_ == emitted_partial_)) {
    out->push_back(line_);
    emitted_partial_ = line_;
    has_emitted_partial_ = true;
  }
  pending_since_ms_ = now_ms;
}

void LineSplitter::FlushAll(std::vector<std::string>* out) {
  if (!line_.empty()) EndLine(out);
  pending_cr_ = false;
}

}  // namespace cohort::client
