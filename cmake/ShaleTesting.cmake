# shale_unit_test(<name> SOURCES <files...> LIBS <targets...>)
# Builds a GoogleTest binary and registers every TEST() as its own ctest test (label "unit").
function(shale_unit_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gmock GTest::gtest_main shale_warnings)
  gtest_discover_tests(${name} PROPERTIES LABELS unit DISCOVERY_TIMEOUT 60)
endfunction()

# shale_test_paths(<sources...>): gives these test sources SHALE_SOURCE_DIR (the checkout) and
# SHALE_KAFKA_CLIENTS_JAR (the pinned schema jar). Only the files that read them get them, so
# that the other test objects do not depend on where the checkout is (ccache hits across clones).
function(shale_test_paths)
  set_property(SOURCE ${ARGN} APPEND PROPERTY COMPILE_DEFINITIONS
    SHALE_SOURCE_DIR="${SHALE_ROOT}" SHALE_KAFKA_CLIENTS_JAR="${SHALE_KAFKA_CLIENTS_JAR}")
endfunction()

# shale_integration_test(<name> COMMAND <cmd...> [TIMEOUT s])
# Registers a test run against the real binaries (label "integration").
function(shale_integration_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "COMMAND" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${ARG_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS integration TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "SHALE_BIN=$<TARGET_FILE:shale>;SHALE_SOURCE_DIR=${SHALE_ROOT}")
endfunction()
