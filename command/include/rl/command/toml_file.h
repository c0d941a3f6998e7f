// The one reader of rl's TOML files: rl-server's --config file (and its SIGHUP reload) and rl.so's
// POLICIES file. It refuses what is not a regular file of reasonable size and hands toml++ only
// ASCII (Debian's toml++ 3.3.0 has undefined behaviour on some non-ASCII input), so every front
// end gets the same guards; fuzz/config_fuzz runs it on arbitrary text.
#pragma once

#include <toml++/toml.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace rl::command {

// (name, spec) pairs of a [policies] table, in file order.
using PolicyTexts = std::vector<std::pair<std::string, std::string>>;

// A config file's bytes. Only a regular file of at most 16 MiB will do: toml++ reads a directory
// as an empty document (a server with defaults, or a reload that drops every policy), and a FIFO
// would block.
absl::StatusOr<std::string> ReadTomlFile(const std::string& path);

// TOML text parsed, errors as "<source>:<line>: <what>" values (toml++ throws them).
absl::StatusOr<toml::table> ParseToml(std::string_view text, std::string_view source);

// The [policies] table of a parsed document (empty when there is none).
absl::StatusOr<PolicyTexts> PoliciesOf(const toml::table& root);

// Only the [policies] table of TOML text, or of a file (ReadTomlFile's checks).
absl::StatusOr<PolicyTexts> ReadPoliciesText(std::string_view text, std::string_view source);
absl::StatusOr<PolicyTexts> ReadPoliciesFile(const std::string& path);

}  // namespace rl::command
