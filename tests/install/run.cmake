# cmake -DMODE=find_package|add_subdirectory|vendored|single_header -DTYPEX_SOURCE_DIR= -DWORK_DIR=
#       -DBUILD_DIR= -DGENERATOR= -DCXX= -DEIGEN_INC= -DBOOST_INC= -P run.cmake
# (BUILD_DIR: typex's build tree, installed by the find_package mode)
# Builds and runs tests/install/consumer against typex the way MODE says.
cmake_minimum_required(VERSION 3.21)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

set(consumer ${TYPEX_SOURCE_DIR}/tests/install/consumer)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(common -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release)

if(MODE STREQUAL "find_package")
  # The package as `cmake --install` lays it out, from the build tree that ran this test (BUILD_DIR:
  # its libraries and typex-inspect are built before ctest runs; building typex a second time here,
  # with its CUDA kernels, cost more than the rest of the suite's consumers together).
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
  run(${WORK_DIR}/prefix/bin/typex-inspect --help)  # (the command-line tool is installed with the package)
  run(${CMAKE_COMMAND} -S ${consumer} -B ${WORK_DIR}/consumer-build ${common}
      -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DTYPEX_CONSUMER_MODE=find_package)
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build --parallel 1)  # (ctest runs tests beside it)
  run(${WORK_DIR}/consumer-build/consumer)
  run(${WORK_DIR}/consumer-build/consumer_backend)
elseif(MODE STREQUAL "add_subdirectory")
  # (typex configured as a subproject: its tests, examples, benchmarks, tools and install rules off,
  # EXCLUDE_FROM_ALL as a consumer would add it, so that only what the consumer links is built:
  # typex::runtime and typex::eigen from their sources. At -O0, for the native CPU of nobody: the
  # test is the subproject's CMake and link, and -O3 -march=native cost 103 s for runtime.cpp alone,
  # -O0 42 s.)
  run(${CMAKE_COMMAND} -S ${consumer} -B ${WORK_DIR}/consumer-build ${common}
      "-DCMAKE_CXX_FLAGS_RELEASE=-O0 -DNDEBUG" -DTYPEX_EIGEN_NATIVE=OFF
      -DTYPEX_CONSUMER_MODE=add_subdirectory -DTYPEX_DIR=${TYPEX_SOURCE_DIR})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer-build --parallel 2)  # (two jobs: the longest consumer, beside one other test)
  run(${WORK_DIR}/consumer-build/consumer)
  run(${WORK_DIR}/consumer-build/consumer_backend)
else()
  # Vendoring: the headers are copied into the consumer's tree; only Boost and Eigen are on the
  # include path, and no CMake is involved.
  set(includes "")
  foreach(d IN LISTS BOOST_INC EIGEN_INC)
    if(d AND NOT d STREQUAL "/usr/include")  # -isystem on the default dir breaks #include_next
      list(APPEND includes -isystem ${d})
    endif()
  endforeach()
  if(MODE STREQUAL "vendored")
    file(COPY ${TYPEX_SOURCE_DIR}/include/typex DESTINATION ${WORK_DIR}/app/third_party/typex/include)
    set(own_inc ${WORK_DIR}/app/third_party/typex/include)
  else()
    run(${CMAKE_COMMAND} -DROOT=${TYPEX_SOURCE_DIR}/include -DENTRY=typex/typex.hpp
        -DOUT=${WORK_DIR}/app/third_party/typex.hpp -P ${TYPEX_SOURCE_DIR}/cmake/amalgamate.cmake)
    # the single header is the only typex file: make the consumer's include resolve to it
    file(MAKE_DIRECTORY ${WORK_DIR}/app/include/typex)
    file(RENAME ${WORK_DIR}/app/third_party/typex.hpp ${WORK_DIR}/app/include/typex/typex.hpp)
    set(own_inc ${WORK_DIR}/app/include)
  endif()
  file(COPY ${consumer}/main.cpp DESTINATION ${WORK_DIR}/app)
  # (-O0: the test is that the headers alone compile and run; backend.cpp, the Eigen kernels
  # header-only, compiles in 52 s at -O0 against 68 s at -O1 and runs in 15 ms)
  run(${CXX} -std=c++20 -O0 -I${own_inc} ${includes} ${WORK_DIR}/app/main.cpp -o ${WORK_DIR}/app/consumer)
  run(${WORK_DIR}/app/consumer)
  if(MODE STREQUAL "vendored")  # the backend header-only, no build system (the single header has no backend)
    file(COPY ${consumer}/backend.cpp DESTINATION ${WORK_DIR}/app)
    run(${CXX} -std=c++20 -O0 -I${own_inc} ${includes} ${WORK_DIR}/app/backend.cpp -o ${WORK_DIR}/app/consumer_backend)
    run(${WORK_DIR}/app/consumer_backend)
  endif()
endif()
