# Per point and stage of ab.log: the faster of each build's runs (A, N) and N / A.
import re,sys,collections
d=collections.defaultdict(lambda: collections.defaultdict(list))
cur=None
for line in open(sys.argv[1]):
    m=re.match(r'== (\S+) (\d) (\S+) (\d+)',line)
    if m: cur=(m.group(3),int(m.group(4))); v=m.group(1); continue
    f=line.split()
    if f and f[0] in ('gate_up','down_combine','dispatch','total','graph'):
        d[cur][(v,f[0])].append(float(f[1]))
for pt in d:
    row=[f"{pt[0]:24s} {pt[1]:5d}"]
    for st in ('gate_up','down_combine','graph'):
        a=d[pt][('A',st)]; b=d[pt][('N',st)]
        if a and b: row.append(f"{st} A {min(a):.4f} N {min(b):.4f} N/A {min(b)/min(a):.3f}")
    print(' | '.join(row))
