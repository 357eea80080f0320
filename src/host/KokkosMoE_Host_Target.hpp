// SPDX-License-Identifier: BSD-3-Clause
// The target operations (KokkosMoE_Target.hpp) of builds without a GPU
// backend: exp by a branch-free polynomial, so that the kernels' runs of
// outputs vectorise (the library's expf is one call a value), the SwiGLU
// of a run by whole host vectors (KokkosMoE_Host_Vector.hpp), whose loop
// GCC 12 vectorised for AVX-512 only when compiled on its own and never for
// AVX2, streaming stores of whole vectors where x86 has them, and a vector
// of columns a combine item.
#ifndef KOKKOSMOE_HOST_TARGET_HPP
#define KOKKOSMOE_HOST_TARGET_HPP

#include "KokkosMoE_FastMath.hpp"
#include "host/KokkosMoE_Host_Vector.hpp"
#include "portable/KokkosMoE_Portable_Target.hpp"

#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {
namespace target {

using portable_target::converted_pair;
using portable_target::converts_pairs;
using portable_target::divide;
using portable_target::e4m3_pair;
using portable_target::trap;

// A float ulp or two: below bf16's and fp16's rounding, and below the error
// of the K-long sums an fp32 output follows.
inline float exp(float x) {
  return fast_math::exp_polynomial<std::int32_t>(x, -87.0f, 88.0f,
                                                 [](float n) { return std::int32_t(n); });
}
inline float exp_fp32(float x) { return exp(x); }

template <int Width, class Run>
inline bool silu_runs(const Run& g, const Run& u, Run& h) {
#ifdef KOKKOSMOE_HOST_VECTORS
  using namespace host_vector;
  if constexpr (Width % lanes == 0) {
    for (int i = 0; i < Width; i += lanes) {
      const vfloat gi = load(g.v + i);
      store(h.v + i, gi / (1.0f + host_vector::exp(-gi)) * load(u.v + i));
    }
    return true;
  }
#endif
  return portable_target::silu_runs<Width>(g, u, h);
}

template <int Width>
inline bool stream_run(float* dst, const float* v) {
#ifdef KOKKOSMOE_HOST_VECTORS
  using namespace host_vector;
  if constexpr (has_stream && Width % lanes == 0) {
    if (reinterpret_cast<std::uintptr_t>(dst) % sizeof(vfloat) != 0) return false;
    for (int i = 0; i < Width; i += lanes) stream(dst + i, load(v + i));
    return true;
  }
#endif
  return portable_target::stream_run<Width>(dst, v);
}
inline void stream_fence() {
#ifdef KOKKOSMOE_HOST_VECTORS
  host_vector::stream_fence();
#endif
}

// bfloat16 outputs (the gate/up kernel's h, the combine's y) rounded a
// vector at a time: from_float, a value at a time with a branch for NaN,
// was about a tenth of the gate/up kernel's samples outside its multiplies
// (Mixtral-8x7B / 16, 2048 tokens, AVX2 on Zen 3, 1 thread).
template <class T, int Width>
inline bool narrow_run(T* dst, const float* v) {
#ifdef KOKKOSMOE_HOST_VECTORS
  using namespace host_vector;
  if constexpr (std::is_same<T, bfloat16>::value && Width % lanes == 0) {
    for (int i = 0; i < Width; i += lanes) to_bfloat16(dst + i, load(v + i));
    return true;
  }
#endif
  return portable_target::narrow_run<T, Width>(dst, v);
}

// A vector of columns: the combine's loads of an expert output's row are
// whole vectors (at Qwen2-57B / 16 512 tokens bf16 on a Zen 4 core, AVX2:
// 3.0 % of a forward's samples, 3.7 % with four columns an item).
constexpr int combine_columns() {
#ifdef KOKKOSMOE_HOST_VECTORS
  return host_vector::lanes;
#else
  return portable_target::combine_columns();
#endif
}

}  // namespace target
}  // namespace Impl
}  // namespace KokkosMoE

#endif
