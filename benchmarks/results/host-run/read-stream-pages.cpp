#include <immintrin.h>
#include <sys/mman.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
int main(int argc, char** argv) {
  const size_t bytes = size_t(1) << 30, n = bytes / 4;
  for (int huge : {0, 1}) {
    float* w = (float*)aligned_alloc(2 << 20, bytes);
    if (huge) madvise(w, bytes, MADV_HUGEPAGE);
    for (size_t i = 0; i < n; ++i) w[i] = 1e-3f * (i & 1023);
    float* d = (float*)aligned_alloc(2 << 20, bytes);
    if (huge) madvise(d, bytes, MADV_HUGEPAGE);
    memset(d, 0, bytes);
    const int L = 4096; const size_t rows = n / L;
    for (int S : {1, 4, 8}) {
      double best = 1e9;
      for (int rep = 0; rep < 3; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        __m512 acc[32]; for (int i = 0; i < 32; ++i) acc[i] = _mm512_setzero_ps();
        const __m512 x = _mm512_set1_ps(1.0f);
        for (size_t r0 = 0; r0 + S <= rows; r0 += S) {
          const float* row[8]; for (int j = 0; j < S; ++j) row[j] = w + (r0 + j) * L;
          for (int k = 0; k < L; k += 64) {
            for (int j = 0; j < S; ++j) {
              _mm_prefetch((const char*)(row[j] + k) + 2048, _MM_HINT_T1);
              for (int u = 0; u < 4; ++u) acc[4 * j + u] = _mm512_fmadd_ps(_mm512_loadu_ps(row[j] + k + 16 * u), x, acc[4 * j + u]);
            }
          }
        }
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        float sink = 0; for (int i = 0; i < 32; ++i) sink += _mm512_reduce_add_ps(acc[i]);
        if (sink == 12345) printf("x");
        if (s < best) best = s;
      }
      printf("huge %d streams %d: read %.1f GB/s\n", huge, S, double(rows / S * S) * L * 4 / best / 1e9);
    }
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      memcpy(d, w, bytes);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s < best) best = s;
    }
    printf("huge %d memcpy %.1f GB/s (bytes copied)\n", huge, bytes / best / 1e9);
    free(w); free(d);
  }
}
