#include "store/dump_format.h"

#include <algorithm>
#include <cstring>

#include "core/coding.h"
#include "core/crc32c.h"
#include "core/json.h"

namespace cohort::store {
namespace {

namespace bj = boost::json;

constexpr char kKindHeader = 'H';
constexpr char kKindRow = 'R';
constexpr char kKindEnd = 'E';
constexpr uint32_t kMaxFrame = 1u << 30;  // a run file is bounded by the body limit

enum ValueTag : char { kTagNull = 0, kTagInt = 1, kTagDouble = 2, kTagBytes = 3 };

constexpr DumpType I = DumpType::kInt, D = DumpType::kDouble, T = DumpType::kText,
                   B = DumpType::kBlob;

}  // namespace

const std::vector<DumpTable>& DumpTables() {
  static const std::vector<DumpTable> kTables = {
      {"runs",
       {{"pk", I},
        {"entity", T},
        {"project", T},
        {"run_id", T},
        {"name", T},
        {"grp", T},
        {"job_type", T},
        {"notes", T},
        {"host", T},
        {"tags", T},
        {"config", T},
        {"summary", T},
        {"summary_explicit", T},
        {"metadata", T},
        {"state", T},
        {"exit_code", I, true},
        {"created_ms", I},
        {"updated_ms", I},
        {"heartbeat_ms", I},
        {"finished_ms", I, true},
        {"writer_count", I}}},
      {"writers",
       {{"pk", I},
        {"run_pk", I},
        {"label", T},
        {"is_primary", I},
        {"update_finish_state", I},
        {"host", T},
        {"pid", I},
        {"gpu_ids", T},
        {"state", T},
        {"exit_code", I, true},
        {"created_ms", I},
        {"heartbeat_ms", I},
        {"finished_ms", I, true},
        {"next_step", I},
        {"last_seq", I},
        {"pruned_seq", I}}},
      {"batches", {{"writer_pk", I}, {"seq", I}, {"stored_ms", I}}},
      {"stream_positions", {{"writer_pk", I}, {"stream", T}, {"next_offset", I}}},
      {"series",
       {{"pk", I},
        {"run_pk", I},
        {"writer_pk", I},
        {"key", T},
        {"is_system", I},
        {"count", I},
        {"min_step", I, true},
        {"max_step", I, true},
        {"next_idx", I},
        {"tail_idx", I},
        {"tail_count", I},
        {"tail_chunks", I}}},
      {"chunks",
       {{"series_pk", I},
        {"idx", I},
        {"count", I},
        {"min_step", I},
        {"max_step", I},
        {"min_time", I},
        {"max_time", I},
        {"vmin", D},
        {"vmax", D},
        {"vsum", D},
        {"vfirst", D},
        {"vlast", D},
        {"nan_count", I},
        {"data", B}}},
      {"console",
       {{"id", I},
        {"run_pk", I},
        {"writer_pk", I},
        {"time_ms", I},
        {"stream", T},
        {"text", T},
        {"line_no", I, true}}},
      {"run_files",
       {{"run_pk", I},
        {"name", T},
        {"content_type", T},
        {"size", I},
        {"updated_ms", I},
        {"data", B},
        {"sha256", T}}},
      {"views",
       {{"pk", I},
        {"entity", T},
        {"project", T},
        {"name", T},
        {"spec", T},
        {"created_ms", I},
        {"updated_ms", I}}},
      {"api_keys",
       {{"pk", I},
        {"entity", T},
        {"name", T},
        {"role", T},
        {"hash", T},
        {"prefix", T},
        {"created_ms", I},
        {"revoked", I}}},
      {"blobs", {{"entity", T}, {"sha256", T}, {"size", I}, {"created_ms", I}}},
      {"artifact_collections",
       {{"pk", I},
        {"entity", T},
        {"project", T},
        {"name", T},
        {"type", T},
        {"next_index", I},
        {"created_ms", I},
        {"updated_ms", I}}},
      {"artifact_versions",
       {{"pk", I},
        {"collection_pk", I},
        {"idx", I},
        {"digest", T},
        {"size", I},
        {"file_count", I},
        {"description", T, true},
        {"metadata", T},
        {"run_id", T},
        {"writer", T},
        {"created_ms", I},
        {"client_digest", T, true},
        {"client_manifest", T, true}}},
      {"artifact_files",
       {{"version_pk", I},
        {"path", T},
        {"sha256", T, true},
        {"size", I, true},
        {"ref", T, true},
        {"ref_digest", T, true}}},
      {"artifact_aliases", {{"collection_pk", I}, {"alias", T}, {"version_pk", I}}},
      {"artifact_uses",
       {{"version_pk", I}, {"run_pk", I}, {"writer", T}, {"direction", T}, {"used_ms", I}}},
      {"blob_md5", {{"entity", T}, {"md5", T}, {"sha256", T}, {"size", I}}},
      {"histograms",
       {{"run_pk", I},
        {"key", T},
        {"writer_pk", I},
        {"step", I},
        {"time_ms", I},
        {"bins", I},
        {"lo", D},
        {"hi", D},
        {"edges", B},
        {"counts", B}}},
      {"media",
       {{"run_pk", I},
        {"key", T},
        {"writer_pk", I},
        {"step", I},
        {"idx", I},
        {"time_ms", I},
        {"type", T},
        {"mime", T},
        {"sha256", T},
        {"size", I},
        {"width", I},
        {"height", I},
        {"duration_ms", I},
        {"caption", T},
        {"path", T},
        {"artifact_ref", T},
        {"cell_bytes", I}}},
      {"alert_rules",
       {{"id", I},
        {"entity", T},
        {"project", T},
        {"name", T},
        {"kind", T},
        {"spec_json", T},
        {"level", T},
        {"enabled", I},
        {"builtin", I},
        {"created_ms", I},
        {"updated_ms", I}}},
      {"alert_rule_defaults", {{"entity", T}, {"project", T}, {"created_ms", I}}},
      {"alerts",
       {{"id", I},
        {"entity", T},
        {"project", T},
        {"run_id", T},
        {"writer_label", T},
        {"rule_id", I, true},
        {"source", T},
        {"condition_key", T},
        {"level", T},
        {"title", T},
        {"text", T},
        {"evidence_json", T},
        {"state", T},
        {"opened_ms", I},
        {"resolved_ms", I, true},
        {"acked_ms", I, true},
        {"acked_by", T, true},
        {"last_seen_ms", I},
        {"count", I}}},
      {"alert_events",
       {{"id", I}, {"entity", T}, {"project", T}, {"alert_id", I}, {"kind", T}, {"created_ms", I}}},
      {"alert_webhooks",
       {{"id", I},
        {"entity", T},
        {"project", T},
        {"name", T},
        {"url", T},
        {"format", T},
        {"secret", T},
        {"min_level", T},
        {"enabled", I},
        {"created_ms", I}}},
      {"alert_deliveries",
       {{"id", I},
        {"webhook_id", I},
        {"entity", T},
        {"project", T},
        {"event_id", I},
        {"alert_id", I},
        {"event_kind", T},
        {"state", T},
        {"attempts", I},
        {"next_attempt_ms", I},
        {"last_status", I, true},
        {"last_error", T},
        {"claimed_by", T},
        {"claim_until_ms", I},
        {"delivered_ms", I, true},
        {"created_ms", I}}},
      {"alert_delivery_cursor", {{"id", I}, {"last_event_id", I}}},
      {"ordered_streams", {{"writer_pk", I}, {"stream", T}, {"seq", I}}},
  };
  return kTables;
}

Status ValidateDumpRecord(const DumpRecord& rec) {
  if (rec.table < 0 || rec.table >= kDumpTableCount) {
    return Status::Corruption("dump: unknown table id " + std::to_string(rec.table));
  }
  const DumpTable& t = DumpTables()[rec.table];
  if (rec.values.size() != t.columns.size()) {
    return Status::Corruption("dump: a " + std::string(t.name) + " row has " +
                              std::to_string(rec.values.size()) + " values, expected " +
                              std::to_string(t.columns.size()));
  }
  for (size_t i = 0; i < t.columns.size(); ++i) {
    const DumpColumn& c = t.columns[i];
    const DumpValue& v = rec.values[i];
    bool ok = false;
    if (std::holds_alternative<std::monostate>(v)) {
      ok = c.nullable;
    } else if (c.type == DumpType::kInt) {
      ok = std::holds_alternative<int64_t>(v);
    } else if (c.type == DumpType::kDouble) {
      ok = std::holds_alternative<double>(v);
    } else {
      ok = std::holds_alternative<std::string>(v);
    }
    if (!ok) {
      return Status::Corruption("dump: " + std::string(t.name) + "." + c.name +
                                " has a value of the wrong type");
    }
  }
  return Status::Ok();
}

std::string EncodeDumpRow(const DumpRecord& rec) {
  std::string out;
  coding::PutVarint64(&out, uint64_t(rec.table));
  coding::PutVarint64(&out, rec.values.size());
  for (const DumpValue& v : rec.values) {
    if (const auto* i = std::get_if<int64_t>(&v)) {
      out.push_back(kTagInt);
      coding::PutVarint64(&out, coding::ZigZag(*i));
    } else if (const auto* d = std::get_if<double>(&v)) {
      out.push_back(kTagDouble);
      coding::PutFixed64(&out, coding::DoubleBits(*d));
    } else if (const auto* s = std::get_if<std::string>(&v)) {
      out.push_back(kTagBytes);
      coding::PutVarint64(&out, s->size());
      out.append(*s);
    } else {
      out.push_back(kTagNull);
    }
  }
  return out;
}

Status DecodeDumpRow(std::string_view in, DumpRecord* rec) {
  auto bad = [](const char* what) { return Status::Corruption(std::string("dump row: ") + what); };
  uint64_t table = 0, n = 0;
  if (!coding::GetVarint64(&in, &table) || !coding::GetVarint64(&in, &n)) {
    return bad("truncated header");
  }
  if (table >= uint64_t(kDumpTableCount)) return bad("unknown table");
  if (n > 256) return bad("too many values");
  rec->table = int(table);
  rec->values.clear();
  rec->values.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    if (in.empty()) return bad("truncated value");
    const char tag = in[0];
    in.remove_prefix(1);
    if (tag == kTagNull) {
      rec->values.emplace_back(std::monostate{});
    } else if (tag == kTagInt) {
      uint64_t u = 0;
      if (!coding::GetVarint64(&in, &u)) return bad("truncated integer");
      rec->values.emplace_back(coding::UnZigZag(u));
    } else if (tag == kTagDouble) {
      if (in.size() < 8) return bad("truncated double");
      rec->values.emplace_back(coding::BitsDouble(coding::DecodeFixed64(in.data())));
      in.remove_prefix(8);
    } else if (tag == kTagBytes) {
      uint64_t len = 0;
      if (!coding::GetVarint64(&in, &len) || len > in.size()) return bad("truncated bytes");
      rec->values.emplace_back(std::string(in.substr(0, len)));
      in.remove_prefix(len);
    } else {
      return bad("unknown value tag");
    }
  }
  if (!in.empty()) return bad("trailing bytes");
  UpgradeDumpRecord(rec);  // a row of an older dump, short of the columns added since
  return ValidateDumpRecord(*rec);
}

