#!/usr/bin/env python3
"""Sums ctest JUnit files and prints 'N passed, N failed' as the last line (exit 1 on failure)."""
import argparse
import sys
import xml.etree.ElementTree as ET

ap = argparse.ArgumentParser()
ap.add_argument("files", nargs="*")
ap.add_argument("--build-failures", type=int, default=0)
a = ap.parse_args()
passed = failed = skipped = 0
failures = []
for f in a.files:
    try:
        root = ET.parse(f).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"cannot read {f}: {e}")
        failed += 1
        continue
    for tc in root.iter("testcase"):
        status = tc.get("status", "")
        if tc.find("failure") is not None or tc.find("error") is not None or status == "fail":
            failed += 1
            failures.append(tc.get("name"))
        elif tc.find("skipped") is not None or status in ("notrun", "disabled"):
            skipped += 1
        else:
            passed += 1
failed += a.build_failures
for n in failures:
    print(f"FAILED: {n}")
if a.build_failures:
    print(f"FAILED: {a.build_failures} build(s)")
line = f"{passed} passed, {failed} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
sys.exit(1 if failed else 0)
