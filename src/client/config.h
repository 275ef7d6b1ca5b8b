// Settings resolution for the client library (DESIGN.md section 3, docs: "Configuration"):
// every empty field of cohort::Settings is filled from, in order, the environment (COHORT_*),
// the user's config file ($XDG_CONFIG_HOME or ~/.config/cohort/config.json) and defaults; under
// torchrun, RANK / TORCHELASTIC_RUN_ID give the writer label, the primary flag and (in shared
// mode) a run id that every rank derives alike without talking to the others.
//
// Environment is a read-only seam over getenv so tests can pass their own variables. Functions
// here are pure apart from reading the environment, the config file and the host name;
// thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "cohort/cohort.h"
#include "cohort/status.h"

namespace cohort::client {

inline constexpr char kDefaultBaseUrl[] = "http://127.0.0.1:8787";
inline constexpr char kDefaultProject[] = "uncategorized";

// Environment variables, read-only.
class Environment {
 public:
  virtual ~Environment() = default;
  // nullopt when unset; an empty value counts as unset.
  virtual std::optional<std::string> Get(std::string_view name) const = 0;
  // The process environment (getenv). Never null.
  static const Environment& Process();
};

// An Environment from a map, for tests.
class MapEnvironment : public Environment {
 public:
  MapEnvironment() = default;
  explicit MapEnvironment(std::map<std::string, std::string, std::less<>> vars)
      : vars_(std::move(vars)) {}
  void Set(std::string name, std::string value) { vars_[std::move(name)] = std::move(value); }
  std::optional<std::string> Get(std::string_view name) const override;

 private:
  std::map<std::string, std::string, std::less<>> vars_;
};

// Settings with every field decided, plus what was learned from torchrun.
struct ResolvedSettings {
  Settings settings;        // base_url, api_key, project, run_id, mode, dir, label, primary,
                            // update_finish_state, transport all set (entity may stay empty:
                            // the server's answer for the key decides it)
  std::string host;         // this machine's host name
  std::string config_path;  // the config file consulted
  bool run_id_generated = false;  // true: random id made here (a brand-new run)
  std::optional<int> rank, local_rank, world_size;  // from torchrun's environment
};

// Resolves `in` against `env` (and the config file it points at). kInvalidArgument for values
// that cannot work (unknown mode, bad run id or label, a shared-mode worker without a run id).
Result<ResolvedSettings> ResolveSettings(const Settings& in, const Environment& env);

// The run id all ranks of one torchelastic job share: 8 base-36 characters of a 64-bit FNV-1a
// hash of `torchelastic_run_id`. Deterministic across processes and machines.
std::string RunIdFromTorchElastic(std::string_view torchelastic_run_id);

// The config file path for `env`: $XDG_CONFIG_HOME/cohort/config.json, else
// $HOME/.config/cohort/config.json.
std::string ConfigPathFor(const Environment& env);
// The default data dir (WAL of writers): $XDG_DATA_HOME/cohort/agent, else
// $HOME/.local/share/cohort/agent.
std::string DefaultDataDirFor(const Environment& env);

}  // namespace cohort::client
