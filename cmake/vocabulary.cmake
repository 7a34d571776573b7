# The vocabulary (codegen/vocabulary.py) for the build: at configure time the generator writes
# the public enums (types.hpp, types.h), the instance-name grammar's C++ (instance_name.cpp)
# and the options' values and defaults (vocabulary.cmake, included here), each file only when
# its content changed. An edit of the generator or a template re-runs this configure step.
set(HIPGN_VOCABULARY_DIR ${CMAKE_BINARY_DIR}/vocabulary)
execute_process(COMMAND ${HIPGN_PYTHON} -m codegen --vocabulary --out-dir=${HIPGN_VOCABULARY_DIR}
                WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                OUTPUT_QUIET ERROR_VARIABLE vocabulary_error RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "hipgn: codegen --vocabulary failed: ${vocabulary_error}")
endif()
file(GLOB _vocabulary_inputs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/codegen/*.py ${PROJECT_SOURCE_DIR}/templates/*.j2)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_vocabulary_inputs})
include(${HIPGN_VOCABULARY_DIR}/vocabulary.cmake)
