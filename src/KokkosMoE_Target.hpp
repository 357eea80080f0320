// SPDX-License-Identifier: BSD-3-Clause
// What the backend-neutral kernels ask of the compile target, each a
// function of namespace Impl::target that one backend header supplies
// (the portable one, portable/KokkosMoE_Portable_Target.hpp, says what each
// must do; a backend forwards to it where it has nothing faster):
//
//   converts_pairs<T, Width>()  whether runs of Width values convert to the
//                     16-bit T a pair at a time (converted_pair)
//   converted_pair<T>(a, b)     a and b as T in one word, a in its low half,
//                     rounded as from_float<T>
//   exp(x), divide(a, b)  for values rounded to 16 bits next (a few float
//                     ulp of error allowed); exp_fp32(x) for float results
//   e4m3_pair(a, b)   float8_e4m3's codes of a and b, a in the low byte
//   trap()            ends the kernel where a path must not be reached
//   silu_runs<Width>(g, u, h) -> bool  h = silu(g) u over a ColumnRun of Width
//                     values by whole vectors, or false: not done here
//   stream_run<Width>(dst, v) -> bool  Width floats to dst past the caches
//                     (streaming stores, whole aligned vectors), or false:
//                     not done here (nothing stored)
//   stream_fence()    orders the streaming stores before later stores
//   narrow_run<T, Width>(dst, v) -> bool  Width floats to the 16-bit T at
//                     dst (any alignment), rounded as from_float<T>, by
//                     whole vectors, or false: not done here (nothing stored)
//   combine_columns() the output columns an item of the weighted combine
//                     sums (the width of its loads of each expert output)
//
// The choice is by the build's GPU backend, not the execution space: a GPU
// build's host pass takes the GPU backend's header, which tells its device
// pass from its host pass itself.
#ifndef KOKKOSMOE_TARGET_HPP
#define KOKKOSMOE_TARGET_HPP

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include "cuda/KokkosMoE_Cuda_Target.hpp"
#elif defined(KOKKOS_ENABLE_HIP)
#include "hip/KokkosMoE_Hip_Target.hpp"
#else
#include "host/KokkosMoE_Host_Target.hpp"
#endif

#endif
