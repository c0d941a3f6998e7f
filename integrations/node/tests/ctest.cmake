# express-rate-limit with the rl store (integrations/node) in an Express app against a real
# rl-server and a real redis-server with rl.so (included from tests/CMakeLists.txt). tools/setup
# installs the npm packages (npm ci in integrations/node).
if(TARGET rl-server AND TARGET rl_redis_module)
  add_test(NAME integrations_node_express_rate_limit
    COMMAND bash ${PROJECT_SOURCE_DIR}/integrations/with_servers.sh
      $<TARGET_FILE:rl-server> $<TARGET_FILE:rl_redis_module>
      bash ${CMAKE_CURRENT_LIST_DIR}/run.sh)
  set_tests_properties(integrations_node_express_rate_limit PROPERTIES TIMEOUT 180
    LABELS "integrations;integration" SKIP_RETURN_CODE 77)
endif()
