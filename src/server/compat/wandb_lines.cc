#include "server/compat/wandb_lines.h"

#include <cmath>

#include "core/artifact_names.h"
#include "core/histogram.h"
#include "core/json.h"
#include "core/json_non_finite.h"
#include "core/limits.h"
#include "core/metric_key.h"
#include "store/record_checks.h"

namespace cohort::compat {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + int64_t(doe) - 719468;
}

bool ReadInt(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!IsDigit(s[pos + i])) return false;
    v = v * 10 + (s[pos + i] - '0');
  }
  *out = v;
  return true;
}

constexpr std::string_view kInternalKeys[] = {"_step", "_runtime", "_timestamp", "_wandb"};

bool IsInternalKey(std::string_view k) {
  for (std::string_view i : kInternalKeys) {
    if (k == i) return true;
  }
  return false;
}

bool Numbers(const bj::value* v, std::vector<double>* out) {
  if (v == nullptr || !v->is_array()) return false;
  out->clear();
  for (const bj::value& x : v->get_array()) {
    std::optional<double> d = json::ToDouble(x);
    if (!d) return false;
    out->push_back(*d);
  }
  return true;
}

// A vendor histogram value, or nullopt when it is not a valid one.
std::optional<Histogram> ParseHistogram(const bj::object& o) {
  Histogram h;
  if (!Numbers(o.if_contains("values"), &h.counts)) return std::nullopt;
  if (const bj::value* packed = o.if_contains("packedBins"); packed && packed->is_object()) {
    const bj::object& p = packed->get_object();
    std::optional<double> min, size;
    if (const bj::value* v = p.if_contains("min")) min = json::ToDouble(*v);
    if (const bj::value* v = p.if_contains("size")) size = json::ToDouble(*v);
    if (!min || !size) return std::nullopt;
    h.lo = *min;
    h.hi = *min + *size * double(h.counts.size());
  } else if (!Numbers(o.if_contains("bins"), &h.edges)) {
    return std::nullopt;
  }
  if (h.edges.size() == 2 && h.counts.size() == 1 && h.edges[0] == h.edges[1]) {
    h.lo = h.edges[0] - 0.5;
    h.hi = h.edges[0] + 0.5;
    h.edges.clear();
  }
  if (!histogram::InvalidReason(h).empty()) return std::nullopt;
  return h;
}

int64_t IntOf(const bj::object& o, std::string_view key) {
  const bj::value* v = o.if_contains(key);
  if (v == nullptr) return 0;
  std::optional<double> d = json::ToDouble(*v);
  return d && *d >= 0 && *d < 9.0e15 ? int64_t(*d) : 0;
}

// A vendor media file value ({"_type": "image-file", "path", "sha256", "size", "width",
// "height", "caption"}; tables: "table-file" with "ncols", "nrows"), or nullopt when it is not
// a valid one. Its bytes are the file the client uploads under `path` (run_files.cc keeps media/
// uploads in the blob store).
std::optional<store::MediaPoint> ParseMedia(const bj::object& o, std::string_view vendor_type) {
  store::MediaPoint m;
  m.type = std::string(VendorMediaType(vendor_type));
  if (m.type.empty()) return std::nullopt;
  const bj::value* sha = o.if_contains("sha256");
  const bj::value* path = o.if_contains("path");
  if (sha == nullptr || !sha->is_string() || path == nullptr || !path->is_string()) {
    return std::nullopt;
  }
  m.sha256 = std::string(sha->get_string());
  m.size = IntOf(o, "size");
  m.mime = VendorMediaMime(std::string_view(path->get_string()), m.type);
  if (m.type == "table") {
    m.width = IntOf(o, "ncols");
    m.height = IntOf(o, "nrows");
    // The run_table artifact's entry that holds the cells with their media (its run file
    // names each media cell's type only): "wandb-client-artifact://<client ID>/<entry>".
    if (const bj::value* a = o.if_contains("artifact_path"); a != nullptr && a->is_string() &&
                                                             a->get_string().size() <= 1024) {
      m.artifact_ref = std::string(a->get_string());
    }
  } else {
    m.width = IntOf(o, "width");
    m.height = IntOf(o, "height");
  }
  if (const bj::value* c = o.if_contains("caption"); c != nullptr && c->is_string()) {
    m.caption = std::string(c->get_string());
  }
  if (!store::CheckMediaPoint("media", m).ok()) return std::nullopt;
  return m;
}

