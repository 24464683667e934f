#!/usr/bin/env python3
"""scripts/test-summary against made-up meson logs (issue 40 item 8; no build needed).

    tests/test_summary_test.py SOURCE_ROOT

Each case writes a testlog.json as meson does (one JSON object a line, "name" as
"project:suite / name") and an expected-skips file, runs the script, and checks its exit status
and what it says: a skipped test not on the list fails the run and is named with what to do; a
listed one that skips or passes does not; failures, a missing log and too few results fail; the
repository's own tests/expected_skips.txt is well-formed.
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "test-summary")
failures = []
cases = 0


def result(name, outcome, stdout=""):
    return {"name": name, "stdout": stdout, "result": outcome, "starttime": 0.0, "duration": 1.0,
            "returncode": {"OK": 0, "SKIP": 77}.get(outcome, 1), "env": {}, "command": ["x"]}


def run(results, skips="", extra=(), write_log=True):
    """Exit status, stdout, stderr and digest of test-summary over `results`."""
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "testlog.json")
        if write_log:
            with open(log, "w") as f:
                for r in results:
                    f.write(json.dumps(r) + "\n")
        skip_file = os.path.join(d, "expected_skips.txt")
        with open(skip_file, "w") as f:
            f.write(skips)
        digest = os.path.join(d, "digest")
        p = subprocess.run([sys.executable, SCRIPT, log, "--expected-skips", skip_file, "--digest", digest, *extra],
                           capture_output=True, text=True)
        text = open(digest).read() if os.path.exists(digest) else ""
        return p.returncode, p.stdout, p.stderr, text


def check(what, condition, detail):
    global cases
    cases += 1
    if not condition:
        failures.append(f"{what}: {detail}")


SKIPS = "# a comment\n\ndisk_full   the store's disk-full cases need a tmpfs\nkmes-ring-choice  one CPU\n"
OK = [result("eventd:unit / abi", "OK"), result("eventd:query+unit / query-cases-in-process", "OK")]

# Everything passed.
rc, out, err, _ = run(OK, SKIPS)
check("all passed", rc == 0 and out == "tests: 2 passed, 0 failed\n" and err == "", (rc, out, err))

# A listed test that skips: counted, named as expected, the run passes.
rc, out, err, digest = run(OK + [result("eventd:store / disk_full", "SKIP", "SKIP: cannot mount a tmpfs\n")], SKIPS,
                           ["--lane", "release build"])
check("listed skip passes", rc == 0, (rc, out, err))
check("listed skip counted", out == "tests (release build): 2 passed, 0 failed, 1 skipped (expected: disk_full)\n", out)
check("listed skip no digest", digest == "", digest)

# A listed test that runs and passes: fine (the list allows a skip, it does not demand one).
rc, out, err, _ = run(OK + [result("eventd:integration / kmes-ring-choice", "OK")], SKIPS)
check("listed test that ran", rc == 0 and out == "tests: 3 passed, 0 failed\n", (rc, out, err))

# A test not on the list that skips: the run fails, the message names it, its reason and the fix.
rc, out, err, digest = run(OK + [result("eventd:eventd / eventd-resize", "SKIP", "x\nSKIP: needs two CPUs\n")], SKIPS)
check("unlisted skip fails", rc == 1, (rc, out, err))
check("unlisted skip counted", "1 skipped (NOT expected: eventd-resize)" in out, out)
check("unlisted skip named", "eventd-resize was skipped (needs two CPUs) and is not an expected skip" in err, err)
check("unlisted skip says how to allow", "add the line 'eventd-resize <why it may skip>' to tests/expected_skips.txt"
      in err, err)
check("unlisted skip in the digest", "eventd:eventd / eventd-resize: SKIP, not in tests/expected_skips.txt" in digest,
      digest)

# The list matches whole names: a listed name's prefix or suffix is another test.
rc, out, err, _ = run([result("eventd:eventd / eventd-disk-full", "SKIP")], SKIPS)
check("names match whole", rc == 1 and "eventd-disk-full was skipped and is not an expected skip" in err, (rc, err))

# Both kinds at once.
rc, out, err, _ = run([result("eventd:store / disk_full", "SKIP"), result("eventd:unit / swap", "SKIP")], SKIPS)
check("both kinds", rc == 1 and out == "tests: 0 passed, 0 failed, 2 skipped (expected: disk_full; NOT expected: swap)\n",
      (rc, out))

# An empty list: every skip fails.
rc, out, err, _ = run([result("eventd:store / disk_full", "SKIP")], "")
check("empty list", rc == 1 and "disk_full was skipped" in err, (rc, err))

# A failure fails the run and reaches the digest with its last lines; TIMEOUT is a failure.
rc, out, err, digest = run(OK + [result("eventd:unit / swap", "FAIL", "line one\nthe assertion\n"),
                                 result("eventd:eventd / eventd-resize", "TIMEOUT")], SKIPS)
check("failure fails", rc == 1 and out == "tests: 2 passed, 2 failed\n", (rc, out))
check("failure in the digest", "eventd:unit / swap: FAIL after 1 s (exit 1)\n    line one\n    the assertion" in digest
      and "eventd-resize: TIMEOUT" in digest, digest)

# No log (meson test ran no test: a build failure), or fewer results than the lane listed.
rc, out, err, _ = run([], SKIPS, write_log=False)
check("no log fails", rc == 1 and "no results" in err, (rc, err))
rc, out, err, digest = run(OK, SKIPS, ["--expect-tests", "3"])
check("too few results", rc == 1 and "2 test results" in err and "listed 3 tests" in err and "listed 3" in digest,
      (rc, err, digest))
rc, out, err, _ = run(OK, SKIPS, ["--expect-tests", "2"])
check("as many results as listed", rc == 0, (rc, err))

# A list line without its reason, or a name twice, is refused (exit 2) before anything else.
rc, out, err, _ = run(OK, "disk_full\n")
check("line without a reason", rc == 2 and "'disk_full' has no reason" in err, (rc, err))
rc, out, err, _ = run(OK, "disk_full a\ndisk_full b\n")
check("name twice", rc == 2 and "listed twice" in err, (rc, err))

# The repository's list: well-formed, and short.
rc, out, err, _ = run(OK, open(os.path.join(ROOT, "tests", "expected_skips.txt")).read())
check("tests/expected_skips.txt parses", rc == 0, (rc, err))
names = [l.split()[0] for l in open(os.path.join(ROOT, "tests", "expected_skips.txt"))
         if l.strip() and not l.startswith("#")]
check("tests/expected_skips.txt is short", len(names) <= 5, names)

for f in failures:
    print("FAILED:", f)
print(f"test-summary: {cases - len(failures)} of {cases} checks passed")
sys.exit(1 if failures else 0)
