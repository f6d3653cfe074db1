# cmake -DROOT=<include dir> -DENTRY=typex/typex.hpp -DOUT=<file> -P amalgamate.cmake
#
# Inlines every `#include <typex/...>` reachable from ENTRY, each header once, in dependency order,
# dropping `#pragma once`. Other includes (std, Boost, Eigen) stay as they are. The result is one
# self-contained header for projects that vendor typex.
cmake_minimum_required(VERSION 3.21)

set(_seen "")
set(_out "")

function(_inline rel)
  list(FIND _seen "${rel}" _idx)
  if(NOT _idx EQUAL -1)
    return()
  endif()
  list(APPEND _seen "${rel}")
  set(_seen "${_seen}" PARENT_SCOPE)
  if(NOT EXISTS "${ROOT}/${rel}")
    message(FATAL_ERROR "amalgamate: ${rel} not found under ${ROOT}")
  endif()
  # CMake lists split on ';' except inside [...] or after a backslash: encode ; [ ] \\ before
  # splitting on newlines.
  file(READ "${ROOT}/${rel}" _text)
  string(REPLACE "@" "@AT@" _text "${_text}")
  string(REPLACE "\\" "@BS@" _text "${_text}")
  string(REPLACE ";" "@SC@" _text "${_text}")
  string(REPLACE "[" "@LB@" _text "${_text}")
  string(REPLACE "]" "@RB@" _text "${_text}")
  string(REPLACE "\n" ";" _lines "${_text}")
  set(_body "")
  foreach(_line IN LISTS _lines)
    if(_line MATCHES "^#include <(typex/[^>]+)>")
      set(_dep "${CMAKE_MATCH_1}")
      _inline("${_dep}")
      set(_seen "${_seen}" PARENT_SCOPE)
    elseif(_line MATCHES "^#pragma once")
    else()
      string(APPEND _body "${_line}\n")
    endif()
  endforeach()
  string(REPLACE "@SC@" ";" _body "${_body}")
  string(REPLACE "@LB@" "[" _body "${_body}")
  string(REPLACE "@RB@" "]" _body "${_body}")
  string(REPLACE "@BS@" "\\" _body "${_body}")
  string(REPLACE "@AT@" "@" _body "${_body}")
  set(_out "${_out}// ---- ${rel}\n${_body}" PARENT_SCOPE)
  set(_seen "${_seen}" PARENT_SCOPE)
endfunction()

_inline("${ENTRY}")
file(WRITE "${OUT}" "// typex single header, generated from include/${ENTRY} by cmake/amalgamate.cmake. Do not edit.\n#pragma once\n${_out}")
