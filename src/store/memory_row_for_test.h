// MemoryRow: a result row held in memory, the row accessor of store/sql/sql_rows.h over plain
// values, for tests of the shared row readers without a database. Not thread-safe (a value).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cohort::store::testing_rows {

class MemoryRow {
 public:
  // A cell: NULL, an integer, text or a double.
  using Cell = std::variant<std::monostate, int64_t, std::string, double>;
  explicit MemoryRow(std::vector<Cell> cells) : cells_(std::move(cells)) {}
  std::string Text(int col) const { return std::get<std::string>(cells_.at(col)); }
  int64_t Int(int col) const { return std::get<int64_t>(cells_.at(col)); }
  double Double(int col) const { return std::get<double>(cells_.at(col)); }
  std::optional<int64_t> OptInt(int col) const {
    if (std::holds_alternative<std::monostate>(cells_.at(col))) return std::nullopt;
    return Int(col);
  }

 private:
  std::vector<Cell> cells_;
};

}  // namespace cohort::store::testing_rows
