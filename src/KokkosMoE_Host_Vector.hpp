// SPDX-License-Identifier: BSD-3-Clause
// A float vector as wide as the compile's instruction set (16 lanes with
// AVX-512, 8 with AVX, 4 otherwise): GCC's and Clang's vector extensions,
// which lower to that instruction set's registers and operations without
// naming it. The host fragments hold their register blocks in these. (Not
// std::experimental::simd, which only libstdc++ has, nor Kokkos' SIMD
// types, which Kokkos 3.4 lacks.)
#ifndef KOKKOSMOE_HOST_VECTOR_HPP
#define KOKKOSMOE_HOST_VECTOR_HPP

#include <cstddef>
#include <cstring>
#include <utility>

#if defined(__AVX512F__) || (defined(__AVX__) && defined(__FMA__))
#include <immintrin.h>
#endif

namespace KokkosMoE {
namespace Impl {
namespace host_vector {

#if defined(__AVX512F__)
constexpr int lanes = 16;
#elif defined(__AVX__)
constexpr int lanes = 8;
#else
constexpr int lanes = 4;
#endif

using vfloat = float __attribute__((vector_size(lanes * sizeof(float))));

// lanes floats from p (any alignment).
inline vfloat load(const float* p) {
  vfloat v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vfloat v) { std::memcpy(p, &v, sizeof v); }
template <std::size_t... I>
inline vfloat broadcast(float s, std::index_sequence<I...>) {
  return vfloat{((void)I, s)...};
}
// s in every lane (one broadcast instruction).
inline vfloat broadcast(float s) { return broadcast(s, std::make_index_sequence<lanes>()); }
// acc + a * b: one fused multiply-add where the instruction set has one
// (the kernels compile with -ffp-contract=off: cmake/KokkosMoEHostArch.cmake).
inline vfloat fma(vfloat a, vfloat b, vfloat acc) {
#if defined(__AVX512F__)
  return vfloat(_mm512_fmadd_ps(__m512(a), __m512(b), __m512(acc)));
#elif defined(__AVX__) && defined(__FMA__)
  return vfloat(_mm256_fmadd_ps(__m256(a), __m256(b), __m256(acc)));
#else
  return acc + a * b;
#endif
}
inline float sum(vfloat v) {
  float s = 0;
  for (int i = 0; i < lanes; ++i) s += v[i];
  return s;
}

}  // namespace host_vector
}  // namespace Impl
}  // namespace KokkosMoE

#endif
