# Builds and runs one consumer project against strata, the way a user would:
#
#   cmake -DCONSUMER=<project dir> -DWORK=<scratch dir>
#         -DGENERATOR=... -DMAKE_PROGRAM=... -DCXX_COMPILER=... -DBUILD_TYPE=... -DCXX_FLAGS=...
#         [-DINSTALL_FROM=<strata build dir>]     install strata into WORK/prefix first
#         [-DSTRATA_SOURCE_DIR=<dir>]             for a consumer that uses add_subdirectory
#         [-DEXPECTED_VERSION=<x.y.z>]            passed on as STRATA_EXPECTED_VERSION
#         [-DAPP=<program>]                       the program to run (default: app)
#         -P run_consumer.cmake
#
# WORK is emptied first, so every run starts from nothing.
cmake_minimum_required(VERSION 3.23)

foreach(var IN ITEMS CONSUMER WORK GENERATOR CXX_COMPILER)
  if(NOT ${var})
    message(FATAL_ERROR "run_consumer.cmake: ${var} is not set")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n  ${ARGN}\n${out}${err}")
  endif()
  message(STATUS "${what}: ok")
  set(last_output "${out}${err}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(prefix ${WORK}/prefix)
set(build ${WORK}/build)

if(INSTALL_FROM)
  run("install strata into ${prefix}" ${CMAKE_COMMAND} --install ${INSTALL_FROM} --prefix ${prefix})
  set(cmakedir ${prefix}/share/cmake/strata)
  foreach(f IN ITEMS ${cmakedir}/strata-config.cmake ${cmakedir}/strata-config-version.cmake
                     ${cmakedir}/strata-targets.cmake ${prefix}/include/strata/core/concepts.hpp)
    if(NOT EXISTS ${f})
      message(FATAL_ERROR "the install lacks ${f}")
    endif()
  endforeach()
  # The installed package must point into the prefix only, never back into
  # the source or build tree it came from.
  file(GLOB package_files ${cmakedir}/*.cmake)
  foreach(f IN LISTS package_files)
    file(READ ${f} text)
    foreach(tree IN ITEMS "${INSTALL_FROM}" "${SOURCE_TREE}")
      if(tree)
        string(FIND "${text}" "${tree}" at)
        if(NOT at EQUAL -1)
          message(FATAL_ERROR "${f} refers to ${tree}")
        endif()
      endif()
    endforeach()
  endforeach()
endif()

set(configure_args
  -S ${CONSUMER} -B ${build} -G ${GENERATOR}
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
  -DCMAKE_CXX_FLAGS=${CXX_FLAGS}
  # Find strata in the prefix just installed and nowhere else.
  -DCMAKE_PREFIX_PATH=${prefix}
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
if(MAKE_PROGRAM)
  list(APPEND configure_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
if(STRATA_SOURCE_DIR)
  list(APPEND configure_args -DSTRATA_SOURCE_DIR=${STRATA_SOURCE_DIR})
endif()
if(EXPECTED_VERSION)
  list(APPEND configure_args -DSTRATA_EXPECTED_VERSION=${EXPECTED_VERSION})
endif()
run("configure ${CONSUMER}" ${CMAKE_COMMAND} ${configure_args})

if(INSTALL_FROM)
  file(STRINGS ${build}/CMakeCache.txt strata_dir REGEX "^strata_DIR:")
  string(REGEX REPLACE "^strata_DIR:[A-Z]+=" "" strata_dir "${strata_dir}")
  if(NOT strata_dir STREQUAL "${prefix}/share/cmake/strata")
    message(FATAL_ERROR "the consumer found strata in '${strata_dir}', not in ${prefix}")
  endif()
endif()

run("build" ${CMAKE_COMMAND} --build ${build})
if(NOT APP)
  set(APP app)
endif()
run("run the consumer" ${build}/${APP})
message(STATUS "${last_output}")
