import csv,sys
rows=list(csv.reader(open(sys.argv[1])))
hdr=rows[1]; data=rows[2:]
iS=hdr.index('Warp Stall Sampling (All Samples)'); iE=hdr.index('Instructions Executed')
stalls=[i for i,h in enumerate(hdr) if h.startswith('stall_') and 'Not Issued' not in h]
tot=sum(int(r[iS] or 0) for r in data)
print(sys.argv[1],'total samples',tot, 'n instr', len(data))
agg={hdr[i]:sum(int(r[i] or 0) for r in data) for i in stalls}
print(' '.join('%s=%.1f%%'%(k[6:],100*v/tot) for k,v in sorted(agg.items(), key=lambda x:-x[1])[:6]))
# region by exec count class
from collections import OrderedDict
reg=OrderedDict(); start=0
cur=None
for i,r in enumerate(data):
  e=int(r[iE] or 0); s=int(r[iS] or 0)
  key=e
  if cur is None or abs(e-cur)>0.05*max(cur,1):
    if cur is not None: reg[start]=(i-1,cur,acc)
    start=i; cur=e; acc=0
  acc+=s
reg[start]=(len(data)-1,cur,acc)
for k,(end,e,s) in reg.items():
  if s>0.01*tot: print('  [%d-%d] exec %d samples %d (%.1f%%) first %s'%(k,end,e,s,100*s/tot,data[k][1].strip()[:40]))
top=sorted(enumerate(data), key=lambda x:-int(x[1][iS] or 0))[:8]
for idx,r in top:
  reasons=sorted(((int(r[i] or 0),hdr[i][6:]) for i in stalls), reverse=True)[:2]
  print('   ',idx, r[1].strip()[:60], r[iS], r[iE], reasons)