// ---- DumpFileWriter ----

Status DumpFileWriter::Frame(char kind, std::string_view body) {
  std::string frame;
  frame.reserve(body.size() + 9);
  coding::PutFixed32(&frame, uint32_t(body.size() + 1));
  uint32_t crc = crc32c::Extend(0, &kind, 1);
  crc = crc32c::Extend(crc, body.data(), body.size());
  coding::PutFixed32(&frame, crc);
  frame.push_back(kind);
  frame.append(body);
  if (std::fwrite(frame.data(), 1, frame.size(), out_) != frame.size()) {
    return Status::IOError("dump: write failed: " + std::string(std::strerror(errno)));
  }
  bytes_ += int64_t(frame.size());
  return Status::Ok();
}

Status DumpFileWriter::Begin() {
  if (std::fwrite(kDumpMagic, 1, kDumpMagicSize, out_) != kDumpMagicSize) {
    return Status::IOError("dump: write failed: " + std::string(std::strerror(errno)));
  }
  bytes_ += kDumpMagicSize;
  for (const DumpTable& t : DumpTables()) counts_[t.name] = 0;
  bj::object h;
  h["format"] = "cohort-store-dump";
  h["version"] = header_.version;
  h["source"] = header_.source;
  h["created_ms"] = header_.created_ms;
  return Frame(kKindHeader, json::Serialize(h));
}

