#include "server/data_dir.h"

#include <unistd.h>

#include <algorithm>

namespace cohort::server {

bool IsDataDirEntry(std::string_view name, std::string_view db_name) {
  if (!db_name.empty() && name.starts_with(db_name)) {
    const std::string_view rest = name.substr(db_name.size());
    if (rest.empty() || rest == "-wal" || rest == "-shm" || rest == "-journal") return true;
  }
  return name == "signing.key" || name.starts_with("signing.key.new-") || name == "login-link" ||
         name == "admin-key" || name == "blobs";
}

Status PrepareDataDir(wal::FileSystem* fs, const std::string& dir, std::string_view db_name,
                      const std::vector<std::string>& own_names, std::vector<std::string>* notes) {
  COHORT_ASSIGN_OR_RETURN(bool exists, fs->Exists(dir));
  if (!exists) {
    Status made = fs->CreateDir(dir);
    if (made.ok()) made = fs->SetPermissions(dir, 0700);
    if (!made.ok()) {
      return Status::IOError("cannot create data directory " + dir + ": " + made.message() +
                             "; give one this user may create (--data-dir)");
    }
    return Status::Ok();
  }
  // "/.": a link to the data directory is followed.
  COHORT_ASSIGN_OR_RETURN(wal::FileMode dir_mode, fs->Mode(wal::JoinPath(dir, ".")));
  if (dir_mode.type != wal::FileMode::Type::kDirectory) {
    return Status::FailedPrecondition("data directory " + dir +
                                      " is not a directory: give a directory (--data-dir)");
  }
  COHORT_ASSIGN_OR_RETURN(std::vector<std::string> names, fs->ListDir(dir));
  std::vector<std::string> own, other;
  for (std::string& name : names) {
    if (name == "lost+found") continue;
    const bool named = std::find(own_names.begin(), own_names.end(), name) != own_names.end();
    (named || IsDataDirEntry(name, db_name) ? own : other).push_back(std::move(name));
  }
  if (own.empty() && !other.empty()) {
    return Status::FailedPrecondition(
        "--data-dir " + dir + " is not empty and holds no Cohort store (it holds " + other.front() +
        (other.size() > 1 ? " and more" : "") + "): give a new or empty directory");
  }
  // Data that an older version left readable by other users is made private: the store holds
  // the API key hashes, signing.key the keys of upload URLs.
  const uint32_t me = uint32_t(::geteuid());
  if (dir_mode.owner != me) return Status::Ok();  // not ours to change
  bool tightened = false;
  if ((dir_mode.permissions & 077) != 0) {
    if (Status s = fs->SetPermissions(dir, 0700); !s.ok()) {
      return Status::IOError("cannot make data directory " + dir + " private: " + s.message());
    }
    tightened = true;
  }
  for (const std::string& name : own) {
    const std::string path = wal::JoinPath(dir, name);
    Result<wal::FileMode> m = fs->Mode(path);
    if (!m.ok() || m->owner != me || (m->permissions & 077) == 0) continue;
    uint32_t mode = 0;
    if (m->type == wal::FileMode::Type::kRegular) mode = m->permissions & 0700;
    if (m->type == wal::FileMode::Type::kDirectory) mode = 0700;
    if (mode != 0 && fs->SetPermissions(path, mode).ok()) tightened = true;
  }
  if (tightened) {
    notes->push_back("made the data directory " + dir + " and Cohort's files in it private" +
                     " (0700/0600)");
  }
  return Status::Ok();
}

}  // namespace cohort::server
