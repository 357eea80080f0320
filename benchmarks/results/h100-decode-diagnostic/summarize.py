import json,sys,glob,os,re,statistics as st
from collections import defaultdict
d=sys.argv[1]; t=defaultdict(list)
for f in glob.glob(d+'/json/*.json'):
    m=re.match(r'([A-Z])-(\w+)-(.+)-t(\d+)-r(\d+)\.json',os.path.basename(f))
    try: r=json.load(open(f))
    except Exception: continue
    l=r['layers'][0]; s=l['stages']; g=s.get('graph',s['total'])['median_ms']
    t[(m.group(2),m.group(3),int(m.group(4)))].append((m.group(1),g))
for k in sorted(t):
    by=defaultdict(list)
    for v,g in t[k]: by[v].append(g)
    med={v:st.median(x) for v,x in by.items()}
    a=med.get('A')
    row=f"{k[0]:4s} {k[1]:32s} T={k[2]:5d} "+" ".join(f"{v} {med[v]:.4f} ({min(by[v]):.4f}-{max(by[v]):.4f})" for v in sorted(med))
    if a: row+="  | "+" ".join(f"{v}/A {med[v]/a:.3f}" for v in sorted(med) if v!='A')
    print(row)
