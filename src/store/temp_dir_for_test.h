// A temporary directory for store tests, removed with everything in it when the object goes
// away. Single-threaded.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace cohort::store {

class TempDir {
 public:
  TempDir() {
    namespace fs = std::filesystem;
    std::string tmpl = (fs::temp_directory_path() / "cohort-store-XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    path_ = made ? fs::path(made) : fs::path();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace cohort::store
