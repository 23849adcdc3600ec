# Writes OUT, the bash completion, from BIN's own `completion bash`, rewriting it only when it
# changed, then touches STAMP. A binary that has no `completion` subcommand (its --help does not
# name one) writes none and OUT is removed: the install then leaves the completion out. One that
# has it and fails stops the build.
execute_process(COMMAND ${BIN} completion bash RESULT_VARIABLE rc OUTPUT_VARIABLE text
                ERROR_VARIABLE err)
if(rc EQUAL 0 AND NOT text STREQUAL "")
  if(EXISTS ${OUT})
    file(READ ${OUT} old)
  endif()
  if(NOT "${old}" STREQUAL "${text}")
    file(WRITE ${OUT} "${text}")
  endif()
else()
  execute_process(COMMAND ${BIN} --help RESULT_VARIABLE help_rc OUTPUT_VARIABLE help
                  ERROR_VARIABLE help_err)
  if("${help}${help_err}" MATCHES "completion")
    message(FATAL_ERROR "${BIN} completion bash: exit ${rc}, ${err}")
  endif()
  message(STATUS "bash completion: not written: ${BIN} has no `completion` subcommand")
  file(REMOVE ${OUT})
endif()
get_filename_component(stamp_dir ${STAMP} DIRECTORY)
file(MAKE_DIRECTORY ${stamp_dir})
file(TOUCH ${STAMP})
