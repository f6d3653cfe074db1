# Warnings-as-errors for typex's own targets only (tests, examples, benchmarks), never for users:
# typex_strict(<target>) applies them.
function(typex_strict target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror)
  elseif(MSVC)
    target_compile_options(${target} PRIVATE /W4 /WX /permissive-)
  endif()
endfunction()
