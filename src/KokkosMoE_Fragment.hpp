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
// Large (prefill): 128 x 64 tiles, 4 warps of 64 x 32. Small (decode):
// 32 x 32, 4 warps of 16 x 16. With our Kokkos 3.4 patch (or any Kokkos
// that opts in to the whole shared memory per block) the K steps are longer
// and the pipelines deeper: 3 x 64 (96 KiB for gate/up) and 4 x 64 (48 KiB);
// otherwise they fit the 40 KiB cap: 2 x 32 (32 KiB) and 3 x 64 (36 KiB).
template <class Scalar>
struct CudaFragmentOf {
#ifdef KOKKOS_IMPL_CUDA_SHMEM_OPTIN
  using large = CudaTensorCoreFragment<Scalar, 128, 64, 64, 2, 2, 3>;
  using small = CudaTensorCoreFragment<Scalar, 32, 32, 64, 2, 2, 4>;
#else
  using large = CudaTensorCoreFragment<Scalar, 128, 64, 32, 2, 2, 2>;
  using small = CudaTensorCoreFragment<Scalar, 32, 32, 64, 2, 2, 3>;
#endif
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
