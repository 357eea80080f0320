#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main() {
  size_t n = size_t(256) * 384 * 512; float* p = (float*)aligned_alloc(64, n * 4);
  for (size_t i = 0; i < n; ++i) p[i] = i * 1e-9f;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i < n; i += 64) {
      a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i)); a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
      a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32)); a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    float o[16]; _mm512_storeu_ps(o, _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    printf("read %.1f GB/s (%g)\n", n * 4 / s * 1e-9, o[0]);
  }
}
