import sys,collections,statistics
d=collections.defaultdict(list)
for line in open(sys.argv[1]):
  f=line.split()
  if len(f)<7 or f[5]=="nojson": continue
  d[(f[1],f[2],f[3])].append((f[0],float(f[5]),float(f[6]),float(f[7])))
base=sys.argv[2] if len(sys.argv)>2 else "A"
for k,v in d.items():
  by=collections.defaultdict(list)
  for name,g,gu,dn in v: by[name].append((g,gu,dn))
  b=statistics.median([x[0] for x in by[base]]) if base in by else None
  out=[]
  for name in sorted(by):
    m=statistics.median([x[0] for x in by[name]]); gu=statistics.median([x[1] for x in by[name]]); dn=statistics.median([x[2] for x in by[name]])
    out.append(f"{name}: {m:.4f} (gu {gu:.4f} dn {dn:.4f})" + (f" x{m/b:.3f}" if b else ""))
  print(" ".join(k), "|", "; ".join(out))
