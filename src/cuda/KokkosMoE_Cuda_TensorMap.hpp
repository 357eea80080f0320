// SPDX-License-Identifier: BSD-3-Clause
// Bulk tensor copies (TMA, sm_90): one thread moves a whole box of a
// row-major matrix of 16-bit or 8-bit values, rows x 128 bytes, into a
// scratch tile in the 128-byte swizzle of our K-major tiles, and the copy completes on an
// mbarrier by bytes. A tensor map describes the matrix; ours live in device
// memory, 128 bytes each, encoded once on the host (the encoder is the
// driver's cuTensorMapEncodeTiled, fetched at run time: no libcuda link).
// Small contiguous runs (the activations' row scales of a K step) come by
// plain bulk copies on the same barriers.
#ifndef KOKKOSMOE_CUDA_TENSORMAP_HPP
#define KOKKOSMOE_CUDA_TENSORMAP_HPP

#include <Kokkos_Core.hpp>

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {
namespace tensor_map {

constexpr int bytes = 128;      // sizeof(CUtensorMap)
constexpr int box_bytes = 128;  // bytes per box row: one 128-byte swizzle line

// Writes to `map` (host memory, 64-byte aligned) the map of a [rows, cols]
// row-major matrix of `value_bytes`-byte values (2 or 1) at `data` (device
// memory), boxes of box_rows x 128 bytes; false where TMA cannot copy it
// (row pitch or start not 16-byte aligned, no driver entry point), and the
// kernels then copy with cp.async.
inline bool encode(void* map, const void* data, std::uint64_t rows, std::uint64_t cols,
                   std::uint32_t box_rows, int value_bytes = 2) {
  using encode_fn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static const encode_fn fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess)
#else
    if (cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &f, cudaEnableDefault, &found) !=
        cudaSuccess)
#endif
      return encode_fn(nullptr);
    return found == cudaDriverEntryPointSuccess ? reinterpret_cast<encode_fn>(f)
                                                : encode_fn(nullptr);
  }();
  if (fn == nullptr || rows == 0 || cols == 0 || reinterpret_cast<std::uintptr_t>(data) % 16 != 0 ||
      (cols * value_bytes) % 16 != 0 || (value_bytes != 1 && value_bytes != 2))
    return false;
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {cols * value_bytes};
  const cuuint32_t box[2] = {cuuint32_t(box_bytes / value_bytes), box_rows};
  const cuuint32_t steps[2] = {1, 1};
  return fn(static_cast<CUtensorMap*>(map),
            value_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : CU_TENSOR_MAP_DATA_TYPE_UINT8, 2,
            const_cast<void*>(data), dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// The map was written by a copy from the host: order that before its use
// by the tensor copies (the producer's thread 0, before each work item).
__device__ inline void acquire(const void* map) {
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" ::"l"(map) : "memory");
}
// The box whose first element is (row, col) into dst; values outside the
// matrix arrive as zeros. Completes `bytes` of `barrier`'s transaction count.
__device__ inline void load(void* dst, const void* map, int col, int row, std::uint64_t* barrier) {
  const auto d = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  const auto b = static_cast<std::uint32_t>(__cvta_generic_to_shared(barrier));
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(d),
      "l"(map), "r"(col), "r"(row), "r"(b)
      : "memory");
}
// `bytes` contiguous bytes from src (global memory) to dst, both 16-byte
// aligned, bytes a multiple of 16: a plain bulk copy, no map, completing
// on `barrier` as the tensor copies do.
__device__ inline void copy(void* dst, const void* src, int bytes, std::uint64_t* barrier) {
  const auto d = static_cast<std::uint32_t>(__cvta_generic_to_shared(dst));
  const auto b = static_cast<std::uint32_t>(__cvta_generic_to_shared(barrier));
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(d),
      "l"(src), "r"(bytes), "r"(b)
      : "memory");
}
#else
KOKKOS_INLINE_FUNCTION void acquire(const void*) {}
KOKKOS_INLINE_FUNCTION void load(void*, const void*, int, int, std::uint64_t*) {
  Kokkos::abort("KokkosMoE: tensor copies need sm_90");
}
KOKKOS_INLINE_FUNCTION void copy(void*, const void*, int, std::uint64_t*) {
  Kokkos::abort("KokkosMoE: bulk copies need sm_90");
}
#endif

}  // namespace tensor_map
}  // namespace Impl
}  // namespace KokkosMoE

#endif
