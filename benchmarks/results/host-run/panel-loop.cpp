#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
constexpr int K = 128;
alignas(64) float A[K * 64];       // tokens k-major [k][64]
alignas(64) float At[64 * K];      // tokens row-major [m][k]
alignas(64) float B[64 * K];       // weights row-major [n][k]
alignas(64) float P[K * 64];       // weights packed k-major [k][64]
alignas(64) float C[64 * 64];

template <int MV, int NB>  // tokens as MV vectors, NB weights broadcast from rows
__attribute__((noinline)) void tok_vec(int n0) {
  __m512 acc[NB][MV];
  for (int j = 0; j < NB; ++j) for (int i = 0; i < MV; ++i) acc[j][i] = _mm512_load_ps(C + (n0 + j) * 64 + 16 * i);
  const float* row[NB];
  for (int j = 0; j < NB; ++j) row[j] = B + (n0 + j) * K;
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) {
    __m512 t[MV];
    for (int i = 0; i < MV; ++i) t[i] = _mm512_load_ps(A + k * 64 + 16 * i);
    for (int j = 0; j < NB; ++j) {
      __m512 w = _mm512_set1_ps(row[j][k]);
      for (int i = 0; i < MV; ++i) acc[j][i] = _mm512_fmadd_ps(t[i], w, acc[j][i]);
    }
  }
  for (int j = 0; j < NB; ++j) for (int i = 0; i < MV; ++i) _mm512_store_ps(C + (n0 + j) * 64 + 16 * i, acc[j][i]);
}
template <int NV, int MB>  // packed weights as NV vectors, MB tokens broadcast
__attribute__((noinline)) void w_vec(int m0) {
  __m512 acc[MB][NV];
  for (int j = 0; j < MB; ++j) for (int i = 0; i < NV; ++i) acc[j][i] = _mm512_load_ps(C + (m0 + j) * 64 + 16 * i);
  const float* tok[MB];
  for (int j = 0; j < MB; ++j) tok[j] = At + (m0 + j) * K;
#pragma GCC unroll 4
  for (int k = 0; k < K; ++k) {
    __m512 w[NV];
    for (int i = 0; i < NV; ++i) w[i] = _mm512_load_ps(P + k * 64 + 16 * i);
    for (int j = 0; j < MB; ++j) {
      __m512 t = _mm512_set1_ps(tok[j][k]);
      for (int i = 0; i < NV; ++i) acc[j][i] = _mm512_fmadd_ps(w[i], t, acc[j][i]);
    }
  }
  for (int j = 0; j < MB; ++j) for (int i = 0; i < NV; ++i) _mm512_store_ps(C + (m0 + j) * 64 + 16 * i, acc[j][i]);
}
template <class F> double bench(F f, double flops_per_call) {
  double best = 1e30;
  for (int r = 0; r < 7; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < 200000; ++it) f();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return flops_per_call * 200000 / best * 1e-9;
}
int main() {
  for (auto* p : {A, At, B, P, C}) for (int i = 0; i < 64 * K && p != C; ++i) p[i] = (rand() % 100) * 0.01f;
  printf("tokvec 2x8 (current) %.1f GF/s\n", bench([] { tok_vec<2, 8>(0); }, 2.0 * 32 * 8 * K));
  printf("tokvec 2x12          %.1f GF/s\n", bench([] { tok_vec<2, 12>(0); }, 2.0 * 32 * 12 * K));
  printf("tokvec 4x6           %.1f GF/s\n", bench([] { tok_vec<4, 6>(0); }, 2.0 * 64 * 6 * K));
  printf("tokvec 3x8           %.1f GF/s\n", bench([] { tok_vec<3, 8>(0); }, 2.0 * 48 * 8 * K));
  printf("wvec 4x6             %.1f GF/s\n", bench([] { w_vec<4, 6>(0); }, 2.0 * 64 * 6 * K));
  printf("wvec 2x12            %.1f GF/s\n", bench([] { w_vec<2, 12>(0); }, 2.0 * 32 * 12 * K));
  printf("wvec 3x8             %.1f GF/s\n", bench([] { w_vec<3, 8>(0); }, 2.0 * 48 * 8 * K));
}
