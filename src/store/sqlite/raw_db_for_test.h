// A raw SQLite connection for store tests: to inspect or lock a store's file from outside the
// store (another process, as far as the file is concerned). Single-threaded.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace cohort::store {

struct RawDb {
  explicit RawDb(const std::filesystem::path& path) { sqlite3_open(path.c_str(), &db); }
  ~RawDb() { sqlite3_close(db); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;
  // The first column of the first row as text ("" when there is none).
  std::string One(const char* sql) {
    sqlite3_stmt* st = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      out = t ? reinterpret_cast<const char*>(t) : "";
    }
    sqlite3_finalize(st);
    return out;
  }
  // The same as an integer (-1 when there is no row).
  int64_t Int(const char* sql) {
    sqlite3_stmt* st = nullptr;
    int64_t out = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      out = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return out;
  }
  int Exec(const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr); }
  // Closes the connection early (the last one to close checkpoints the WAL into the file).
  void Close() {
    sqlite3_close(db);
    db = nullptr;
  }
  sqlite3* db = nullptr;
};

}  // namespace cohort::store
