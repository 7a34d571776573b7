"""CI: the README's build times stay true. Reads the cold default build's row of the README's
build-time table (wall and CPU time) and the build's own summary (scripts/build.sh writes
build/build-summary.txt), and fails when a cold build took more than 1.5 times the stated CPU
time (the build grew: more instances, heavier kernels) or more than twice the stated wall time
(CPU time is the firm check because another build on a shared machine stretches wall time), or
when a rebuild with nothing changed compiled anything.

Usage: check_build_times.py README COLD_SUMMARY NOOP_SUMMARY"""
import re
import sys

CPU_SLACK, WALL_SLACK = 1.5, 2.0
TIME = r"(?:(\d+) min )?(\d+) s"


def stated(readme, row):
    """(wall, cpu) seconds from the table row that starts with `row`."""
    for line in open(readme):
        if line.startswith("| " + row):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            times = [re.fullmatch(TIME, c) for c in cells[1:3]]
            if all(times):
                return tuple(int(m.group(1) or 0) * 60 + int(m.group(2)) for m in times)
    sys.exit(f"check_build_times: no '{row}' row with a wall and a CPU time in {readme}")


def summary(path):
    return dict(kv.split("=") for kv in open(path).read().split())


def main():
    readme, cold_path, noop_path = sys.argv[1:4]
    failed = False
    cold, noop = summary(cold_path), summary(noop_path)
    if cold["kind"] != "cold":
        print("check_build_times: the test build was incremental; its time says nothing about a cold build")
    else:
        wall, cpu = stated(readme, "cold default build")
        took_wall, took_cpu = int(cold["seconds"]), int(cold["cpu_seconds"])
        ok = took_cpu <= CPU_SLACK * cpu and took_wall <= WALL_SLACK * wall
        print(f"check_build_times: cold default build {took_wall} s wall, {took_cpu} s CPU; the README states "
              f"{wall} s and {cpu} s: {'ok' if ok else 'TOO SLOW: update the README or shrink the build'}")
        failed |= not ok
    if int(noop["objects"]) != 0:
        print(f"check_build_times: a rebuild with nothing changed compiled {noop['objects']} files")
        failed = True
    else:
        print(f"check_build_times: a rebuild with nothing changed compiled nothing ({noop['seconds']} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
