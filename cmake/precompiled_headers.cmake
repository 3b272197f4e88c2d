# Precompiled headers: the headers nearly every file parses (the standard library's, GoogleTest's
# and, for the files that speak to the network, Boost.Asio's and Beast's declarations) are parsed
# once per build tree instead of once per file. A test program's file then compiles in a half to
# two thirds of the time, a file of the daemon's in two thirds to three quarters
# (bench/results/2026-12-06-ci-time/README.md, which has the numbers and how to measure them).
#
# Only third-party headers are precompiled, never the project's own: a change to a header of
# sandgate's rebuilds what includes it and nothing more, and the include direction
# (tests/architecture/include_direction_test.py) stays what the files say.
#
# GCC and Clang use a precompiled header only in a compile with the same options and the same
# values of the macros it was made with, and Asio's headers only in a program that links
# sandgate::asio (they name its error categories), so there is one per kind of target:
#   sandgate_pch_std        the standard library: the libraries and executables without Asio
#   sandgate_pch_asio       the same and Asio's and Beast's: those that link sandgate::asio
#   sandgate_pch_test_std   the standard library and GoogleTest, for what is under tests/
#                           (compiled with -O0: tests/CMakeLists.txt)
#   sandgate_pch_test_asio  the same and Asio's and Beast's, for what is under tests/ with Asio
# sandgate_apply_precompiled_headers(), called once every target exists, gives each target of the
# project the one that fits it; a target with options of its own (a C program, a flag of its own)
# gets none. A precompiled header that does not fit a compile is a -Winvalid-pch warning, so an
# error in CI's -Werror build: a mismatch cannot slow the build down unnoticed.
#
# -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON builds without them (CMake's own switch), for instance to
# check that every file includes what it uses.

# Not for code GCC optimises at -O2 or more (the release build's libraries and executables; its
# tests are compiled with -O0): GCC 12 then loses track of which code inlined from a precompiled
# header came from a system header, and reports the false positives it keeps quiet about there
# (-Wstringop-overflow on std::string, the kind of GCC bug 105329's -Wrestrict), which -Werror
# makes fatal. sandgate_pch_for_optimised_code says whether the libraries get one.
set(sandgate_pch_for_optimised_code ON)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  string(TOUPPER "${CMAKE_BUILD_TYPE}" build_type)
  if(" ${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${build_type}} " MATCHES " -O([2-9s]|fast) ")
    set(sandgate_pch_for_optimised_code OFF)
  endif()
endif()

if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # Clang records the headers' modification times in a precompiled header and refuses it when
  # they differ; ccache's copy of a header made in another tree (or an earlier clone) would.
  add_compile_options("SHELL:-Xclang -fno-pch-timestamp")
endif()

set(sandgate_pch_std_headers
  <algorithm> <array> <atomic> <cerrno> <chrono> <cstddef> <cstdint> <cstdio> <cstdlib> <cstring>
  <filesystem> <fstream> <functional> <map> <memory> <mutex> <optional> <sstream> <string>
  <string_view> <thread> <utility> <vector>)
# What the headers of proxy/ include of Asio and Beast, and what most of its files add.
set(sandgate_pch_asio_headers
  <boost/asio/any_io_executor.hpp> <boost/asio/as_tuple.hpp> <boost/asio/awaitable.hpp>
  <boost/asio/co_spawn.hpp> <boost/asio/detached.hpp>
  <boost/asio/experimental/awaitable_operators.hpp> <boost/asio/io_context.hpp>
  <boost/asio/ip/address.hpp> <boost/asio/ip/tcp.hpp> <boost/asio/ip/udp.hpp>
  <boost/asio/post.hpp> <boost/asio/ssl/context.hpp> <boost/asio/ssl/stream.hpp>
  <boost/asio/steady_timer.hpp> <boost/asio/use_awaitable.hpp> <boost/asio/write.hpp>
  <boost/beast/core/flat_buffer.hpp> <boost/beast/http/buffer_body.hpp>
  <boost/beast/http/empty_body.hpp> <boost/beast/http/fields.hpp> <boost/beast/http/message.hpp>
  <boost/beast/http/parser.hpp> <boost/beast/http/read.hpp> <boost/beast/http/serializer.hpp>
  <boost/beast/http/string_body.hpp> <boost/beast/http/write.hpp>)
set(sandgate_pch_test_headers <gmock/gmock.h> <gtest/gtest.h>)

