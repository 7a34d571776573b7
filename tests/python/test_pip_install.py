"""`pip install --no-build-isolation python/` works offline with the system's setuptools, and the
installed package finds the library HIPGN_LIBRARY names. The source folder is copied first:
pip's in-tree build leaves build/ and an egg-info behind. Exits 77 (ctest: skipped), saying why,
where this Python has no pip or setuptools.

Usage: test_pip_install.py (HIPGN_LIBRARY=path/to/libhipgn.so)"""

import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

for module in ("pip", "setuptools", "wheel"):  # each in its own interpreter: pip and setuptools
    # both patch distutils, and importing both in one process can trip over that
    if subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode != 0:
        print(f"skipped: {sys.executable} has no {module}; Debian: python3-pip, python3-setuptools, python3-wheel")
        sys.exit(77)

with tempfile.TemporaryDirectory() as tmp:
    src, target = os.path.join(tmp, "src"), os.path.join(tmp, "site")
    shutil.copytree(os.path.join(REPO, "python"), src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                        "--target", target, src], env=env, capture_output=True, text=True)
    print(r.stdout[-2000:], r.stderr[-2000:])
    if r.returncode != 0:
        print("FAILED: pip install")
        sys.exit(1)
    env["PYTHONPATH"] = target
    check = ("import hipgn, os, sys; assert os.path.dirname(hipgn.__file__).startswith(sys.argv[1]), hipgn.__file__; "
             "lib = hipgn.library(); print('installed package', hipgn.__version__, 'loads', lib.path, "
             "len(lib.instance_names()), 'instances')")
    r = subprocess.run([sys.executable, "-c", check, target], env=env, capture_output=True, text=True, cwd=tmp)
    print(r.stdout, r.stderr)
    if r.returncode != 0:
        print("FAILED: the installed package")
        sys.exit(1)
print("1 passed, 0 failed")
