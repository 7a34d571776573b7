# Choose the platform and set up its GPU language. Kernel sources are compiled as CUDA by nvcc
# (nvidia) or as HIP by clang (amd); hipgn_gpu_sources(<files>) marks files as kernel sources.
include(CheckLanguage)
if(NOT HIPGN_PLATFORM)
  check_language(CUDA)
  find_program(HIPGN_HIPCC hipcc)
  if(CMAKE_CUDA_COMPILER)
    set(HIPGN_PLATFORM nvidia)
  elseif(HIPGN_HIPCC)
    set(HIPGN_PLATFORM amd)
  else()
    message(FATAL_ERROR "hipgn: found neither nvcc nor hipcc; install one (scripts/setup.sh) or set HIPGN_PLATFORM")
  endif()
endif()
set(HIPGN_PLATFORM "${HIPGN_PLATFORM}" CACHE STRING "GPU platform: nvidia or amd (empty: detected)" FORCE)
message(STATUS "hipgn: platform ${HIPGN_PLATFORM}")

set(HIPGN_PLATFORM_DEFINITIONS "")
add_library(hipgn_gpu_runtime INTERFACE)
add_library(hipgn::gpu_runtime ALIAS hipgn_gpu_runtime)

if(HIPGN_PLATFORM STREQUAL "nvidia")
  if(NOT HIPGN_GPU_TARGETS)
    set(HIPGN_GPU_TARGETS ${HIPGN_DEFAULT_GPU_TARGETS_nvidia})
  endif()
  set(CMAKE_CUDA_ARCHITECTURES ${HIPGN_GPU_TARGETS})
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  target_link_libraries(hipgn_gpu_runtime INTERFACE CUDA::cudart_static)
  if(HIPGN_NVIDIA_SYSTEM_HIP)
    find_path(HIPGN_HIP_INCLUDE hip/hip_runtime.h REQUIRED)
    target_include_directories(hipgn_gpu_runtime INTERFACE ${HIPGN_HIP_INCLUDE})
    set(HIPGN_PLATFORM_DEFINITIONS HIPGN_NVIDIA_SYSTEM_HIP __HIP_PLATFORM_NVIDIA__)
  endif()
  function(hipgn_gpu_sources)
    set_source_files_properties(${ARGN} DIRECTORY ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}
                                PROPERTIES LANGUAGE CUDA)
  endfunction()
elseif(HIPGN_PLATFORM STREQUAL "amd")
  # Debian's HIP 5.2 with clang 15. Kernel sources are compiled by clang as HIP (-x hip); the
  # rest is plain C++ against the HIP runtime's host API. CMake 3.25's HIP language expects
  # ROCm's /opt layout, not Debian's, so the flags are given here instead.
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "hipgn: the amd platform needs clang as the C++ compiler: -DCMAKE_CXX_COMPILER=clang++-15")
  endif()
  if(NOT HIPGN_GPU_TARGETS)
    set(HIPGN_GPU_TARGETS "${HIPGN_DEFAULT_GPU_TARGETS_amd}")
  endif()
  find_library(HIPGN_AMDHIP64 amdhip64 REQUIRED)
  target_link_libraries(hipgn_gpu_runtime INTERFACE ${HIPGN_AMDHIP64})
  set(HIPGN_PLATFORM_DEFINITIONS HIPGN_PLATFORM_AMD __HIP_PLATFORM_AMD__)
  include(${CMAKE_CURRENT_LIST_DIR}/amd_device_libs.cmake)  # HIPGN_AMD_DEVICE_LIB_DIR
  set(HIPGN_HIP_FLAGS -x hip --rocm-path=/usr --hip-device-lib-path=${HIPGN_AMD_DEVICE_LIB_DIR}
      -mllvm -amdgpu-early-inline-all=true -mllvm -amdgpu-function-calls=false)
  foreach(t IN LISTS HIPGN_GPU_TARGETS)
    list(APPEND HIPGN_HIP_FLAGS --offload-arch=${t})
  endforeach()
  function(hipgn_gpu_sources)
    set_source_files_properties(${ARGN} DIRECTORY ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}
                                PROPERTIES COMPILE_OPTIONS "${HIPGN_HIP_FLAGS}"
                                OBJECT_DEPENDS "${HIPGN_AMD_DEVICE_LIB_STAMP}")
  endfunction()
else()
  message(FATAL_ERROR "hipgn: HIPGN_PLATFORM must be nvidia or amd, not '${HIPGN_PLATFORM}'")
endif()
# What code including hipgn's headers must define to see the right runtime API: given apart
# from the runtime library, so that libhipgn.so can pass these on without its runtime.
target_compile_definitions(hipgn_gpu_runtime INTERFACE ${HIPGN_PLATFORM_DEFINITIONS})
message(STATUS "hipgn: GPU targets ${HIPGN_GPU_TARGETS}")
