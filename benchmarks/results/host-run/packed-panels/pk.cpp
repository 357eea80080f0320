#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
// DeepSeek-V3/16-like gate/up: E experts, N rows x K, 16 token rows per expert.
constexpr int E = 256, N = 256, K = 448, M = 16, NB = 8, KS = 128;
float* W;   // [E][N][K]
float* P;   // packed [E][K/KS steps][N/NB][KS][NB] (K padded to KS)
constexpr int KP = (K + KS - 1) / KS * KS;
alignas(64) float A[KP * M];  // tokens k-major
alignas(64) float C[N * M];
static inline void pf(const void* p) { __builtin_prefetch(p, 0, 0); }
__attribute__((noinline)) void inplace(int e) {
  const float* w = W + size_t(e) * N * K;
  for (int k0 = 0; k0 < K; k0 += KS) {
    int d = std::min(KS, K - k0);
    for (int n0 = 0; n0 < N; n0 += NB) {
      __m512 acc[NB];
      for (int j = 0; j < NB; ++j) acc[j] = _mm512_load_ps(C + (n0 + j) * M);
      const float* row[NB];
      for (int j = 0; j < NB; ++j) row[j] = w + size_t(n0 + j) * K + k0;
      int nx = n0 + NB < N ? n0 + NB : 0;
      const float* ah = w + size_t(nx) * K + (n0 + NB < N ? k0 : k0 + KS);
      for (int k = 0; k < d; ++k) {
        if (k % 16 == 0) for (int j = 0; j < NB; ++j) pf(ah + j * K + k);
        __m512 t = _mm512_load_ps(A + (k0 + k) * M);
        for (int j = 0; j < NB; ++j) acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(row[j][k]), t, acc[j]);
      }
      for (int j = 0; j < NB; ++j) _mm512_store_ps(C + (n0 + j) * M, acc[j]);
    }
  }
}
template <bool PF>
__attribute__((noinline)) void packed(int e) {
  const float* p = P + size_t(e) * N * KP;
  for (int k0 = 0; k0 < K; k0 += KS) {
    int d = std::min(KS, K - k0);
    for (int n0 = 0; n0 < N; n0 += NB) {
      __m512 acc[NB];
      for (int j = 0; j < NB; ++j) acc[j] = _mm512_load_ps(C + (n0 + j) * M);
      const float* b = p + size_t(k0) * N + size_t(n0) * KS;  // [step][nblock][KS][NB]
      for (int k = 0; k < d; ++k) {
        if (PF && k % 2 == 0) pf(b + (k + 64) * NB);
        __m512 t = _mm512_load_ps(A + (k0 + k) * M);
        for (int j = 0; j < NB; ++j) acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(b[k * NB + j]), t, acc[j]);
      }
      for (int j = 0; j < NB; ++j) _mm512_store_ps(C + (n0 + j) * M, acc[j]);
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
  W = (float*)aligned_alloc(64, size_t(E) * N * K * 4);
  P = (float*)aligned_alloc(64, size_t(E) * N * KP * 4);
  for (size_t i = 0; i < size_t(E) * N * K; ++i) W[i] = (rand() % 100) * 0.01f;
  for (int e = 0; e < E; ++e) for (int s = 0; s < KP / KS; ++s) for (int nb = 0; nb < N / NB; ++nb)
    for (int k = 0; k < KS; ++k) for (int j = 0; j < NB; ++j) {
      int kk = s * KS + k;
      P[size_t(e) * N * KP + size_t(s) * KS * N + size_t(nb) * KS * NB + k * NB + j] = kk < K ? W[(size_t(e) * N + nb * NB + j) * K + kk] : 0;
    }
  for (int i = 0; i < KP * M; ++i) A[i] = (rand() % 100) * 0.01f;
  double fl = 2.0 * E * N * K * M, by = 4.0 * E * N * K;
  for (int round = 0; round < 3; ++round) {
    double a = bench(inplace), b = bench(packed<false>), c = bench(packed<true>);
    printf("inplace %.2f ms %.0f GF/s %.1f GB/s | packed %.2f ms %.0f GF/s %.1f GB/s | packed+pf %.2f ms %.0f GF/s %.1f GB/s\n",
      a*1e3, fl/a*1e-9, by/a*1e-9, b*1e3, fl/b*1e-9, by/b*1e-9, c*1e3, fl/c*1e-9, by/c*1e-9);
  }
}
