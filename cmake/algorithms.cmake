# The algorithms kbench builds, in registry order, one kbench_algorithm(stem Type tag) line each.
#   stem: names the algorithm's files (include/kbench/<stem>.hpp, src/core/<stem>_common.cpp,
#         src/<layer>/<stem>.cpp or .cu, apps/compare/<stem>.cpp, tests/test_<stem>.cpp) and its
#         functions (register_<stem>_<layer>, compare's <stem>_entry)
#   Type: its C++ type in kbench/<stem>.hpp
#   tag:  Type::name: the registry's and compare --algo's name, the Catch2 tag, the CTest test
# The source lists, the tests and the generated headers below all come from this list.
set(KBENCH_ALGORITHMS)
set(KBENCH_ALGORITHM_TAGS)
macro(kbench_algorithm stem type tag)
  list(APPEND KBENCH_ALGORITHMS ${stem})
  list(APPEND KBENCH_ALGORITHM_TAGS ${tag})
  set(KBENCH_ALGORITHM_${stem}_TYPE ${type})
  set(KBENCH_ALGORITHM_${stem}_TAG ${tag})
endmacro()

kbench_algorithm(conv Conv conv)
kbench_algorithm(lbp Lbp lbp)
kbench_algorithm(sad Sad sad)
kbench_algorithm(sad_pruned SadPruned sad-pruned)
kbench_algorithm(cemd Cemd cemd)

# Sets `out` to every algorithm's files from the patterns that follow, "<stem>" standing for its
# stem (e.g. "sequential/<stem>.cpp"): pattern by pattern, each in registry order.
function(kbench_algorithm_files out)
  set(files)
  foreach(pattern IN LISTS ARGN)
    foreach(stem IN LISTS KBENCH_ALGORITHMS)
      string(REPLACE "<stem>" "${stem}" file "${pattern}")
      list(APPEND files "${file}")
    endforeach()
  endforeach()
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# The list for C++, in KBENCH_GENERATED_INCLUDE_DIR (on kbench's public include path):
#   kbench/algorithm_list.hpp: KBENCH_FOR_EACH_ALGORITHM(X), which expands to X(stem, Type, "tag")
#     for each algorithm in registry order (nothing else included)
#   kbench/all_algorithms.hpp: every kbench/<stem>.hpp, then the list
# file(CONFIGURE) rewrites a file only when its text changed, so reconfiguring rebuilds nothing.
set(KBENCH_GENERATED_INCLUDE_DIR "${CMAKE_BINARY_DIR}/generated/include")
set(kbench_list "#define KBENCH_FOR_EACH_ALGORITHM(X)")
set(kbench_includes)
foreach(stem IN LISTS KBENCH_ALGORITHMS)
  string(APPEND kbench_list
         " \\\n  X(${stem}, ${KBENCH_ALGORITHM_${stem}_TYPE}, \"${KBENCH_ALGORITHM_${stem}_TAG}\")")
  string(APPEND kbench_includes "#include \"kbench/${stem}.hpp\"\n")
endforeach()
set(kbench_header "#pragma once\n// Generated from cmake/algorithms.cmake: edit the list there.\n")
file(CONFIGURE OUTPUT "${KBENCH_GENERATED_INCLUDE_DIR}/kbench/algorithm_list.hpp" @ONLY
     CONTENT "${kbench_header}\n${kbench_list}\n")
file(CONFIGURE OUTPUT "${KBENCH_GENERATED_INCLUDE_DIR}/kbench/all_algorithms.hpp" @ONLY
     CONTENT "${kbench_header}\n${kbench_includes}\n#include \"kbench/algorithm_list.hpp\"\n")
unset(kbench_list)
unset(kbench_includes)
unset(kbench_header)
