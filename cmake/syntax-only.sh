#!/bin/sh
# A compiler launcher (tests/CMakeLists.txt, the headers test): runs the compile command it is given
# with -fsyntax-only (every check of the front end, templates instantiated, no code generated), then
# creates the object file the command names after -o, empty, so that the build counts the unit done
# and does not compile it again. The dependency file (-MD -MF) is written by the compiler as usual.
out=
prev=
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  prev=$a
done
"$@" -fsyntax-only || exit $?
if [ -n "$out" ]; then : >"$out"; fi
