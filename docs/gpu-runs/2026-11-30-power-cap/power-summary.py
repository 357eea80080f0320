# Median SM clock, power and throttle reasons per phase of power.sh
# (nvidia-smi samples every 100 ms; 0x4 = software power cap).
import csv, sys
d = sys.argv[1] if len(sys.argv) > 1 else "."
rows = list(csv.reader(open(f"{d}/power-smi.csv")))[1:]
def sec(s):
    h, m, x = s.split(":")
    return int(h) * 3600 + int(m) * 60 + float(x)
marks = [l.split(" ", 1) for l in open(f"{d}/power-phases.log") if l[:1].isdigit() and l[2:3] == ":"]
marks = [(sec(a), b.strip()) for a, b in marks]
for (start, name), (end, _) in zip(marks, marks[1:]):
    sel = [r for r in rows if start + 0.5 <= sec(r[0].split()[1]) < end - 0.3
           and float(r[3].split()[0]) > 300]  # busy samples only
    if not sel:
        continue
    clk = sorted(int(r[1].split()[0]) for r in sel)
    watts = sorted(float(r[3].split()[0]) for r in sel)
    capped = sum(r[6].strip() == "0x0000000000000004" for r in sel)
    print(f"{name:38s} samples {len(sel):3d}  SM clock median {clk[len(clk) // 2]} MHz "
          f"(max {clk[-1]})  power median {watts[len(watts) // 2]:.0f} W  "
          f"power-capped {capped}/{len(sel)}")