Status DumpFileWriter::Add(const DumpRecord& rec) {
  COHORT_RETURN_IF_ERROR(ValidateDumpRecord(rec));
  ++counts_[DumpTables()[rec.table].name];
  return Frame(kKindRow, EncodeDumpRow(rec));
}

Status DumpFileWriter::Close() {
  bj::object counts;
  for (const auto& [name, n] : counts_) counts[name] = n;
  bj::object end;
  end["counts"] = std::move(counts);
  COHORT_RETURN_IF_ERROR(Frame(kKindEnd, json::Serialize(end)));
  if (std::fflush(out_) != 0) {
    return Status::IOError("dump: flush failed: " + std::string(std::strerror(errno)));
  }
  return Status::Ok();
}

// ---- DumpFileReader ----

namespace {

}  // namespace

void UpgradeDumpRecord(DumpRecord* rec) {
  // The columns added to a table since the first dumps, in the order they were added, with
  // their value for older rows; a row short by k values lacks the last k of its table's.
  struct Added {
    int table;
    std::string_view column;
    DumpValue value;
  };
  static const Added kAdded[] = {
      {kDumpRuns, "summary_explicit", DumpValue(std::string("[]"))},
      {kDumpMedia, "artifact_ref", DumpValue(std::string())},
      {kDumpMedia, "cell_bytes", DumpValue(int64_t{0})},
  };
  std::vector<const Added*> added;
  for (const Added& a : kAdded) {
    if (a.table == rec->table) added.push_back(&a);
  }
  const auto& columns = DumpTables()[rec->table].columns;
  if (rec->values.size() >= columns.size() || rec->values.size() + added.size() < columns.size()) {
    return;  // today's shape, or ValidateDumpRecord reports it
  }
  const size_t missing = columns.size() - rec->values.size();
  std::vector<std::pair<size_t, const DumpValue*>> inserts;  // (column index, value)
  for (size_t a = added.size() - missing; a < added.size(); ++a) {
    for (size_t i = 0; i < columns.size(); ++i) {
      if (std::string_view(columns[i].name) == added[a]->column) {
        inserts.emplace_back(i, &added[a]->value);
      }
    }
  }
  if (inserts.size() != missing) return;
  std::sort(inserts.begin(), inserts.end());
  for (const auto& [i, value] : inserts) rec->values.insert(rec->values.begin() + long(i), *value);
}

