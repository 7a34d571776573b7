"""NVIDIA Apex's NHWC GroupNorm (apex.contrib.group_norm, the `group_norm_cuda` extension) as a
benchmark peer, called the way Apex's own GroupNorm module calls it on an H100.

Apex is not a dependency of hipgn and no Apex code is kept here: bench.py takes `--apex PATH`,
either an Apex checkout (its apex/contrib/csrc/group_norm sources are compiled once with
torch.utils.cpp_extension, as Apex's setup.py builds them, into --apex-build) or the extension
module that build produced (a .so, or that .so xz-compressed, to carry between machines).

What Apex's module does, and so what is timed here (apex/contrib/group_norm/group_norm.py):
- only channels-last 4-D tensors, G of 16 or 32, and C among its kernels' channel counts; every
  other problem falls back to PyTorch (eager), so the peer is not timed there ("-");
- one pass (a cooperative persistent kernel) where H * W <= 1024 (and not H * W >= 512 with
  C of 3136, 3584 or 4096), two passes (a sums kernel, then a scale kernel) otherwise;
- its v2 kernels only on compute capability 10.0 (Blackwell): not on an H100 or H200;
- forward: y and the per-group sums for the backward; backward: dx, dgamma, dbeta from dy, x and
  those sums. Its backward is timed directly (the forward's sums made once beforehand), where
  the other peers' backward is their training step minus their forward.

    python3 bench/apex_peer.py --apex ~/apex --apex-build /tmp/apex-build   # build, print the .so
"""
from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import lzma
import os
import pathlib
import shutil

# Apex's GroupNorm.SUPPORTED_CHANNELS and SUPPORTED_GROUPS (its kernels' instantiations).
CHANNELS = frozenset([128, 256, 320, 384, 448, 512, 640, 768, 896, 960, 1024, 1280, 1344, 1536, 1792,
                      1920, 2048, 2240, 2560, 2688, 3072, 3136, 3584, 4096])
GROUPS = frozenset([16, 32])
SOURCES = pathlib.Path("apex/contrib/csrc/group_norm")


def sources_dir(path: pathlib.Path) -> pathlib.Path | None:
    for d in (path / SOURCES, path):
        if (d / "group_norm_nhwc_op.cpp").is_file():
            return d
    return None


def build(src: pathlib.Path, build_dir: pathlib.Path):
    """Compile Apex's group_norm_cuda with its setup.py's flags, for this GPU's architecture."""
    import torch
    from torch.utils import cpp_extension
    major, minor = torch.cuda.get_device_capability()
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", f"{major}.{minor}")
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 4))
    build_dir.mkdir(parents=True, exist_ok=True)
    return cpp_extension.load(
        name="group_norm_cuda", build_directory=str(build_dir), verbose=False,
        sources=[str(src / "group_norm_nhwc_op.cpp")] + sorted(str(p) for p in src.glob("*.cu")),
        extra_cflags=["-O3"], extra_cuda_cflags=["-O3", "--use_fast_math", "--ftz=false"])


def import_so(so: pathlib.Path, unpack_dir: pathlib.Path):
    import torch  # noqa: F401  (the extension links against the torch libraries loaded here)
    if so.suffix == ".xz":
        unpack_dir.mkdir(parents=True, exist_ok=True)
        plain = unpack_dir / so.stem
        with lzma.open(so) as f, open(plain, "wb") as out:
            shutil.copyfileobj(f, out)
        so = plain
    loader = importlib.machinery.ExtensionFileLoader("group_norm_cuda", str(so))
    spec = importlib.util.spec_from_file_location("group_norm_cuda", str(so), loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def load(path: str, build_dir: str):
    p, b = pathlib.Path(path).expanduser(), pathlib.Path(build_dir)
    if p.is_file():
        return import_so(p, b)
    src = sources_dir(p)
    if src is None:
        raise FileNotFoundError(f"--apex {path}: neither an Apex checkout (no {SOURCES}/group_norm_nhwc_op.cpp) "
                                "nor a built group_norm_cuda module")
    return build(src, b)


class Apex:
    def __init__(self, module, eps=1e-5):
        self.m = module
        self.eps = eps

    @staticmethod
    def supports(c, spatial, g, layout):
        return layout == "cl" and len(spatial) == 2 and g in GROUPS and c in CHANNELS

    @staticmethod
    def passes(c, spatial):
        # Apex's GroupNorm.forward on sm >= 80 (max_hw_one_pass 1024)
        hw = spatial[0] * spatial[1]
        return 2 if hw > 1024 or (hw >= 512 and c in (3136, 3584, 4096)) else 1

    def fns(self, c, spatial, g):
        passes = self.passes(c, spatial)

        def forward(s):
            s["y"], s["apex_sums"] = self.m.forward(s["x"], g, s["w"], s["b"], self.eps, passes, True)

        def backward(s):
            s["dx"], s["dw"], s["db"] = self.m.backward(s["dy"], s["apex_sums"], s["x"], g, s["w"], s["b"],
                                                        self.eps, passes, True)

        return forward, backward


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apex", required=True, help="an Apex checkout, or a built group_norm_cuda module")
    ap.add_argument("--apex-build", default="/tmp/hipgn-apex-build")
    ap.add_argument("--pack", help="also write the built module here, xz-compressed")
    a = ap.parse_args()
    module = load(a.apex, a.apex_build)
    print(module.__file__)
    if a.pack:
        with open(module.__file__, "rb") as f, lzma.open(a.pack, "wb", preset=6) as out:
            shutil.copyfileobj(f, out)
        print(a.pack, os.path.getsize(a.pack))


if __name__ == "__main__":
    main()
