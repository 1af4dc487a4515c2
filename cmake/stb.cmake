# stb from Debian (libstb-dev): the prebuilt archive for stb_image_write, and stb_image.h with the
# project's patches (cmake/stb-patches/) applied into the build tree, which image_io.cpp compiles
# as <stb_patched/stb_image.h>.
find_path(STB_INCLUDE_DIR stb/stb_image.h REQUIRED)
# The static archive, so binaries run where libstb is not installed (e.g. a GPU machine).
find_library(STB_LIBRARY NAMES libstb.a stb REQUIRED)
find_program(KBENCH_PATCH patch REQUIRED)

set(KBENCH_STB_PATCHED_DIR "${CMAKE_BINARY_DIR}/stb-patched")
file(GLOB stb_patches "${CMAKE_CURRENT_LIST_DIR}/stb-patches/*.patch")
list(SORT stb_patches)
set(work "${CMAKE_BINARY_DIR}/stb-patched-work")
file(REMOVE_RECURSE "${work}")
file(COPY "${STB_INCLUDE_DIR}/stb/stb_image.h" DESTINATION "${work}")
foreach(stb_patch IN LISTS stb_patches)
  execute_process(COMMAND "${KBENCH_PATCH}" --quiet --forward -p1 -i "${stb_patch}"
                  WORKING_DIRECTORY "${work}" RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${stb_patch} does not apply to ${STB_INCLUDE_DIR}/stb/stb_image.h")
  endif()
endforeach()
# configure_file rewrites the copy only when it changed, so reconfiguring rebuilds nothing.
configure_file("${work}/stb_image.h" "${KBENCH_STB_PATCHED_DIR}/stb_patched/stb_image.h" COPYONLY)
file(REMOVE_RECURSE "${work}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             "${STB_INCLUDE_DIR}/stb/stb_image.h" ${stb_patches})
