// `cohort runs export RUN --format csv|jsonl|parquet`: a run's exact metric history, one row per
// (writer, step), streamed page by page from the history API in its columnar form
// (history_fetch.h; memory stays flat), written to a temporary file renamed into place at the end
// (a failed export, or one stopped by SIGINT / SIGTERM, leaves no partial file), with a progress
// bar on stderr when it is a terminal. Parquet is this tree's own writer (parquet_writer.h;
// docs/formats.md "Parquet export"), bounded row groups, no pyarrow needed.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "cli/history_fetch.h"
#include "cli/output.h"
#include "cli/parquet_writer.h"
#include "cli/progress.h"
#include "cli/read_client.h"
#include "core/json.h"
#include "core/limits.h"
#include "core/list_param.h"
#include "core/version.h"

namespace cohort::cli {
namespace {

namespace bj = boost::json;

constexpr int64_t kPagePoints = 50000;

struct ExportOpts {
  std::string run, format = "csv", output, keys, writers, progress = "auto", compression;
  int64_t row_group_rows = 0;  // parquet; 0: the writer's default
};

struct SeriesInfo {
  std::string key;
  int64_t count = 0;
};

// An export format: the header when built, then rows by (writer, step).
class RowSink {
 public:
  explicit RowSink(std::vector<std::string> keys) : keys_(std::move(keys)) {
    for (size_t i = 0; i < keys_.size(); ++i) index_[keys_[i]] = i;
  }
  virtual ~RowSink() = default;
  virtual Status Start() = 0;
  // One row: values[i] is keys_[i]'s value when has[i].
  virtual Status Row(const std::string& writer, int64_t step, int64_t time,
                     const std::vector<double>& values, const std::vector<bool>& has) = 0;
  virtual Status Finish() = 0;

  // The column of `key`; npos for a key not in the export (one logged after the listing).
  size_t Index(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? std::string::npos : it->second;
  }
  size_t size() const { return keys_.size(); }

 protected:
  std::vector<std::string> keys_;
  std::map<std::string, size_t> index_;
};

// Rows in CSV or JSON Lines.
class TextSink : public RowSink {
 public:
  TextSink(std::FILE* out, bool csv, std::vector<std::string> keys)
      : RowSink(std::move(keys)), out_(out), csv_(csv) {}

  Status Start() override {
    if (!csv_) return Status::Ok();
    std::string line = "writer,step,time";
    for (const auto& k : keys_) line += "," + CsvField(k);
    line += '\n';
    return Put(line);
  }

  Status Row(const std::string& writer, int64_t step, int64_t time,
             const std::vector<double>& values, const std::vector<bool>& has) override {
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
    return Put(line);
  }

  Status Finish() override { return Status::Ok(); }

 private:
  Status Put(const std::string& s) {
    if (std::fwrite(s.data(), 1, s.size(), out_) != s.size()) {
      return Status::IOError(std::strerror(errno));
    }
    return Status::Ok();
  }

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
};

// Rows in Parquet (parquet_writer.h; docs/formats.md "Parquet export"): writer (string), step
// (int64), time (timestamp, milliseconds, UTC), then one nullable double column per key.
class ParquetSink : public RowSink {
 public:
  ParquetSink(std::FILE* out, std::vector<std::string> keys, parquet::WriterOptions opts)
      : RowSink(keys), writer_(Schema(keys), std::move(opts), [out](std::string_view b) {
          if (std::fwrite(b.data(), 1, b.size(), out) != b.size()) {
            return Status::IOError(std::strerror(errno));
          }
          return Status::Ok();
        }) {}

  Status Start() override { return writer_.Start(); }

  Status Row(const std::string& writer, int64_t step, int64_t time,
             const std::vector<double>& values, const std::vector<bool>& has) override {
    writer_.SetString(0, writer);
    writer_.SetInt64(1, step);
    writer_.SetInt64(2, time);
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (has[i]) writer_.SetDouble(3 + i, values[i]);
    }
    return writer_.EndRow();
  }

  Status Finish() override { return writer_.Finish(); }

