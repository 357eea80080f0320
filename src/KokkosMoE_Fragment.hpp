// The matrix-multiply-accumulate fragment the expert kernels are written
// against: zero, mma_nt (acc += a b^T on scratch tiles) and store, plus the
// tile shape. Kernels above this header never name a backend.
#ifndef KOKKOSMOE_FRAGMENT_HPP
#define KOKKOSMOE_FRAGMENT_HPP

#include "KokkosMoE_Cuda_Fragment.hpp"
#include "KokkosMoE_Host_Fragment.hpp"

namespace KokkosMoE {
namespace Impl {

// Backends specialise this (CUDA tensor cores, AMD matrix cores); until a
// backend has its own, the portable fragment serves it.
template <class ExecutionSpace, class Scalar>
struct Fragment : PortableFragment<ExecutionSpace> {};

#ifdef KOKKOSMOE_ENABLE_CUDA_TENSOR_CORES
template <>
struct Fragment<Kokkos::Cuda, bfloat16> : CudaTensorCoreFragment<bfloat16> {};
template <>
struct Fragment<Kokkos::Cuda, float16> : CudaTensorCoreFragment<float16> {};
#endif

}  // namespace Impl
}  // namespace KokkosMoE

#endif
