#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
int main() {
  const size_t bytes = size_t(2) << 30, n = bytes / 4;
  float* w = (float*)aligned_alloc(64, bytes);
  for (size_t i = 0; i < n; ++i) w[i] = 1e-3f * (i & 1023);
  const int L = 14336; const size_t rows = n / L;
  for (int S : {1, 4, 8}) for (int D : {0, 256, 1024, 2048, 4096, 8192}) for (int hint : {0, 1}) {
    if (D == 0 && hint) continue;
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      __m512 acc[16]; for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
      const __m512 x = _mm512_set1_ps(1.0f);
      for (size_t r0 = 0; r0 + S <= rows; r0 += S) {
        const float* row[16]; for (int j = 0; j < S; ++j) row[j] = w + (r0 + j) * L;
        for (int k = 0; k < L; k += 16) {
          if (D) for (int j = 0; j < S; ++j) { if (hint) _mm_prefetch((const char*)(row[j] + k) + D, _MM_HINT_T0); else _mm_prefetch((const char*)(row[j] + k) + D, _MM_HINT_T1); }
          for (int j = 0; j < S; ++j) acc[j] = _mm512_fmadd_ps(_mm512_loadu_ps(row[j] + k), x, acc[j]);
        }
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      float sink = 0; for (int i = 0; i < 16; ++i) sink += _mm512_reduce_add_ps(acc[i]);
      if (sink == 12345) printf("x");
      if (s < best) best = s;
    }
    printf("streams %d dist %5d %s: %.1f GB/s\n", S, D, hint ? "T0" : "T1", double(rows / S * S) * L * 4 / best / 1e9);
  }
}