 private:
  static std::vector<parquet::Column> Schema(const std::vector<std::string>& keys) {
    std::vector<parquet::Column> cols = {{"writer", parquet::ColumnType::kString, false},
                                         {"step", parquet::ColumnType::kInt64, false},
                                         {"time", parquet::ColumnType::kTimestampMillis, false}};
    for (const auto& k : keys) cols.push_back({k, parquet::ColumnType::kDouble, true});
    return cols;
  }

  parquet::Writer writer_;
};

// Exports one writer's rows; returns the number of rows written.
Result<int64_t> ExportWriter(ReadClient& client, const RunPath& ref, const std::string& writer,
                             const std::vector<SeriesInfo>& series, bool all_user_keys,
                             RowSink* out, ProgressReport* progress) {
  // Without --keys, every user key of the writer is asked for without naming them (a shorter
  // query).
  std::string keys;
  if (!all_user_keys) {
    std::vector<std::string> named;
    for (const auto& s : series) named.push_back(s.key);
    keys = JoinListParam(named);
  }
  const int64_t limit = std::max<int64_t>(1, kPagePoints / int64_t(series.size()));
  std::string after;
  int64_t rows_written = 0;
  std::vector<double> values(out->size());
  std::vector<bool> has(out->size());
  while (true) {
    COHORT_ASSIGN_OR_RETURN(std::vector<HistorySeries> got,
                            FetchHistory(client, ref.ApiPath() + "/history",
                                         {{"keys", keys},
                                          {"writers", JoinListParam({writer})},
                                          {"limit", std::to_string(limit)},
                                          {"after_step", after}}));
    // The page is complete up to the smallest last step among series that have more.
    bool cut = false;
    int64_t boundary = 0;
    for (const HistorySeries& s : got) {
      if (s.more && !s.steps.empty()) {
        boundary = cut ? std::min(boundary, s.steps.back()) : s.steps.back();
        cut = true;
      }
    }
    // Merges the series (each ascending by step) into rows.
    std::vector<const HistorySeries*> mine;
    std::vector<size_t> column, pos;
    for (const HistorySeries& s : got) {
      size_t idx = out->Index(s.key);
      if (s.writer != writer || idx == std::string::npos) continue;
      mine.push_back(&s);
      column.push_back(idx);
      pos.push_back(0);
    }
    int64_t points = 0;
    while (true) {
      bool any = false;
      int64_t step = 0;
      for (size_t i = 0; i < mine.size(); ++i) {
        if (pos[i] >= mine[i]->steps.size()) continue;
        int64_t s = mine[i]->steps[pos[i]];
        if (cut && s > boundary) continue;
        step = any ? std::min(step, s) : s;
        any = true;
      }
      if (!any) break;
      std::fill(has.begin(), has.end(), false);
      bool have_time = false;
      int64_t time = 0;
      for (size_t i = 0; i < mine.size(); ++i) {
        if (pos[i] >= mine[i]->steps.size() || mine[i]->steps[pos[i]] != step) continue;
        if (!have_time) time = mine[i]->times[pos[i]];
        have_time = true;
        values[column[i]] = mine[i]->values[pos[i]];
        has[column[i]] = true;
        ++pos[i];
        ++points;
      }
      COHORT_RETURN_IF_ERROR(out->Row(writer, step, time, values, has));
      ++rows_written;
    }
    progress->Advance(points);
    if (!cut) break;
    after = std::to_string(boundary);
  }
  return rows_written;
}

// The temporary file of the export under way, removed by a SIGINT or SIGTERM that stops it
// (unlink and _exit are async-signal-safe; the path is written before the handlers are set).
char g_part_path[PATH_MAX + 8];
volatile std::sig_atomic_t g_part_armed = 0;

extern "C" void RemovePartAndExit(int sig) {
  if (g_part_armed) unlink(g_part_path);
  _exit(128 + sig);
}

// Sets the handlers that remove `tmp` when the export is stopped; false: a path too long.
bool ArmPartRemoval(const std::string& tmp) {
  if (tmp.size() >= sizeof(g_part_path)) return false;
  std::memcpy(g_part_path, tmp.c_str(), tmp.size() + 1);
  g_part_armed = 1;
  struct sigaction sa {};
  sa.sa_handler = RemovePartAndExit;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return true;
}

// Up to ten of `names`, then how many more.
std::string SomeOf(const std::vector<std::string>& names) {
  constexpr size_t kShown = 10;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > kShown) out += ", ... (" + std::to_string(names.size() - kShown) + " more)";
  return out.empty() ? "none" : out;
}

