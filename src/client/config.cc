#include "client/config.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "core/ids.h"
#include "core/limits.h"
#include "core/user_config.h"

namespace cohort::client {
namespace {

class ProcessEnvironment : public Environment {
 public:
  std::optional<std::string> Get(std::string_view name) const override {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  }
};

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

std::optional<int> EnvInt(const Environment& env, std::string_view name) {
  auto v = env.Get(name);
  if (!v) return std::nullopt;
  int out = 0;
  auto r = std::from_chars(v->data(), v->data() + v->size(), out);
  if (r.ec != std::errc() || r.ptr != v->data() + v->size()) return std::nullopt;
  return out;
}

// First non-empty of the given field, env var and fallback.
std::string Pick(const std::string& field, const Environment& env, std::string_view var,
                 std::string fallback = {}) {
  if (!field.empty()) return field;
  if (auto v = env.Get(var)) return *v;
  return fallback;
}

// Pick, with the vendor's variable `vendor_var` (WANDB_...) after Cohort's own: a script written
// for the vendor's SDK keeps its environment (docs/python.md, "The vendor's environment").
std::string PickOrVendor(const std::string& field, const Environment& env, std::string_view var,
                         std::string_view vendor_var, std::string fallback = {}) {
  std::string v = Pick(field, env, var);
  if (v.empty()) v = Pick({}, env, vendor_var, std::move(fallback));
  return v;
}

Status CheckLabel(const std::string& label) {
  if (label.empty() || label.size() > limits::kMaxLabelBytes) {
    return Status::InvalidArgument("label: must be 1.." + std::to_string(limits::kMaxLabelBytes) +
                                   " bytes");
  }
  if (label == "." || label == "..") return Status::InvalidArgument("label: may not be . or ..");
  for (char c : label) {
    if (c == '/' || uint8_t(c) < 0x20 || c == 0x7f) {
      return Status::InvalidArgument("label: may not contain '/' or control characters");
    }
  }
  return Status::Ok();
}

}  // namespace

const Environment& Environment::Process() {
  static const ProcessEnvironment* env = new ProcessEnvironment();
  return *env;
}

std::optional<std::string> MapEnvironment::Get(std::string_view name) const {
  auto it = vars_.find(name);
  if (it == vars_.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::string ConfigPathFor(const Environment& env) {
  if (auto x = env.Get("XDG_CONFIG_HOME")) return *x + "/cohort/config.json";
  return env.Get("HOME").value_or("/tmp") + "/.config/cohort/config.json";
}

std::string DefaultDataDirFor(const Environment& env) {
  if (auto x = env.Get("XDG_DATA_HOME")) return *x + "/cohort/agent";
  return env.Get("HOME").value_or("/tmp") + "/.local/share/cohort/agent";
}

std::string RunIdFromTorchElastic(std::string_view torchelastic_run_id) {
  static constexpr char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  for (char c : std::string_view("cohort/torchelastic/")) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  for (char c : torchelastic_run_id) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
  std::string id(8, '0');
  for (int i = 7; i >= 0; --i) {
    id[i] = kAlphabet[h % 36];
    h /= 36;
  }
  return id;
}

namespace {
constexpr double kMaxTimeoutS = 86400;  // init and finish timeouts
}  // namespace

Result<ResolvedSettings> ResolveSettings(const Settings& in, const Environment& env) {
  ResolvedSettings out;
  Settings& s = out.settings;
  s = in;
  out.host = HostName();
  out.config_path = ConfigPathFor(env);

  // Mode and transport.
  s.mode = PickOrVendor(in.mode, env, "COHORT_MODE", "WANDB_MODE", "online");
  if (s.mode == "dryrun") s.mode = "offline";  // the vendor's older names
  if (s.mode == "run") s.mode = "online";
  if (s.mode == "shared") {  // COHORT_MODE=shared, as the Python SDK's mode="shared"
    s.shared = true;
    s.mode = "online";
  }
  if (s.mode != "online" && s.mode != "offline" && s.mode != "disabled") {
    return Status::InvalidArgument("mode: expected online, offline or disabled, got '" + s.mode +
                                   "'");
  }
  s.transport = Pick(in.transport, env, "COHORT_AGENT", "agent");
  if (s.transport == "inprocess") s.transport = "private";  // the name of the mode it replaced
  if (s.transport != "agent" && s.transport != "private") {
    return Status::InvalidArgument("transport: expected agent, private or inprocess, got '" +
                                   s.transport + "'");
  }

  // Server and identity: settings, then environment, then the config file, then defaults.
  s.base_url = Pick(in.base_url, env, "COHORT_BASE_URL");
  s.api_key = Pick(in.api_key, env, "COHORT_API_KEY");
  if (s.base_url.empty() || s.api_key.empty()) {
    auto file = LoadUserConfig(out.config_path);
    if (file.ok()) {
      if (s.base_url.empty()) s.base_url = file->base_url;
      if (s.api_key.empty()) s.api_key = file->api_key;
    } else if (s.mode != "disabled") {
      return file.status();
    }
  }
  if (s.base_url.empty()) s.base_url = kDefaultBaseUrl;
  while (s.base_url.size() > 1 && s.base_url.back() == '/') s.base_url.pop_back();
  s.entity = Pick(in.entity, env, "COHORT_ENTITY");
  s.project = PickOrVendor(in.project, env, "COHORT_PROJECT", "WANDB_PROJECT", kDefaultProject);
  s.dir = Pick(in.dir, env, "COHORT_DIR", DefaultDataDirFor(env));

  // torchrun.
  out.rank = EnvInt(env, "RANK");
  out.local_rank = EnvInt(env, "LOCAL_RANK");
  out.world_size = EnvInt(env, "WORLD_SIZE");

  // Run id: given, COHORT_RUN_ID, derived from the torchelastic job (shared mode), or random.
  s.run_id = PickOrVendor(in.run_id, env, "COHORT_RUN_ID", "WANDB_RUN_ID");
  if (s.run_id.empty() && s.shared) {
    if (auto te = env.Get("TORCHELASTIC_RUN_ID"); te && *te != "none") {
      s.run_id = RunIdFromTorchElastic(*te);
    }
  }
  if (s.run_id.empty()) {
    s.run_id = ids::RandomBase36(8);
    out.run_id_generated = true;
  }
  // The server's rule: a name it refuses fails init here, offline too (`cohort sync` could not
  // upload the run later); a disabled run sends nothing.
  if (s.mode != "disabled") COHORT_RETURN_IF_ERROR(ids::CheckProjectName(s.project));
  if (!ids::IsValidId(s.run_id)) {
    return Status::InvalidArgument("run_id: '" + s.run_id +
                                   "' must be 1..64 characters of [A-Za-z0-9_.-]");
  }

  // Writer: label and flags.
  if (s.label.empty()) {
    s.label =
        out.rank ? "rank_" + std::to_string(*out.rank) : out.host + "-" + ids::RandomBase36(4);
  }
  COHORT_RETURN_IF_ERROR(CheckLabel(s.label));
  // Under torchrun the primary of a shared run is rank 0; a run of its own (not shared) has
  // one writer, which is its primary whatever its rank (as in the Python SDK).
  if (!s.primary) s.primary = s.shared && out.rank ? *out.rank == 0 : true;
  // The run's state is its primary's: a shared run's worker that did not say otherwise does not
  // end it (under torchrun every rank calls init the same way, and a worker finishing after a
  // failed rank 0 turned the run finished). A run of its own is ended by its one writer.
  if (!s.update_finish_state) s.update_finish_state = s.shared ? *s.primary : true;
  if (s.shared && !*s.primary && out.run_id_generated) {
    return Status::InvalidArgument(
        "shared mode: a non-primary writer needs the primary's run id (Settings.run_id, "
        "COHORT_RUN_ID or torchrun's TORCHELASTIC_RUN_ID)");
  }
  if (s.resume.empty()) s.resume = "allow";
  if (s.resume != "allow" && s.resume != "must" && s.resume != "never") {
    return Status::InvalidArgument("resume: expected allow, must or never");
  }
  if (s.init_timeout_s <= 0) s.init_timeout_s = 30;
  if (s.finish_timeout_s <= 0) s.finish_timeout_s = 30;
  // Milliseconds in an int64 (a day at most): NaN or infinity ("wait for ever") turned into a
  // deadline in the past, and finish dropped everything without a try.
  for (const auto& [name, v] : {std::pair<const char*, double>{"init_timeout_s", s.init_timeout_s},
                                {"finish_timeout_s", s.finish_timeout_s}}) {
    if (!std::isfinite(v) || v > kMaxTimeoutS) {
      return Status::InvalidArgument(std::string(name) + ": " + std::to_string(v) +
                                     " seconds; expected a finite number of at most " +
                                     std::to_string(int(kMaxTimeoutS)) + " (a day)");
    }
  }
  return out;
}

}  // namespace cohort::client
