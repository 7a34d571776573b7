"""libhipgn.so through ctypes: where it is found, its C API's types, and errors that say what is
wrong. Nothing here needs PyTorch; hipgn.torch builds on it."""

import ctypes
import ctypes.util
import glob
import json
import os
import threading
import warnings
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

# hipgn.h's HIPGN_API_VERSION that these bindings mirror; a library of another version is refused.
API_VERSION = 4
MAX_SPATIAL_RANK = 8  # HIPGN_MAX_SPATIAL_RANK

# The C enums, by the short names instance names use (runtime/src/types.cpp spells the same).
OPS = {"fwd": 0, "dx": 1, "dgb": 2, "bwd": 3}
DTYPES = {"f32": 0, "f16": 1, "bf16": 2}
LAYOUTS = {"cf": 0, "cl": 1}
ACTIVATIONS = {"none": 0, "swish": 1}
STATUS_NAMES = {0: "success", 1: "invalid argument", 2: "not built", 3: "not supported", 4: "unknown instance",
                5: "runtime error", 6: "no device"}
STATUS_RUNTIME_ERROR, STATUS_NO_DEVICE = 5, 6

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIBRARY_NAME = "libhipgn.so"


class LibraryNotFoundError(ImportError):
    """libhipgn.so could not be found or loaded; the message lists every place looked."""


class HipgnError(RuntimeError):
    """A hipgn call failed; `status` is the C API's status name, the message hipgn's own."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = STATUS_NAMES.get(status, str(status))


class Problem(ctypes.Structure):
    """hipgn_problem_t (hipgn.h); its size is checked against the library's ABI (136 bytes)."""
    _fields_ = [("op", ctypes.c_int), ("n", ctypes.c_int64), ("c", ctypes.c_int64), ("groups", ctypes.c_int64),
                ("spatial_rank", ctypes.c_int32), ("spatial", ctypes.c_int64 * MAX_SPATIAL_RANK),
                ("x_dtype", ctypes.c_int), ("gamma_dtype", ctypes.c_int), ("layout", ctypes.c_int),
                ("act", ctypes.c_int), ("eps", ctypes.c_float), ("swish_beta", ctypes.c_float),
                ("uneven_groups", ctypes.c_int32)]


assert ctypes.sizeof(Problem) == 136, "hipgn_problem_t is 136 bytes (c_api.cpp asserts the same)"


def _named(table: Dict[str, int], what: str, value: str) -> int:
    if value not in table:
        raise ValueError(f"{what} {value!r} is not one of {', '.join(table)}")
    return table[value]


def make_problem(op: str, n: int, c: int, spatial: Sequence[int], groups: int, x_dtype: str,
                 gamma_dtype: Optional[str] = None, layout: str = "cf", act: str = "none", eps: float = 1e-5,
                 swish_beta: float = 1.0, uneven_groups: bool = False) -> Problem:
    """A hipgn_problem_t from short names ("fwd", "f16", "cl", "swish", ...); gamma_dtype defaults
    to x_dtype; uneven_groups opts in to C % G != 0 (hipgn.h). Sizes are checked by the library
    when the problem is used."""
    if len(spatial) > MAX_SPATIAL_RANK:
        raise ValueError(f"{len(spatial)} spatial dimensions: hipgn takes at most {MAX_SPATIAL_RANK}")
    p = Problem(op=_named(OPS, "op", op), n=n, c=c, groups=groups, spatial_rank=len(spatial),
                x_dtype=_named(DTYPES, "dtype", x_dtype),
                gamma_dtype=_named(DTYPES, "gamma dtype", gamma_dtype or x_dtype),
                layout=_named(LAYOUTS, "layout", layout), act=_named(ACTIVATIONS, "activation", act), eps=eps,
                swish_beta=swish_beta, uneven_groups=int(uneven_groups))
    for i, d in enumerate(spatial):
        p.spatial[i] = d
    return p


