# Does the power-capped GEMM rate depend on the data? (zero rows as in padding)
import torch, time
m = 8192
def rate(a, b, secs=3):
    for _ in range(5): a @ b
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    n = 0; t = time.time(); s.record()
    while time.time() - t < secs:
        for _ in range(20): a @ b
        n += 20; torch.cuda.synchronize()
    e.record(); e.synchronize()
    return 2 * m**3 * n / s.elapsed_time(e) / 1e9
a = torch.randn(m, m, dtype=torch.bfloat16, device="cuda"); b = torch.randn_like(a)
for name, x in [("random", a), ("random again", a)]:
    print(name, round(rate(x, b)), flush=True)
z = a.clone(); z[m // 2:] = 0
print("half the rows of A zero", round(rate(z, b)), flush=True)
z = a.clone(); z.view(-1, 128, m)[:, 64:] = 0
print("rows 64-127 of every 128 zero", round(rate(z, b)), flush=True)
z = a.clone(); z.view(-1, 128, m)[:, 16:] = 0
print("rows 16-127 of every 128 zero", round(rate(z, b)), flush=True)
print("all zero", round(rate(torch.zeros_like(a), b)), flush=True)
print("random last", round(rate(a, b)), flush=True)
