# cmake -DROOT=<include/typex> -P no_op_strings.cmake
#
# The backends and the planner know ops by their type (op_id_of<Op>), never by name: no "aten.
# string literal may appear in their code (comments aside). A name compared there would silently
# stop matching when an op is renamed, and would be one more table keyed by strings.
cmake_minimum_required(VERSION 3.21)
file(GLOB_RECURSE files ${ROOT}/backend/*.hpp ${ROOT}/plan/*.hpp)
if(NOT files)
  message(FATAL_ERROR "no backend headers under ${ROOT}: nothing was checked")
endif()
set(errors "")
foreach(f IN LISTS files)
  file(STRINGS ${f} lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    string(REGEX REPLACE "//.*$" "" code "${line}")
    if(code MATCHES "\"aten\\.")
      string(APPEND errors "${f}:${n}: ${line}\n")
    endif()
  endforeach()
endforeach()
if(errors)
  message(FATAL_ERROR "op names compared as strings (use op_id_of<Op>):\n${errors}")
endif()
list(LENGTH files count)
message(STATUS "${count} backend headers, no op name as a string")