class ProblemKey(NamedTuple):
    """What the tuning database files a winner under (runtime's TuningKey): the problem's
    structure and the target it was timed on (architecture and compute units, as a Handle's
    arch and compute_units); eps and the Swish slope change no instance's speed."""
    op: str
    n: int
    c: int
    spatial: Tuple[int, ...]
    groups: int
    x_dtype: str
    gamma_dtype: str
    layout: str
    act: str
    arch: str
    compute_units: int

    @classmethod
    def of(cls, problem: Problem, arch: str, compute_units: int) -> "ProblemKey":
        name = {table_value: key for key, table_value in OPS.items()}
        dtype = {v: k for k, v in DTYPES.items()}
        return cls(name[problem.op], problem.n, problem.c, tuple(problem.spatial[:problem.spatial_rank]),
                   problem.groups, dtype[problem.x_dtype], dtype[problem.gamma_dtype],
                   {v: k for k, v in LAYOUTS.items()}[problem.layout],
                   {v: k for k, v in ACTIVATIONS.items()}[problem.act], arch, compute_units)

    def problem(self, eps: float = 1e-5, swish_beta: float = 1.0) -> Problem:
        # a key's C % G != 0 is an uneven-groups problem's: no other kind is valid
        return make_problem(self.op, self.n, self.c, self.spatial, self.groups, self.x_dtype, self.gamma_dtype,
                            self.layout, self.act, eps, swish_beta, uneven_groups=self.c % self.groups != 0)

    def __str__(self) -> str:
        s = "x".join(map(str, self.spatial)) or "1"
        return (f"{self.op} n{self.n} c{self.c} s{s} g{self.groups} {self.x_dtype}/{self.gamma_dtype} "
                f"{self.layout} {self.act} on {self.arch} x{self.compute_units}")


