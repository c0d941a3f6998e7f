// rl's TOML reader on arbitrary text: rl-server's LoadConfigText (what --config reads once the
// file's bytes are in) and command::ReadPoliciesText (SIGHUP's reload and rl.so's POLICIES file,
// the one [policies] reader). Checked on every input:
// - never an exception or a crash, whatever the TOML;
// - an accepted file leaves every numeric setting inside its range, each value written back as
//   a user would type it parses to itself, and the cross-setting checks run;
// - the reload path (policies only) accepts what the full load accepted, with the same
//   policies, and every policy that parses round-trips through FormatPolicy.
// Shared by fuzz/config_fuzz.cc and the corpus replay test.
#pragma once

#include <string>
#include <string_view>

#include "config.h"
#include "fuzz_check.h"
#include "rl/command/toml_file.h"
#include "rl/limit.h"

namespace rl::fuzz {

inline void RunConfig(std::string_view input) {
  server::ServerConfig config;
  if (!server::LoadConfigText(input, "fuzz.toml", {}, &config).ok()) return;
  for (const server::NumericSetting& s : server::NumericSettings()) {
    const int64_t v = s.get(config);
    FUZZ_CHECK(v >= s.min && v <= s.max);
    auto again = server::ParseNumericSetting(s, server::FormatNumericSetting(s, v));
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(*again == v);
  }
  (void)server::CheckConfig(config);
  auto policies = command::ReadPoliciesText(input, "fuzz.toml");
  FUZZ_CHECK(policies.ok());
  FUZZ_CHECK(*policies == config.policies);
  for (const auto& [name, spec] : config.policies) {
    auto policy = ParsePolicy(name, std::string_view(spec));
    if (!policy.ok()) continue;
    const std::string text = FormatPolicy(*policy);
    auto again = ParsePolicy(name, std::string_view(text));
    FUZZ_CHECK(again.ok());
    FUZZ_CHECK(FormatPolicy(*again) == text);
  }
}

}  // namespace rl::fuzz
