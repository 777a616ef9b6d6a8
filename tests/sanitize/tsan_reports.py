"""Judges the ThreadSanitizer logs of a run (`source tests/sanitize/env.sh thread LOGDIR`):
prints how many reports there were and where, and exits 1 if any report has a frame in our
native code (a source path under flexdelegate/native/). Reports whose frames are all TFLite's
(its Eigen thread pool is not instrumented, so TSan cannot see its synchronisation) are counted
and listed by their summary line, not failed.

    python tests/sanitize/tsan_reports.py LOGDIR
"""
import collections
import pathlib
import re
import sys

OURS = re.compile(r"flexdelegate/native/")
SUMMARY = re.compile(r"^SUMMARY: ThreadSanitizer: (.*)$", re.M)


def reports(text):
    """The reports of one log file: the text between its ===== fences that holds a WARNING."""
    return [block for block in re.split(r"^=+$", text, flags=re.M) if "WARNING: ThreadSanitizer" in block]


def judge(logdir):
    """(ours, others): the reports with a frame of ours, and a Counter of the others' summaries."""
    ours, others = [], collections.Counter()
    for path in sorted(pathlib.Path(logdir).glob("tsan*")):
        for block in reports(path.read_text(errors="replace")):
            if OURS.search(block):
                ours.append((path.name, block))
            else:
                m = SUMMARY.search(block)
                others[re.sub(r"\+0x[0-9a-f]+", "", m.group(1))[:160] if m else "?"] += 1
    return ours, others


def main(argv):
    ours, others = judge(argv[1])
    print(f"ThreadSanitizer: {len(ours)} reports in our code, {sum(others.values())} in TFLite's (not instrumented)")
    for summary, n in others.most_common(5):
        print(f"  {n:4d} x {summary}")
    for name, block in ours:
        print(f"--- {name}{block}")
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