Result<bool> DumpFileReader::ReadFrame(char* kind, std::string* body) {
  char head[8];
  size_t got = std::fread(head, 1, 8, in_);
  if (got == 0 && std::feof(in_)) {
    truncated_ = true;  // no end record
    return false;
  }
  if (got < 8) {
    truncated_ = true;
    return false;
  }
  const uint32_t len = coding::DecodeFixed32(head);
  const uint32_t crc = coding::DecodeFixed32(head + 4);
  if (len == 0 || len > kMaxFrame) {
    return Status::Corruption("dump: bad record length at offset " + std::to_string(offset_));
  }
  std::string payload(len, '\0');
  got = std::fread(payload.data(), 1, len, in_);
  if (got < len) {
    truncated_ = true;  // a torn tail: the writer died mid-record
    return false;
  }
  if (crc32c::Value(payload) != crc) {
    // A damaged last record is a torn write; damage with records after it is corruption.
    const int c = std::fgetc(in_);
    if (c == EOF) {
      truncated_ = true;
      return false;
    }
    return Status::Corruption("dump: checksum mismatch in the record at offset " +
                              std::to_string(offset_));
  }
  offset_ += 8 + len;
  *kind = payload[0];
  body->assign(payload, 1);
  return true;
}

Status DumpFileReader::Begin() {
  char magic[kDumpMagicSize];
  if (std::fread(magic, 1, kDumpMagicSize, in_) != kDumpMagicSize ||
      std::memcmp(magic, kDumpMagic, kDumpMagicSize) != 0) {
    return Status::InvalidArgument("dump: not a cohort store dump (bad magic)");
  }
  offset_ = kDumpMagicSize;
  for (const DumpTable& t : DumpTables()) counts_[t.name] = 0;
  char kind = 0;
  std::string body;
  COHORT_ASSIGN_OR_RETURN(bool got, ReadFrame(&kind, &body));
  if (!got || kind != kKindHeader) {
    return Status::Corruption("dump: the header record is missing or damaged");
  }
  COHORT_ASSIGN_OR_RETURN(bj::value v, json::Parse(body));
  const bj::object* o = v.if_object();
  if (o == nullptr || !o->contains("version") || !(*o).at("version").is_int64()) {
    return Status::Corruption("dump: bad header record");
  }
  header_.version = int((*o).at("version").as_int64());
  if (header_.version != kDumpFormatVersion) {
    return Status::FailedPrecondition("dump: format version " + std::to_string(header_.version) +
                                      " is not supported by this build (" +
                                      std::to_string(kDumpFormatVersion) + ")");
  }
  if (const bj::value* s = o->if_contains("source"); s && s->is_string()) {
    header_.source = std::string(s->as_string());
  }
  if (const bj::value* c = o->if_contains("created_ms"); c && c->is_int64()) {
    header_.created_ms = c->as_int64();
  }
  return Status::Ok();
}

