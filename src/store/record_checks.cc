#include "store/record_checks.h"

#include <cstdint>
#include <optional>

#include "core/batch_format.h"
#include "core/histogram.h"
#include "core/json.h"
#include "core/limits.h"
#include "store/run_ref.h"

namespace cohort::store {

Status ValidateView(const ViewRecord& view) {
  if (view.entity.empty() || view.project.empty()) {
    return Status::InvalidArgument("view: entity and project are required");
  }
  if (view.name.empty()) return Status::InvalidArgument("view: name is empty");
  if (view.name.size() > limits::kMaxViewNameBytes) {
    return Status::InvalidArgument("view: name is longer than " +
                                   std::to_string(limits::kMaxViewNameBytes) + " bytes");
  }
  for (unsigned char c : view.name) {
    if (c < 0x20 || c == 0x7f) {
      return Status::InvalidArgument("view: name has control characters");
    }
  }
  if (view.spec_json.size() > limits::kMaxViewSpecBytes) {
    return Status::PayloadTooLarge("view: spec has " + std::to_string(view.spec_json.size()) +
                                   " bytes, more than the " +
                                   std::to_string(limits::kMaxViewSpecBytes) + " a view may hold");
  }
  auto spec = json::Parse(view.spec_json);
  if (!spec.ok() || !spec->is_object()) {
    return Status::InvalidArgument("view: spec is not a JSON object");
  }
  return Status::Ok();
}

Status ViewNameTaken(const ViewRecord& view) {
  return Status::AlreadyExists("view: a view named '" + view.name + "' exists in project '" +
                               view.entity + "/" + view.project + "'");
}

Status ViewNotFound(const std::string& entity, const std::string& project, int64_t id) {
  return Status::NotFound("view " + std::to_string(id) + " of project '" + entity + "/" + project +
                          "' not found");
}

Status ValidateApiKey(const ApiKeyRecord& key) {
  if (key.entity.empty()) return Status::InvalidArgument("api key: entity is empty");
  if (key.hash.empty()) return Status::InvalidArgument("api key: hash is empty");
  return Status::Ok();
}

Status ApiKeyHashTaken() { return Status::AlreadyExists("api key: a key with this hash exists"); }

Status ApiKeyNotFound(const std::string& entity, int64_t id) {
  return Status::NotFound("api key " + std::to_string(id) + " of entity '" + entity +
                          "' not found");
}

Status ValidateSession(const SessionRecord& s) {
  if (s.hash.empty()) return Status::InvalidArgument("session: hash is required");
  if (s.expires_ms <= s.created_ms) {
    return Status::InvalidArgument("session: expires_ms must be after created_ms");
  }
  return Status::Ok();
}

Status SessionKeyGone(int64_t key_id) {
  return Status::NotFound("api key " + std::to_string(key_id) + " not found or revoked");
}

Status LoginTokenInvalid() {
  return Status::NotFound("login token unknown, already used or expired");
}

Status SessionNotFound() { return Status::NotFound("session not found, expired or revoked"); }

Status ValidateFileName(const std::string& name) {
  if (name.empty() || name.size() > 1024) {
    return Status::InvalidArgument("file: name must be 1-1024 bytes");
  }
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x20) {
      return Status::InvalidArgument("file: name has control characters");
    }
  }
  return Status::Ok();
}

Status RunFileNotFound(const RunRef& ref, const std::string& name) {
  return Status::NotFound("file '" + name + "' of run '" + RunName(ref) + "' not found");
}

Status WriterLabelTaken(const RunRef& ref, const std::string& label) {
  return Status::AlreadyExists("writer '" + label + "' of run '" + RunName(ref) + "' exists");
}

Status CheckHistogramPoint(std::string_view where, const HistogramPoint& h) {
  if (h.step < 0) return Status::InvalidArgument(std::string(where) + ".step: must be >= 0");
  if (std::string why = histogram::InvalidReason(h.value); !why.empty()) {
    return Status::InvalidArgument(std::string(where) + " (key '" + h.key + "'): " + why);
  }
  return Status::Ok();
}

Status CheckMediaPoint(std::string_view where, const MediaPoint& m) {
  const std::string at(where);
  std::optional<batch::MediaType> type = batch::ParseMediaType(m.type);
  if (!type) {
    return Status::InvalidArgument(at + ".type: '" + m.type +
                                   "' is not image, audio, video, html or table");
  }
  if (m.index < 0 || m.index > int64_t(UINT32_MAX)) {
    return Status::InvalidArgument(at + ".index: must be 0 to 2^32-1");
  }
  const bool named_by_path = m.sha256.empty() && !m.path.empty();
  if (named_by_path) {
    if (m.path.size() > limits::kMaxMediaPathBytes || m.path.find('\0') != std::string::npos) {
      return Status::InvalidArgument(at + ".path: 1 to " +
                                     std::to_string(limits::kMaxMediaPathBytes) +
                                     " bytes without NUL");
    }
    if (m.size != 0) return Status::InvalidArgument(at + ".size: unknown before the upload");
  }
  batch::MediaRow row;
  row.step = m.step;
  row.time_ms = m.time_ms;
  row.index = uint32_t(m.index);
  row.type = *type;
  row.sha256 = m.sha256;
  row.size = m.size;
  row.mime = m.mime;
  row.width = m.width;
  row.height = m.height;
  row.duration_ms = m.duration_ms;
  row.caption = m.caption;
  row.cell_bytes = m.cell_bytes;
  std::string why =
      named_by_path ? batch::InvalidMediaFieldsReason(row) : batch::InvalidMediaReason(row);
  if (!why.empty()) return Status::InvalidArgument(at + " (key '" + m.key + "'): " + why);
  return Status::Ok();
}

}  // namespace cohort::store
