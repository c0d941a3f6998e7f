# Flask-Limiter / limits with the rl:// storage (integrations/python) against a real rl-server
# and a real redis-server with rl.so (included from tests/CMakeLists.txt).
if(TARGET rl-server AND TARGET rl_redis_module)
  add_test(NAME integrations_python_flask_limiter
    COMMAND bash ${PROJECT_SOURCE_DIR}/integrations/with_servers.sh
      $<TARGET_FILE:rl-server> $<TARGET_FILE:rl_redis_module>
      /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/test_flask_limiter.py)
  set_tests_properties(integrations_python_flask_limiter PROPERTIES TIMEOUT 180
    LABELS "integrations;integration" SKIP_RETURN_CODE 77)
endif()
