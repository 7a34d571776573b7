# HIPGN_TORCH_PYTHON: the first Python here that imports torch (on a GPU machine PyTorch may
# live in another interpreter than the generator's), or empty. The PyTorch tests run on it and
# the C++ operators (pytorch/) are built for its PyTorch.
if(NOT HIPGN_TORCH_PYTHON)
  foreach(name IN ITEMS python3 python3.12 python3.11 python3.10)
    find_program(_py_${name} ${name})
    if(_py_${name})
      execute_process(COMMAND ${_py_${name}} -c "import torch" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0)
        set(HIPGN_TORCH_PYTHON ${_py_${name}} CACHE FILEPATH "The Python whose PyTorch hipgn is built and tested for")
        break()
      endif()
    endif()
  endforeach()
endif()