// A vendor list of images ({"_type": "images/separated", "filenames": [paths], "width",
// "height", "captions"?}): one row per image, index i, named by its path until the client
// uploads that file (its line carries no digests; run_files.cc attaches the blob then). Empty
// when it is not a valid one (a path outside media/images/ or with "..", more than
// kMaxImagesInList, ...); a key with '/' puts its files in subfolders (IsMediaPathBelow).
std::vector<store::MediaPoint> ParseImageList(const bj::object& o) {
  constexpr size_t kMaxImagesInList = 1024;
  const bj::value* names = o.if_contains("filenames");
  if (names == nullptr || !names->is_array() || names->get_array().empty() ||
      names->get_array().size() > kMaxImagesInList) {
    return {};
  }
  const bj::value* caps = o.if_contains("captions");
  const bj::array* captions = caps != nullptr && caps->is_array() ? &caps->get_array() : nullptr;
  std::vector<store::MediaPoint> out;
  for (size_t i = 0; i < names->get_array().size(); ++i) {
    const bj::value& name = names->get_array()[i];
    if (!name.is_string()) return {};
    const std::string_view path(name.get_string());
    if (!IsMediaPathBelow(path, "media/images/")) return {};
    store::MediaPoint m;
    m.type = "image";
    m.index = int64_t(i);
    m.path = std::string(path);
    m.mime = VendorMediaMime(path, m.type);
    m.width = IntOf(o, "width");
    m.height = IntOf(o, "height");
    if (captions != nullptr && i < captions->size() && (*captions)[i].is_string()) {
      m.caption = std::string((*captions)[i].get_string());
    }
    if (!store::CheckMediaPoint("media", m).ok()) return {};  // its digest comes with the upload
    out.push_back(std::move(m));
  }
  return out;
}

// Adds the scalars (and histograms) of `v` under `key`, flattening plain objects with '.'.
void Flatten(const std::string& key, const bj::value& v, int depth, const KeyLimits& limits,
             MetricRow* row, int64_t* skipped) {
  auto* out = &row->values;
  if (v.is_object()) {
    const bj::object& o = v.get_object();
    if (const bj::value* type = o.if_contains("_type")) {
      std::optional<Histogram> h;
      std::optional<store::MediaPoint> m;
      std::vector<store::MediaPoint> list;
      if (type->is_string() && type->get_string() == "histogram") h = ParseHistogram(o);
      if (type->is_string() && type->get_string() == "images/separated") list = ParseImageList(o);
      if (type->is_string() && !h && list.empty()) {
        m = ParseMedia(o, std::string_view(type->get_string()));
      }
      const bool key_ok = key.size() <= limits.max_key_bytes && InvalidKeyReason(key).empty();
      if (h && key_ok) {
        row->histograms.emplace_back(key, std::move(*h));
      } else if (m && key_ok) {
        m->key = key;
        row->media.push_back(std::move(*m));
      } else if (!list.empty() && key_ok) {
        for (store::MediaPoint& image : list) {
          image.key = key;
          row->media.push_back(std::move(image));
        }
      } else {
        ++*skipped;  // other types, lists of audio or video, invalid histograms and media
      }
      return;
    }
    if (depth >= 8) {
      ++*skipped;
      return;
    }
    for (const auto& kv : o) {
      Flatten(key + "." + std::string(kv.key()), kv.value(), depth + 1, limits, row, skipped);
    }
    return;
  }
  std::optional<double> d = json::ToDouble(v);
  // The key rule of every tier (core/metric_key.h): such a key is skipped, not stored.
  if (!d || key.size() > limits.max_key_bytes || !InvalidKeyReason(key).empty()) {
    ++*skipped;
    return;
  }
  out->emplace_back(key, *d);
}

}  // namespace

std::string_view VendorMediaType(std::string_view vendor_type) {
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {"image-file", "image"}, {"audio-file", "audio"}, {"video-file", "video"},
      {"html-file", "html"},   {"table-file", "table"}};
  for (const auto& [vendor, type] : kTypes) {
    if (vendor == vendor_type) return type;
  }
  return {};
}

std::string VendorMediaMime(std::string_view path, std::string_view type) {
  static constexpr std::pair<std::string_view, std::string_view> kByExt[] = {
      {".png", "image/png"},   {".jpg", "image/jpeg"},  {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},   {".webp", "image/webp"}, {".bmp", "image/bmp"},
      {".wav", "audio/wav"},   {".mp3", "audio/mpeg"},  {".ogg", "audio/ogg"},
      {".flac", "audio/flac"}, {".mp4", "video/mp4"},   {".webm", "video/webm"},
      {".html", "text/html"},  {".json", "application/json"}};
  for (const auto& [ext, mime] : kByExt) {
    if (path.ends_with(ext)) return std::string(mime);
  }
  if (type == "image") return "image/png";
  if (type == "audio") return "audio/wav";
  if (type == "video") return "video/mp4";
  if (type == "html") return "text/html";
  return "application/json";
}

