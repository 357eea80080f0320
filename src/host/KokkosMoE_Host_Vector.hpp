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

#if defined(__AVX512F__) || (defined(__AVX__) && (defined(__FMA__) || defined(__F16C__)))
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
// The pair (p[0], p[1]) in every 32-bit lane: one broadcast load.
inline std::uint32_t pair_at(const bfloat16* p) {
  std::uint32_t u;
  std::memcpy(&u, p, sizeof u);
  return u;
}
// Floats that bfloat16 holds exactly, two vectors of k and k + 1 of the
// same lanes, as pairs lane by lane (k in the low half): their upper halves.
inline vpairs interleave_pairs(vfloat k0, vfloat k1) {
  const __m512i low = _mm512_srli_epi32(_mm512_castps_si512(__m512(k0)), 16);
  const __m512i high = _mm512_and_si512(_mm512_castps_si512(__m512(k1)),
                                        _mm512_set1_epi32(std::int32_t(0xffff0000u)));
  return vpairs(_mm512_or_si512(low, high));
}
#endif
// v[r][c] -> v[c][r]: a lanes x lanes block transposed in registers
// (AVX-512: 64 shuffles for 256 floats; AVX: 24 for 64; else by element).
inline void transpose(vfloat (&v)[lanes]) {
#if defined(__AVX512F__)
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = __m512(v[i]);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + 4 + i], 0x88);
      t[h + 4 + i] = _mm512_shuffle_f32x4(r[h + i], r[h + 4 + i], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    v[i] = vfloat(_mm512_shuffle_f32x4(t[i], t[8 + i], 0x88));
    v[8 + i] = vfloat(_mm512_shuffle_f32x4(t[i], t[8 + i], 0xdd));
  }
#elif defined(__AVX__)
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = __m256(v[i]);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = vfloat(_mm256_permute2f128_ps(r[i], r[4 + i], 0x20));
    v[4 + i] = vfloat(_mm256_permute2f128_ps(r[i], r[4 + i], 0x31));
  }
#else
  for (int r = 0; r < lanes; ++r)
    for (int c = r + 1; c < lanes; ++c) {
      const float x = v[r][c];
      v[r][c] = v[c][r];
      v[c][r] = x;
    }
#endif
}
// The operations of a register block's multiply-adds on vectors of a
// width: full ones (vfloat), and with AVX-512 half ones (8 lanes), whose
// multiply-adds take half the time of full ones where a 512-bit one is two
// 256-bit halves (Zen 4), for blocks of at most 8 token rows.
struct Full {
  using type = vfloat;
  static constexpr int width = lanes;
  static type load(const float* p) { return host_vector::load(p); }
  static void store(float* p, type v) { host_vector::store(p, v); }
  static type broadcast(float s) { return host_vector::broadcast(s); }
  static type fma(type a, type b, type acc) { return host_vector::fma(a, b, acc); }
#ifdef KOKKOSMOE_HOST_BF16_PAIRS
  using pairs = vpairs;
  static pairs load_pairs(const std::uint32_t* p) { return pairs(_mm512_loadu_si512(p)); }
  static pairs broadcast_pair(std::uint32_t u) { return pairs(_mm512_set1_epi32(std::int32_t(u))); }
  static type dot(pairs a, pairs b, type acc) { return dot_pairs(a, b, acc); }
#endif
};
#if defined(__AVX512F__)
#define KOKKOSMOE_HOST_HALF_VECTORS
struct Half {
  using type = __m256;
  static constexpr int width = 8;
  static type load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, type v) { _mm256_storeu_ps(p, v); }
  static type broadcast(float s) { return _mm256_set1_ps(s); }
  static type fma(type a, type b, type acc) { return _mm256_fmadd_ps(a, b, acc); }
#ifdef KOKKOSMOE_HOST_BF16_PAIRS
  using pairs = __m256bh;
  static pairs load_pairs(const std::uint32_t* p) {
    return pairs(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static pairs broadcast_pair(std::uint32_t u) { return pairs(_mm256_set1_epi32(std::int32_t(u))); }
  static type dot(pairs a, pairs b, type acc) { return _mm256_dpbf16_ps(acc, a, b); }
#endif
};
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
