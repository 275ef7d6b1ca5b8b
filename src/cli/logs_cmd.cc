// `cohort logs RUN [--label L] [--follow]`: a run's console lines; with --follow, like
// `tail -f`: keeps polling for new lines until the run is no longer running (then prints the
// last lines and exits 0) or the user presses Ctrl-C. A poll that gets no answer, a 5xx or a
// 429 is retried with backoff (a server restart or a network blip does not end the follow);
// only an answer that will not change (401, 403, 404, 400) ends it with exit 1.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/read_client.h"
#include "core/list_param.h"

namespace cohort::cli {
namespace {

namespace bj = boost::json;

struct LogsOpts {
  std::string run, labels, stream, grep;
  bool follow = false;
  bool prefix = false, no_prefix = false;
  double interval_s = 0.5;
};

int Fail(const Status& s) {
  std::fprintf(stderr, "cohort logs: %s\n", s.message().c_str());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

// Prints every line after `*after`; advances it. `prefix`: "[label] " before each line.
Status PrintNew(ReadClient& client, const RunPath& ref, const LogsOpts& o, bool prefix,
                int64_t* after) {
  while (true) {
    COHORT_ASSIGN_OR_RETURN(
        bj::value page, client.Get(ref.ApiPath() + "/console", {{"labels", o.labels},
                                                                {"stream", o.stream},
                                                                {"q", o.grep},
                                                                {"after", std::to_string(*after)},
                                                                {"limit", "1000"}}));
    const bj::array& lines = page.as_object().at("lines").as_array();
    std::string out;
    for (const bj::value& l : lines) {
      if (prefix) out += "[" + StrField(l, "label") + "] ";
      out += StrField(l, "text");
      out += '\n';
      *after = std::max(*after, IntField(l, "id"));
    }
    if (!out.empty()) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
    }
    const bj::value* next = page.as_object().if_contains("next_cursor");
    if (lines.empty() || !next || next->is_null()) return Status::Ok();
    *after = std::max(*after, IntField(page, "next_cursor"));
  }
}

// Prints the lines after `*after` and reads the run: its state. Once it is no longer running,
// the lines uploaded before its writers finished are stored: prints them too.
Result<std::string> Poll(ReadClient& client, const RunPath& ref, const LogsOpts& o, bool prefix,
                         int64_t* after) {
  COHORT_RETURN_IF_ERROR(PrintNew(client, ref, o, prefix, after));
  COHORT_ASSIGN_OR_RETURN(bj::value run, client.Get(ref.ApiPath()));
  std::string state = StrField(run, "state");
  if (state != "running") COHORT_RETURN_IF_ERROR(PrintNew(client, ref, o, prefix, after));
  return state;
}

// A failure --follow rides out: no answer (a server restarting, a network blip), a 5xx, a 429,
// an answer that is not JSON (a proxy's error page). 401 / 403 / 404 / 400 will not change.
bool Transient(const Status& s) {
  switch (s.code()) {
    case StatusCode::kUnauthenticated:
    case StatusCode::kPermissionDenied:
    case StatusCode::kNotFound:
    case StatusCode::kInvalidArgument:
      return false;
    default:
      return true;
  }
}

// Backoff of --follow's retries: 0.5 s, doubling up to 10 s.
constexpr double kFirstRetryS = 0.5, kMaxRetryS = 10.0;

int RunLogs(const LogsOpts& o) {
  if (o.stream != "" && o.stream != "stdout" && o.stream != "stderr") {
    return Fail(Status::InvalidArgument("--stream: expected stdout or stderr"));
  }
  auto client = ReadClient::Open();
  if (!client.ok()) return Fail(client.status());
  auto ref = (*client)->ParseRun(o.run);
  if (!ref.ok()) return Fail(ref.status());
  auto run = (*client)->Get(ref->ApiPath());
  if (!run.ok()) return Fail(run.status());
  bool prefix = IntField(*run, "writer_count") > 1 || SplitListParam(o.labels).size() > 1;
  if (o.prefix) prefix = true;
  if (o.no_prefix) prefix = false;
  int64_t after = 0;
  if (!o.follow) {
    Status s = PrintNew(**client, *ref, o, prefix, &after);
    return s.ok() ? 0 : Fail(s);
  }
  double retry_s = 0;  // 0: the last poll was answered
  while (true) {
    Result<std::string> state = Poll(**client, *ref, o, prefix, &after);
    if (!state.ok()) {
      if (!Transient(state.status())) return Fail(state.status());
      if (retry_s == 0) {
        // The reason says which: no answer ("cannot reach the server ..."), or the server's own.
        std::fprintf(stderr, "cohort logs: %s; retrying...\n", state.status().message().c_str());
        retry_s = kFirstRetryS;
      } else {
        retry_s = std::min(retry_s * 2, kMaxRetryS);
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(retry_s));
      continue;
    }
    if (retry_s != 0) {
      std::fprintf(stderr, "cohort logs: the server answers again, following\n");
      retry_s = 0;
    }
    if (*state != "running") {
      std::fprintf(stderr, "run %s %s\n", ref->Text().c_str(), state->c_str());
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(o.interval_s));
  }
}

}  // namespace

Runner AddLogsCommand(CLI::App& app) {
  auto o = std::make_shared<LogsOpts>();
  auto* cmd = app.add_subcommand("logs", "Print a run's console lines (--follow: like tail -f)");
  cmd->add_option("run", o->run, "entity/project/run_id or project/run_id")->required();
  cmd->add_option("-l,--label", o->labels,
                  "Only these writers (comma-separated labels; \\, for a comma in a label)");
  cmd->add_option("--stream", o->stream, "Only stdout or stderr");
  cmd->add_option("--grep", o->grep, "Only lines containing this text (case-sensitive)");
  cmd->add_flag("-f,--follow", o->follow, "Keep printing new lines until the run ends");
  cmd->add_option("--interval", o->interval_s, "Seconds between polls with --follow")
      ->check(CLI::Range(0.05, 60.0))
      ->capture_default_str();
  cmd->add_flag("--prefix", o->prefix, "Prefix each line with [label] (default: shared runs)");
  cmd->add_flag("--no-prefix", o->no_prefix, "Never prefix lines with their label")
      ->excludes("--prefix");
  return [cmd, o]() -> int {
    if (!cmd->parsed()) return -1;
    return RunLogs(*o);
  };
}

}  // namespace cohort::cli
