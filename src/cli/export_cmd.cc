// `cohort runs export RUN --format csv|jsonl`: a run's exact metric history, one row per
// (writer, step), streamed page by page from the history API (memory stays flat), written to a
// temporary file renamed into place at the end (an interrupted export leaves no partial file),
// with a progress bar on stderr when it is a terminal. Parquet is written by the Python side
// (`python -m cohort export`, needs pyarrow); asked here, it is a clear error.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/read_client.h"
#include "core/json.h"
#include "core/limits.h"

namespace cohort::cli {
namespace {

namespace bj = boost::json;

constexpr int64_t kPagePoints = 50000;

struct ExportOpts {
  std::string run, format = "csv", output, keys, writers, progress = "auto";
};

struct SeriesInfo {
  std::string key;
  int64_t count = 0;
};

// Writes rows in CSV or JSON Lines.
class RowWriter {
 public:
  RowWriter(std::FILE* out, bool csv, std::vector<std::string> keys)
      : out_(out), csv_(csv), keys_(std::move(keys)) {
    for (size_t i = 0; i < keys_.size(); ++i) index_[keys_[i]] = i;
  }

  void Header() {
    if (!csv_) return;
    std::string line = "writer,step,time";
    for (const auto& k : keys_) line += "," + CsvField(k);
    line += '\n';
    std::fputs(line.c_str(), out_);
  }

  // One row: values[i] is keys_[i]'s value when has[i].
  void Row(const std::string& writer, int64_t step, int64_t time, const std::vector<double>& values,
           const std::vector<bool>& has) {
    std::string line;
    if (csv_) {
      line = CsvField(writer) + "," + std::to_string(step) + "," + std::to_string(time);
      for (size_t i = 0; i < keys_.size(); ++i) {
        line += ',';
        if (has[i]) line += FormatDouble(values[i]);
      }
    } else {
      line = "{\"writer\":" + bj::serialize(bj::value(writer)) +
             ",\"step\":" + std::to_string(step) + ",\"time\":" + std::to_string(time);
      for (size_t i = 0; i < keys_.size(); ++i) {
        if (!has[i]) continue;
        line += "," + bj::serialize(bj::value(keys_[i])) + ":";
        line += std::isfinite(values[i]) ? FormatDouble(values[i])
                                         : "\"" + FormatDouble(values[i]) + "\"";
      }
      line += '}';
    }
    line += '\n';
    std::fputs(line.c_str(), out_);
  }

  size_t Index(const std::string& key) const { return index_.at(key); }
  size_t size() const { return keys_.size(); }

 private:
  static std::string CsvField(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s) {
      if (c == '"') out += '"';
      out += c;
    }
    return out + "\"";
  }

  std::FILE* out_;
  bool csv_;
  std::vector<std::string> keys_;
  std::map<std::string, size_t> index_;
};

// A progress bar on stderr, redrawn at most once per percent.
class Progress {
 public:
  Progress(bool enabled, int64_t total) : enabled_(enabled), total_(std::max<int64_t>(total, 1)) {}
  void Advance(int64_t points) {
    done_ += points;
    int pct = int(std::min<int64_t>(100, done_ * 100 / total_));
    if (!enabled_ || pct == last_pct_) return;
    last_pct_ = pct;
    constexpr int kWidth = 30;
    std::string bar(size_t(pct * kWidth / 100), '#');
    bar.resize(kWidth, ' ');
    std::fprintf(stderr, "\rexporting [%s] %3d%% %lld/%lld points", bar.c_str(), pct,
                 static_cast<long long>(done_), static_cast<long long>(total_));
    std::fflush(stderr);
  }
  void Finish() {
    if (enabled_ && last_pct_ >= 0) std::fputc('\n', stderr);
  }