bool IsMediaPathBelow(std::string_view path, std::string_view dir) {
  return path.starts_with(dir) && path.size() > dir.size() &&
         path.size() <= limits::kMaxMediaPathBytes &&
         ValidateRelativePath("media path", path.substr(dir.size())).ok();
}

Result<bj::object> ParseLine(std::string_view line) {
  COHORT_ASSIGN_OR_RETURN(bj::value v, json::Parse(json::QuoteNonFinite(line)));
  if (!v.is_object()) return Status::InvalidArgument("line: expected a JSON object");
  return std::move(v.get_object());
}

std::optional<int64_t> SecondsToMillis(const bj::value& v) {
  std::optional<double> s = json::ToDouble(v);
  if (!s || v.is_bool() || !std::isfinite(*s) || *s < 0 || *s > 1e11) return std::nullopt;
  return int64_t(std::llround(*s * 1000.0));
}

std::optional<int64_t> ParseIsoMillis(std::string_view s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (s.size() < 19 || !ReadInt(s, 0, 4, &y) || s[4] != '-' || !ReadInt(s, 5, 2, &mo) ||
      s[7] != '-' || !ReadInt(s, 8, 2, &d) || (s[10] != 'T' && s[10] != ' ') ||
      !ReadInt(s, 11, 2, &h) || s[13] != ':' || !ReadInt(s, 14, 2, &mi) || s[16] != ':' ||
      !ReadInt(s, 17, 2, &sec)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  size_t pos = 19;
  int64_t ms = 0;
  if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
    ++pos;
    int64_t scale = 100;
    size_t digits = 0;
    while (pos < s.size() && IsDigit(s[pos])) {
      if (scale > 0) ms += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
  }
  int64_t offset_min = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh = 0, om = 0;
    if (!ReadInt(s, pos + 1, 2, &oh)) return std::nullopt;
    size_t next = pos + 3;
    if (next < s.size() && s[next] == ':') ++next;
    if (!ReadInt(s, next, 2, &om)) return std::nullopt;
    offset_min = (oh * 60 + om) * (s[pos] == '-' ? -1 : 1);
    pos = next + 2;
  }
  if (pos != s.size()) return std::nullopt;
  int64_t days = DaysFromCivil(y, unsigned(mo), unsigned(d));
  int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - offset_min * 60;
  return secs * 1000 + ms;
}

MetricRow HistoryRowFromLine(const bj::object& line, int64_t now_ms, const KeyLimits& limits,
                             int64_t* skipped) {
  MetricRow row;
  row.time_ms = now_ms;
  if (const bj::value* step = line.if_contains("_step")) {
    if (step->is_int64() && step->get_int64() >= 0) {
      row.step = step->get_int64();
    } else if (step->is_uint64()) {
      row.step = int64_t(std::min<uint64_t>(step->get_uint64(), INT64_MAX));
    } else if (step->is_double() && step->get_double() >= 0 && step->get_double() < 9e18) {
      row.step = int64_t(step->get_double());
    }
  }
  if (const bj::value* ts = line.if_contains("_timestamp")) {
    if (auto ms = SecondsToMillis(*ts)) row.time_ms = *ms;
  }
  for (const auto& kv : line) {
    if (IsInternalKey(kv.key())) continue;
    Flatten(std::string(kv.key()), kv.value(), 0, limits, &row, skipped);
  }
  return row;
}

SystemLine SystemRowFromLine(const bj::object& line, int64_t now_ms, const KeyLimits& limits) {
  SystemLine out;
  out.row.time_ms = now_ms;
  if (const bj::value* ts = line.if_contains("_timestamp")) {
    if (auto ms = SecondsToMillis(*ts)) out.row.time_ms = *ms;
  }
  for (const auto& kv : line) {
    std::string_view key = kv.key();
    if (!key.starts_with("system.")) continue;
    key.remove_prefix(7);
    size_t suffix = key.rfind("/l:");
    if (suffix != std::string_view::npos) {
      std::string_view label = key.substr(suffix + 3);
      if (out.label.empty() && IsValidLabel(label)) out.label = std::string(label);
      key = key.substr(0, suffix);
    }
    std::optional<double> d = json::ToDouble(kv.value());
    if (!d || key.size() > limits.max_key_bytes || !InvalidKeyReason(key).empty()) continue;
    out.row.values.emplace_back(std::string(key), *d);
  }
  return out;
}