def read_tuning_db(path: str) -> Dict[ProblemKey, Tuple[str, float]]:
    """A tuning database file's entries, {key: (instance, us)}, for inspection. The library reads
    the file itself (HIPGN_TUNING_DB); this reader skips what it cannot read, as the library does,
    and raises ValueError only where the library would skip the whole file. A version 1 file (keyed
    by the device's display name) reads as empty with a warning, as the library ignores it."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or doc.get("format") != "hipgn-tuning-db" or doc.get("version") not in (1, 2):
        raise ValueError(f"{path} is not a version 2 hipgn tuning database")
    if doc["version"] == 1:
        warnings.warn(f"{path} is a version 1 tuning database, keyed by device name: hipgn ignores its entries; "
                      "re-tune them (hipgn.torch.tune, hipgn_profiler --tune)")
        return {}
    entries = {}
    for e in doc.get("entries", []):
        try:
            key = ProblemKey(e["op"], e["n"], e["c"], tuple(e["spatial"]), e["groups"], e["x_dtype"],
                             e["gamma_dtype"], e["layout"], e["act"], e["arch"], e["compute_units"])
            entries[key] = (e["instance"], float(e.get("us", 0)))
        except (KeyError, TypeError, ValueError):
            continue
    return entries


def _build_tree_libraries() -> List[str]:
    """libhipgn.so in the build trees of the source checkout this package sits in
    (<repo>/python/hipgn -> <repo>/build*/runtime/), newest first."""
    repo = os.path.dirname(os.path.dirname(_HERE))
    found = glob.glob(os.path.join(repo, "build*", "runtime", _LIBRARY_NAME))
    return sorted(found, key=os.path.getmtime, reverse=True)


def _installed_library() -> Optional[str]:
    """Where `cmake --install` put the library, as recorded beside the package it installed."""
    try:
        from . import _install  # written by cmake --install, absent in the source tree
    except ImportError:
        return None
    return os.path.normpath(os.path.join(_HERE, _install.LIBRARY_RELATIVE_PATH))


def candidates() -> Iterator[Tuple[str, str]]:
    """(path, how it was found) in the order tried. HIPGN_LIBRARY, when set, is the only one:
    an explicit choice that is wrong must fail, not be replaced by some other library."""
    env = os.environ.get("HIPGN_LIBRARY")
    if env:
        path = os.path.join(env, _LIBRARY_NAME) if os.path.isdir(env) else env
        yield path, "HIPGN_LIBRARY"
        return
    yield os.path.join(_HERE, _LIBRARY_NAME), "beside the package"
    installed = _installed_library()
    if installed:
        yield installed, "where cmake --install put it"
    for path in _build_tree_libraries():
        yield path, "the source checkout's build tree"
    system = ctypes.util.find_library("hipgn")
    if system:
        yield system, "the system's library path"


class Library:
    """The loaded libhipgn.so, its functions declared for ctypes."""

    def __init__(self, path: str):
        self.path = path
        self.cdll = ctypes.CDLL(path)
        lib = self.cdll
        if not hasattr(lib, "hipgn_api_version"):
            raise LibraryNotFoundError(f"{path} predates hipgn's C API version {API_VERSION} (no hipgn_api_version): "
                                       "rebuild it from this source tree")
        lib.hipgn_api_version.restype = ctypes.c_int32
        if lib.hipgn_api_version() != API_VERSION:
            raise LibraryNotFoundError(f"{path} has C API version {lib.hipgn_api_version()}; this hipgn package "
                                       f"needs {API_VERSION}: use the library built from the same source")
        P, S, I64, Z = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_size_t
        PP = ctypes.POINTER(Problem)
        decl = {
            "hipgn_create": ([ctypes.POINTER(P)], ctypes.c_int),
            "hipgn_destroy": ([P], None),
            "hipgn_last_error": ([], S),
            "hipgn_groupnorm_fwd_with_workspace": ([P, PP, P, P, P, P, P, P, P, Z, S, P], ctypes.c_int),
            "hipgn_groupnorm_bwd_with_workspace": ([P, PP, P, P, P, P, P, P, P, P, P, P, Z, S, P], ctypes.c_int),
            "hipgn_workspace_size": ([P, PP, S, ctypes.POINTER(Z)], ctypes.c_int),
            "hipgn_choose_instance": ([P, PP, ctypes.POINTER(S)], ctypes.c_int),
            "hipgn_tune": ([P, PP, P, ctypes.POINTER(S), ctypes.POINTER(ctypes.c_double)], ctypes.c_int),
            "hipgn_set_tuned": ([P, PP, S], ctypes.c_int),
            "hipgn_tuning_db_load": ([P, S], ctypes.c_int),
            "hipgn_tuning_db_save": ([P, S], ctypes.c_int),
            "hipgn_device_name": ([P], S),
            "hipgn_device_arch": ([P], S),
            "hipgn_device_compute_units": ([P], ctypes.c_int32),
            "hipgn_instance_count": ([], I64),
            "hipgn_instance_name": ([I64], S),
        }
        for name, (args, res) in decl.items():
            fn = getattr(lib, name)
            fn.argtypes = args
            fn.restype = res
        self.fwd = lib.hipgn_groupnorm_fwd_with_workspace  # the hot calls, bound once
        self.bwd = lib.hipgn_groupnorm_bwd_with_workspace

    def error(self, status: int) -> HipgnError:
        message = (self.cdll.hipgn_last_error() or b"").decode(errors="replace")
        return HipgnError(status, f"hipgn: {message}")

    def check(self, status: int) -> None:
        if status != 0:
            raise self.error(status)

    def instance_names(self) -> List[str]:
        return [self.cdll.hipgn_instance_name(i).decode() for i in range(self.cdll.hipgn_instance_count())]

    def built_keys(self) -> frozenset:
        """The functional keys (op, x dtype, gamma dtype, layout, activation) this build compiled,
        parsed from instance names: gn_<op>_<x>_<gamma>_<layout>_<act>_<family>_b.._v.._e.."""
        return frozenset(tuple(name.split("_")[1:6]) for name in self.instance_names())

    def handle(self) -> "Handle":
        return Handle(self)


class Handle:
    """A hipgn handle on the GPU current when it is made (hipgn_create reads HIPGN_TUNING_DB), or,
    given `ptr`, another owner's handle (hipgn.torch's C++ operators' own), used and never destroyed."""

    def __init__(self, library: Library, ptr: Optional[int] = None):
        self.library = library
        self._owned = ptr is None
        self.ptr = ctypes.c_void_p(ptr)
        if self._owned:
            status = library.cdll.hipgn_create(ctypes.byref(self.ptr))
            if status not in (0, STATUS_NO_DEVICE):
                raise library.error(status)
            self.has_device = status == 0
        else:
            self.has_device = True  # its owner made it on a device
        self.device_name = library.cdll.hipgn_device_name(self.ptr).decode()  # shown, not a key
        # the target tuning database entries are keyed by (ProblemKey.of)
        self.arch = library.cdll.hipgn_device_arch(self.ptr).decode()
        self.compute_units = library.cdll.hipgn_device_compute_units(self.ptr)

    def __del__(self):
        ptr, self.ptr = getattr(self, "ptr", None), None
        try:
            if ptr and ptr.value and getattr(self, "_owned", False):
                self.library.cdll.hipgn_destroy(ptr)
        except Exception:  # at interpreter exit the library may already be gone: nothing to free then
            pass

    def _c(self, status: int) -> None:
        if status != 0:
            raise self.library.error(status)

    def workspace_size(self, problem: Problem, instance: Optional[str] = None) -> int:
        n = ctypes.c_size_t()
        self._c(self.library.cdll.hipgn_workspace_size(self.ptr, ctypes.byref(problem),
                                                       instance.encode() if instance else None, ctypes.byref(n)))
        return n.value

    def choose(self, problem: Problem) -> str:
        name = ctypes.c_char_p()
        self._c(self.library.cdll.hipgn_choose_instance(self.ptr, ctypes.byref(problem), ctypes.byref(name)))
        return name.value.decode()

    def tune(self, problem: Problem, stream: Optional[int] = None) -> Tuple[str, float]:
        name, us = ctypes.c_char_p(), ctypes.c_double()
        self._c(self.library.cdll.hipgn_tune(self.ptr, ctypes.byref(problem), stream, ctypes.byref(name),
                                             ctypes.byref(us)))
        return name.value.decode(), us.value

    def set_tuned(self, problem: Problem, instance: str) -> None:
        self._c(self.library.cdll.hipgn_set_tuned(self.ptr, ctypes.byref(problem), instance.encode()))

    def load_tuning_db(self, path: str) -> None:
        self._c(self.library.cdll.hipgn_tuning_db_load(self.ptr, os.fsencode(path)))

    def save_tuning_db(self, path: Optional[str] = None) -> None:
        self._c(self.library.cdll.hipgn_tuning_db_save(self.ptr, os.fsencode(path) if path else None))


