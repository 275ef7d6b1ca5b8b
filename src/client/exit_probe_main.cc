// A training process for run_test.cc's exit-path tests: starts a run (a private agent, the
// server given as argv[1]), logs 10 steps of one key, then ends as argv[2] says without calling
// Finish:
//   return        return 5 from main
//   exit          std::exit(7)
//   throw         an uncaught exception
//   sigterm       SIGTERM to itself (default disposition before Init)
//   sigterm-user  SIGTERM to itself with a handler installed before Init that _exit(42)s
//   fork-sigterm  forks (no exec); the child logs 10 steps under its own writer and gets
//                 SIGTERM; the parent returns 0 when the child died of SIGTERM (else 6)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cohort/cohort.h"

namespace {

void UserHandler(int) { _exit(42); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s BASE_URL return|exit|throw|sigterm|sigterm-user|fork-sigterm\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[2];
  if (mode == "sigterm-user") signal(SIGTERM, UserHandler);
  cohort::Settings s;
  s.base_url = argv[1];
  s.api_key = "ck_test";
  s.project = "p";
  s.label = "w0";
  s.transport = "private";
  s.capture_console = false;
  s.stats_sampling_interval_s = 0;
  s.init_timeout_s = 10;
  s.finish_timeout_s = 10;
  auto run = cohort::Init(s);
  if (!run.ok()) {
    std::fprintf(stderr, "init: %s\n", run.status().ToString().c_str());
    return 3;
  }
  for (int step = 0; step < 10; ++step) run->Log({{"x", double(step)}});
  if (mode == "exit") std::exit(7);
  if (mode == "throw") throw std::runtime_error("boom");
  if (mode == "fork-sigterm") {
    pid_t child = fork();
    if (child == 0) {
      for (int step = 0; step < 10; ++step) run->Log({{"x", double(step)}});
      kill(getpid(), SIGTERM);
      for (int i = 0; i < 300; ++i) usleep(100 * 1000);  // the child's watcher ends it first
      _exit(4);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) return 6;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM ? 0 : 6;
  }
  if (mode == "sigterm" || mode == "sigterm-user") {
    kill(getpid(), SIGTERM);
    for (int i = 0; i < 300; ++i) usleep(100 * 1000);  // the watcher ends the process first
    return 4;
  }
  return 5;  // "return": the exit hook finishes the run with this status
}
