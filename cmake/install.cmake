# install(): the library, public headers, the manifest and a CMake package, so another project
# can find_package(hipgn) and link hipgn::hipgn.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS hipgn hipgn_shared hipgn_gpu_runtime EXPORT hipgnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY runtime/include/hipgn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${HIPGN_MANIFEST} DESTINATION ${CMAKE_INSTALL_DATADIR}/hipgn)
if(HIPGN_BUILD_TOOLS)
  install(TARGETS hipgn_profiler RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT hipgnTargets NAMESPACE hipgn:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hipgn)
configure_package_config_file(cmake/hipgnConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/hipgnConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hipgn)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/hipgnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/hipgnConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/hipgnConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hipgn)
