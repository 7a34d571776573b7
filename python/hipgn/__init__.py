"""hipgn: GroupNorm (+ fused SiLU/Swish) kernels for HIP/CUDA, from Python.

`import hipgn` needs neither PyTorch nor a GPU: it gives the C API through ctypes (library(),
make_problem(), the tuning database's ProblemKey and reader). `import hipgn.torch` adds the
PyTorch operator, modules, patch() and tune().

The library, libhipgn.so, is looked for in this order: the file or folder HIPGN_LIBRARY names
(then nowhere else); beside this package; where `cmake --install` put it; the build trees of the
source checkout this package sits in (build*/runtime/, newest first); the system's library path.
"""

from ._library import (API_VERSION, HipgnError, LibraryNotFoundError, Problem, ProblemKey, find_library,
                       library, make_problem, read_tuning_db)

__version__ = "0.1.0"

__all__ = ["API_VERSION", "HipgnError", "LibraryNotFoundError", "Problem", "ProblemKey", "find_library", "library",
           "make_problem", "read_tuning_db", "__version__"]
