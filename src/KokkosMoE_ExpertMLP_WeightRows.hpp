// SPDX-License-Identifier: BSD-3-Clause
// Where the rows of an expert's weight tile start, for the operand loader:
// plain pointers, or for block-scaled types (e4m3) a BlockScaledRow, whose
// elements read as their value times their block's scale.
#ifndef KOKKOSMOE_EXPERTMLP_WEIGHTROWS_HPP
#define KOKKOSMOE_EXPERTMLP_WEIGHTROWS_HPP

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

template <class Scalar>
struct BlockScaledRow {
  const Scalar* p;      // the row's element at column col
  const float* scales;  // the scales of the row's block row, by column block
  int col;

  KOKKOS_INLINE_FUNCTION BlockScaledRow operator+(int c) const {
    return BlockScaledRow{p + c, scales, col + c};
  }
  KOKKOS_INLINE_FUNCTION float operator[](int v) const {
    return float(p[v]) * scales[(col + v) / weight_block];
  }
  // The scale of p[0]'s block (that of a run that stays in it).
  KOKKOS_INLINE_FUNCTION float scale() const { return scales[col / weight_block]; }
};

template <class Source>
struct is_block_scaled_row : std::false_type {};
template <class Scalar>
struct is_block_scaled_row<BlockScaledRow<Scalar>> : std::true_type {};

// The rows first_row, first_row + 1, ... of one expert's weight matrix
// (`first`: its element (first_row, 0); ld elements per row) and, for
// block-scaled types, its scales (`scale`: the block row of first_row,
// scale_ld blocks per block row).
template <class Scalar>
struct WeightRows {
  const Scalar* first;
  const float* scale;
  std::int64_t ld;
  int scale_ld, first_row;

  template <class Weights, class Scales>
  KOKKOS_INLINE_FUNCTION static WeightRows of(const Weights& w, const Scales& s, int expert,
                                              int first_row) {
    WeightRows rows{&w(expert, first_row, 0), nullptr, std::int64_t(w.extent(2)), 0, first_row};
    if constexpr (is_block_scaled<Scalar>::value) {
      rows.scale = &s(expert, first_row / weight_block, 0);
      rows.scale_ld = int(s.extent(2));
    }
    return rows;
  }

  // Row n's elements from column k0.
  KOKKOS_INLINE_FUNCTION auto at(int n, int k0) const {
    if constexpr (is_block_scaled<Scalar>::value) {
      const int block_row = (first_row + n) / weight_block - first_row / weight_block;
      return BlockScaledRow<Scalar>{first + n * ld + k0, scale + block_row * scale_ld, k0};
    } else {
      return first + n * ld + k0;
    }
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
