"""The closing summary of scripts/test.sh, from ctest's JUnit file: how many tests ran, how
many were skipped and why (grouped by reason, with the tests each reason covers), what runs only
on a GPU machine, and the output of each failure. ctest's own last line counts a skipped test
as passed; a person should not have to run ctest -V to learn that most of the suite did not run.

Usage: test_summary.py JUNIT_XML [LOG]"""
import collections
import sys
import xml.etree.ElementTree as ET

GPU_SCRIPT = "scripts/gpu_check.sh"


def skip_reason(output, fallback):
    """A GoogleTest skip prints 'file:line: Skipped' then the reason; a script skipped through
    its exit code (torch_autograd) prints 'skipped: reason'."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            reason = []
            for follow in lines[i + 1:]:
                if not follow.strip() or follow.startswith("[  SKIPPED ]"):
                    break
                reason.append(follow.strip())
            if reason:
                return " ".join(reason)
        if line.lower().startswith("skipped: "):
            return line[len("skipped: "):].strip()
    return fallback or "no reason given"


def family(name):
    """The test a case belongs to: 'All/FwdInstance.MatchesReferenceOnCorpus/gn_fwd_...' and
    its 800 siblings are one test run per instance."""
    parts = name.split("/")
    return parts[1] if len(parts) == 3 else name


def needs_gpu(reason):
    return reason.startswith("no GPU") or "sees no GPU" in reason


def summarize(junit_path, log_path=None):
    root = ET.parse(junit_path).getroot()
    passed, failed, skipped = [], [], collections.OrderedDict()
    for case in root.iter("testcase"):
        name = case.get("name")
        out = case.findtext("system-out") or ""
        status = case.get("status")
        if status == "run":
            passed.append(name)
        elif status == "fail" or case.find("failure") is not None:
            failed.append((name, out))
        else:
            skip = case.find("skipped")
            reason = skip_reason(out, skip.get("message") if skip is not None else status)
            skipped.setdefault(reason, []).append(name)
    total = len(passed) + len(failed) + sum(len(v) for v in skipped.values())
    seconds = float(root.get("time") or 0)
    lines = [f"==== test summary: {total} tests in {seconds:.0f} s" + (f"; full output in {log_path}" if log_path else "")
             + " ===="]
    lines.append(f"ran:     {len(passed) + len(failed)} ({len(passed)} passed, {len(failed)} failed)")
    n_skipped = sum(len(v) for v in skipped.values())
    lines.append(f"skipped: {n_skipped}" + (", by reason:" if n_skipped else ""))
    for reason, names in sorted(skipped.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(names):5d}  {reason}")
        groups = collections.Counter(family(n) for n in names)
        shown = [f"{g} (x{c})" if c > 1 else g for g, c in sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))]
        rows = [shown[i:i + 3] for i in range(0, len(shown), 3)]
        for i, row in enumerate(rows):
            lines.append("         " + ", ".join(row) + ("," if i + 1 < len(rows) else ""))
    gpu_only = sum(len(v) for r, v in skipped.items() if needs_gpu(r))
    if gpu_only:
        lines.append(f"GPU only: the {gpu_only} tests skipped for want of a GPU run on a GPU machine ({GPU_SCRIPT})")
    for name, out in failed:
        tail = out.strip().splitlines()[-15:]
        lines.append(f"FAILED: {name}; the end of its output:")
        lines.extend("    " + l for l in tail)
    verdict = "FAILED" if failed else "passed"
    lines.append(f"result: {verdict}: {len(failed)} failed, {len(passed)} passed, {n_skipped} skipped")
    return "\n".join(lines), not failed


def main():
    text, ok = summarize(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
