// SPDX-License-Identifier: BSD-3-Clause
// The tensor-map plumbing of the expert kernels, for fragments with bulk
// copies (producer_threads > 0): the layer's maps of the large kernels'
// operands, made once per layer, and what a kernel does with them.
#ifndef KOKKOSMOE_EXPERTMLP_TENSORMAPS_HPP
#define KOKKOSMOE_EXPERTMLP_TENSORMAPS_HPP

#include "KokkosMoE_Fragment.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// Slots of the layer's tensor maps (ExpertTileKernel::maps).
enum CopyMap { gate_map, up_map, down_map, activations_map, gathered_map, copy_map_count };

// A kernel's tensor maps (see copy_maps) or null: the fragment's bulk copies
// where it has them, else 16-byte copies.
template <class Frag>
struct ExpertTileMaps {
  const std::uint64_t* maps = nullptr;
  KOKKOS_INLINE_FUNCTION const std::uint64_t* map(int slot) const {
    return maps + slot * map_words;
  }
  static constexpr int map_words = 16;

  // Whether load_step moves its operand tiles by the fragment's bulk copies
  // (the producer's thread 0 issues them after announcing their bytes)
  // instead of load_tile: a warp-specialised fragment whose tensor maps
  // could be made.
  KOKKOS_INLINE_FUNCTION bool bulk_kernel() const {
    return Frag::producer_threads > 0 && maps != nullptr;
  }
  KOKKOS_INLINE_FUNCTION bool bulk(const std::uint64_t* barrier) const {
    return bulk_kernel() && barrier != nullptr;
  }
  // The maps, written by a copy from the host before the launch, ordered
  // before the tensor copies that read them, by the thread that issues the
  // copies: maps [first, first + count) before each work item, or all of
  // them once per team (acquire_all_maps) where a kernel says so
  // (ExpertTileKernel::acquires_maps_once).
  template <class Loader>
  KOKKOS_INLINE_FUNCTION void acquire_maps(const Loader& ld, int first, int count) const {
    if constexpr (Frag::producer_threads > 0)
      if (maps != nullptr && ld.rank == 0)
        for (int i = first; i < first + count; ++i) Frag::acquire_map(map(i));
  }
  template <class Loader>
  KOKKOS_INLINE_FUNCTION void acquire_all_maps(const Loader& ld) const {
    acquire_maps(ld, 0, copy_map_count);
  }

  // Where the rows of an item's tile start in the operands that come by
  // tensor copies (x's gathered rows, h): tile-major, tile t at row t BM,
  // its rows past the last in use zero (GatherRowsKernel; the gate/up
  // kernel stores them as zeros of h), so that a partly filled tile
  // multiplies zeros: the large kernels run at the GPU's power cap, where
  // zero rows draw less power and so leave a higher clock (the e4m3
  // shapes below large leave those rows as they were and load only the
  // boxes of rows in use: KokkosMoE_ActivationGroups.hpp).
  // Elsewhere rows are in sorted order.
  KOKKOS_INLINE_FUNCTION bool tile_major() const { return bulk_kernel(); }
  template <class Work>
  KOKKOS_INLINE_FUNCTION int operand_row(const Work& w) const {
    return tile_major() ? w.tile * Frag::tile_m : w.first_row;
  }
};

// Whether the layer's large kernels take their operands by tensor copies
// (then the layer keeps x's rows gathered, tile-major, for them).
template <class ExecutionSpace, class Scalar>
constexpr bool bulk_copies() {
  return Fragment<ExecutionSpace, Scalar, TileSize::large>::producer_threads > 0 &&
         DownFragment<ExecutionSpace, Scalar, TileSize::large>::producer_threads > 0;
}

// The tensor maps of a pair of kernels' operands (gate, up and down
// weights, activations h, gathered rows of x) in device memory, for
// fragments with bulk copies (GateUp's and Down's); an empty view where a
// map cannot be made (unaligned rows, strided views, no driver entry
// point): the kernels then copy 16 bytes at a time. Made once per layer, so
// a forward does no host work for them. Boxes: `activation_rows` rows of
// h and of x's gathered rows, and of weights gate/up's BN rows and down's
// BN, or `weight_rows` of each (whose kernels load a tile by several).
template <class MemorySpace, class GateUp, class Down, class Weights, class Activations,
          class Gathered>
Kokkos::View<std::uint64_t*, MemorySpace> copy_maps_of(const Weights& w, const Activations& h,
                                                       const Gathered& gathered,
                                                       int activation_rows, int weight_rows = 0) {
  const int gate_up_box = weight_rows ? weight_rows : GateUp::tile_n;
  const int down_box = weight_rows ? weight_rows : Down::tile_n;
  constexpr int words = ExpertTileMaps<GateUp>::map_words;
  Kokkos::View<std::uint64_t*, MemorySpace> maps;
  alignas(64) std::uint64_t host[copy_map_count][words] = {};
  const std::uint64_t E = w.gate.extent(0), F = w.gate.extent(1), H = w.gate.extent(2);
  const bool made =
      w.gate.span_is_contiguous() && w.up.span_is_contiguous() && w.down.span_is_contiguous() &&
      h.span_is_contiguous() && gathered.span_is_contiguous() &&
      GateUp::encode_map(host[gate_map], w.gate.data(), E * F, H, gate_up_box) &&
      GateUp::encode_map(host[up_map], w.up.data(), E * F, H, gate_up_box) &&
      Down::encode_map(host[down_map], w.down.data(), E * H, F, down_box) &&
      Down::encode_map(host[activations_map], h.data(), h.extent(0), F, activation_rows) &&
      GateUp::encode_map(host[gathered_map], gathered.data(), gathered.extent(0), H,
                         activation_rows);
  if (!made) return maps;
  maps = decltype(maps)("KokkosMoE::tensor_maps", copy_map_count * words);
  if (reinterpret_cast<std::uintptr_t>(maps.data()) % 64 != 0) return decltype(maps)();
  Kokkos::deep_copy(maps, Kokkos::View<const std::uint64_t*, Kokkos::HostSpace,
                                       Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                              &host[0][0], copy_map_count * words));
  return maps;
}

// The large kernels' maps (boxes of their tiles), where they take bulk
// copies; an empty view elsewhere.
template <class ExecutionSpace, class Scalar, class Weights, class Activations>
Kokkos::View<std::uint64_t*, typename ExecutionSpace::memory_space> copy_maps(
    const Weights& w, const Activations& h, const Activations& gathered) {
  using gate_up = Fragment<ExecutionSpace, Scalar, TileSize::large>;
  using down = DownFragment<ExecutionSpace, Scalar, TileSize::large>;
  if constexpr (bulk_copies<ExecutionSpace, Scalar>()) {
    static_assert(gate_up::tile_m == down::tile_m, "one tile height for the tile-major x and h");
    return copy_maps_of<typename ExecutionSpace::memory_space, gate_up, down>(w, h, gathered,
                                                                              down::tile_m);
  }
  return {};
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
