// The user's Cohort config file ($XDG_CONFIG_HOME/cohort/config.json, else
// ~/.config/cohort/config.json): the server URL and API key that clients use by default.
// Written with mode 0600 (it holds a secret), atomically (temp file + rename).
// Thread-safe (no shared state); concurrent writers: last one wins.
#pragma once

#include <string>

#include "cohort/status.h"

namespace cohort {

struct UserConfig {
  std::string base_url;
  std::string api_key;
};

std::string UserConfigPath();
// $XDG_DATA_HOME/cohort, else ~/.local/share/cohort.
std::string UserDataDir();
// $COHORT_CACHE_DIR (a leading "~" is the home directory, a relative path is made absolute: as
// the Python SDK reads it), else $XDG_CACHE_HOME/cohort, else ~/.cache/cohort (the hash cache,
// agent/hash_cache.h).
std::string UserCacheDir();
// Missing file: an empty config (not an error).
Result<UserConfig> LoadUserConfig(const std::string& path = UserConfigPath());
Status SaveUserConfig(const UserConfig& config, const std::string& path = UserConfigPath());

}  // namespace cohort
