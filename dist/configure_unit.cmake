# Install-time step (run from cmake_install.cmake): writes rl-server.service with the paths of
# this install, so `cmake --install build --prefix P` (or DESTDIR staging) yields a unit whose
# ExecStart names P/bin/rl-server and the config installed beside it. Inputs, set by an
# install(CODE) just before: RL_UNIT_IN, RL_UNIT_OUT, RL_BINDIR, RL_SYSCONFDIR (the
# GNUInstallDirs values, relative to the prefix unless absolute).
foreach(var RL_BINDIR RL_SYSCONFDIR)
  if(NOT IS_ABSOLUTE "${${var}}")
    set(${var} "${CMAKE_INSTALL_PREFIX}/${${var}}")
  endif()
endforeach()
set(RL_SERVER_BIN "${RL_BINDIR}/rl-server")
set(RL_CONFIG_FILE "${RL_SYSCONFDIR}/rl/rl.toml")
configure_file("${RL_UNIT_IN}" "${RL_UNIT_OUT}" @ONLY)