# sandgate_precompiled_header(NAME HEADERS <header>... [DEFINITIONS <macro>...] [LIBS <target>...]):
# an object library that compiles only the precompiled header, with the compile options of the
# folder it is made in, DEFINITIONS, and the usage requirements of LIBS (imported or interface
# targets only: a library built here would have to be built before any file that uses the header).
function(sandgate_precompiled_header name)
  cmake_parse_arguments(arg "" "" "HEADERS;DEFINITIONS;LIBS" ${ARGN})
  set(anchor ${CMAKE_CURRENT_BINARY_DIR}/${name}.cpp)
  file(CONFIGURE OUTPUT ${anchor}
       CONTENT "// The precompiled header ${name}'s own file (cmake/precompiled_headers.cmake).\n")
  add_library(${name} OBJECT ${anchor})
  target_compile_definitions(${name} PRIVATE ${arg_DEFINITIONS})
  target_link_libraries(${name} PRIVATE ${arg_LIBS})
  target_precompile_headers(${name} PRIVATE ${arg_HEADERS})
  set_property(GLOBAL APPEND PROPERTY sandgate_pch_donors ${name})
endfunction()

# Asio's macros (sandgate::asio's, proxy/CMakeLists.txt), for the headers that precompile Asio.
set(sandgate_asio_macros $<TARGET_PROPERTY:sandgate_asio,INTERFACE_COMPILE_DEFINITIONS>)

# What of `target`'s compile decides whether a precompiled header fits it: whether it is compiled
# with sandgate::asio's macros (sandgate_asio is among the targets whose usage requirements reach
# it), into `out_asio`, and its compile options with those that its links bring (RE2's -pthread,
# GoogleTest's -DGTEST_HAS_PTHREAD=1), sorted, into `out_options`.
function(sandgate_compile_traits target out_asio out_options)
  get_target_property(options ${target} COMPILE_OPTIONS)
  get_target_property(queue ${target} LINK_LIBRARIES)
  if(NOT options)
    set(options "")
  endif()
  if(NOT queue)
    set(queue "")
  endif()
  set(seen "")
  set(with_asio FALSE)
  while(queue)
    list(POP_FRONT queue item)
    if(NOT TARGET "${item}" OR item IN_LIST seen)
      continue()  # a plain library, a flag, or $<LINK_ONLY:...> (which passes on no usage)
    endif()
    list(APPEND seen ${item})
    get_target_property(aliased ${item} ALIASED_TARGET)
    if(aliased)
      set(item ${aliased})
    endif()
    if(item STREQUAL "sandgate_asio")
      set(with_asio TRUE)
    endif()
    get_target_property(more ${item} INTERFACE_COMPILE_OPTIONS)
    if(more)
      list(APPEND options ${more})
    endif()
    get_target_property(next ${item} INTERFACE_LINK_LIBRARIES)
    if(next)
      list(APPEND queue ${next})
    endif()
  endwhile()
  list(REMOVE_DUPLICATES options)
  list(SORT options)
  set(${out_asio} ${with_asio} PARENT_SCOPE)
  set(${out_options} "${options}" PARENT_SCOPE)
endfunction()

# Every buildable target of `dir` and the folders below it, into `out`.
function(sandgate_targets_below dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    sandgate_targets_below(${subdir} below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# Gives every C++ library and executable of the project the precompiled header that fits it (see
# the top of this file); called at the end of the top-level CMakeLists.txt.
function(sandgate_apply_precompiled_headers)
  get_property(donors GLOBAL PROPERTY sandgate_pch_donors)
  foreach(donor IN LISTS donors)
    sandgate_compile_traits(${donor} unused options_of_${donor})
  endforeach()
  sandgate_targets_below(${PROJECT_SOURCE_DIR} targets)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    get_target_property(sources ${target} SOURCES)
    if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$"
       OR target IN_LIST donors OR NOT sources MATCHES "\\.cpp(;|$)")
      continue()
    endif()
    get_target_property(own ${target} PRECOMPILE_HEADERS)
    get_target_property(reused ${target} PRECOMPILE_HEADERS_REUSE_FROM)
    if(own OR reused)
      continue()
    endif()
    get_target_property(folder ${target} SOURCE_DIR)
    string(FIND "${folder}/" "${PROJECT_SOURCE_DIR}/tests/" in_tests)
    if(TARGET sandgate_pch_test_std AND in_tests EQUAL 0)
      # The precompiled header's macros on every test program and helper (tests/CMakeLists.txt).
      target_link_libraries(${target} PRIVATE sandgate_test_macros)
    endif()
    sandgate_compile_traits(${target} with_asio options)
    if(TARGET sandgate_pch_test_std AND in_tests EQUAL 0)
      set(donor sandgate_pch_test)
    else()
      set(donor sandgate_pch)
    endif()
    if(with_asio)
      string(APPEND donor _asio)
    else()
      string(APPEND donor _std)
    endif()
    if(NOT TARGET ${donor} OR NOT options STREQUAL options_of_${donor})
      continue()  # none made (see above), or options of its own (RE2's -pthread, a C program's)
    endif()
    target_precompile_headers(${target} REUSE_FROM ${donor})
  endforeach()
endfunction()
