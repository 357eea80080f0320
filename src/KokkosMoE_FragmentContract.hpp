// SPDX-License-Identifier: BSD-3-Clause
// The matrix-fragment contract: every member the expert kernels
// (KokkosMoE_ExpertMLP_*.hpp) use of a backend's fragment, what it must do,
// and a compile-time check of it. A fragment is a struct of types, constants
// and static functions (no state), one per tile shape: Fragment<Space,
// Scalar, Size> and DownFragment<...> (KokkosMoE_Fragment.hpp) name it.
// docs/adding-a-backend.md says the same in prose.
//
// Types
//   tile              a non-owning view of an operand tile in team scratch:
//                     tile(p, rows, operand_stride) over operand_type* p,
//                     data(), extent_int(0) (its rows)
//   operand_type      what an operand tile holds: the storage type itself
//                     (tensor cores) or a wider one (the portable float)
//   accumulator_type  one tile_m x tile_n output tile's accumulators, opaque
//                     to the kernels (a thread's registers, or team scratch)
//   launch_bounds     the Kokkos::LaunchBounds of the kernels' TeamPolicy
//
// Constants (static constexpr)
//   int tile_m, tile_n, tile_k  rows of a (tokens), rows of b (output
//                     columns), depth of one K step: acc (tile_m x tile_n)
//                     += a (tile_m x tile_k) b^T (tile_n x tile_k)
//   int operand_stride  an operand tile of R rows is operand_stride * R
//                     elements; the kernels lay S stages of it end to end
//   bool k_contiguous  16 bytes of consecutive k of a row are adjacent and
//                     16-byte aligned at element(): loads may copy16 them
//   int stages        S, buffers per operand: the K loop loads S - 1 -
//                     mma_in_flight steps ahead (at least one; or S = 1 with
//                     one-thread teams, team_threads = 1: load, then multiply)
//   int mma_in_flight  batches mma_nt may leave running when it returns
//                     (0: done on return); finish waits for them
//   int producer_threads  0: every thread loads and multiplies, one team per
//                     work item; > 0: that many threads after the
//                     multiplier_threads only load (warp specialisation),
//                     and the bulk-copy members below are required
//   int team_threads  threads per team known at compile time (full-tile
//                     loads unroll over it), or 0: chosen at run time
//
// Static functions (KOKKOS_INLINE_FUNCTION unless said host)
//   to_operand(Scalar) -> operand_type          an element not copied as is
//   element(tile, r, c) -> operand_type*        where row r, depth c lives
//                     (the fragment's layout: k-major, swizzled, ...)
//   operand(member, rows) -> tile               the next tile of team scratch
//   accumulator(member) -> accumulator_type     zero() before use
//   host operand_bytes(rows), accumulator_bytes()  the scratch those take,
//                     alignment slack included
//   copy16(dst, src)  16 bytes global -> scratch, possibly asynchronous
//   commit_copies()   closes this thread's group of copies (one a K step)
//   wait_copies<pending>()  until at most `pending` of this thread's groups
//                     are in flight; makes its scratch writes visible to
//                     mma_nt once the team barrier after it has passed
//   host split_k_teams() -> int64  teams a launch should reach before
//                     split-K stops paying
//   host resident_teams() -> int  0: one team per work item; else this many
//                     teams walk all items (producer_threads > 0 only)
//   host team_size() -> int  threads per team (team_threads where not 0)
//   zero(member, acc)  acc as zero (it may only mark acc: the multiplies
//                     and finish complete it)
//   mma_nt(member, a, b, acc[, b2, acc2])  acc += a b^T (and acc2 += a b2^T,
//                     sharing the reads of a; b2 right after b in scratch may
//                     be multiplied with b as one tile twice as wide); all
//                     threads of the team (the multipliers, where producer
//                     threads load) call it with the same tiles
//   finish(member, acc...)  waits for the multiplies in flight; acc final
//                     (store only after it)
//   store<Width>(member, f, acc...)  calls f(m, n, run...) for the outputs
//                     the calling thread holds: one ColumnRun<W> per
//                     accumulator, W <= Width consecutive columns from
//                     (m, n) (Width: the widest the caller takes, 1 or more;
//                     W: what the layout holds, e.g. pairs on tensor cores,
//                     16 on the host)
//
// Block-scaled weights (e4m3 with a float scale per 128 x 128 block)
//   to_operand(float) -> operand_type           a dequantised weight (the
//                     loader multiplies the stored value by its scale)
//   optional: dequantize16(tile, r, c, src, scale) -> bool  16 e4m3 values
//                     at src (16-byte aligned, one block) times scale into
//                     elements [c, c + 16) of row r; false: not done here,
//                     the loader converts element by element
//
// Block-scaled codes multiplied as they are (optional: E4m3Fragment's)
//   static constexpr bool multiplies_block_scaled  true: operand tiles of
//                     e4m3 codes, tile_k one scale block (128); the kernels
//                     fill them by bulk copies only, the activations
//                     quantised in 1 x 128 groups beforehand, and mma_nt
//                     takes a last BlockScales argument (the step's scale
//                     of each activation row and of each weight tile)
//
// Weights read in place (optional, not for block-scaled weights)
//   static constexpr bool weights_in_place  true: the kernels load no weight
//                     tiles; mma_nt takes, in place of each b tile, an
//                     InPlaceWeights<Scalar> (the step's weight rows where
//                     they lie in memory, how many rows and columns of them
//                     to read, and how many token rows matter), and
//                     multiplies from memory (a thread that streams the
//                     weights itself: the host's decode fragment)
//
// Weights packed in panels (optional, with weights_in_place)
//   template <class Scalar> static constexpr PanelLayout panel_layout()
//                     columns > 0: the layer packs each expert's weights of
//                     Scalar once into panels of that many columns
//                     (KokkosMoE_WeightPanels.hpp), and each InPlaceWeights
//                     the kernels pass points into them: `first` at the
//                     item's first column and the step's first k, `ld` the
//                     elements from one panel to the next; columns 0: the
//                     weights as they are
//
// Tiles loaded by the fragment (optional, one-thread teams)
//   static constexpr bool loads_rows  true: the loader first offers each
//                     tile to load_rows(tile, height, rows, cols, row_at)
//                     -> bool, which fills it as the loader would (rows and
//                     columns past rows and cols zero, up to height rows)
//                     and returns true, or returns false and leaves it to
//                     the loader (a layout the loader would fill element
//                     by element: the host panel fragment's k-major tokens)
//
// Streamed outputs (optional)
//   static constexpr bool streams_outputs  true: the down kernel stores its
//                     products (the expert outputs, which the combine reads
//                     only after the whole launch) by stream_column_run,
//                     past the caches where the target can
//
// Team schedule (optional)
//   schedule          a Kokkos::Schedule for the kernels' TeamPolicy
//                     (default: Kokkos' own, static)
//
// Team scratch level (optional)
//   static constexpr int scratch_level  the level of team scratch the
//                     kernels and the fragment's tiles take (default 0; 1:
//                     the host model of a GPU fragment, whose tiles exceed
//                     the host backends' level 0)
//
// Bulk copies (only where producer_threads > 0)
//   pipeline          a stage pipeline over pipeline::scratch_bytes() of
//                     8-byte aligned scratch: initialize, wait_free,
//                     loaded_barrier, loaded_when_landed, wait_loaded,
//                     release, static sync_producer (KokkosMoE_Cuda_Pipeline.hpp)
//   int multiplier_threads  team ranks [0, multiplier_threads) multiply
//   multiplier(member) -> bool  whether the calling thread multiplies
//   static start_producer(), start_multiplier()  each side's first call
//                     (where a fragment moves registers between them)
//   expect_bytes(barrier, bytes)  bytes of bulk loads that complete it
//   bulk_load(tile, map, row, col, barrier)  one tile by one thread
//   acquire_map(map)  orders a map written from the host before its loads
//   host encode_map(map, data, rows, cols, box_rows) -> bool  the 128-byte
//                     map of a row-major matrix, or false: 16-byte copies
#ifndef KOKKOSMOE_FRAGMENTCONTRACT_HPP
#define KOKKOSMOE_FRAGMENTCONTRACT_HPP

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace KokkosMoE {
namespace Impl {
namespace fragment_contract {

// The detection idiom: whether Op<Args...> is well formed.
template <class, template <class...> class Op, class... Args>
struct detect : std::false_type {};
template <template <class...> class Op, class... Args>
struct detect<std::void_t<Op<Args...>>, Op, Args...> : std::true_type {};
template <template <class...> class Op, class... Args>
constexpr bool has = detect<void, Op, Args...>::value;

template <bool... Conditions>
using all = std::enable_if_t<(Conditions && ...)>;

template <class F>
using types = std::void_t<typename F::tile, typename F::operand_type, typename F::accumulator_type,
                          typename F::launch_bounds>;

// Each a constant expression (a template argument).
template <class F>
using constants = std::void_t<
    std::integral_constant<int, F::tile_m>, std::integral_constant<int, F::tile_n>,
    std::integral_constant<int, F::tile_k>, std::integral_constant<int, F::operand_stride>,
    std::integral_constant<bool, F::k_contiguous>, std::integral_constant<int, F::stages>,
    std::integral_constant<int, F::mma_in_flight>, std::integral_constant<int, F::producer_threads>,
    std::integral_constant<int, F::team_threads>>;

template <class F, class Tile = typename F::tile, class Operand = typename F::operand_type>
using tile_view =
    all<std::is_constructible<Tile, Operand*, int, int>::value,
        std::is_same<decltype(std::declval<const Tile&>().data()), Operand*>::value,
        std::is_convertible<decltype(std::declval<const Tile&>().extent_int(0)), int>::value>;

template <class F, class Scalar, class Member, class Tile = typename F::tile,
          class Operand = typename F::operand_type>
using scratch =
    all<std::is_same<decltype(F::operand(std::declval<const Member&>(), 0)), Tile>::value,
        std::is_same<decltype(F::accumulator(std::declval<const Member&>())),
                     typename F::accumulator_type>::value,
        std::is_same<decltype(F::element(std::declval<const Tile&>(), 0, 0)), Operand*>::value,
        std::is_convertible<decltype(F::to_operand(std::declval<Scalar>())), Operand>::value,
        std::is_convertible<decltype(F::operand_bytes(0)), std::size_t>::value,
        std::is_convertible<decltype(F::accumulator_bytes()), std::size_t>::value>;

template <class F>
using copies = std::void_t<decltype(F::copy16(std::declval<void*>(), std::declval<const void*>())),
                           decltype(F::commit_copies()), decltype(F::template wait_copies<0>())>;

template <class F>
using launch = all<std::is_convertible<decltype(F::team_size()), int>::value,
                   std::is_convertible<decltype(F::resident_teams()), int>::value,
                   std::is_convertible<decltype(F::split_k_teams()), std::int64_t>::value>;

// What store hands runs of accumulator values to.
struct StoreProbe {
  template <class... Runs>
  void operator()(int, int, const Runs&...) const {}
};

// As the kernels call them: down with one (b, acc) pair, gate/up with two.
template <class F, class Member, class Tile = typename F::tile,
          class Acc = typename F::accumulator_type&>
using multiply = std::void_t<
    decltype(F::zero(std::declval<const Member&>(), std::declval<Acc>())),
    decltype(F::mma_nt(std::declval<const Member&>(), std::declval<Tile>(), std::declval<Tile>(),
                       std::declval<Acc>())),
    decltype(F::mma_nt(std::declval<const Member&>(), std::declval<Tile>(), std::declval<Tile>(),
                       std::declval<Acc>(), std::declval<Tile>(), std::declval<Acc>())),
    decltype(F::finish(std::declval<const Member&>(), std::declval<Acc>())),
    decltype(F::finish(std::declval<const Member&>(), std::declval<Acc>(), std::declval<Acc>())),
    decltype(F::template store<2>(std::declval<const Member&>(), StoreProbe{},
                                  std::declval<Acc>())),
    decltype(F::template store<1>(std::declval<const Member&>(), StoreProbe{}, std::declval<Acc>(),
                                  std::declval<Acc>()))>;

template <class F, class Member>
using bulk_copy_members = all<
    (std::integral_constant<int, F::multiplier_threads>::value >= 0),
    std::is_convertible<decltype(F::multiplier(std::declval<const Member&>())), bool>::value,
    std::is_convertible<decltype(F::encode_map(std::declval<void*>(), std::declval<const void*>(),
                                               std::uint64_t(), std::uint64_t(), 0)),
                        bool>::value,
    std::is_void<std::void_t<decltype(F::expect_bytes(std::declval<std::uint64_t*>(), 0)),
                             decltype(F::bulk_load(std::declval<const typename F::tile&>(),
                                                   std::declval<const void*>(), 0, 0,
                                                   std::declval<std::uint64_t*>())),
                             decltype(F::acquire_map(std::declval<const void*>()))>>::value>;

template <class F, class P = typename F::pipeline>
using stage_pipeline =
    all<std::is_convertible<decltype(P::scratch_bytes()), std::size_t>::value,
        std::is_same<decltype(std::declval<const P&>().loaded_barrier(0)), std::uint64_t*>::value,
        std::is_void<std::void_t<decltype(P{std::declval<std::uint64_t*>()}),
                                 decltype(std::declval<const P&>().initialize(0, 0, 0)),
                                 decltype(std::declval<const P&>().wait_free(0)),
                                 decltype(std::declval<const P&>().loaded_when_landed(0)),
                                 decltype(std::declval<const P&>().wait_loaded(0, true)),
                                 decltype(std::declval<const P&>().release(0, 0)),
                                 decltype(P::sync_producer(0))>>::value>;

// A stage loading while mma_in_flight batches run, or one stage for a
// one-thread team (it loads a step, then multiplies it).
template <class F>
constexpr bool stages_suffice() {
  return F::stages - 1 - F::mma_in_flight >= 1 ||
         (F::stages == 1 && F::mma_in_flight == 0 && F::team_threads == 1);
}

template <class F, class Scalar, class Member>
constexpr bool holds() {
  if constexpr (has<types, F> && has<constants, F>)
    return has<tile_view, F> && has<scratch, F, Scalar, Member> && has<copies, F> &&
           has<launch, F> && has<multiply, F, Member> && stages_suffice<F>() &&
           (F::producer_threads == 0 ||
            (has<bulk_copy_members, F, Member> && has<stage_pipeline, F>));
  else return false;
}

}  // namespace fragment_contract

// Whether F is a matrix fragment for the kernels' Scalar and team Member.
template <class F, class Scalar, class Member>
struct is_fragment : std::integral_constant<bool, fragment_contract::holds<F, Scalar, Member>()> {};

// One K step of a weight tile as it lies in memory, for fragments that read
// weights in place (reads_weights_in_place): rows [0, rows) of `ld`
// elements, from the step's first column, `depth` columns deep; the tile's
// other rows and columns are not to be read. `tokens` of the token tile's
// rows are loaded and stored; the others are not loaded (they hold
// anything): the fragment neither multiplies them into stored outputs nor
// hands their outputs to store.
// (Where the fragment packs the weights, panel_layout: `first` and `ld`
// address the panels instead, and `ahead` weights the team reads soon, for
// the fragment to prefetch as it multiplies: ahead_depth k of each panel,
// the same `ld` apart; none where null.)
template <class Scalar>
struct InPlaceWeights {
  const Scalar* first;
  std::int64_t ld;
  int rows, depth, tokens;
  const Scalar* ahead = nullptr;
  int ahead_depth = 0;
};

// Panels of packed weights (panel_layout): `columns` weight rows (output
// columns) side by side, k_group consecutive k of a column adjacent; the
// element (n, k) of a panel K deep (K a multiple of k_group) at
// (k / k_group) * columns * k_group + n * k_group + k % k_group.
struct PanelLayout {
  int columns = 0;  // 0: not packed
  int k_group = 1;
  KOKKOS_INLINE_FUNCTION constexpr std::int64_t offset(int n, std::int64_t k) const {
    return (k / k_group) * columns * k_group + n * k_group + k % k_group;
  }
  // Panels of n columns.
  KOKKOS_INLINE_FUNCTION constexpr std::int64_t panels(std::int64_t n) const {
    return (n + columns - 1) / columns;
  }
  // K rounded up to whole groups.
  KOKKOS_INLINE_FUNCTION constexpr std::int64_t depth(std::int64_t k) const {
    return (k + k_group - 1) / k_group * k_group;
  }
};
namespace fragment_contract {
template <class F, class Scalar>
using panel_layout = decltype(F::template panel_layout<Scalar>());
}  // namespace fragment_contract
// The panels Frag packs weights of Scalar into: its optional panel_layout,
// else none (columns 0); never block-scaled weights (dequantised as they
// load).
template <class Frag, class Scalar>
constexpr PanelLayout panel_layout_of() {
  if constexpr (fragment_contract::has<fragment_contract::panel_layout, Frag, Scalar> &&
                !is_block_scaled<Scalar>::value)
    return Frag::template panel_layout<Scalar>();
  else return PanelLayout{};
}
template <class Frag, class Scalar>
constexpr bool packs_weights = panel_layout_of<Frag, Scalar>().columns > 0;

// An optional bool constant of a fragment: Flag<Frag>'s value where Frag
// has it, else false.
template <template <class> class Flag, class Frag>
constexpr bool optional_flag() {
  if constexpr (fragment_contract::has<Flag, Frag>) return Flag<Frag>::value;
  else return false;
}
// Whether a one-thread fragment loads its operand tiles itself (loads_rows).
template <class Frag>
using loads_rows_flag = std::integral_constant<bool, Frag::loads_rows>;
template <class Frag>
constexpr bool loads_rows = optional_flag<loads_rows_flag, Frag>();
template <class Frag>
using weights_in_place_flag = std::integral_constant<bool, Frag::weights_in_place>;
// Whether Frag reads the weights of Scalar in place (its optional
// weights_in_place; not block-scaled weights, which the loader dequantises).
template <class Frag, class Scalar>
constexpr bool reads_weights_in_place = optional_flag<weights_in_place_flag, Frag>() &&
                                        !is_block_scaled<Scalar>::value;

// Whether Frag's down kernels store their outputs by stream_column_run
// (its optional streams_outputs).
template <class Frag>
using streams_outputs_flag = std::integral_constant<bool, Frag::streams_outputs>;
template <class Frag>
constexpr bool streams_outputs = optional_flag<streams_outputs_flag, Frag>();

// The team scratch level of Frag's kernels: its optional scratch_level, else 0.
template <class Frag>
using scratch_level_value = std::integral_constant<int, Frag::scratch_level>;
template <class Frag>
KOKKOS_INLINE_FUNCTION constexpr int scratch_level() {
  if constexpr (fragment_contract::has<scratch_level_value, Frag>) return Frag::scratch_level;
  else return 0;
}

// Fragments that multiply block-scaled codes themselves (the optional
// multiplies_block_scaled): operand tiles of e4m3 codes, one scale block of K
// per step, whose mma_nt takes the step's scales as a last argument. Their
// kernels' activations come quantised (KokkosMoE_ActivationGroups.hpp).
template <class Frag>
using multiplies_block_scaled_flag = std::integral_constant<bool, Frag::multiplies_block_scaled>;
template <class Frag>
constexpr bool multiplies_block_scaled = optional_flag<multiplies_block_scaled_flag, Frag>();
// The scales of one K step of such a fragment: the activation row r's at
// rows[r] (r a row of the operand tile; null: 1), and those of the weight
// tiles (gate then up, or down's), one each (a weight tile lies in one
// 128 x 128 block).
struct BlockScales {
  const float* rows = nullptr;
  float weights[2] = {1.0f, 1.0f};
};

// The check the kernels apply (ExpertTileKernel): true for a fragment, else
// compile errors that name the parts of the contract F misses.
template <class F, class Scalar, class Member>
constexpr bool check_fragment() {
  namespace c = fragment_contract;
#define KOKKOSMOE_FRAGMENT_CONTRACT \
  "KokkosMoE matrix fragment (src/KokkosMoE_FragmentContract.hpp): "
  static_assert(c::has<c::types, F>, KOKKOSMOE_FRAGMENT_CONTRACT
                "needs the types tile, operand_type, accumulator_type and launch_bounds");
  static_assert(c::has<c::constants, F>, KOKKOSMOE_FRAGMENT_CONTRACT
                "needs static constexpr tile_m, tile_n, tile_k, operand_stride, k_contiguous, "
                "stages, mma_in_flight, producer_threads and team_threads");
  if constexpr (c::has<c::types, F> && c::has<c::constants, F>) {
    static_assert(c::has<c::tile_view, F>, KOKKOSMOE_FRAGMENT_CONTRACT
                  "tile must be a view made from (operand_type*, rows, operand_stride), with "
                  "data() and extent_int(0)");
    static_assert(c::has<c::scratch, F, Scalar, Member>, KOKKOSMOE_FRAGMENT_CONTRACT
                  "needs operand(member, rows) -> tile, accumulator(member) -> "
                  "accumulator_type, element(tile, r, c) -> operand_type*, to_operand(Scalar), "
                  "operand_bytes(rows) and accumulator_bytes()");
    static_assert(c::has<c::copies, F>, KOKKOSMOE_FRAGMENT_CONTRACT
                  "needs copy16(void*, const void*), commit_copies() and wait_copies<pending>()");
    static_assert(c::has<c::launch, F>, KOKKOSMOE_FRAGMENT_CONTRACT
                  "needs team_size(), resident_teams() and split_k_teams()");
    static_assert(c::has<c::multiply, F, Member>, KOKKOSMOE_FRAGMENT_CONTRACT
                  "needs zero(member, acc), mma_nt(member, a, b, acc[, b2, acc2]), "
                  "finish(member, acc...) and store<1 or 2>(member, f, acc...)");
    static_assert(c::stages_suffice<F>(), KOKKOSMOE_FRAGMENT_CONTRACT
                  "stages must leave a stage loading while mma_in_flight batches run (one "
                  "stage: one-thread teams only)");
    static_assert(F::producer_threads == 0 || c::has<c::bulk_copy_members, F, Member>,
                  KOKKOSMOE_FRAGMENT_CONTRACT
                  "producer_threads > 0 needs multiplier_threads, multiplier(member), "
                  "expect_bytes, bulk_load, acquire_map and encode_map");
    static_assert(F::producer_threads == 0 || c::has<c::stage_pipeline, F>,
                  KOKKOSMOE_FRAGMENT_CONTRACT
                  "producer_threads > 0 needs a pipeline type (see KokkosMoE_Cuda_Pipeline.hpp)");
  }
#undef KOKKOSMOE_FRAGMENT_CONTRACT
  return is_fragment<F, Scalar, Member>::value;
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
