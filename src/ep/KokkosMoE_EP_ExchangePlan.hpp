// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// The exchange plan of an expert-parallel forward and its kernels, all on
// the device: where each of this rank's token assignments goes (the rank
// that holds its expert) and at which row of the send buffer; the packing
// of x's rows by destination; and the weighted combine of the rows that
// come back.
//
// Rows are grouped by destination and, within one, kept in assignment
// order: each chunk of assignments is placed by one thread, in order, after
// its share of every destination is known. So the plan, and the rows each
// rank receives, do not depend on thread timing.
#ifndef KOKKOSMOE_EP_EXCHANGEPLAN_HPP
#define KOKKOSMOE_EP_EXCHANGEPLAN_HPP

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include "KokkosMoE_FlatIndex.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// Assignments one thread places in order; a chunk's counts per destination
// take one row of chunk_counts.
constexpr std::int64_t exchange_chunk = 256;

inline std::int64_t exchange_chunks(std::int64_t assignments) {
  return (assignments + exchange_chunk - 1) / exchange_chunk;
}

// Assignment a = token * k + slot of ids [T, k] (any strides).
template <class Ids>
KOKKOS_INLINE_FUNCTION int assignment_expert(const Ids& ids, std::int64_t a, int k) {
  return ids(a / k, a % k);
}

// counts(c, r): chunk c's assignments to rank r. Ids are valid (checked).
template <class ExecutionSpace>
struct CountByDestination {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, memory_space> ids;
  Kokkos::View<const int*, memory_space> owner;  // [E]
  Kokkos::View<int**, Kokkos::LayoutRight, memory_space> counts;
  std::int64_t assignments;
  int k, ranks;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t c) const {
    for (int r = 0; r < ranks; ++r) counts(c, r) = 0;
    const std::int64_t end = (c + 1) * exchange_chunk < assignments ? (c + 1) * exchange_chunk
                                                                    : assignments;
    for (std::int64_t a = c * exchange_chunk; a < end; ++a)
      ++counts(c, owner(assignment_expert(ids, a, k)));
  }
};

// Per destination r: counts(c, r) becomes the rows of r before chunk c,
// and totals(r) the rows for r.
template <class ExecutionSpace>
struct ChunkOffsets {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<int**, Kokkos::LayoutRight, memory_space> counts;
  Kokkos::View<int*, memory_space> totals;
  std::int64_t chunks;

  KOKKOS_INLINE_FUNCTION void operator()(int r) const {
    int before = 0;
    for (std::int64_t c = 0; c < chunks; ++c) {
      const int n = counts(c, r);
      counts(c, r) = before;
      before += n;
    }
    totals(r) = before;
  }
};

// offsets(r): the first send row of destination r (exclusive scan).
template <class ExecutionSpace>
struct DestinationOffsets {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<const int*, memory_space> totals;
  Kokkos::View<int*, memory_space> offsets;

  KOKKOS_INLINE_FUNCTION void operator()(int r, int& before, bool final) const {
    if (final) offsets(r) = before;
    before += totals(r);
  }
};

// slot(a): the send row of assignment a; experts(row): its expert's index
// at the owner.
template <class ExecutionSpace>
struct PlaceAssignments {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, memory_space> ids;
  Kokkos::View<const int*, memory_space> owner, local_index;      // [E]
  Kokkos::View<int**, Kokkos::LayoutRight, memory_space> counts;  // from ChunkOffsets
  Kokkos::View<const int*, memory_space> offsets;
  Kokkos::View<int*, memory_space> slot;
  Kokkos::View<std::int32_t*, memory_space> experts;
  std::int64_t assignments;
  int k;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t c) const {
    const std::int64_t end = (c + 1) * exchange_chunk < assignments ? (c + 1) * exchange_chunk
                                                                    : assignments;
    for (std::int64_t a = c * exchange_chunk; a < end; ++a) {
      const int e = assignment_expert(ids, a, k);
      const int r = owner(e);
      const int row = offsets(r) + counts(c, r)++;
      slot(a) = row;
      experts(row) = local_index(e);
    }
  }
};

// rows(slot(a), :) = x(token of a, :), one value per item.
template <class ExecutionSpace, class Scalar>
struct PackRows {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<const Scalar**, Kokkos::LayoutRight, memory_space> x;
  Kokkos::View<const int*, memory_space> slot;
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> rows;
  std::int64_t H;
  int k;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t a, n;
    row_and_column(i, H, a, n);
    rows(slot(a), n) = x(a / k, n);
  }
};

// out[t, n] = sum over j = 0..k-1 of w[t, j] * y_j[n], in float and in that
// order, rounded once: the operations of the core CombineKernel, so that a
// token's output has the single-device layer's bits wherever its k results
// come from the same bits (fp32; see docs/expert-parallel.md).
template <class ExecutionSpace, class Scalar>
struct CombineRows {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<const Scalar**, Kokkos::LayoutRight, memory_space> results;  // by send row
  Kokkos::View<const int*, memory_space> slot;
  Kokkos::View<const float**, Kokkos::LayoutRight, memory_space> weights;  // [T, k]
  Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space> out;
  std::int64_t H;
  int k;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t t, n;
    row_and_column(i, H, t, n);
    float s = 0;
    for (int j = 0; j < k; ++j) {
      const float w = weights(t, j);
      s += w * to_float(results(slot(t * k + j), n));
    }
    out(t, n) = from_float<Scalar>(s);
  }
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
