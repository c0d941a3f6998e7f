# Install rules and the CMake package for the embedded library, so another project can do
#   find_package(rl 0.3 REQUIRED)
#   target_link_libraries(app PRIVATE rl::core)     # the in-process engine
#   target_link_libraries(app PRIVATE rl::client)   # rl::RemoteLimiter (rl-server over RESP)
# or, without CMake, `pkg-config --cflags --libs rl` (rl::core) or `rl-client` (rl::client). Included by the top-level
# CMakeLists after every target exists. The libraries, their public headers, the LICENSE and, with
# rl-server, what an operator needs (dist/: config, systemd unit, man page) are installed; the
# HTTP example and the tests stay in the tree.
include(CMakePackageConfigHelpers)

# A project that pulls rl in with add_subdirectory/FetchContent usually does not want rl's files in
# its own install tree; it can turn this off.
option(RL_INSTALL "Install rl::core, its headers and the rl CMake package" ${PROJECT_IS_TOP_LEVEL})
if(NOT RL_INSTALL)
  return()
endif()

set(RL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/rl CACHE STRING
    "Where rlConfig.cmake is installed, relative to the prefix")

# The exported name is rl::core, the same as the in-tree alias, so consumer code does not change
# between add_subdirectory and find_package.
set_target_properties(rl_core PROPERTIES EXPORT_NAME core)
install(TARGETS rl_core
  EXPORT rlTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/rl
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/core/include/rl/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rl)
if(TARGET rl_client)
  set_target_properties(rl_client PROPERTIES EXPORT_NAME client)
  install(TARGETS rl_client
    EXPORT rlTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  # Its public headers include no Boost: Asio stays an implementation detail.
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/client/include/rl
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.h")
endif()
install(EXPORT rlTargets
  NAMESPACE rl::
  DESTINATION ${RL_INSTALL_CMAKEDIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/rlConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rlConfig.cmake
  INSTALL_DESTINATION ${RL_INSTALL_CMAKEDIR})
# 0.x releases may break the API between minor versions, hence SameMinorVersion.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rlConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/rlConfig.cmake
  ${PROJECT_BINARY_DIR}/rlConfigVersion.cmake
  DESTINATION ${RL_INSTALL_CMAKEDIR})

# pkg-config: rl.pc (rl::core) and rl-client.pc (rl::client) beside the CMake package. Requires
# is derived from what each library links, so the two cannot drift apart: absl::x -> absl_x
# (abseil ships one .pc per library), xxhash's own .pc, rl::core -> rl. Both are static, so their
# private dependencies are listed too; Boost is headers only (Asio is compiled into rl_client and
# its public headers include none), so it adds no flags.
function(rl_pc_requires target out_requires out_libs)
  get_target_property(links ${target} LINK_LIBRARIES)
  set(requires "")
  set(libs "")
  foreach(lib IN LISTS links)
    if(lib MATCHES "^absl::(.+)$")
      list(APPEND requires "absl_${CMAKE_MATCH_1}")
    elseif(lib STREQUAL "PkgConfig::XXHASH")
      list(APPEND requires "libxxhash")
    elseif(lib STREQUAL "rl::core")
      list(APPEND requires "rl = ${PROJECT_VERSION}")
    elseif(lib STREQUAL "Threads::Threads")
      set(libs "-pthread")
    elseif(lib STREQUAL "Boost::headers" OR lib MATCHES "^\\$<BUILD_INTERFACE:")
      # Headers only, or built into the archive (rl_resp's objects).
    else()
      message(FATAL_ERROR "pkg-config: no name for ${target}'s dependency ${lib}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES requires)
  list(JOIN requires ", " requires)
  set(${out_requires} "${requires}" PARENT_SCOPE)
  set(${out_libs} "${libs}" PARENT_SCOPE)
endfunction()
set(RL_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH RL_PC_TO_PREFIX /prefix/${RL_PKGCONFIG_DIR} /prefix)
string(REGEX REPLACE "/$" "" RL_PC_TO_PREFIX "${RL_PC_TO_PREFIX}")
rl_pc_requires(rl_core RL_PC_REQUIRES RL_PC_LIBS)
configure_file(${CMAKE_CURRENT_LIST_DIR}/rl.pc.in ${PROJECT_BINARY_DIR}/rl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rl.pc DESTINATION ${RL_PKGCONFIG_DIR})
if(TARGET rl_client)
  rl_pc_requires(rl_client RL_PC_REQUIRES RL_PC_LIBS)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/rl-client.pc.in ${PROJECT_BINARY_DIR}/rl-client.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/rl-client.pc DESTINATION ${RL_PKGCONFIG_DIR})
endif()

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

# What an operator of rl-server needs: the configuration, a systemd unit and a man page.
if(TARGET rl-server)
  add_subdirectory(${PROJECT_SOURCE_DIR}/dist ${PROJECT_BINARY_DIR}/dist)
endif()
