// SPDX-License-Identifier: BSD-3-Clause
// A float vector as wide as the compile's instruction set (16 lanes with
// AVX-512, 8 with AVX, 4 otherwise): GCC's and Clang's vector extensions,
// which lower to that instruction set's registers and operations without
// naming it. The host fragments hold their register blocks in these. (Not
// std::experimental::simd, which only libstdc++ has, nor Kokkos' SIMD
// types, which Kokkos 3.4 lacks.) Defined, with KOKKOSMOE_HOST_VECTORS,
// only in builds without a GPU backend (whose compilers parse host code as
// device code) and with GCC's extensions (GCC, Clang).
#ifndef KOKKOSMOE_HOST_VECTOR_HPP
#define KOKKOSMOE_HOST_VECTOR_HPP

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_FastMath.hpp"

#if !defined(KOKKOS_ENABLE_CUDA) && !defined(KOKKOS_ENABLE_HIP) && defined(__GNUC__)
#define KOKKOSMOE_HOST_VECTORS

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__SSE__)
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
// Vector registers of the instruction set (x86: 32 with AVX-512, else 16;
// AArch64: 32), for the register blocks' shapes.
#if defined(__AVX512F__) || defined(__aarch64__)
constexpr int registers = 32;
#else
constexpr int registers = 16;
#endif

// lanes floats from p (any alignment).
inline vfloat load(const float* p) {
  vfloat v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vfloat v) { std::memcpy(p, &v, sizeof v); }
// Streaming stores (x86, from SSE on: has_stream): lanes floats to p
// (aligned to the vector) past the caches, without reading the line
// first; stream_fence() orders them before the stores that follow
// (another thread may read them next). Elsewhere a plain store and no
// fence.
#if defined(__SSE__)
constexpr bool has_stream = true;
#else
constexpr bool has_stream = false;
#endif
inline void stream(float* p, vfloat v) {
#if defined(__AVX512F__)
  _mm512_stream_ps(p, __m512(v));
#elif defined(__AVX__)
  _mm256_stream_ps(p, __m256(v));
#elif defined(__SSE__)
  _mm_stream_ps(p, __m128(v));
#else
  store(p, v);
#endif
}
inline void stream_fence() {
#if defined(__SSE__)
  _mm_sfence();
#endif
}
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
// lanes weights from p, widened to float: float as is; bfloat16 as the
// upper halves of floats (exact); float16 by the instruction set's
// conversion where it has one (F16C), else one by one.
inline vfloat widen(const float* p) { return load(p); }
inline vfloat widen(const bfloat16* p) {
#if defined(__AVX512F__)
  const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return vfloat(_mm512_castsi512_ps(_mm512_slli_epi32(h, 16)));
#elif defined(__AVX2__)
  const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return vfloat(_mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
#else
  using half_bits = std::uint16_t __attribute__((vector_size(lanes * sizeof(std::uint16_t))));
  using float_bits = std::uint32_t __attribute__((vector_size(lanes * sizeof(std::uint32_t))));
  half_bits h;
  std::memcpy(&h, p, sizeof h);
  const float_bits f = __builtin_convertvector(h, float_bits) << 16;
  vfloat v;
  std::memcpy(&v, &f, sizeof v);
  return v;
#endif
}
// v rounded to bfloat16 as bfloat16::from_float does (nearest even, a NaN
// kept a quiet NaN), its lanes values to p (any alignment).
inline void to_bfloat16(bfloat16* p, vfloat v) {
  using bits = std::uint32_t __attribute__((vector_size(lanes * sizeof(std::uint32_t))));
  using half_bits = std::uint16_t __attribute__((vector_size(lanes * sizeof(std::uint16_t))));
  bits u;
  std::memcpy(&u, &v, sizeof u);
  const bits rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const bits quiet = (u >> 16) | 0x40u;
  const bits out = (u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded;
  const half_bits h = __builtin_convertvector(out, half_bits);
  std::memcpy(p, &h, sizeof h);
}
inline vfloat widen(const float16* p) {
#if defined(__AVX512F__)
  return vfloat(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#elif defined(__AVX__) && defined(__F16C__)
  return vfloat(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#else
  vfloat v;
  for (int i = 0; i < lanes; ++i) v[i] = float16::to_float(p[i].bits);
  return v;
#endif
}
// The first n < lanes of them, zeros after.
template <class Scalar>
inline vfloat widen_first(const Scalar* p, int n) {
  vfloat v = broadcast(0.0f);
  for (int i = 0; i < n; ++i) v[i] = to_float(p[i]);
  return v;
}
// Products of bfloat16 pairs (AVX-512 BF16, vdpbf16ps): 2 lanes of 16-bit
// values per float lane, lane i of a sum taking the products of k = 2i and
// 2i + 1 of each 2 lanes-wide step, exact, into one rounding each (inputs
// and results below float's normal range count as zero). Twice the
// multiply-adds of an instruction of floats, and the weights need no
// widening. Only where the compile targets it (-mavx512bf16, or a -march
// that has it): KOKKOSMOE_HOST_BF16_PAIRS says whether.
#if defined(__AVX512F__) && defined(__AVX512BF16__) && defined(__AVX512VL__)
#define KOKKOSMOE_HOST_BF16_PAIRS
using vpairs = __m512bh;
// 2 lanes bfloat16 from p (any alignment); the first n < 2 lanes of them, zeros after.
inline vpairs load_pairs(const bfloat16* p) { return vpairs(_mm512_loadu_si512(p)); }
inline vpairs load_pairs_first(const bfloat16* p, int n) {
  return vpairs(_mm512_maskz_loadu_epi16(__mmask32((1ull << n) - 1), p));
}
// 2 lanes floats from p that bfloat16 holds exactly (rounding leaves them).
inline vpairs to_pairs(const float* p) {
  return _mm512_cvtne2ps_pbh(__m512(load(p + lanes)), __m512(load(p)));
}
inline vfloat dot_pairs(vpairs a, vpairs b, vfloat acc) {
  return vfloat(_mm512_dpbf16_ps(__m512(acc), a, b));
}
// The pair u in every 32-bit lane.
inline vpairs broadcast_pair(std::uint32_t u) { return vpairs(_mm512_set1_epi32(std::int32_t(u))); }
#endif
// e^x lane by lane: the host target's exp polynomial on whole vectors, the
// same values.
inline vfloat exp(vfloat x) {
  using vint = std::int32_t __attribute__((vector_size(lanes * sizeof(std::int32_t))));
  return fast_math::exp_polynomial<vint>(x, broadcast(-87.0f), broadcast(88.0f),
                                         [](vfloat n) { return __builtin_convertvector(n, vint); });
}
inline float sum(vfloat v) {
  float s = 0;
  for (int i = 0; i < lanes; ++i) s += v[i];
  return s;
}

}  // namespace host_vector
}  // namespace Impl
}  // namespace KokkosMoE

#endif  // KOKKOSMOE_HOST_VECTORS

#endif
