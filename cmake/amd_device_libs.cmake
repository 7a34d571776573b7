# Debian's rocm-device-libs 5.2 predates gfx11: it has no oclc_isa_version_1100.bc, the one-
# constant bitcode that tells the device library the ISA version. Build a device-library
# folder in the build tree: links to every system bitcode file, plus the missing ISA-version
# files made from an existing one with the constant changed. Nothing else differs per target.
find_path(HIPGN_AMD_BITCODE_DIR ocml.bc PATHS /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /usr/lib/amdgcn/bitcode
          /opt/rocm/amdgcn/bitcode REQUIRED)
find_program(HIPGN_LLVM_DIS NAMES llvm-dis-15 llvm-dis HINTS /usr/lib/llvm-15/bin REQUIRED)
find_program(HIPGN_LLVM_AS NAMES llvm-as-15 llvm-as HINTS /usr/lib/llvm-15/bin REQUIRED)
set(HIPGN_AMD_DEVICE_LIB_DIR ${CMAKE_BINARY_DIR}/amdgcn-bitcode)
file(MAKE_DIRECTORY ${HIPGN_AMD_DEVICE_LIB_DIR})
file(GLOB _bitcode ${HIPGN_AMD_BITCODE_DIR}/*.bc)
foreach(f IN LISTS _bitcode)
  get_filename_component(n ${f} NAME)
  file(CREATE_LINK ${f} ${HIPGN_AMD_DEVICE_LIB_DIR}/${n} SYMBOLIC)
endforeach()
set(HIPGN_AMD_DEVICE_LIB_STAMP "")
foreach(t IN LISTS HIPGN_GPU_TARGETS)
  string(REGEX REPLACE "^gfx" "" ver "${t}")
  string(REGEX REPLACE ":.*" "" ver "${ver}")  # drop features such as :xnack-
  set(out ${HIPGN_AMD_DEVICE_LIB_DIR}/oclc_isa_version_${ver}.bc)
  if(NOT EXISTS ${HIPGN_AMD_BITCODE_DIR}/oclc_isa_version_${ver}.bc)
    # gfx1100 -> 11000 (major, minor, stepping); letters (gfx90a) only appear in existing files
    math(EXPR isa "${ver} * 10")
    execute_process(COMMAND ${HIPGN_LLVM_DIS} -o - ${HIPGN_AMD_BITCODE_DIR}/oclc_isa_version_1030.bc
                    OUTPUT_VARIABLE ir RESULT_VARIABLE rc)
    if(rc)
      message(FATAL_ERROR "hipgn: cannot disassemble oclc_isa_version_1030.bc")
    endif()
    string(REPLACE "i32 10300" "i32 ${isa}" ir "${ir}")
    file(WRITE ${out}.ll "${ir}")
    execute_process(COMMAND ${HIPGN_LLVM_AS} -o ${out} ${out}.ll RESULT_VARIABLE rc)
    if(rc)
      message(FATAL_ERROR "hipgn: cannot assemble ${out}")
    endif()
    message(STATUS "hipgn: made ${out} (the system device library lacks ${t})")
  endif()
endforeach()