 private:
  bool enabled_;
  int64_t total_, done_ = 0;
  int last_pct_ = -1;
};

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// Exports one writer's rows; returns the number of rows written.
Result<int64_t> ExportWriter(ReadClient& client, const RunPath& ref, const std::string& writer,
                             const std::vector<SeriesInfo>& series, bool all_user_keys,
                             RowWriter* out, Progress* progress) {
  // Without --keys, every user key of the writer is asked for without naming them (a key may
  // contain a comma).
  std::string keys;
  if (!all_user_keys) {
    for (const auto& s : series) keys += (keys.empty() ? "" : ",") + s.key;
  }
  const int64_t limit = std::max<int64_t>(1, kPagePoints / int64_t(series.size()));
  std::string after;
  int64_t rows_written = 0;
  while (true) {
    COHORT_ASSIGN_OR_RETURN(
        bj::value res, client.Get(ref.ApiPath() + "/history", {{"keys", keys},
                                                               {"writers", writer},
                                                               {"limit", std::to_string(limit)},
                                                               {"after_step", after}}));
    const bj::array& got = res.as_object().at("series").as_array();
    // The page is complete up to the smallest last step among series that have more.
    bool cut = false;
    int64_t boundary = 0;
    for (const bj::value& s : got) {
      const bj::array& pts = s.as_object().at("points").as_array();
      const bj::value* more = s.as_object().if_contains("more");
      if (more && more->is_bool() && more->get_bool() && !pts.empty()) {
        int64_t last = pts.back().as_array()[0].to_number<int64_t>();
        boundary = cut ? std::min(boundary, last) : last;
        cut = true;
      }
    }
    // step -> (time, values, has)
    struct Row {
      int64_t time = 0;
      std::vector<double> values;
      std::vector<bool> has;
    };
    std::map<int64_t, Row> rows;
    int64_t points = 0;
    for (const bj::value& s : got) {
      if (StrField(s, "writer") != writer) continue;
      size_t idx = out->Index(StrField(s, "key"));
      for (const bj::value& p : s.as_object().at("points").as_array()) {
        const bj::array& a = p.as_array();
        int64_t step = a[0].to_number<int64_t>();
        if (cut && step > boundary) break;
        Row& row = rows[step];
        if (row.values.empty()) {
          row.values.assign(out->size(), 0);
          row.has.assign(out->size(), false);
          row.time = a[1].to_number<int64_t>();
        }
        auto v = json::ToDouble(a[2]);
        if (!v) return Status::Internal("history: a value is not a number");
        row.values[idx] = *v;
        row.has[idx] = true;
        ++points;
      }
    }
    for (const auto& [step, row] : rows) out->Row(writer, step, row.time, row.values, row.has);
    rows_written += int64_t(rows.size());
    progress->Advance(points);
    if (!cut) break;
    after = std::to_string(boundary);
  }
  return rows_written;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "cohort runs export: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

int RunExport(const ExportOpts& o) {
  if (o.format == "parquet") {
    std::fprintf(stderr,
                 "cohort runs export: parquet needs pyarrow: use `python -m cohort export %s "
                 "--format parquet` (pip install pyarrow), or --format csv|jsonl here\n",
                 o.run.c_str());
    return 2;
  }
  auto client = ReadClient::Open();
  if (!client.ok()) return Fail(client.status());
  auto ref = (*client)->ParseRun(o.run);
  if (!ref.ok()) return Fail(ref.status());
  auto listed = (*client)->Get(ref->ApiPath() + "/keys");
  if (!listed.ok()) return Fail(listed.status());
  const std::vector<std::string> want_keys = SplitComma(o.keys);
  const std::vector<std::string> want_writers = SplitComma(o.writers);
  auto wanted = [](const std::vector<std::string>& list, const std::string& v) {
    return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
  };
  std::map<std::string, std::vector<SeriesInfo>> by_writer;
  std::set<std::string> all_keys;
  int64_t total_points = 0;
  for (const bj::value& s : listed->as_object().at("keys").as_array()) {
    std::string key = StrField(s, "key"), writer = StrField(s, "writer");
    if (s.as_object().contains("type") && StrField(s, "type") != "scalar") continue;
    if (want_keys.empty() && key.rfind(limits::kSystemKeyPrefix, 0) == 0) continue;
    if (!wanted(want_keys, key) || !wanted(want_writers, writer)) continue;
    by_writer[writer].push_back({key, IntField(s, "count")});
    all_keys.insert(key);
    total_points += IntField(s, "count");
  }

  const bool to_stdout = o.output == "-";
  std::string path = o.output.empty() ? ref->run_id + "." + o.format : o.output;
  std::string tmp = path + ".part";
  std::FILE* f = to_stdout ? stdout : std::fopen(tmp.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "cohort runs export: cannot write %s\n", tmp.c_str());
    return 1;
  }
  RowWriter writer(f, o.format == "csv",
                   std::vector<std::string>(all_keys.begin(), all_keys.end()));
  writer.Header();
  const bool bar = o.progress == "always" || (o.progress == "auto" && isatty(STDERR_FILENO));
  Progress progress(bar, total_points);
  int64_t rows = 0;
  for (const auto& [label, series] : by_writer) {
    auto n = ExportWriter(**client, *ref, label, series, want_keys.empty(), &writer, &progress);
    if (!n.ok()) {
      progress.Finish();
      if (!to_stdout) {
        std::fclose(f);
        std::remove(tmp.c_str());
      }
      return Fail(n.status());
    }
    rows += *n;
  }
  progress.Finish();
  if (!to_stdout) {
    bool ok = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::remove(tmp.c_str());
      std::fprintf(stderr, "cohort runs export: cannot write %s\n", path.c_str());
      return 1;
    }
  } else {
    std::fflush(stdout);
  }
  std::fprintf(stderr, "exported %lld rows (%lld points, %zu keys, %zu writers) to %s\n",
               static_cast<long long>(rows), static_cast<long long>(total_points), all_keys.size(),
               by_writer.size(), to_stdout ? "stdout" : path.c_str());
  return 0;
}

}  // namespace

Runner AddRunsExportCommand(CLI::App& runs) {
  auto o = std::make_shared<ExportOpts>();
  auto* cmd = runs.add_subcommand("export", "Export a run's metric history (rows by writer, step)");
  cmd->add_option("run", o->run, "entity/project/run_id or project/run_id")->required();
  cmd->add_option("-f,--format", o->format, "csv, jsonl (parquet: python -m cohort export)")
      ->check(CLI::IsMember({"csv", "jsonl", "parquet"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "Output file (default <run_id>.<format>; - stdout)");
  cmd->add_option("-k,--keys", o->keys, "Only these keys (comma-separated)");
  cmd->add_option("-w,--writers", o->writers, "Only these writers (comma-separated labels)");
  cmd->add_option("--progress", o->progress,
                  "Progress bar on stderr: auto (terminal), always, "
                  "never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    return RunExport(*o);
  };
}

}  // namespace cohort::cli
