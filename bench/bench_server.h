// Starting a `cohort server --port 0` from a bench program (client_bench, e2e_ingest): spawned
// without fork (posix_spawn), stderr to /dev/null, its first stdout line is its URL.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>

extern char** environ;

namespace cohort::bench {

// Spawns `binary server --port 0 --data-dir data_dir`; returns its URL ("" on failure) and sets
// *pid. The pipe stays open (the server may print more); it closes with this process.
inline std::string SpawnServer(const char* binary, std::string data_dir, pid_t* pid) {
  int out[2];
  if (pipe(out) != 0) return "";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  char* argv[] = {const_cast<char*>(binary),
                  const_cast<char*>("server"),
                  const_cast<char*>("--port"),
                  const_cast<char*>("0"),
                  const_cast<char*>("--data-dir"),
                  data_dir.data(),
                  nullptr};
  int rc = posix_spawn(pid, binary, &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  if (rc != 0) return "";
  std::string line;
  char c;
  while (read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  return line.rfind("http", 0) == 0 ? line : "";
}

}  // namespace cohort::bench
