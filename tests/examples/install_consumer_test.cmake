# ctest driver (cmake -P): installs the already built rl into a fresh temporary prefix, then
# configures, builds and runs tests/examples/consumer against it with find_package(rl).
# Inputs: -DRL_BINARY_DIR=<rl build dir> -DCONSUMER_SOURCE_DIR=<consumer dir> -DWORK_DIR=<scratch>
#         -DGENERATOR=<generator> -DBUILD_TYPE=<config>
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

run("install" ${CMAKE_COMMAND} --install ${RL_BINARY_DIR} --prefix ${prefix}
    --config ${BUILD_TYPE})
foreach(expected include/rl/limiter.h include/rl/headers.h)
  if(NOT EXISTS ${prefix}/${expected})
    message(FATAL_ERROR "install did not create ${expected}")
  endif()
endforeach()
run("configure consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${WORK_DIR}/build
    -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_PREFIX_PATH=${prefix})
run("build consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run("run consumer" ${WORK_DIR}/build/consumer)
if(NOT last_output MATCHES "consumer ok")
  message(FATAL_ERROR "consumer printed:\n${last_output}")
endif()
message(STATUS "${last_output}")
file(REMOVE_RECURSE ${WORK_DIR})
