# Sanitizer and fuzzing builds (./dev.sh sanitize, ./dev.sh fuzz; sanitizers/README.md):
#   DTSIM_SANITIZE  every target with AddressSanitizer (LeakSanitizer included) and
#                   UndefinedBehaviorSanitizer, which stops at the first error;
#   DTSIM_FUZZ      clang only, implies DTSIM_SANITIZE: every target also instrumented for
#                   libFuzzer's coverage, and the fuzz targets of fuzz/ built.
option(DTSIM_SANITIZE "Build every target with ASan and UBSan" OFF)
option(DTSIM_FUZZ "Build the libFuzzer targets of fuzz/ (clang; implies DTSIM_SANITIZE)" OFF)

if(DTSIM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DTSIM_FUZZ needs clang (libFuzzer): configure with CC=clang CXX=clang++")
  endif()
  set(DTSIM_SANITIZE ON)
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>)
endif()
if(DTSIM_SANITIZE)
  set(dtsim_sanitizer_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${dtsim_sanitizer_flags}>")
  add_link_options(${dtsim_sanitizer_flags})
endif()
