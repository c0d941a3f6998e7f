// rl-server entry point: flags and config, then the server until SIGTERM/SIGINT.
#include <csignal>
#include <cstdio>
#include <string>

#include "command_table.h"
#include "config.h"
#include "policies.h"
#include "server.h"
#ifdef RL_ENVOY_SERVICE
#include "service.h"
#endif

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a peer that vanished must not kill the process
  rl::server::CommandLine cl = rl::server::ParseCommandLine(argc, argv);
  if (cl.exit_now) return cl.exit_code;
  if (cl.check_only) {
    // What start would refuse beyond the flags and settings: a policy that does not parse.
    rl::server::PolicyStore policies;
    absl::Status st = policies.LoadFromConfig(cl.config.policies);
    if (!st.ok()) {
      std::fprintf(stderr, "rl-server: %s: %s\n", cl.config.config_file.c_str(),
                   std::string(rl::server::ToStd(st.message())).c_str());
      return 1;
    }
    std::printf("rl-server: configuration OK (%zu policies)\n", policies.size());
    return 0;
  }
  rl::server::Server server(std::move(cl.config));
#ifdef RL_ENVOY_SERVICE
  server.AddFrontEnd(rl::envoy::EnvoyFrontEndFactory());
#endif
  absl::Status st = server.Start();
  if (!st.ok()) {
    rl::server::LogLine(rl::server::ToStd(st.message()));
    return 1;
  }
  return server.Run();
}
