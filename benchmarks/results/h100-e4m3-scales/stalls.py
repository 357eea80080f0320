# Per-instruction warp stall samples of an ncu source page (CSV): per
# kernel, the samples by reason and the N most sampled instructions.
import csv,sys,collections
rows=list(csv.reader(open(sys.argv[1])))
# split per kernel
kernels=[];cur=None
for r in rows:
    if r and r[0]=="Kernel Name": cur=[r[1],None,[]]; kernels.append(cur); continue
    if r and r[0]=="Address": cur[1]=r; continue
    if cur and cur[1] and len(r)>5: cur[2].append(r)
seen=set()
for name,hdr,data in kernels:
    if name in seen: continue  # each kernel's source page comes twice
    seen.add(name)
    idx={h:i for i,h in enumerate(hdr)}
    tot=sum(int(d[idx["Warp Stall Sampling (All Samples)"]]) for d in data)
    print("=== ",name[80:200], "instr",len(data),"samples",tot)
    stalls=[h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    agg=collections.Counter()
    for d in data:
        for s in stalls: agg[s]+=int(d[idx[s]])
    print("  by reason:", ", ".join(f"{k[6:]} {v/tot:.2f}" for k,v in agg.most_common(10)))
    top=sorted(data,key=lambda d:-int(d[idx["Warp Stall Sampling (All Samples)"]]))[:int(sys.argv[2]) if len(sys.argv)>2 else 25]
    for d in top:
        n=int(d[idx["Warp Stall Sampling (All Samples)"]])
        rs=sorted(((int(d[idx[s]]),s[6:]) for s in stalls),reverse=True)[:3]
        print(f"  {n/tot:6.3f} {d[0][-5:]} {d[1].strip()[:60]:60s} ex={d[idx['Instructions Executed']]:>8s} "+" ".join(f"{s}:{v}" for v,s in rs if v))
