#!/usr/bin/env python3
"""libkmes.so exports exactly the functions <kmes/kmes.h> declares (issue 26 item 5).

  check_exports.py LIBKMES_SO KMES_H

The functions are the prototypes of kmes.h (a line `<type> kmes_name(...);` outside comments);
the exports are `nm -D --defined-only` of the library, less the version node (KMES_0). Fails,
naming them, on an export kmes.h does not declare (an internal symbol leaking into the ABI)
and on a declared function the library does not export.
"""
import re
import subprocess
import sys


def declared(header):
    text = open(header).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return set(re.findall(r"^[A-Za-z_][\w\s\*]*?\b(kmes_\w+)\s*\([^;{]*\)\s*;", text, flags=re.M))


def exported(library):
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] != "A":  # "A": the version node itself
            names.add(parts[2].split("@")[0])
    return names


def main():
    library, header = sys.argv[1:3]
    want, have = declared(header), exported(library)
    if not want:
        sys.exit(f"check_exports: no function found in {header}")
    ok = True
    for name in sorted(have - want):
        print(f"check_exports: {library} exports {name}, which kmes.h does not declare", file=sys.stderr)
        ok = False
    for name in sorted(want - have):
        print(f"check_exports: kmes.h declares {name}, which {library} does not export", file=sys.stderr)
        ok = False
    if ok:
        print(f"check_exports: {len(have)} exports, exactly kmes.h's functions: {', '.join(sorted(have))}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
