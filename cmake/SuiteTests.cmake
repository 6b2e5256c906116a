# Registers one CTest test per GoogleTest suite of a test binary (`cmake -P`, run after each
# link of the binary): a suite's tests run in one process, in their order, so a suite that
# starts its clusters once (SetUpTestSuite) starts them once, not once per test.
#
#   cmake -D EXE=<binary> -D PREFIX=<name> -D OUT=<file.cmake> -D ENV=<VAR=value>
#         -D COST=<n> -P SuiteTests.cmake
#
# Each test is named PREFIX:Suite (e2e:OffloadTest), so `ctest -R OffloadTest` finds it; one
# test of a suite runs with the binary and --gtest_filter=Suite.Test.
execute_process(COMMAND "${EXE}" --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --gtest_list_tests failed (${rc}): ${errors}")
endif()
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
set(count 0)
foreach(line IN LISTS lines)
  # A suite line is not indented and ends with '.', maybe followed by "  # TypeParam = ...".
  if(line MATCHES "^([A-Za-z_][A-Za-z0-9_/]*)\\.( +#.*)?$")
    set(suite "${CMAKE_MATCH_1}")
    string(APPEND script
      "add_test([==[${PREFIX}:${suite}]==] [==[${EXE}]==] [==[--gtest_filter=${suite}.*]==])\n"
      "set_tests_properties([==[${PREFIX}:${suite}]==] PROPERTIES ENVIRONMENT [==[${ENV}]==]"
      " COST ${COST})\n")
    math(EXPR count "${count} + 1")
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "${EXE} lists no test suite")
endif()
file(WRITE "${OUT}" "${script}")
