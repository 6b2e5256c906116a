# Registers one CTest test per GoogleTest suite of a test binary (`cmake -P`, run after each
# link of the binary): a suite's tests run in one process, in their order, so a suite that
# starts its clusters once (SetUpTestSuite) starts them once, not once per test.
#
#   cmake -D EXE=<binary> -D PREFIX=<name> -D OUT=<file.cmake> -D ENV=<VAR=value>
#         -D COST=<n> -P SuiteTests.cmake
#
# Each test is named PREFIX:Suite (e2e:OffloadTest), so `ctest -R OffloadTest` finds it; one
# test of a suite runs with the binary and --gtest_filter=Suite.Test. The suites of
# PER_TEST (comma-separated) are registered test by test (PREFIX:Suite.Test) instead: their tests
# share clusters through SetUpTestSuite but expect them as a fresh start left them.
cmake_policy(VERSION 3.25)
string(REPLACE "," ";" PER_TEST "${PER_TEST}")
execute_process(COMMAND "${EXE}" --gtest_list_tests
  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --gtest_list_tests failed (${rc}): ${errors}")
endif()
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
set(count 0)
set(suite "")
macro(register name filter)
  string(APPEND script
    "add_test([==[${PREFIX}:${name}]==] [==[${EXE}]==] [==[--gtest_filter=${filter}]==])\n"
    "set_tests_properties([==[${PREFIX}:${name}]==] PROPERTIES ENVIRONMENT [==[${ENV}]==]"
    " COST ${COST})\n")
  math(EXPR count "${count} + 1")
endmacro()
foreach(line IN LISTS lines)
  # A suite line is not indented and ends with '.', maybe followed by "  # TypeParam = ...";
  # its tests follow, indented by two spaces.
  if(line MATCHES "^([A-Za-z_][A-Za-z0-9_/]*)\\.( +#.*)?$")
    set(suite "${CMAKE_MATCH_1}")
    if(NOT suite IN_LIST PER_TEST)
      register("${suite}" "${suite}.*")
    endif()
  elseif(line MATCHES "^  ([A-Za-z_][A-Za-z0-9_/]*)( +#.*)?$" AND suite IN_LIST PER_TEST)
    register("${suite}.${CMAKE_MATCH_1}" "${suite}.${CMAKE_MATCH_1}")
  endif()
endforeach()
if(count EQUAL 0)
  message(FATAL_ERROR "${EXE} lists no test suite")
endif()
file(WRITE "${OUT}" "${script}")