bool DumpFileReader::CountsMatchEnd() const {
  for (const auto& [name, n] : end_counts_) {
    if (!counts_.contains(name)) return false;  // a table this build does not know
  }
  for (const auto& [name, n] : counts_) {
    auto it = end_counts_.find(name);
    if (it == end_counts_.end() ? n != 0 : it->second != n) return false;
  }
  return true;
}

Result<bool> DumpFileReader::Next(DumpRecord* rec) {
  if (ended_) return false;
  char kind = 0;
  std::string body;
  COHORT_ASSIGN_OR_RETURN(bool got, ReadFrame(&kind, &body));
  if (!got) return false;
  if (kind == kKindEnd) {
    ended_ = true;
    COHORT_ASSIGN_OR_RETURN(bj::value v, json::Parse(body));
    const bj::object* o = v.if_object();
    const bj::value* c = o ? o->if_contains("counts") : nullptr;
    if (c == nullptr || !c->is_object()) return Status::Corruption("dump: bad end record");
    for (const auto& [name, n] : c->as_object()) {
      if (!n.is_int64()) return Status::Corruption("dump: bad end record");
      end_counts_[std::string(name)] = n.as_int64();
    }
    return false;
  }
  if (kind != kKindRow) {
    return Status::Corruption("dump: unknown record kind at offset " + std::to_string(offset_));
  }
  COHORT_RETURN_IF_ERROR(DecodeDumpRow(body, rec));
  ++counts_[DumpTables()[rec->table].name];
  return true;
}

}  // namespace cohort::store
