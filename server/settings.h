// rl-server's settings table: one row per setting (name, kind, help, where it lives in
// ServerConfig, how it is checked). The command-line flags (flags.cc), the TOML keys (config.cc),
// SIGHUP's reset and list of changes (reload.cc), CONFIG GET (server_commands.cc) and --help (so
// the man page, which help2man makes from --help) all walk this table: a new setting is a field
// in ServerConfig and a row here, nothing else.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "config.h"

namespace rl::server {

enum class SettingKind {
  kNumber,  // a count, size or duration: a NumericSetting row (unit and range)
  kString,  // any text
  kYesNo,   // the flag takes yes|no; the file a boolean or "yes"/"no"
  kSwitch,  // the flag takes no value; the file a boolean
  kChoice,  // one of a few names (an enum); flag and file take the name
};

// An enum setting: its names, a value's index in `names` being its number.
struct ChoiceSetting {
  absl::Span<const std::string_view> names;
  bool toml_boolean;  // the file may also say true / false for names[1] / names[0]
  int (*get)(const ServerConfig& c);
  void (*set)(ServerConfig& c, int index);
};

struct Setting {
  std::string_view name;  // the flag without "--", and the TOML key
  SettingKind kind;
  std::string_view help;                      // --help's text
  const NumericSetting* number = nullptr;     // kNumber
  std::string ServerConfig::*text = nullptr;  // kString
  bool ServerConfig::*flag = nullptr;         // kYesNo, kSwitch
  const ChoiceSetting* choice = nullptr;      // kChoice
  std::string_view config_get_name = {};      // CONFIG GET's name when Redis has another
  bool secret = false;                        // never shown (CONFIG GET, the reload log)
};

// Every setting, in --help order.
absl::Span<const Setting> Settings();
// The row of `name` (a flag name or TOML key with '-'), or null.
const Setting* FindSetting(std::string_view name);

// The value as a user types it: "64mb", "3s", "fail-open", "yes", a string as is.
std::string SettingText(const Setting& s, const ServerConfig& c);
// Sets `s` from text typed as its flag's value (a switch takes yes/no here). Errors do not name
// the flag, e.g. "expected yes or no, got 'x'".
absl::Status SetSettingText(const Setting& s, std::string_view text, ServerConfig& c);
// CONFIG GET's name and value, as Redis gives them: sizes and durations as plain integers (bytes,
// milliseconds); a secret as "(hidden)" when set.
std::string_view ConfigGetName(const Setting& s);
std::string ConfigGetValue(const Setting& s, const ServerConfig& c);
// The names of a choice for errors: "no, yes or local" (each in "..." when `quoted`).
std::string ChoiceList(const ChoiceSetting& choice, bool quoted);

}  // namespace rl::server