_lock = threading.Lock()
_library: Optional[Library] = None


def find_library() -> str:
    """The path of the libhipgn.so `library()` loads; LibraryNotFoundError, naming every place
    looked, if there is none."""
    looked = []
    for path, how in candidates():
        if os.path.isfile(path) or (how == "the system's library path"):
            return path
        looked.append(f"  {path} ({how}): no such file")
    raise LibraryNotFoundError(_not_found(looked))


def _not_found(looked: List[str]) -> str:
    return ("hipgn: libhipgn.so not found. Looked in:\n" + "\n".join(looked) +
            "\nBuild hipgn (scripts/build.sh) and run from its source tree, install it (cmake --install), or set "
            "HIPGN_LIBRARY to the library's path.")


def library() -> Library:
    """The process's libhipgn.so, loaded on first use (thread-safe)."""
    global _library
    if _library is not None:
        return _library
    with _lock:
        if _library is None:
            looked = []
            for path, how in candidates():
                if how != "the system's library path" and not os.path.isfile(path):
                    looked.append(f"  {path} ({how}): no such file")
                    continue
                try:
                    _library = Library(path)
                    break
                except OSError as e:  # present but not loadable: wrong architecture, missing dependency
                    looked.append(f"  {path} ({how}): cannot be loaded: {e}")
                    if how == "HIPGN_LIBRARY":
                        break
            if _library is None:
                raise LibraryNotFoundError(_not_found(looked))
    return _library
