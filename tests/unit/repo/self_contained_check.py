#!/usr/bin/env python3
"""Fails when a tracked file names a path outside the repository.

The project must stand on its own: everything a build, a test, the code generator or a doc needs
is inside the repository or installed by scripts/setup from a package registry (into
~/.cache/shale, which is allowed). This scans every file `git ls-files` lists (binary files,
i.e. files with a NUL byte, excepted) for:
  - absolute paths into a user's or a build machine's own folders (home and work folders);
  - the sibling folder of design briefs and test data some checkouts once had beside them;
  - CMake paths that climb above the repository's root.
System paths (/usr, /tmp, /dev, /proc, /var/lib/<app> in configuration examples, ...) are fine.
Before scanning it checks its own patterns against examples, so a pattern that stops matching
fails the test too. Usage: self_contained_check.py [REPO_ROOT]
"""
import os
import re
import subprocess
import sys

# Written with character classes (and the examples below split into pieces) so that this file
# does not match itself.
RULES = [
    ("absolute path into a home or work folder",
     re.compile(r"(?<![\w.~-])/(?:wor[k]|hom[e]|roo[t]|User[s])/")),
    ("the sibling folder of design briefs and test data",
     re.compile(r"\.\./share[d]\b|(?<![\w.-])share[d]/(?:spe[c]|testdat[a]|kafka-protoco[l]|"
                r"referenc[e]|hook[s])\b")),
    ("a path above the repository's root",
     re.compile(r"\$\{(?:CMAKE_SOURCE_DI[R]|SHALE_ROO[T]|PROJECT_SOURCE_DI[R])\}/\.\.(?:/|\b)")),
]

# In the files at the repository's root, the current folder is the root: climbing out of it
# reaches outside.
ROOT_RULES = [
    ("a path above the repository's root",
     re.compile(r"\$\{CMAKE_CURRENT_(?:SOURCE|LIST)_DI[R]\}/\.\.(?:/|\b)|\$\(CURDI[R]\)/\.\.")),
]

MUST_FLAG = [
    "schemas in " + "/" + "work/sha" + "red/kafka-protocol",
    "see " + "/" + "home/alice/notes.md",
    "cd " + "/" + "root/x",
    "AWS vectors in " + "sha" + "red/testdata/sigv4",
    "design brief " + "sha" + "red/spec/storage.md",
    "set(D ${CMAKE_CURRENT_SOURCE_DIR}/." + "./shared)",
    "set(D ${SHALE_ROOT}/" + "../elsewhere)",
    "/" + "Users/bob/src",
]
MUST_FLAG_AT_ROOT = [
    "set(SHARED ${CMAKE_CURRENT_SOURCE_DIR}/." + "./shared CACHE PATH x)",
    "SCHEMAS := $(CURDIR)/" + "../schemas",
]
MUST_PASS = [
    "/usr/bin/env python3", "/tmp/x", "/dev/null", "/proc/self/fd", "/sys/block",
    "data.dir=/var/lib/shale", "~/.cache/shale/kafka-4.1.2/libs", "src/protocol/generated/",
    "${CMAKE_CURRENT_SOURCE_DIR}/../common", "$(dirname \"$0\")/../..", "sha" + "red/exclusive locks",
    "groups/" + "work/queue", "a_work/ b", "shared_ptr", "tests/unit/protocol/README.md",
]


def flagged(line, at_root=False):
    rules = RULES + (ROOT_RULES if at_root else [])
    return [what for what, rx in rules if rx.search(line)]


def self_check():
    bad = [s for s in MUST_FLAG if not flagged(s)] + [s for s in MUST_PASS if flagged(s)]
    bad += [s for s in MUST_FLAG_AT_ROOT if not flagged(s, at_root=True)]
    for s in bad:
        print("self-check: wrong verdict for %r" % s)
    return not bad


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    if not self_check():
        return 1
    files = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                           capture_output=True).stdout.decode().split("\0")
    problems = []
    scanned = 0
    for f in files:
        path = os.path.join(root, f)
        if not f or not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as fh:
            data = fh.read()
        if b"\0" in data:
            continue
        scanned += 1
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            for what in flagged(line, at_root="/" not in f):
                problems.append("%s:%d: %s: %s" % (f, n, what, line.strip()[:160]))
    for p in problems:
        print(p)
    print("%d tracked text files scanned, %d path(s) outside the repository" %
          (scanned, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
