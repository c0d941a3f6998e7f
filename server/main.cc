// rl-server entry point: flags and config, then the server until SIGTERM/SIGINT.
#include <csignal>
#include <cstdio>

#include "command_table.h"
#include "config.h"
#include "server.h"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a peer that vanished must not kill the process
  rl::server::CommandLine cl = rl::server::ParseCommandLine(argc, argv);
  if (cl.exit_now) return cl.exit_code;
  rl::server::Server server(std::move(cl.config));
  absl::Status st = server.Start();
  if (!st.ok()) {
    rl::server::LogLine(rl::server::ToStd(st.message()));
    return 1;
  }
  return server.Run();
}
