import json,sys,glob,re,collections,statistics
d=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(sys.argv[1]+"/*.json")):
    name=re.sub(r"-r\d+\.json$","",f.split("/")[-1])
    for b in json.load(open(f))["benchmarks"]:
        if b.get("aggregate_name")=="median" and "/ours/" in b["name"]:
            d[b["run_name"].replace("/manual_time","")][name].append(b["real_time"])
names=sorted({n for v in d.values() for n in v})
print("point", *names, "ratios vs", names[0])
for p,v in d.items():
    m={n:statistics.median(v[n]) for n in names if v[n]}
    print(f"{p:45s}", " ".join(f"{m.get(n,0):8.1f}" for n in names), " ".join(f"{m[n]/m[names[0]]:.3f}" for n in names[1:] if n in m), " rounds:", " ".join(f"{n}:{min(v[n]):.0f}-{max(v[n]):.0f}" for n in names))
