#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
constexpr int E = 256, N = 384, K = 448, M = 16, KS = 128;
constexpr int KP = (K + KS - 1) / KS * KS;
float* P;   // packed per expert: [step][N / C][KS][C], C = NV * 16
alignas(64) float At[M * KP];  // tokens row-major [m][k]
alignas(64) float Cc[M * N];   // out [m][n]
static inline void pf(const void* p) { __builtin_prefetch(p, 0, LOC); }
template <int NV, int MB, int DIST>
__attribute__((always_inline)) inline void blk(const float* b, int d, int m0, int n0, const float* nx = nullptr, int per = 0) {
  __m512 acc[MB][NV];
  for (int j = 0; j < MB; ++j) for (int i = 0; i < NV; ++i) acc[j][i] = _mm512_loadu_ps(Cc + (m0 + j) * N + n0 + 16 * i);
  const float* tok = At + m0 * KP;
#pragma GCC unroll 2
  for (int k = 0; k < d; ++k) {
    if (DIST) for (int i = 0; i < NV; ++i) pf(b + k * NV * 16 + 16 * i + DIST);
    if (nx) for (int q = 0; q < per; ++q) pf(nx + (k * per + q) * 16);
    __m512 w[NV];
    for (int i = 0; i < NV; ++i) w[i] = _mm512_load_ps(b + k * NV * 16 + 16 * i);
    for (int j = 0; j < MB; ++j) {
      __m512 t = _mm512_set1_ps(tok[j * KP + k]);
      for (int i = 0; i < NV; ++i) acc[j][i] = _mm512_fmadd_ps(w[i], t, acc[j][i]);
    }
  }
  for (int j = 0; j < MB; ++j) for (int i = 0; i < NV; ++i) _mm512_storeu_ps(Cc + (m0 + j) * N + n0 + 16 * i, acc[j][i]);
}
template <int NV, int MB, bool PF, int DIST = 0>
__attribute__((noinline)) void wvec(int e) {
  constexpr int C = NV * 16;
  const float* p = P + size_t(e) * N * KP;
  for (int k0 = 0; k0 < K; k0 += KS) {
    int d = std::min(KS, K - k0);
    for (int n0 = 0; n0 < N; n0 += C) {
      const float* b = p + size_t(k0) * N + size_t(n0) * KS;
      if (PF) { const float* nx = b + KS * C; for (int q = 0; q < KS * C; q += 16) pf(nx + q); }
      constexpr int passes = (M + MB - 1) / MB;
      const int per = (KS * C / 16 + passes * KS - 1) / (passes * KS);
      const float* nx = b + KS * C;
      int m0 = 0, pass = 0;
      for (; m0 + MB <= M; m0 += MB, ++pass) blk<NV, MB, DIST>(b, d, m0, n0, PF ? nx + pass * KS * per * 16 : nullptr, per);
      if (M - m0 > 0) blk<NV, M % MB ? M % MB : MB, DIST>(b, d, m0, n0, PF ? nx + pass * KS * per * 16 : nullptr, per);
    }
  }
}
template <class F> double bench(F f) {
  std::vector<double> ts;
  for (int r = 0; r < 9; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int e = 0; e < E; ++e) f(HOT ? e % 2 : e);
    ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
int main() {
  P = (float*)aligned_alloc(64, size_t(E) * N * KP * 4);
  for (size_t i = 0; i < size_t(E) * N * KP; ++i) P[i] = (rand() % 100) * 0.01f;
  for (int i = 0; i < KP * M; ++i) At[i] = (rand() % 100) * 0.01f;
  double fl = 2.0 * E * N * K * M;
  for (int round = 0; round < 2; ++round) {
    double a = bench(wvec<4, 6, false, 0>), b = bench(wvec<4, 6, true, 0>), c = bench(wvec<2, 8, true, 0>), d = bench(wvec<3, 8, true, 0>), f = bench(wvec<4, 4, true, 0>);
    printf("4x6 %.0f | 4x6 even %.0f | 2x8 even %.0f | 3x8 even %.0f | 4x4 even %.0f GF/s\n", fl/a*1e-9, fl/b*1e-9, fl/c*1e-9, fl/d*1e-9, fl/f*1e-9);
  }
}
