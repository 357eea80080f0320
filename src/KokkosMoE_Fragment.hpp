// The matrix-multiply-accumulate fragment the expert kernels are written
// against: zero, mma_nt (acc += a b^T on scratch tiles) and store, plus the
// tile shape. Kernels above this header never name a backend.
#ifndef KOKKOSMOE_FRAGMENT_HPP
#define KOKKOSMOE_FRAGMENT_HPP

#include "KokkosMoE_Cuda_Fragment.hpp"
#include "KokkosMoE_Host_Fragment.hpp"

#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// Tile shapes: `large` for many tokens per expert (prefill: more reuse of
// each weight tile), `small` for few (decode: fewer wasted rows, longer
// contiguous weight reads per K step). The layer picks one per batch.
enum class TileSize { large, small };

// Backends specialise this (CUDA tensor cores, AMD matrix cores); until a
// backend has its own, the portable fragment serves it.
template <class ExecutionSpace, class Scalar, TileSize Size = TileSize::large>
struct Fragment : PortableFragment<ExecutionSpace, Size == TileSize::large ? 32 : 16> {};

#ifdef KOKKOSMOE_ENABLE_CUDA_TENSOR_CORES
// Measured on the H200 (benchmarks/results): 64 x 64 x 32 is faster from
// about 32 rows per expert, 32 x 32 x 64 below (up to 1.5x for decode).
template <class Scalar>
struct CudaFragmentOf {
  using large = CudaTensorCoreFragment<Scalar, 64, 64, 32>;
  using small = CudaTensorCoreFragment<Scalar, 32, 32, 64>;
};
template <TileSize Size>
struct Fragment<Kokkos::Cuda, bfloat16, Size>
    : std::conditional_t<Size == TileSize::large, CudaFragmentOf<bfloat16>::large,
                         CudaFragmentOf<bfloat16>::small> {};
template <TileSize Size>
struct Fragment<Kokkos::Cuda, float16, Size>
    : std::conditional_t<Size == TileSize::large, CudaFragmentOf<float16>::large,
                         CudaFragmentOf<float16>::small> {};
#endif

}  // namespace Impl
}  // namespace KokkosMoE

#endif
