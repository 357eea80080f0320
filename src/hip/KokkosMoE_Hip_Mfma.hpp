// SPDX-License-Identifier: BSD-3-Clause
// CDNA's matrix instructions (MFMA) as the CDNA fragment uses them: each
// shape's operand and accumulator layout over the 64 lanes of a wavefront,
// the instruction itself in device code (gfx90a, gfx940-942, gfx950), and a
// host model of it that computes the same products from the same lane
// registers, so that the fragment's loads, multiplies and stores run and are
// tested on the host.
//
// Layouts (AMD's CDNA2 and CDNA3 ISA guides, section "Dependent Arithmetic
// Instructions / Matrix", and the AMD Matrix Instruction Calculator): a
// wavefront multiplies D (M x N) += A (M x K) B (K x N); lane l holds
//   A[m = l % M][k = V (l / M) + i] in its operand element i (V values),
//   B[k = V (l / N) + i][n = l % N] likewise,
//   D[m = 8 (r / 4) + 4 (l / 32) + r % 4][n = l % 32] in accumulator r
//     (32 x 32 shapes: 16 registers),
//   D[m = 4 (l / 16) + r][n = l % 16] in accumulator r (16 x 16: 4 registers).
#ifndef KOKKOSMOE_HIP_MFMA_HPP
#define KOKKOSMOE_HIP_MFMA_HPP

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {
namespace mfma {

constexpr int wave_size = 64;

// The code of one 8-bit float operand (fp8_e4m3fnuz on gfx940-942): bits
// only, the instruction decides what they mean.
struct Fp8Code {
  std::uint8_t bits;
};

// One instruction's shape: M x N outputs, K deep, over operands of Operand
// (16-bit floats: 4 a lane, v_mfma_f32_MxNxK{bf16_1k,f16}; fp8 codes: 8 a
// lane, v_mfma_f32_MxNxK_fp8_fp8).
template <class Operand, int M>
struct Shape {
  static_assert(M == 32 || M == 16, "32 x 32 or 16 x 16 outputs");
  static constexpr int m = M, n = M;
  // Lanes sharing a row of A (column of B) hold successive K slices of it.
  static constexpr int slices = wave_size / M;
  static constexpr int values = sizeof(Operand) == 1 ? 8 : 4;  // operand elements a lane
  static constexpr int k = slices * values;
  static constexpr int regs = M * M / wave_size;  // accumulators a lane
  using operand = Operand;

  KOKKOS_INLINE_FUNCTION static constexpr int a_row(int lane) { return lane % M; }
  KOKKOS_INLINE_FUNCTION static constexpr int b_col(int lane) { return lane % M; }
  KOKKOS_INLINE_FUNCTION static constexpr int slice(int lane) { return lane / M; }
  // Where accumulator r of a lane lies in D.
  KOKKOS_INLINE_FUNCTION static constexpr int d_row(int lane, int r) {
    return M == 32 ? 8 * (r / 4) + 4 * (lane / 32) + r % 4 : 4 * (lane / 16) + r;
  }
  KOKKOS_INLINE_FUNCTION static constexpr int d_col(int lane) { return lane % M; }
};

// The value an operand element stands for.
KOKKOS_INLINE_FUNCTION float operand_value(bfloat16 v) { return to_float(v); }
KOKKOS_INLINE_FUNCTION float operand_value(float16 v) { return to_float(v); }

// fp8_e4m3fnuz, the 8-bit float of gfx940-942's fp8 instructions: sign, 4
// exponent bits with bias 8, 3 mantissa bits; 0x80 is the only NaN, no
// infinities, no negative zero, largest 240. (OCP's e4m3, float8_e4m3,
// has bias 7: the same bits stand for twice the value.)
KOKKOS_INLINE_FUNCTION float fnuz_value(std::uint8_t b) {
  if (b == 0x80) return bits_float(0x7fc00000u);
  const int e = (b >> 3) & 0xf, m = b & 7;
  const float magnitude = e == 0 ? float(m) * (1.0f / 1024.0f)  // 2^-7 m / 8
                                 : (1.0f + float(m) / 8.0f) *
                                       bits_float(std::uint32_t(e - 8 + 127) << 23);
  return (b & 0x80) ? -magnitude : magnitude;
}
KOKKOS_INLINE_FUNCTION float operand_value(Fp8Code v) { return fnuz_value(v.bits); }

// float8_e4m3 (OCP) codes as fp8_e4m3fnuz codes of half their value: the
// same bits, but for -0 (a fnuz NaN: to +0) and OCP's NaN (to fnuz's);
// multiply the block's scale by 2 to keep the values. Exact: no rounding,
// no saturation.
KOKKOS_INLINE_FUNCTION std::uint8_t fnuz_half_of(float8_e4m3 v) {
  if ((v.bits & 0x7f) == 0x7f) return 0x80;
  if (v.bits == 0x80) return 0;
  return v.bits;
}

// Host model: d (a wavefront's accumulators, [lane][r]) += the product of
// the instruction's A and B, rebuilt from the lanes' operand elements
// ([lane][i], from element `first` on) by the layout above; sums in float,
// k in ascending order (the hardware's order within a K step is not
// modelled: tests compare with a tolerance).
template <class S, class Operand>
void model(const Operand (*a)[2 * S::values], const Operand (*b)[2 * S::values], int first,
           float (*d)[S::regs]) {
  float am[S::m][S::k], bm[S::k][S::n];
  for (int lane = 0; lane < wave_size; ++lane)
    for (int i = 0; i < S::values; ++i) {
      am[S::a_row(lane)][S::values * S::slice(lane) + i] = operand_value(a[lane][first + i]);
      bm[S::values * S::slice(lane) + i][S::b_col(lane)] = operand_value(b[lane][first + i]);
    }
  for (int lane = 0; lane < wave_size; ++lane)
    for (int r = 0; r < S::regs; ++r) {
      const int row = S::d_row(lane, r), col = S::d_col(lane);
      float s = d[lane][r];
      for (int q = 0; q < S::k; ++q) s += am[row][q] * bm[q][col];
      d[lane][r] = s;
    }
}

#if defined(__HIP_DEVICE_COMPILE__) && \
    (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || \
     defined(__gfx950__))
#define KOKKOSMOE_HIP_MFMA_DEVICE
#endif
#if defined(KOKKOSMOE_HIP_MFMA_DEVICE) && \
    (defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__))
#define KOKKOSMOE_HIP_MFMA_FP8_FNUZ
#endif

// V (a vector of 8 bytes) from 8 bytes of operand elements.
template <class V, class Operand>
KOKKOS_FORCEINLINE_FUNCTION V operand_bits(const Operand* p) {
  static_assert(sizeof(V) == 8, "one instruction's operands a lane: 8 bytes");
  V v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

// One instruction of shape S on this lane's registers: operand elements
// [first, first + values) of a and b, accumulators d (device code only).
// fp8 codes multiply as fnuz, gfx940-942's only fp8 (gfx950's is OCP's).
template <class S, class Operand>
KOKKOS_FORCEINLINE_FUNCTION void issue(const Operand* a, const Operand* b, int first, float* d) {
#ifdef KOKKOSMOE_HIP_MFMA_DEVICE
  using acc_t = float __attribute__((ext_vector_type(S::regs)));
  acc_t c;
#pragma unroll
  for (int r = 0; r < S::regs; ++r) c[r] = d[r];
  a += first, b += first;
  if constexpr (sizeof(Operand) == 1) {
#ifdef KOKKOSMOE_HIP_MFMA_FP8_FNUZ
    const long va = operand_bits<long>(a), vb = operand_bits<long>(b);
    if constexpr (S::m == 32) c = __builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8(va, vb, c, 0, 0, 0);
    else c = __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(va, vb, c, 0, 0, 0);
#else
    static_assert(sizeof(Operand) != 1, "fnuz fp8 MFMA: gfx940-942 only");
#endif
  } else if constexpr (std::is_same<Operand, bfloat16>::value) {
    using v4 = short __attribute__((ext_vector_type(4)));
    const v4 va = operand_bits<v4>(a), vb = operand_bits<v4>(b);
    if constexpr (S::m == 32) c = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(va, vb, c, 0, 0, 0);
    else c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(va, vb, c, 0, 0, 0);
  } else {
    using v4 = _Float16 __attribute__((ext_vector_type(4)));
    const v4 va = operand_bits<v4>(a), vb = operand_bits<v4>(b);
    if constexpr (S::m == 32) c = __builtin_amdgcn_mfma_f32_32x32x8f16(va, vb, c, 0, 0, 0);
    else c = __builtin_amdgcn_mfma_f32_16x16x16f16(va, vb, c, 0, 0, 0);
  }
#pragma unroll
  for (int r = 0; r < S::regs; ++r) d[r] = c[r];
#else
  (void)a, (void)b, (void)first, (void)d;
#endif
}

// Who runs a wavefront's lanes: the device, a lane a thread, or the host
// model, one thread holding all 64 lanes of each of the team's wavefronts.
struct DeviceLanes {
  static constexpr bool model = false;
  static constexpr int lanes = 1;  // lanes a thread holds
  template <class S, class Operand>
  KOKKOS_FORCEINLINE_FUNCTION static void mma(const Operand (*a)[2 * S::values],
                                              const Operand (*b)[2 * S::values], int first,
                                              float (*d)[S::regs]) {
    issue<S>(a[0], b[0], first, d[0]);
  }
};
struct ModelLanes {
  static constexpr bool model = true;
  static constexpr int lanes = wave_size;
  template <class S, class Operand>
  static void mma(const Operand (*a)[2 * S::values], const Operand (*b)[2 * S::values], int first,
                  float (*d)[S::regs]) {
    mfma::model<S>(a, b, first, d);
  }
};

}  // namespace mfma
}  // namespace Impl
}  // namespace KokkosMoE

#endif
