# `cmake --install BUILD --prefix P`: the public headers, the library and the package files
# (P/lib/cmake/kbench/kbenchConfig.cmake) that find_package(kbench) reads.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(kbench_install_targets kbench)
if(TARGET kbench_native_cuda)
  list(APPEND kbench_install_targets kbench_native_cuda)
endif()
install(TARGETS ${kbench_install_targets} EXPORT kbenchTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/kbench DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT kbenchTargets NAMESPACE kbench:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kbench)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/kbenchConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/kbenchConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kbench)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/kbenchConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/kbenchConfig.cmake ${CMAKE_BINARY_DIR}/kbenchConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kbench)
