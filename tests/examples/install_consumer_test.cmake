# ctest driver (cmake -P) for tests/examples/consumer, a project that links rl::core.
# MODE=package (default): installs the already built rl into a fresh temporary prefix, then
#   configures, builds and runs the consumer against it with find_package(rl).
# MODE=subdirectory: builds the consumer with rl's source tree added by add_subdirectory.
# Inputs: -DRL_BINARY_DIR=<rl build dir> -DCONSUMER_SOURCE_DIR=<consumer dir> -DWORK_DIR=<scratch>
#         -DGENERATOR=<generator> -DBUILD_TYPE=<config> [-DMODE=...] [-DRL_SOURCE_DIR=<rl tree>]
foreach(var RL_BINARY_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR BUILD_TYPE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_consumer_test: ${var} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 240)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${step} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${step}: ok")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "subdirectory")
  run("configure consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build
      -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DRL_SOURCE_DIR=${RL_SOURCE_DIR})
else()
  run("install" ${CMAKE_COMMAND} --install ${RL_BINARY_DIR} --prefix ${prefix}
      --config ${BUILD_TYPE})
  foreach(expected include/rl/limiter.h include/rl/headers.h lib/cmake/rl/rlConfig.cmake)
    if(NOT EXISTS ${prefix}/${expected})
      message(FATAL_ERROR "install did not create ${expected}")
    endif()
  endforeach()
  run("configure consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build
      -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_PREFIX_PATH=${prefix})
endif()
run("build consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build --target consumer)
run("run consumer" ${WORK_DIR}/build/consumer)
if(NOT last_output MATCHES "consumer ok")
  message(FATAL_ERROR "consumer printed:\n${last_output}")
endif()
message(STATUS "${last_output}")
file(REMOVE_RECURSE ${WORK_DIR})
