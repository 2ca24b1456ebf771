#!/usr/bin/env python3
"""Fails if a header under include/strata/ includes another module's detail/.

A module is a folder under include/strata/ (changelog, decorators, runtime,
...); its detail/ folder is its own business. What two modules share lives
in include/strata/detail/. Usage: check_detail_includes.py [include-dir]
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "include") / "strata"
found = []
for header in sorted(root.rglob("*.hpp")):
    parts = header.relative_to(root).parts
    module = parts[0] if len(parts) > 1 else ""
    for number, line in enumerate(header.read_text().splitlines(), 1):
        m = re.match(r'\s*#\s*include\s*<strata/([a-z_0-9]+)/detail/', line)
        if m and m.group(1) != module:
            found.append(f"{header}:{number}: includes {m.group(1)}/detail/ from module '{module or 'strata'}'")
if found:
    print("\n".join(found))
    print(f"{len(found)} include(s) of another module's detail/: move what both use to include/strata/detail/")
    sys.exit(1)
print(f"no header of {root} includes another module's detail/")
