"""CI: the README's build times stay true. Reads the cold default build's time from the
README's build-time table and the build's own summary (scripts/build.sh writes
build/build-summary.txt), and fails when a cold build took more than 1.5 times the stated
time (slack for a shared machine), or when a rebuild with nothing changed compiled anything.

Usage: check_build_times.py README BUILD_SUMMARY NOOP_SUMMARY"""
import re
import sys

SLACK = 1.5


def stated_seconds(readme, row):
    for line in open(readme):
        if line.startswith("| " + row):
            m = re.search(r"\| (?:(\d+) min )?(\d+) s \|", line)
            if m:
                return int(m.group(1) or 0) * 60 + int(m.group(2))
    sys.exit(f"check_build_times: no '{row}' row with a time in {readme}")


def summary(path):
    return dict(kv.split("=") for kv in open(path).read().split())


def main():
    readme, cold_path, noop_path = sys.argv[1:4]
    failed = False
    cold, noop = summary(cold_path), summary(noop_path)
    if cold["kind"] != "cold":
        print("check_build_times: the test build was incremental; its time says nothing about a cold build")
    else:
        stated, took = stated_seconds(readme, "cold default build"), int(cold["seconds"])
        ok = took <= SLACK * stated
        print(f"check_build_times: cold default build {took} s, README states {stated} s: {'ok' if ok else 'TOO SLOW'}")
        failed |= not ok
    if int(noop["objects"]) != 0:
        print(f"check_build_times: a rebuild with nothing changed compiled {noop['objects']} files")
        failed = True
    else:
        print(f"check_build_times: no-op rebuild compiled nothing in {noop['seconds']} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
