"""hipgn_profiler's command line, run as a user runs it: each bad input is refused with exit
status 2 and exactly one line on stderr naming the option and the value (nothing on stdout);
the listing says once that there is no GPU and which device the heuristic assumed.

Usage: test_profiler_cli.py --list                     (the case names, for ctest)
       test_profiler_cli.py PROFILER MANIFEST CASE     (run one case; exit 0 when it holds)"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from codegen.families import DESCRIPTORS  # noqa: E402  (each family's properties, declared once)

BAD_INPUT = 2

# name -> (arguments, the one stderr line after "hipgn_profiler: ", or a function of the
# manifest returning both)
REFUSALS = {
    "spatial_not_an_integer": (["-s", "64,abc"], "--spatial: '64,abc': dimension 2: 'abc' is not an integer"),
    "spatial_empty_dimension": (["-s", "64,,64"], "--spatial: '64,,64': dimension 2 is empty"),
    "spatial_separator_alone": (["-s", ","], "--spatial: ',': dimension 1 is empty"),
    "spatial_past_int64": (["-s", "99999999999999999999"],
                           "--spatial: '99999999999999999999': dimension 1: '99999999999999999999' is out of "
                           "range (1 to 9223372036854775807)"),
    "spatial_fraction": (["-s", "64.5"], "--spatial: '64.5': dimension 1: '64.5' is not an integer"),
    "spatial_exponent": (["-s", "1e3"], "--spatial: '1e3': dimension 1: '1e3' is not an integer"),
    "spatial_zero": (["-s", "64,0"], "--spatial: '64,0': dimension 2: '0' is out of range (1 to 9223372036854775807)"),
    "batch_past_int64": (["-n", "99999999999999999999"],
                         "--batch: '99999999999999999999' is out of range (1 to 9223372036854775807)"),
    "batch_zero": (["-n", "0"], "--batch: '0' is out of range (1 to 9223372036854775807)"),
    "channels_not_an_integer": (["-c", "32x"], "--channels: '32x' is not an integer"),
    "groups_negative": (["-g", "-4"], "--groups: '-4' is out of range (1 to 9223372036854775807)"),
    "groups_do_not_divide_channels": (["-g", "30"], "invalid problem: C = 320 is not divisible by G = 30 (uneven "
                                                    "groups are opt-in: the problem's uneven_groups)"),
    "uneven_groups_past_channels": (["--uneven-groups", "-c", "4", "-g", "5"],
                                    "invalid problem: G = 5 exceeds C = 4: with uneven groups each group still "
                                    "needs a channel"),
    "iters_zero": (["--iters", "0"], "--iters: '0' is out of range (1 to 1000000)"),
    "warmup_fraction": (["--warmup", "2.5"], "--warmup: '2.5' is not an integer"),
    "eps_zero": (["--eps", "0"], "--eps: '0' must be greater than 0"),
    "eps_not_a_number": (["--eps", "1e-5x"], "--eps: '1e-5x' is not a number"),
    "swish_beta_infinite": (["--swish-beta", "inf"], "--swish-beta: 'inf' is not finite"),
    "op_unknown": (["--op", "fwdd"], "--op: fwdd not in {fwd,dx,dgb,bwd}"),
    "option_unknown": (["--batchsize", "2"], "The following arguments were not expected: 2 --batchsize"),
    "value_missing": (["-s"], "--spatial: 1 required DIMS missing"),
    "csv_folder_missing": (["--csv", "/nonexistent-hipgn/out.csv"],
                           "--csv: '/nonexistent-hipgn/out.csv': the folder /nonexistent-hipgn does not exist"),
    "csv_is_a_folder": (["--csv", "/"], "--csv: '/' is a folder, not a file"),
    "instance_malformed": (["--instance", "gn_fwd_f16"],
                           "--instance: 'gn_fwd_f16' is not an instance name (gn_<op>_<x dtype>_<gamma dtype>_"
                           "<layout>_<act>_<family>_b<block>_v<vector>_e<per thread>)"),
    "instance_not_compiled": (["--instance", "gn_fwd_f16_f16_cl_swish_looped_b999_v1_e1"],
                              "--instance: gn_fwd_f16_f16_cl_swish_looped_b999_v1_e1 is a valid name but this build "
                              "did not compile it (preset or HIPGN_INSTANCE_FILTER); the build's manifest.json "
                              "lists those it did"),
}


# Families that read whole rows of C (channels-last: the persistent and streaming grids) and so
# take any C/G: they accept C/G = 3.
WHOLE_ROW_FAMILIES = tuple(f"_{d.name}_" for d in DESCRIPTORS.values() if d.persistent or d.streams)
# The families whose channels-last kernels take a column of V channels where C/G divides V.
COLUMN_FAMILIES = tuple(f"_{d.name}_" for d in DESCRIPTORS.values() if d.columns_channels_last)


def vectorized_instance(manifest):
    """A built instance of the default problem's key whose vector cannot divide C/G = 3 (None in
    a build that has none, e.g. one filtered to the whole-row families)."""
    for inst in manifest["instances"]:
        if (inst["bucket"] == "fwd_f16_f16_cl_swish" and "_v1_" not in inst["name"]
                and not any(f in inst["name"] for f in WHOLE_ROW_FAMILIES)):
            return inst["name"]
    return None


def instance_unsupporting(manifest):
    name = vectorized_instance(manifest)
    if name is None:
        return None
    problem = "fwd n2 c96 s64x64 g32 f16/f16 cl swish(1) eps1e-05"
    vector = int(name.split("_v")[1].split("_")[0])
    # a column family also takes groups narrower than its vector that divide it (a column of V
    # channels a workgroup), so its reason for C/G = 3 below the vector says that
    reason = "does not divide" if any(f in name for f in COLUMN_FAMILIES) and vector > 3 else "is not a multiple of"
    return (["-c", "96", "--instance", name],
            f"--instance: {name} does not support {problem}: C/G 3 {reason} the vector {vector}")


REFUSALS_FROM_MANIFEST = {"instance_unsupporting": instance_unsupporting}


def run(profiler, args):
    p = subprocess.run([profiler] + args, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def check_refusal(profiler, args, line):
    rc, out, err = run(profiler, args)
    want = "hipgn_profiler: " + line + "\n"
    problems = []
    if rc != BAD_INPUT:
        problems.append(f"exit status {rc}, expected {BAD_INPUT}")
    if err != want:
        problems.append(f"stderr {err!r}, expected {want!r}")
    if out:
        problems.append(f"stdout not empty: {out!r}")
    return problems


def groups_past_grid_limit(profiler, manifest):
    """N*G = 2,293,760,000 > 2^31-1 is valid: an instance takes it, or the refusal says the key
    is built and why its instances decline (never 'not built')."""
    rc, out, err = run(profiler, ["-n", "70000", "-c", "32768", "-g", "32768", "-s", "", "--list"])
    if rc == 0:
        return [] if "heuristic: gn_" in out else [f"exit 0 without a heuristic choice: {out!r}"]
    problems = [] if rc == BAD_INPUT else [f"exit status {rc}, expected 0 or {BAD_INPUT}"]
    lines = err.splitlines()
    if len(lines) != 1:
        problems.append(f"expected one line on stderr, got {err!r}")
    elif not ("instances for fwd_f16_f16_cl_swish but none supports" in lines[0] and "N*G" in lines[0]):
        problems.append(f"the refusal does not say the key is built and why: {lines[0]!r}")
    return problems


def listing_names_the_assumed_device(profiler, manifest):
    rc, out, err = run(profiler, ["--list"])
    problems = [] if rc == 0 else [f"exit status {rc}: {err!r}"]
    device = [l for l in out.splitlines() if l.startswith("device:")]
    if len(device) != 1:
        return problems + [f"expected one device line: {out!r}"]
    if device[0].startswith("device:    none"):
        if out.count("no GPU") != 1:
            problems.append(f"'no GPU' should appear once: {out!r}")
        if "the heuristic assumes 132 compute units" not in device[0]:
            problems.append(f"the assumed device is not named: {device[0]!r}")
        if "none run without a GPU" not in out:
            problems.append(f"the listing does not say nothing runs: {out!r}")
    elif "compute units" not in device[0]:
        problems.append(f"the device line lacks its compute units: {device[0]!r}")
    if "heuristic: gn_" not in out:
        problems.append(f"no heuristic choice: {out!r}")
    return problems


def uneven_groups_listed(profiler, manifest):
    """--uneven-groups takes G = 30 for C = 320 (groups of 10, the last of 30): the problem line
    says so and the heuristic names an instance."""
    rc, out, err = run(profiler, ["--uneven-groups", "-g", "30", "--list"])
    problems = [] if rc == 0 else [f"exit status {rc}: {err!r}"]
    line = [l for l in out.splitlines() if l.startswith("problem:")]
    if len(line) != 1 or "g30 (uneven)" not in line[0] or "the last of each sample 122880" not in line[0]:
        problems.append(f"the problem line does not describe the uneven groups: {line!r}")
    if "heuristic: gn_" not in out:
        problems.append(f"no heuristic choice: {out!r}")
    return problems


def help_lists_exit_codes(profiler, manifest):
    rc, out, err = run(profiler, ["--help"])
    problems = [] if rc == 0 else [f"--help exit status {rc}"]
    for phrase in ("Exit status: 0", "1 an instance failed verification", "2 bad input", "3 a runtime error"):
        if phrase not in out:
            problems.append(f"--help lacks {phrase!r}")
    return problems


def csv_not_written_without_gpu(profiler, manifest):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.csv")
        rc, out, err = run(profiler, ["--list", "--csv", path])
        problems = [] if rc == 0 else [f"exit status {rc}: {err!r}"]
        if os.path.exists(path):
            problems.append("--list wrote the CSV")
        if f"csv:       {path} not written: nothing was timed" not in out:
            problems.append(f"no word about the CSV: {out!r}")
        return problems


def listing_names_parts(profiler, manifest):
    """vae_64x512's channels-last backward (32 groups of 65536): the onchip 512 x 2 x 32 instance
    holds a group in 2 parts of a thread-block cluster, and its line says so (with the device's
    rounds of clusters where a GPU answers them); an instance that takes whole rows says none.
    None (skipped) where the build lacks the instance or the device has no clusters to hold it."""
    name = "gn_bwd_f16_f16_cl_swish_onchip_b512_v2_e32"
    if not any(inst["name"] == name for inst in manifest["instances"]):
        return None
    rc, out, err = run(profiler, ["--op", "bwd", "-n", "1", "-c", "512", "-s", "64,64", "-g", "32", "--layout", "cl",
                                  "--list"])
    if rc != 0:
        return [f"exit status {rc}: {err!r}"]
    lines = {l.split()[0]: l for l in out.splitlines() if l.startswith("  gn_")}
    if name not in lines:
        return None  # no clusters here: the instance does not take the group in parts
    problems = []
    _, named, rounds = lines[name].partition(f"{name}  in 2 parts")
    if not named:
        problems.append(f"the parts are not named: {lines[name]!r}")
    elif rounds and not rounds.startswith(", 1 round(s) of clusters"):
        problems.append(f"expected one round of clusters or none named: {lines[name]!r}")
    problems += [f"a whole-row instance names parts: {l!r}" for n, l in lines.items() if "_stream_" in n and " parts" in l]
    return problems


CHECKS = {
    "groups_past_grid_limit": groups_past_grid_limit,
    "listing_names_the_assumed_device": listing_names_the_assumed_device,
    "help_lists_exit_codes": help_lists_exit_codes,
    "uneven_groups_listed": uneven_groups_listed,
    "csv_not_written_with_list": csv_not_written_without_gpu,
    "listing_names_parts": listing_names_parts,
}


def main():
    names = sorted(REFUSALS) + sorted(REFUSALS_FROM_MANIFEST) + sorted(CHECKS)
    if sys.argv[1:] == ["--list"]:
        print("\n".join(names))
        return 0
    profiler, manifest_path, case = sys.argv[1:4]
    with open(manifest_path) as f:
        manifest = json.load(f)
    if case in REFUSALS:
        problems = check_refusal(profiler, *REFUSALS[case])
    elif case in REFUSALS_FROM_MANIFEST:
        made = REFUSALS_FROM_MANIFEST[case](manifest)
        if made is None:
            print("skipped: this build has no vectorized fwd_f16_f16_cl_swish instance")
            return 77
        problems = check_refusal(profiler, *made)
    else:
        problems = CHECKS[case](profiler, manifest)
        if problems is None:
            print("skipped: this build or device does not hold the case's group in parts")
            return 77
    for p in problems:
        print(f"{case}: {p}")
    print(f"{case}: {'ok' if not problems else 'FAILED'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
