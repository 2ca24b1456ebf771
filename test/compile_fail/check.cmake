# Builds one compile-fail target and checks how it fails: every
# `// expect: <text>` line at the top of SOURCE appears in the compiler's
# output, and the compiler reports exactly one error, a static assertion.
file(STRINGS ${SOURCE} expects REGEX "^// expect: ")
list(TRANSFORM expects REPLACE "^// expect: " "")
if(NOT expects)
  message(FATAL_ERROR "${SOURCE} has no `// expect:` line")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET}
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(log "${out}${err}")
if(result EQUAL 0)
  message(FATAL_ERROR "${TARGET} compiled, but it must not")
endif()
foreach(expected IN LISTS expects)
  string(FIND "${log}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${TARGET} failed without the expected message\n  expected: ${expected}\n--- compiler output ---\n${log}")
  endif()
endforeach()
# A CMake list is ';'-separated, and messages contain ';': count without them.
string(REPLACE ";" "," log_items "${log}")
string(REGEX MATCHALL "static assertion failed" asserts "${log_items}")
list(LENGTH asserts n_asserts)
string(REGEX MATCHALL "[^\n]*: error: [^\n]*" errors "${log_items}")
list(LENGTH errors n_errors)
if(NOT n_asserts EQUAL 1 OR NOT n_errors EQUAL 1)
  message(FATAL_ERROR "${TARGET}: expected exactly one error, a static assertion; got ${n_errors} error(s), "
                      "${n_asserts} static assertion(s)\n--- compiler output ---\n${log}")
endif()
list(GET expects 0 first)
message(STATUS "${TARGET}: fails as expected with: ${first}")
