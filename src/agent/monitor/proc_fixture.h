// ProcFixture (tests only): a temporary directory laid out like /proc, so the /proc-based
// monitor sources can be fed fixed files. Writes replace whole files, as the kernel's are
// regenerated on each read. Single-threaded; removes the directory when destroyed.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace cohort::monitor {

class ProcFixture {
 public:
  ProcFixture() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "cohort_proc_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    root_ = tmpl;
  }
  ~ProcFixture() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  ProcFixture(const ProcFixture&) = delete;
  ProcFixture& operator=(const ProcFixture&) = delete;

  const std::string& root() const { return root_; }

  // Writes `content` to root()/relative, creating directories as needed.
  void Write(const std::string& relative, const std::string& content) {
    std::filesystem::path path = std::filesystem::path(root_) / relative;
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << content;
    f.close();
    if (!f) ADD_FAILURE() << "cannot write " << path;
  }

  void Remove(const std::string& relative) {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::path(root_) / relative, ec);
  }

  // Writes <pid>/stat and <pid>/status for a process; `comm` may hold spaces and parentheses.
  void WriteProcess(int pid, int ppid, uint64_t utime, uint64_t stime, uint64_t start_ticks,
                    uint64_t rss_kb, const std::string& comm = "python3 (rank 0)") {
    std::string p = std::to_string(pid);
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
    // stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss ...
    Write(p + "/stat", p + " (" + comm + ") S " + std::to_string(ppid) + " 1 1 0 -1 4194304 " +
                           "10 0 0 0 " + std::to_string(utime) + " " + std::to_string(stime) +
                           " 0 0 20 0 4 0 " + std::to_string(start_ticks) +
                           " 123456789 2500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 "
                           "3 0 0 0 0 0\n");
    Write(p + "/status", "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nPid:\t" + p +
                             "\nPPid:\t" + std::to_string(ppid) + "\nVmPeak:\t  999999 kB\n" +
                             "VmRSS:\t" + std::to_string(rss_kb) + " kB\nThreads:\t4\n");
  }

 private:
  std::string root_;
};

}  // namespace cohort::monitor