// The names of `wanted` that are not in `have`, each quoted.
std::string Unknown(const std::vector<std::string>& wanted, const std::set<std::string>& have) {
  std::string out;
  for (const auto& w : wanted) {
    if (!have.contains(w)) out += (out.empty() ? "'" : ", '") + w + "'";
  }
  return out;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "cohort runs export: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

int RunExport(const ExportOpts& o) {
  const bool parquet_out = o.format == "parquet";
  if (!parquet_out && (!o.compression.empty() || o.row_group_rows > 0)) {
    return Fail(Status::InvalidArgument(
        "--compression and --row-group-rows apply to --format parquet only"));
  }
  parquet::WriterOptions popts;
  if (parquet_out) {
    const std::string codec = o.compression.empty() ? (parquet::HaveZstd() ? "zstd" : "none")
                                                    : o.compression;
    if (codec == "zstd" && !parquet::HaveZstd()) {
      return Fail(Status::InvalidArgument(
          "--compression zstd: this build has no zstd (use --compression none)"));
    }
    popts.compression = codec == "zstd" ? parquet::Compression::kZstd : parquet::Compression::kNone;
    if (o.row_group_rows > 0) popts.group_rows = o.row_group_rows;
    popts.created_by = "cohort version " + std::string(kVersion);
    if (o.output == "-" && isatty(STDOUT_FILENO)) {
      return Fail(Status::InvalidArgument(
          "parquet is binary: give -o FILE, or redirect stdout (-o -) away from the terminal"));
    }
  }
  // The output is opened before anything is fetched: one that cannot be written (a directory,
  // no such directory, no permission) fails at once. The default name is the run id, RUN's last
  // part (ParseRun checks RUN's form below).
  const bool to_stdout = o.output == "-";
  const std::string path =
      o.output.empty() ? o.run.substr(o.run.rfind('/') + 1) + "." + o.format : o.output;
  const std::string tmp = path + ".part";
  std::FILE* f = stdout;
  if (!to_stdout) {
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      std::fprintf(stderr, "cohort runs export: cannot write %s: %s\n", path.c_str(),
                   std::strerror(EISDIR));
      return 1;
    }
    if (!ArmPartRemoval(tmp)) {
      return Fail(Status::InvalidArgument("-o " + path + ": path too long"));
    }
    f = std::fopen(tmp.c_str(), "wb");
    if (!f) {
      std::fprintf(stderr, "cohort runs export: cannot write %s: %s\n", tmp.c_str(),
                   std::strerror(errno));
      return 1;
    }
  }
  std::unique_ptr<RowSink> sink;
  auto abandon = [&](const Status& s) {
    if (!to_stdout) {
      std::fclose(f);
      std::remove(tmp.c_str());
    }
    if (s.code() == StatusCode::kIOError) {
      return Fail(Status::IOError("cannot write " + (to_stdout ? std::string("stdout") : tmp) +
                                  ": " + s.message()));
    }
    return Fail(s);
  };

  auto client = ReadClient::Open();
  if (!client.ok()) return abandon(client.status());
  auto ref = (*client)->ParseRun(o.run);
  if (!ref.ok()) return abandon(ref.status());
  auto listed = (*client)->Get(ref->ApiPath() + "/keys");
  if (!listed.ok()) return abandon(listed.status());
  const std::vector<std::string> want_keys = SplitListParam(o.keys);
  const std::vector<std::string> want_writers = SplitListParam(o.writers);
  auto wanted = [](const std::vector<std::string>& list, const std::string& v) {
    return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
  };
  std::map<std::string, std::vector<SeriesInfo>> by_writer;
  std::set<std::string> all_keys, run_keys, run_writers;
  int64_t total_points = 0;
  for (const bj::value& s : listed->as_object().at("keys").as_array()) {
    std::string key = StrField(s, "key"), writer = StrField(s, "writer");
    if (s.as_object().contains("type") && StrField(s, "type") != "scalar") continue;
    run_keys.insert(key);
    run_writers.insert(writer);
    if (want_keys.empty() && key.rfind(limits::kSystemKeyPrefix, 0) == 0) continue;
    if (!wanted(want_keys, key) || !wanted(want_writers, writer)) continue;
    by_writer[writer].push_back({key, IntField(s, "count")});
    all_keys.insert(key);
    total_points += IntField(s, "count");
  }
  // A key or writer the run does not have is a mistake (a typo), not an empty column.
  std::string unknown;
  if (std::string k = Unknown(want_keys, run_keys); !k.empty()) {
    std::vector<std::string> user_keys;
    for (const auto& key : run_keys) {
      if (key.rfind(limits::kSystemKeyPrefix, 0) != 0) user_keys.push_back(key);
    }
    unknown = "--keys: the run has no scalar key " + k + " (its keys: " + SomeOf(user_keys) + ")";
  }
  if (std::string w = Unknown(want_writers, run_writers); !w.empty()) {
    unknown += std::string(unknown.empty() ? "" : "; ") + "--writers: the run has no writer " + w +
               " with scalar history (its writers: " +
               SomeOf(std::vector<std::string>(run_writers.begin(), run_writers.end())) + ")";
  }
  if (!unknown.empty()) return abandon(Status::InvalidArgument(unknown));

  const std::vector<std::string> columns(all_keys.begin(), all_keys.end());
  if (parquet_out) {
    popts.metadata = {{"cohort.run", ref->Text()}};
    sink = std::make_unique<ParquetSink>(f, columns, popts);
  } else {
    sink = std::make_unique<TextSink>(f, o.format == "csv", columns);
  }
  if (Status s = sink->Start(); !s.ok()) return abandon(s);
  ProgressReport progress("exporting", "points", total_points, o.progress);
  int64_t rows = 0;
  for (const auto& [label, series] : by_writer) {
    auto n = ExportWriter(**client, *ref, label, series, want_keys.empty(), sink.get(),
                          &progress);
    if (!n.ok()) {
      progress.Finish();
      return abandon(n.status());
    }
    rows += *n;
  }
  progress.Finish();
  if (Status s = sink->Finish(); !s.ok()) return abandon(s);
  if (!to_stdout) {
    bool ok = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      std::remove(tmp.c_str());
      std::fprintf(stderr, "cohort runs export: cannot write %s: %s\n", path.c_str(),
                   std::strerror(err));
      return 1;
    }
    g_part_armed = 0;
  } else if (std::fflush(stdout) != 0) {
    std::fprintf(stderr, "cohort runs export: cannot write stdout: %s\n", std::strerror(errno));
    return 1;
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
  cmd->add_option("-f,--format", o->format, "csv, jsonl or parquet")
      ->check(CLI::IsMember({"csv", "jsonl", "parquet"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "Output file (default <run_id>.<format>; - stdout)");
  cmd->add_option("-k,--keys", o->keys,
                  "Only these keys (comma-separated; \\, for a comma in a key)");
  cmd->add_option("-w,--writers", o->writers,
                  "Only these writers (comma-separated labels; \\, for a comma in a label)");
  cmd->add_option("--progress", o->progress,
                  "Progress on stderr: auto (a bar on a terminal, else a line every 5 s), "
                  "always (bar), never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  cmd->add_option("--compression", o->compression,
                  "Parquet page compression: zstd (the default where built with it) or none")
      ->check(CLI::IsMember({"zstd", "none"}));
  cmd->add_option("--row-group-rows", o->row_group_rows,
                  "Parquet rows per row group (default 1048576; memory stays bounded either way)")
      ->check(kPositive);
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    return RunExport(*o);
  };
}

}  // namespace cohort::cli
