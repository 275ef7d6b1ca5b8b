#include "agent/monitor/network_source.h"

namespace cohort::monitor {

Status NetworkSource::ReadNetDev(std::map<std::string, Bytes>* out) const {
  const std::string path = options_.proc_root + "/net/dev";
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  // "  eth0: rx_bytes packets errs drop fifo frame compressed multicast tx_bytes ..."; the two
  // header lines have no ':'.
  bool any_line = false;
  std::string_view rest(*text);
  while (!rest.empty()) {
    size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto name = SplitFields(line.substr(0, colon));
    auto f = SplitFields(line.substr(colon + 1));
    Bytes b;
    if (name.size() != 1 || f.size() < 9 || !ParseU64(f[0], &b.recv) || !ParseU64(f[8], &b.sent)) {
      continue;
    }
    any_line = true;
    if (name[0] == "lo") continue;
    (*out)[std::string(name[0])] = b;
  }
  if (!any_line) return Status::Corruption(path + ": no interface lines");
  return Status::Ok();
}

Status NetworkSource::Open() {
  std::map<std::string, Bytes> now;
  Status s = ReadNetDev(&now);
  if (!s.ok()) return Status::Unavailable("network: " + s.ToString());
  prev_ = std::move(now);
  return Status::Ok();
}

Status NetworkSource::Sample(int64_t /*now_ms*/, std::vector<monitor::Sample>* out) {
  std::map<std::string, Bytes> now;
  COHORT_RETURN_IF_ERROR(ReadNetDev(&now));
  for (const auto& [name, b] : now) {
    auto it = prev_.find(name);
    if (it == prev_.end()) continue;  // a new interface starts from its first reading
    if (b.recv >= it->second.recv) total_.recv += b.recv - it->second.recv;
    if (b.sent >= it->second.sent) total_.sent += b.sent - it->second.sent;
  }
  prev_ = std::move(now);
  out->push_back({"network.sent_mb", static_cast<double>(total_.sent) / kBytesPerMb});
  out->push_back({"network.recv_mb", static_cast<double>(total_.recv) / kBytesPerMb});
  return Status::Ok();
}

}  // namespace cohort::monitor
