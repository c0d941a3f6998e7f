# Install-time step (run from cmake_install.cmake): writes rl-server.service with the paths of
# this install, so `cmake --install build --prefix P` (or DESTDIR staging) yields a unit whose
# ExecStart names P/bin/rl-server and the config installed beside it. Inputs, set by an
# install(CODE) just before: RL_UNIT_IN, RL_UNIT_OUT, RL_BINDIR, RL_SYSCONFDIR, RL_MANDIR (the
# GNUInstallDirs values, relative to the prefix unless absolute) and RL_HAS_MAN_PAGE (1 when the
# man page is built and installed); optional: RL_DYNAMIC_USER (yes unless set: tools/package
# sets no, its package creates the system user rl).
if(NOT DEFINED RL_DYNAMIC_USER)
  set(RL_DYNAMIC_USER yes)
endif()
foreach(var RL_BINDIR RL_SYSCONFDIR RL_MANDIR)
  if(NOT IS_ABSOLUTE "${${var}}")
    set(${var} "${CMAKE_INSTALL_PREFIX}/${${var}}")
  endif()
endforeach()
set(RL_SERVER_BIN "${RL_BINDIR}/rl-server")
set(RL_CONFIG_FILE "${RL_SYSCONFDIR}/rl/rl.toml")
# Documentation=man:rl-server(1) only where man finds it without help (its default search path,
# the one systemd-analyze verify and `systemctl help` use); a man page under another prefix is
# named by its file, and no man page is not named at all.
set(RL_DOCUMENTATION "# No man page was installed (help2man was missing at build time).")
if(RL_HAS_MAN_PAGE AND RL_MANDIR MATCHES "^/usr(/local)?/share/man$")
  set(RL_DOCUMENTATION "Documentation=man:rl-server(1)")
elseif(RL_HAS_MAN_PAGE)
  set(RL_DOCUMENTATION "Documentation=file:${RL_MANDIR}/man1/rl-server.1")
endif()
configure_file("${RL_UNIT_IN}" "${RL_UNIT_OUT}" @ONLY)
