// The server's data directory: made private when it is new, empty or already a Cohort store, and
// refused when it holds other things (a shared directory such as /tmp or $HOME given by mistake
// must not have its permissions changed).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "wal/file.h"

namespace cohort::server {

// Whether `name` is one of the entries Cohort itself writes in a data directory: the SQLite
// store `db_name` (e.g. "cohort.db") with its -wal, -shm and -journal files, the URL signing
// keys (signing.key and the signing.key.new-* of a start that was killed), the login link, the
// admin key shown at first start, and the blob store's directory.
bool IsDataDirEntry(std::string_view name, std::string_view db_name);

// Creates `dir` (0700) when it is missing. An empty directory, or one that holds any of
// Cohort's entries, is made 0700 and those entries owner-only (files 0600-style, directories
// 0700; other entries are left alone), when the directory belongs to this user. A directory that
// holds other entries and none of Cohort's is refused (kFailedPrecondition) and nothing is
// changed. "lost+found" (of a file system mounted there) counts as empty. `own_names` are more
// entries of Cohort's in `dir`: those it was told to write there under names of the operator's
// (--signing-key-file <dir>/keys, --blob-dir <dir>/myblobs). What was tightened is added to
// `notes`.
Status PrepareDataDir(wal::FileSystem* fs, const std::string& dir, std::string_view db_name,
                      const std::vector<std::string>& own_names, std::vector<std::string>* notes);

}  // namespace cohort::server
