// SPDX-License-Identifier: BSD-3-Clause
// The matrix-multiply-accumulate fragment the expert kernels are written
// against (its contract: KokkosMoE_FragmentContract.hpp): which fragment
// serves each execution space, storage type and tile shape, and at which
// rows per expert the layer changes shape. Only backend-neutral parts live
// here; each backend's fragments, shapes and crossovers are in a file of
// its own, included at the end (docs/adding-a-backend.md).
#ifndef KOKKOSMOE_FRAGMENT_HPP
#define KOKKOSMOE_FRAGMENT_HPP

#include <KokkosMoE/KokkosMoE_BuildConfig.hpp>

#include "KokkosMoE_FragmentContract.hpp"
#include "portable/KokkosMoE_Portable_Fragment.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace KokkosMoE {
namespace Impl {

// Tile shapes: `large` for many tokens per expert (prefill: most reuse of
// each weight tile), `small` for few (decode: fewer wasted rows, weights
// streamed by many teams), `medium` between. The layer picks one per batch.
enum class TileSize { large, medium, small };

// Whether a tile-major operand (x's e4m3 codes, h) holds zeros in the rows
// past a tile's last. Large tiles do: zero rows draw less power where the
// kernel runs at its power cap. Smaller ones leave those rows as they
// were: at decode sizes they are nearly all the rows.
KOKKOS_INLINE_FUNCTION constexpr bool zeroes_padding_rows(TileSize size) {
  return size == TileSize::large;
}

// The rows per active expert at which a batch changes tile shape, per
// execution space: small below small_tile_rows_below, large from
// large_tile_rows_from. A backend specialises this with the crossovers it
// measured; the portable ones are the mma.sync fragment's (see
// KokkosMoE_Cuda_Fragment.hpp). The portable fragment's medium and large
// shapes are one shape, so only small_tile_rows_below changes its tiles.
template <class ExecutionSpace, class Enable = void>
struct TileCrossovers {
  static constexpr std::int64_t small_tile_rows_below = 16;
  static constexpr std::int64_t large_tile_rows_from = 512;
};

// The tile shape of a batch from its rows (assignments) per active expert.
template <class ExecutionSpace>
TileSize tile_size_for(std::int64_t rows_per_expert) {
  using crossovers = TileCrossovers<ExecutionSpace>;
  return rows_per_expert < crossovers::small_tile_rows_below  ? TileSize::small
         : rows_per_expert < crossovers::large_tile_rows_from ? TileSize::medium
                                                              : TileSize::large;
}

// The fragment of an execution space for every storage type: the portable
// one, unless the backend's file names its own (the host backends).
template <class ExecutionSpace, TileSize Size, class Enable = void>
struct DefaultFragment {
  using type = PortableFragment<ExecutionSpace, Size == TileSize::small ? 16 : 32>;
};

// Backends specialise this for their execution space and the storage types
// they multiply natively; until a backend has its own, DefaultFragment.
template <class ExecutionSpace, class Scalar, TileSize Size = TileSize::large>
struct Fragment : DefaultFragment<ExecutionSpace, Size>::type {};

// The down kernel multiplies one weight tile per K step where gate/up
// multiplies two (gate and up): a weight tile twice as wide gives it the
// same scratch, registers and operand reuse. Where a backend has no such
// shape (by specialising DownFragment or, for every storage type,
// DefaultDownFragment), the gate/up fragment.
template <class ExecutionSpace, class Scalar, TileSize Size, class Enable = void>
struct DefaultDownFragment {
  using type = Fragment<ExecutionSpace, Scalar, Size>;
};
template <class ExecutionSpace, class Scalar, TileSize Size = TileSize::large>
struct DownFragment : DefaultDownFragment<ExecutionSpace, Scalar, Size>::type {};

// Where a backend multiplies e4m3 codes on its own (multiplies_block_scaled
// fragments), its gate/up and down fragments of each shape for e4m3
// weights; void elsewhere (Fragment's dequantise instead).
template <class ExecutionSpace, TileSize Size>
struct E4m3Fragment {
  using gate_up = void;
  using down = void;
};
template <class ExecutionSpace>
constexpr bool has_e4m3_fragments() {
  return !std::is_void<typename E4m3Fragment<ExecutionSpace, TileSize::large>::gate_up>::value;
}

// The fragment of each tile shape in a table of a backend's shapes:
// gate/up's and down's (where it has wider ones).
template <TileSize Size, class Large, class Medium, class Small, class LargeDown = Large,
          class MediumDown = Medium>
struct ShapeTable {
  using gate_up = std::conditional_t<Size == TileSize::large, Large,
                                     std::conditional_t<Size == TileSize::medium, Medium, Small>>;
  using down = std::conditional_t<Size == TileSize::large, LargeDown,
                                  std::conditional_t<Size == TileSize::medium, MediumDown, Small>>;
};

template <class ExecutionSpace>
int e4m3_tile_rows(TileSize size) {
  if constexpr (has_e4m3_fragments<ExecutionSpace>()) {
    return size == TileSize::small ? E4m3Fragment<ExecutionSpace, TileSize::small>::gate_up::tile_m
           : size == TileSize::medium
               ? E4m3Fragment<ExecutionSpace, TileSize::medium>::gate_up::tile_m
               : E4m3Fragment<ExecutionSpace, TileSize::large>::gate_up::tile_m;
  } else {
    (void)size;
    return 0;
  }
}

// Rows per tile of each shape, and the fewest over all shapes (the dispatch
// plan is sized for the most tiles).
template <class ExecutionSpace, class Scalar>
int tile_rows(TileSize size) {
  return size == TileSize::small    ? Fragment<ExecutionSpace, Scalar, TileSize::small>::tile_m
         : size == TileSize::medium ? Fragment<ExecutionSpace, Scalar, TileSize::medium>::tile_m
                                    : Fragment<ExecutionSpace, Scalar, TileSize::large>::tile_m;
}
template <class ExecutionSpace, class Scalar>
int min_tile_rows() {
  const int rows[] = {tile_rows<ExecutionSpace, Scalar>(TileSize::small),
                      tile_rows<ExecutionSpace, Scalar>(TileSize::medium),
                      tile_rows<ExecutionSpace, Scalar>(TileSize::large)};
  return *std::min_element(rows, rows + 3);
}

}  // namespace Impl
}  // namespace KokkosMoE

// The backends' fragments, after the templates they specialise: each
// backend folder's file compiles to nothing where its backend is not built.
// A new backend adds its folder and a line here.
#include "cuda/KokkosMoE_Cuda_Fragments.hpp"
#include "hip/KokkosMoE_Hip_Fragment.hpp"
#include "host/KokkosMoE_Host_Fragment.hpp"

#endif
