# Install rules and the CMake package for the embedded library, so another project can do
#   find_package(rl 0.3 REQUIRED)
#   target_link_libraries(app PRIVATE rl::core)     # the in-process engine
#   target_link_libraries(app PRIVATE rl::client)   # rl::RemoteLimiter (rl-server over RESP)
# or, without CMake, `pkg-config --cflags --libs rl` (rl::core). Included by the top-level
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

# pkg-config: rl.pc beside the CMake package. Requires is derived from what rl_core links, so the
# two cannot drift apart: absl::x -> absl_x (abseil ships one .pc per library), xxhash's own .pc.
get_target_property(rl_core_links rl_core LINK_LIBRARIES)
set(RL_PC_REQUIRES "")
set(RL_PC_LIBS "")
foreach(lib IN LISTS rl_core_links)
  if(lib MATCHES "^absl::(.+)$")
    list(APPEND RL_PC_REQUIRES "absl_${CMAKE_MATCH_1}")
  elseif(lib STREQUAL "PkgConfig::XXHASH")
    list(APPEND RL_PC_REQUIRES "libxxhash")
  elseif(lib STREQUAL "Threads::Threads")
    set(RL_PC_LIBS "-pthread")
  else()
    message(FATAL_ERROR "rl.pc: no pkg-config name for rl_core's dependency ${lib}")
  endif()
endforeach()
list(JOIN RL_PC_REQUIRES ", " RL_PC_REQUIRES)
set(RL_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH RL_PC_TO_PREFIX /prefix/${RL_PKGCONFIG_DIR} /prefix)
string(REGEX REPLACE "/$" "" RL_PC_TO_PREFIX "${RL_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/rl.pc.in ${PROJECT_BINARY_DIR}/rl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/rl.pc DESTINATION ${RL_PKGCONFIG_DIR})

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})

# What an operator of rl-server needs: the configuration, a systemd unit and a man page.
if(TARGET rl-server)
  add_subdirectory(${PROJECT_SOURCE_DIR}/dist ${PROJECT_BINARY_DIR}/dist)
endif()
