# install(): the libraries, public headers, the manifest and a CMake package, so another
# project can find_package(hipgn) and link hipgn::hipgn (static) or hipgn::hipgn_shared.
# Two export sets, because the static library brings the GPU runtime (and so the CUDA
# toolkit) to its consumer and the shared one, which carries its runtime inside, brings none.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS hipgn_shared EXPORT hipgnSharedTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS hipgn hipgn_gpu_runtime EXPORT hipgnStaticTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# the public layer only: the dispatch and device-ABI headers stay inside (platform_cuda.hpp's
# hip* names would collide with a real HIP in the consumer's program)
install(DIRECTORY api/include/hipgn ${HIPGN_VOCABULARY_DIR}/include/hipgn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
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

# The Python package (python/hipgn) beside the library, with a note of where the library is
# relative to it: `PYTHONPATH=<prefix>/lib/python3/dist-packages python3 -c "import hipgn"`
# finds libhipgn.so whatever --prefix the install is given. (An absolute directory records the
# configured prefix's library instead.)
set(HIPGN_PYTHON_INSTALL_DIR "lib/python3/dist-packages" CACHE STRING
    "Where cmake --install puts the hipgn Python package (relative: under the prefix)")
install(DIRECTORY python/hipgn DESTINATION ${HIPGN_PYTHON_INSTALL_DIR}
        PATTERN "__pycache__" EXCLUDE PATTERN "_install.py" EXCLUDE PATTERN "libhipgn.so" EXCLUDE
        PATTERN "libhipgn_torch.so" EXCLUDE)
if(IS_ABSOLUTE "${HIPGN_PYTHON_INSTALL_DIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(_hipgn_library_from_package "${CMAKE_INSTALL_FULL_LIBDIR}/$<TARGET_FILE_NAME:hipgn_shared>")
else()
  file(RELATIVE_PATH _hipgn_library_from_package "/prefix/${HIPGN_PYTHON_INSTALL_DIR}/hipgn"
       "/prefix/${CMAKE_INSTALL_LIBDIR}")
  set(_hipgn_library_from_package "${_hipgn_library_from_package}/$<TARGET_FILE_NAME:hipgn_shared>")
endif()
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/python/_install.py CONTENT
     "# Written by cmake --install: the library, relative to this package (hipgn/_library.py reads it).
LIBRARY_RELATIVE_PATH = \"${_hipgn_library_from_package}\"
")
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/python/_install.py DESTINATION ${HIPGN_PYTHON_INSTALL_DIR}/hipgn)
