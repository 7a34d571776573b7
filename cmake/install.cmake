# install(): the libraries, public headers, the manifest and a CMake package, so another
# project can find_package(hipgn) and link hipgn::hipgn (static) or hipgn::hipgn_shared.
# Two export sets, because the static library brings the GPU runtime (and so the CUDA
# toolkit) to its consumer and the shared one, which carries its runtime inside, brings none.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS hipgn_shared EXPORT hipgnSharedTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS hipgn hipgn_gpu_runtime EXPORT hipgnStaticTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY runtime/include/hipgn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${HIPGN_MANIFEST} DESTINATION ${CMAKE_INSTALL_DATADIR}/hipgn)
if(HIPGN_BUILD_TOOLS)
  install(TARGETS hipgn_profiler RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT hipgnSharedTargets NAMESPACE hipgn:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hipgn)
install(EXPORT hipgnStaticTargets NAMESPACE hipgn:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hipgn)
configure_package_config_file(cmake/hipgnConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/hipgnConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hipgn)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/hipgnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/hipgnConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/hipgnConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hipgn)