ConsoleEntry ConsoleFromLine(std::string_view text, bool shared, int64_t now_ms) {
  ConsoleEntry out;
  out.line.time_ms = now_ms;
  out.line.stream = "stdout";
  // Structured form (servers that advertise STRUCTURED_CONSOLE_LOGS).
  if (text.starts_with("{\"") && text.ends_with("}")) {
    auto parsed = ParseLine(text);
    if (parsed.ok()) {
      const bj::value* content = parsed->if_contains("content");
      if (content && content->is_string()) {
        out.line.text = std::string(content->get_string());
        if (const bj::value* level = parsed->if_contains("level");
            level && level->is_string() && level->get_string() == "error") {
          out.line.stream = "stderr";
        }
        if (const bj::value* ts = parsed->if_contains("ts"); ts && ts->is_string()) {
          if (auto ms = ParseIsoMillis(ts->get_string())) out.line.time_ms = *ms;
        }
        if (const bj::value* label = parsed->if_contains("label"); label && label->is_string()) {
          if (IsValidLabel(label->get_string())) out.label = std::string(label->get_string());
        }
        return out;
      }
    }
  }
  if (text.starts_with("ERROR ")) {
    out.line.stream = "stderr";
    text.remove_prefix(6);
  }
  size_t space = text.find(' ');
  std::string_view stamp = text.substr(0, space);
  if (auto ms = ParseIsoMillis(stamp)) {
    out.line.time_ms = *ms;
    text = space == std::string_view::npos ? std::string_view{} : text.substr(space + 1);
  }
  if (shared && text.starts_with("[")) {
    size_t close = text.find("] ");
    size_t end = close != std::string_view::npos ? close : (text.ends_with("]") ? text.size() - 1
                                                                               : std::string_view::npos);
    if (end != std::string_view::npos && IsValidLabel(text.substr(1, end - 1))) {
      out.label = std::string(text.substr(1, end - 1));
      text = end + 2 <= text.size() ? text.substr(end + 2) : std::string_view{};
    }
  }
  // Older clients keep the newline that ended the line.
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  out.line.text = std::string(text);
  return out;
}

SplitConfig SplitWandbConfig(const bj::object& config) {
  SplitConfig out;
  out.telemetry = nullptr;
  // The Python form wraps every value as {"value": v[, "desc": d]}.
  bool wrapped = true;
  for (const auto& kv : config) {
    if (kv.key() == "_wandb") continue;
    const bj::value& v = kv.value();
    bool is_wrapped = v.is_object() && v.get_object().contains("value") &&
                      v.get_object().size() <= 2 &&
                      (v.get_object().size() == 1 || v.get_object().contains("desc"));
    if (!is_wrapped) {
      wrapped = false;
      break;
    }
  }
  for (const auto& kv : config) {
    if (kv.key() == "_wandb") {
      const bj::value& t = kv.value();
      out.telemetry = (t.is_object() && t.get_object().contains("value"))
                          ? t.get_object().at("value")
                          : t;
      continue;
    }
    out.user[kv.key()] = wrapped ? kv.value().get_object().at("value") : kv.value();
  }
  return out;
}

bj::object ToWandbConfig(const bj::object& user) {
  bj::object out;
  for (const auto& kv : user) {
    bj::object wrapped;
    wrapped["value"] = kv.value();
    out[kv.key()] = std::move(wrapped);
  }
  return out;
}

namespace {

// Puts `v` under `key` in `out`, plain objects (no "_type": not media or histograms) flattened
// with '.' as history values are (Flatten); an empty object, or one nested deeper than history
// goes, stays an object.
void FlattenSummaryValue(const std::string& key, bj::value v, int depth, bj::object* out) {
  if (bj::object* o = v.if_object();
      o != nullptr && !o->empty() && !o->contains("_type") && depth < 8) {
    for (auto& kv : *o) {
      FlattenSummaryValue(key + "." + std::string(kv.key()), std::move(kv.value()), depth + 1, out);
    }
    return;
  }
  (*out)[key] = std::move(v);
}

}  // namespace

bj::object CleanSummary(bj::object summary) {
  for (std::string_view k : kInternalKeys) summary.erase(k);
  bj::object out;
  for (auto& kv : summary)
    FlattenSummaryValue(std::string(kv.key()), std::move(kv.value()), 0, &out);
  return out;
}

bool IsValidLabel(std::string_view label) {
  if (label.empty() || label.size() > limits::kMaxLabelBytes) return false;
  for (char c : label) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '/') return false;
  }
  return true;
}

}  // namespace cohort::compat
