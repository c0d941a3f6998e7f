# ctest driver (cmake -P) for the consumer projects in tests/examples (consumer: rl::core and
# rl::client; core_consumer: rl::core alone).
# MODE=package (default): installs the already built rl into a fresh temporary prefix, then
#   configures, builds and runs the consumer against it with find_package(rl).
# MODE=pkgconfig: installs likewise, then compiles the consumer's main.cc with nothing but the
#   compiler and `pkg-config --cflags --libs <PC_MODULE>` (PKG_CONFIG_PATH pointing into the
#   prefix; PC_MODULE is rl for rl::core, rl-client for rl::client).
# MODE=subdirectory: builds the consumer with rl's source tree added by add_subdirectory.
# Inputs: -DRL_BINARY_DIR=<rl build dir> -DCONSUMER_SOURCE_DIR=<consumer dir> -DWORK_DIR=<scratch>
#         -DGENERATOR=<generator> -DBUILD_TYPE=<config> [-DMODE=...] [-DRL_SOURCE_DIR=<rl tree>]
#         [-DCONSUMER=<targets, each run and expected to print "<target> ok"; default consumer>]
#         [-DCXX=<compiler, for pkgconfig>] [-DLAUNCHER=<compiler launcher such as ccache>]
#         [-DPC_MODULE=<pkg-config module, for pkgconfig; default rl>]
foreach(var RL_BINARY_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR BUILD_TYPE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_consumer_test: ${var} is not set")
  endif()
endforeach()

if(NOT DEFINED CONSUMER)
  set(CONSUMER consumer)
endif()
if(NOT DEFINED PC_MODULE)
  set(PC_MODULE rl)
endif()
set(launcher "")
if(LAUNCHER)
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()

string(TOUPPER "${BUILD_TYPE}" build_type_upper)
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

# Each step is bounded so that a hung one ends with its output shown, but generously: a build of
# rl's sources on a loaded 2-core machine takes many minutes (ctest's TIMEOUT bounds the test).
function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 1200)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${step} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${step}: ok")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "subdirectory")
  # rl's sources are compiled here a second time, so at -O0 without debug info: what this proves
  # is the CMake wiring of add_subdirectory (targets, include paths, options, the standard) and
  # that the program runs, not the optimizer (the main build compiles the same sources at
  # BUILD_TYPE); -O0 takes ~16% less CPU than -O3 here (most of it is parsing headers), and
  # RL_CONSUMER_UNITY parses rl::client's sources, which share Asio, as one file.
  run("configure consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build
      -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} "-DCMAKE_CXX_FLAGS_${build_type_upper}=-O0"
      -DRL_SOURCE_DIR=${RL_SOURCE_DIR} -DRL_CONSUMER_UNITY=ON ${launcher})
else()
  run("install" ${CMAKE_COMMAND} --install ${RL_BINARY_DIR} --prefix ${prefix}
      --config ${BUILD_TYPE})
  foreach(expected include/rl/limiter.h include/rl/headers.h include/rl/rate_limiter.h
                   lib/cmake/rl/rlConfig.cmake lib/pkgconfig/rl.pc lib/pkgconfig/${PC_MODULE}.pc)
    if(NOT EXISTS ${prefix}/${expected})
      message(FATAL_ERROR "install did not create ${expected}")
    endif()
  endforeach()
endif()
if(MODE STREQUAL "pkgconfig")
  # What a Makefile user types; the standard is the one rl.pc's description names.
  find_program(PKG_CONFIG pkg-config REQUIRED)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  run("pkg-config" ${PKG_CONFIG} --cflags --libs ${PC_MODULE})
  string(STRIP "${last_output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  file(MAKE_DIRECTORY ${WORK_DIR}/build)
  run("compile consumer" ${CXX} -std=c++20 -O1 ${CONSUMER_SOURCE_DIR}/main.cc ${flags}
      -o ${WORK_DIR}/build/${CONSUMER})
else()
  if(NOT MODE STREQUAL "subdirectory")
    run("configure consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build
        -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_PREFIX_PATH=${prefix} ${launcher})
  endif()
  run("build consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build --target ${CONSUMER})
endif()
foreach(consumer IN LISTS CONSUMER)
  run("run ${consumer}" ${WORK_DIR}/build/${consumer})
  string(REPLACE "_" " " expected_line "${consumer} ok")
  if(NOT last_output MATCHES "${expected_line}")
    message(FATAL_ERROR "${consumer} printed:\n${last_output}")
  endif()
  message(STATUS "${last_output}")
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
