// Per-core read rate of decode's pattern (4 rows of 16 KiB at a time, the next 4 rows prefetched into L2)
// against one contiguous stream, on the OpenMP threads.
#include <immintrin.h>
#include <omp.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main() {
  const size_t bytes = size_t(1) << 30, n = bytes / 4;
  float* w = (float*)aligned_alloc(64, bytes);
#pragma omp parallel for
  for (size_t i = 0; i < n; ++i) w[i] = 1e-3f * (i & 1023);
  const int L = 4096;
  const size_t rows = n / L;
  for (int pattern = 0; pattern < 3; ++pattern) {
    double best = 1e9;
    float sink = 0;
    for (int rep = 0; rep < 5; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel reduction(+ : sink)
      {
        const int T = omp_get_num_threads(), t = omp_get_thread_num();
        const size_t r0 = rows * t / T, r1 = rows * (t + 1) / T;
        __m512 acc[8];
        for (int i = 0; i < 8; ++i) acc[i] = _mm512_setzero_ps();
        if (pattern == 0) {  // contiguous
          const float* p = w + r0 * L;
          for (size_t i = 0; i < (r1 - r0) * L; i += 128)
            for (int j = 0; j < 8; ++j) acc[j] = _mm512_add_ps(acc[j], _mm512_loadu_ps(p + i + 16 * j));
        } else {  // 4 rows at a time, pattern 2: the next 4 rows prefetched into L2
          for (size_t r = r0; r + 4 <= r1; r += 4) {
            const float* row[4];
            for (int j = 0; j < 4; ++j) row[j] = w + (r + j) * L;
            for (int k = 0; k < L; k += 32) {
              for (int j = 0; j < 4; ++j) {
                if (pattern == 2) _mm_prefetch((const char*)(row[j] + 4 * L + k), _MM_HINT_T1);
                acc[2 * j] = _mm512_add_ps(acc[2 * j], _mm512_loadu_ps(row[j] + k));
                acc[2 * j + 1] = _mm512_add_ps(acc[2 * j + 1], _mm512_loadu_ps(row[j] + k + 16));
              }
            }
          }
        }
        for (int i = 0; i < 8; ++i) sink += _mm512_reduce_add_ps(acc[i]);
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s < best) best = s;
    }
    const char* name[] = {"contiguous", "4 rows", "4 rows + prefetch of the next 4"};
    printf("threads %d %-32s %.1f GB/s (%.1f a thread)%s\n", omp_get_max_threads(), name[pattern],
           bytes / best / 1e9, bytes / best / 1e9 / omp_get_max_threads(), sink == 1 ? "x" : "");
  }
}
