#!/usr/bin/env python3
"""Per-kernel time and DRAM bytes of each ncu run in ncu.log (run.sh's NCU part)."""
import re
import sys

text = open(sys.argv[1] if len(sys.argv) > 1 else "ncu.log").read()
pattern = re.compile(
    r"ParallelFor<([A-Za-z0-9]+)<[^\n]*?\((\d+), 1, 1\)x\((\d+), (\d+)"
    r".*?dram__bytes_read\.sum\s+(\w+)\s+([\d.]+)\s+dram__bytes_write\.sum\s+(\w+)\s+([\d.]+)"
    r"\s+gpu__time_duration\.sum\s+(\w+)\s+([\d.]+)", re.S)
for section in text.split("== ncu ")[1:]:
    print("==", section.split("\n")[0])
    for m in pattern.finditer(section):
        if m.group(1).startswith("Dispatch"):
            continue
        print(f"  {m.group(1):26s} {m.group(10):>8s} {m.group(9):3s}"
              f"  read {m.group(6)} {m.group(5)}, written {m.group(8)} {m.group(7)}")
