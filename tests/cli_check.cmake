# cmake -DCMD=<program> [-DOPTIONS=<options before ARG, space-separated>] -DARG=<argument> -DEXPECT_RC=<status>
#       -DEXPECT=<regex on stderr> -P cli_check.cmake
# Runs CMD OPTIONS ARG and checks its exit status and what it wrote to stderr (ctest's PASS_REGULAR_EXPRESSION
# ignores the status; a tool that must fail needs both checked).
separate_arguments(_options UNIX_COMMAND "${OPTIONS}")
execute_process(COMMAND ${CMD} ${_options} ${ARG} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "${CMD} ${OPTIONS} ${ARG}: exit status ${rc}, expected ${EXPECT_RC}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "${CMD} ${OPTIONS} ${ARG}: stderr does not match '${EXPECT}':\n${err}")
endif()
