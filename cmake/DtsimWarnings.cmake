# Warnings for every dtsim target: dtsim_set_warnings(target).
function(dtsim_set_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion
    -Wno-sign-conversion -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual>)
endfunction()

# dtsim_library(name SOURCES ... DEPS ...): a static library with warnings and the repo root
# on the include path, so headers are included as "sim/core/engine.h".
function(dtsim_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
  dtsim_set_warnings(${name})
endfunction()
