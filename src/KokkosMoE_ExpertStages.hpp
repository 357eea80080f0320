// SPDX-License-Identifier: BSD-3-Clause
// The layer's expert part after dispatch: gate/up (SwiGLU), down and the
// weighted combine, with the operand workspace the build's fragments ask
// for, sized once for a configuration: h, the expert outputs and split-K
// parts on every backend; where the large kernels take tensor copies, x's
// gathered rows and h tile-major with their tensor maps; where the kernels
// multiply e4m3 codes, the codes and scales of x and h. Layer owns one and
// runs route -> dispatch -> these stages; the tile shape and the dispatch
// plan come from it.
#ifndef KOKKOSMOE_EXPERTSTAGES_HPP
#define KOKKOSMOE_EXPERTSTAGES_HPP

#include <KokkosMoE/KokkosMoE_Config.hpp>
#include <KokkosMoE/KokkosMoE_Dispatch.hpp>
#include <KokkosMoE/KokkosMoE_Scalar.hpp>
#include <KokkosMoE/KokkosMoE_Weights.hpp>

#include "KokkosMoE_ExpertMLP_Impl.hpp"
#include "KokkosMoE_Fragment.hpp"
#include "KokkosMoE_WeightPanels.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace KokkosMoE {
namespace Impl {

// Rows of partial results kept for split-K: a batch of A assignments can be
// split up to split_k_rows / A ways.
constexpr std::int64_t split_k_rows = 512;

template <class ExecutionSpace, class Scalar>
class ExpertStages {
 public:
  using memory_space = typename ExecutionSpace::memory_space;
  using token_type = token_type_t<Scalar>;
  using weights_type = Weights<Scalar, memory_space>;
  using plan_type = DispatchPlan<memory_space>;
  using rows_view = Kokkos::View<token_type**, Kokkos::LayoutRight, memory_space>;
  using const_rows_view = Kokkos::View<const token_type**, Kokkos::LayoutRight, memory_space>;
  using const_weights_view = Kokkos::View<const float**, Kokkos::LayoutRight, memory_space>;

  ExpertStages(const Config& config, const weights_type& weights, const ExecutionSpace& exec)
      : config_(config), weights_(weights), exec_(exec) {
    const std::int64_t H = config_.hidden_size, F = config_.ffn_size, A = max_assignments(config_);
    const std::int64_t tile_major = tile_major_rows(config_);
    const bool bulk = bulk_copies<ExecutionSpace, Scalar>();
    h_ = rows_view("KokkosMoE::activations", bulk ? tile_major : A, F);
    // Spare rows hold the split-K partial sums of small batches.
    y_ = decltype(y_)("KokkosMoE::expert_outputs", std::max(A, split_k_rows), H);
    gate_up_parts_ = decltype(gate_up_parts_)("KokkosMoE::gate_up_parts", split_k_rows, 2 * F);
    if (bulk) gathered_rows_ = rows_view("KokkosMoE::gathered_rows", tile_major, H);
    copy_maps_ = copy_maps<ExecutionSpace, Scalar>(weights_, h_, gathered_rows_);
    if (bulk && copy_maps_.size() == 0) {  // 16-byte copies: sorted rows, nothing gathered
      gathered_rows_ = rows_view();
      h_ = rows_view("KokkosMoE::activations", A, F);
    }
    if constexpr (has_e4m3_fragments<ExecutionSpace>() && is_block_scaled<Scalar>::value)
      use_e4m3_operands();
  }

  // The most bytes of device memory the stages take for config: the
  // weights' panels where a shape packs them (panel_bytes), h and the
  // gathered rows tile-major where the backend copies by tensor maps, the
  // e4m3 codes and scales where it multiplies them (the weights decide
  // whether it can: see quantizes_activations), the outputs and parts.
  static std::size_t workspace_bytes(const Config& config) {
    const std::int64_t H = config.hidden_size, F = config.ffn_size, A = max_assignments(config);
    const bool bulk = bulk_copies<ExecutionSpace, Scalar>();
    std::int64_t h_rows = bulk ? tile_major_rows(config) : A, gathered = bulk ? h_rows : 0;
    std::int64_t codes = 0, scales = 0, token_codes = 0;
    if constexpr (has_e4m3_fragments<ExecutionSpace>() && is_block_scaled<Scalar>::value) {
      codes = e4m3_rows(config);
      h_rows = std::max(h_rows, codes);
      scales = codes * (weights_type::blocks(H) + weights_type::blocks(F));
      if (quantizes_per_token(config)) {
        token_codes = config.max_tokens * H;
        scales += config.max_tokens * weights_type::blocks(H);
      }
    }
    return panel_bytes(config) + sizeof(token_type) * std::size_t(h_rows * F + gathered * H) +
           sizeof(float) * std::size_t(std::max(A, split_k_rows) * H + split_k_rows * 2 * F) +
           sizeof(float8_e4m3) * std::size_t(codes * (H + F) + token_codes) +
           sizeof(float) * std::size_t(scales);
  }
  // The bytes of device memory it holds (at most workspace_bytes(config)).
  std::size_t bytes() const {
    return (panels_.gate.span() + panels_.up.span() + panels_.down.span()) * sizeof(Scalar) +
           h_.span() * sizeof(token_type) + y_.span() * sizeof(float) +
           gate_up_parts_.span() * sizeof(float) + gathered_rows_.span() * sizeof(token_type) +
           (x_codes_.span() + h_codes_.span() + token_codes_.span()) * sizeof(float8_e4m3) +
           (x_scales_.span() + h_scales_.span() + token_scales_.span()) * sizeof(float);
  }

  // Where the prefill shapes' fragments pack the weights (panel_layout: the
  // host panel fragment), the panels they take (columns 0: none); the
  // decode shape reads the weights as they are.
  static constexpr PanelLayout panel_layout =
      panel_layout_of<Fragment<ExecutionSpace, Scalar, TileSize::large>, Scalar>();
  template <TileSize Size>
  static constexpr bool packs() {
    constexpr PanelLayout g = panel_layout_of<Fragment<ExecutionSpace, Scalar, Size>, Scalar>();
    constexpr PanelLayout d = panel_layout_of<DownFragment<ExecutionSpace, Scalar, Size>, Scalar>();
    static_assert((g.columns == 0 ||
                   (g.columns == panel_layout.columns && g.k_group == panel_layout.k_group)) &&
                      d.columns == g.columns && d.k_group == g.k_group,
                  "one panel layout for every shape that packs, gate/up and down");
    return g.columns > 0;
  }
  // The bytes of the panels (a copy of the weights, padded to whole
  // panels), once a batch has taken a shape that packs.
  static std::size_t panel_bytes(const Config& c) {
    if constexpr (panel_layout.columns > 0)
      return sizeof(Scalar) *
             (2 * panel_elements(panel_layout, c.num_experts, c.ffn_size, c.hidden_size) +
              panel_elements(panel_layout, c.num_experts, c.hidden_size, c.ffn_size));
    else return (void)c, 0;
  }

  // Rows per tile of a shape, as the dispatch must cut them.
  int tile_rows(TileSize size) const {
    if constexpr (has_e4m3_fragments<ExecutionSpace>())
      if (e4m3_operands_) return e4m3_tile_rows<ExecutionSpace>(size);
    return Impl::tile_rows<ExecutionSpace, Scalar>(size);
  }
  bool quantizes_activations() const { return e4m3_operands_; }
  bool tile_major(TileSize size) const {
    return e4m3_operands_ || (size == TileSize::large && copy_maps_.size() > 0);
  }
  rows_view activations() const { return h_; }

  // h for the plan's assignments of num_tokens tokens (> 0), by tiles of size.
  void gate_up(const const_rows_view& x, std::int64_t num_tokens, TileSize size,
               const plan_type& plan) {
    switch (size) {
      case TileSize::small: gate_up_tiles<TileSize::small>(x, num_tokens, plan); break;
      case TileSize::medium: gate_up_tiles<TileSize::medium>(x, num_tokens, plan); break;
      case TileSize::large: gate_up_tiles<TileSize::large>(x, num_tokens, plan); break;
    }
  }

  // out from h: the down projection, then the weighted combine.
  void down_combine(const const_weights_view& routing_weights, const rows_view& out,
                    std::int64_t num_tokens, TileSize size, const plan_type& plan) {
    int splits = 1;
    switch (size) {
      case TileSize::small: splits = down_tiles<TileSize::small>(num_tokens, plan); break;
      case TileSize::medium: splits = down_tiles<TileSize::medium>(num_tokens, plan); break;
      case TileSize::large: splits = down_tiles<TileSize::large>(num_tokens, plan); break;
    }
    // The target's columns per item (GPU builds: four; host: a vector),
    // except for split-K batches (decode: a few tokens, many K parts to
    // sum), whose one column per item keeps more threads loading.
    if (splits > 1) combine<1>(routing_weights, out, num_tokens, splits, plan);
    else combine<target::combine_columns()>(routing_weights, out, num_tokens, splits, plan);
  }

 private:
  static std::int64_t max_assignments(const Config& c) { return c.max_tokens * c.top_k; }

  // With tensor copies, the large kernels keep x's gathered rows and h
  // tile-major (see ExpertTileKernel::operand_row): room for every tile.
  // A forward uses at most A + (non-empty experts) BM of those rows (A = T
  // k assignments), and dispatch takes large tiles only where the active
  // experts are at most A / large_tile_rows_from (batch-invariant layers:
  // always, so up to min(A, E) experts).
  static std::int64_t tile_major_rows(const Config& c) {
    const std::int64_t E = c.num_experts, A = max_assignments(c);
    const int rows = Impl::tile_rows<ExecutionSpace, Scalar>(TileSize::large);
    const std::int64_t large_experts =
        c.batch_invariant ? std::min(A, E)
                          : A / TileCrossovers<ExecutionSpace>::large_tile_rows_from;
    return std::max(A, std::min(plan_type::max_tiles(A, int(E), rows) * rows,
                                A + large_experts * rows));
  }
  // Large e4m3 tiles quantise x's rows once per token, then gather the
  // codes tile-major (QuantizeGroupsKernel's per_token), where each token
  // has at least 4 assignments: DeepSeek-V3 at 4096 tokens (8 a token) read
  // x 8 times, quantised, in 560 us on an H100, 9 % of the forward. At 2
  // (Mixtral-8x7B) the gather's copy costs about what the second read saves.
  static bool quantizes_per_token(const Config& c) { return c.top_k >= 4; }
  // e4m3 operands: tile-major rows for the most tiles of any shape.
  static std::int64_t e4m3_rows(const Config& c) {
    std::int64_t rows = 0;
    for (auto size : {TileSize::small, TileSize::medium, TileSize::large}) {
      const int bm = e4m3_tile_rows<ExecutionSpace>(size);
      rows = std::max(rows, plan_type::max_tiles(max_assignments(c), int(c.num_experts), bm) * bm);
    }
    return rows;
  }

  // Takes e4m3 operands where the backend has them and tensor maps of the
  // weights and activations can be made (constructor).
  void use_e4m3_operands() {
    if constexpr (has_e4m3_fragments<ExecutionSpace>() && is_block_scaled<Scalar>::value) {
      const std::int64_t H = config_.hidden_size, F = config_.ffn_size;
      const std::int64_t rows = e4m3_rows(config_);
      auto h = rows_view("KokkosMoE::activations", rows, F);
      auto x_codes = decltype(x_codes_)("KokkosMoE::x_codes", rows, H);
      auto h_codes = decltype(h_codes_)("KokkosMoE::h_codes", rows, F);
      using large = E4m3Fragment<ExecutionSpace, TileSize::large>;
      using medium = E4m3Fragment<ExecutionSpace, TileSize::medium>;
      using small = E4m3Fragment<ExecutionSpace, TileSize::small>;
      // Two sets of maps, alike but for the activations' boxes: the large
      // kernels' and those of the shapes with few_row_boxes. Every shape
      // loads each weight tile by boxes of weight_box rows.
      using kernel = GateUpE4m3Kernel<ExecutionSpace, TileSize::large>;
      using few_rows = GateUpE4m3Kernel<ExecutionSpace, TileSize::small>;
      static_assert(few_rows::few_row_boxes && kernel::weight_box == few_rows::weight_box &&
                        GateUpE4m3Kernel<ExecutionSpace, TileSize::medium>::activation_box ==
                            few_rows::activation_box,
                    "one set of maps for the shapes with few_row_boxes");
      auto maps = copy_maps_of<memory_space, typename large::gate_up, typename large::down>(
          weights_, h_codes, x_codes, kernel::activation_box, kernel::weight_box);
      auto few_row_maps = copy_maps_of<memory_space, typename large::gate_up, typename large::down>(
          weights_, h_codes, x_codes, few_rows::activation_box, kernel::weight_box);
      if (maps.size() == 0 || few_row_maps.size() == 0) return;  // the kernels that dequantise
      e4m3_operands_ = true;
      copy_maps_ = maps;
      few_row_maps_ = few_row_maps;
      h_ = h;
      x_codes_ = x_codes;
      h_codes_ = h_codes;
      x_scales_ = decltype(x_scales_)("KokkosMoE::x_scales", weights_type::blocks(H), rows);
      h_scales_ = decltype(h_scales_)("KokkosMoE::h_scales", weights_type::blocks(F), rows);
      if (quantizes_per_token(config_)) {
        token_codes_ = decltype(token_codes_)("KokkosMoE::token_codes", config_.max_tokens, H);
        token_scales_ = decltype(token_scales_)("KokkosMoE::token_scales", weights_type::blocks(H),
                                                config_.max_tokens);
      }
      gathered_rows_ = rows_view();  // the kernels read x's codes instead
    }
  }

  template <TileSize Size>
  void gate_up_tiles(const const_rows_view& x, std::int64_t num_tokens, const plan_type& plan) {
    if constexpr (has_e4m3_fragments<ExecutionSpace>() && is_block_scaled<Scalar>::value)
      if (e4m3_operands_) return gate_up_e4m3<Size>(x, num_tokens, plan);
    using kernel = GateUpKernel<ExecutionSpace, Scalar, Size>;
    const std::int64_t assignments = num_tokens * config_.top_k;
    if constexpr (packs<Size>()) pack_weights();
    kernel f;
    set_gate_up(f, assignments, plan);
    f.x = x;
    f.partial = gate_up_parts_;
    const auto tiles = plan_type::max_tiles(assignments, config_.num_experts, kernel::BM);
    // Decode: few tiles would leave most multiprocessors idle or run in one
    // and a bit waves; split H (parts to gate_up_parts_, then one activation
    // pass), as the down projection splits F. (Never in a batch-invariant
    // layer: the parts' sum is another order than one K loop's.)
    if (Size == TileSize::small && !config_.batch_invariant)
      f.split_k(tiles, int(config_.hidden_size), assignments,
                std::int64_t(gate_up_parts_.extent(0)),
                Fragment<ExecutionSpace, Scalar, TileSize::small>::split_k_teams());
    // The large kernel's tensor copies read x's rows gathered, tile-major.
    if (tile_major(Size))
      gather_rows<token_type>("KokkosMoE::gather_rows", x, gathered_rows_, tiles, kernel::BM, plan);
    Kokkos::parallel_for("KokkosMoE::gate_up",
                         f.make_policy(exec_, tiles, kernel::scratch_bytes(), "KokkosMoE::gate_up"),
                         f);
    if (f.splits > 1)
      Kokkos::parallel_for("KokkosMoE::activation",
                           Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
                               exec_, 0, assignments * config_.ffn_size),
                           ActivationKernel<ExecutionSpace, token_type>{
                               gate_up_parts_, h_, config_.ffn_size, assignments, f.splits});
  }

  // (the expert outputs of each K part; returns the parts.)
  template <TileSize Size>
  int down_tiles(std::int64_t num_tokens, const plan_type& plan) {
    if constexpr (has_e4m3_fragments<ExecutionSpace>() && is_block_scaled<Scalar>::value)
      if (e4m3_operands_) return down_e4m3<Size>(num_tokens, plan);
    if constexpr (packs<Size>()) pack_weights();
    DownKernel<ExecutionSpace, Scalar, Size> f;
    return launch_down(f, num_tokens * config_.top_k, plan);
  }

  // The tensor maps a kernel's copies take (see few_row_boxes).
  template <class Kernel>
  const std::uint64_t* maps_of() const {
    return Kernel::few_row_boxes ? few_row_maps_.data() : copy_maps_.data();
  }
  // A gate/up kernel's fields; a down kernel's, and its launch (returns its
  // K parts).
  template <class Kernel>
  void set_gate_up(Kernel& f, std::int64_t assignments, const plan_type& plan) const {
    f.plan = plan;
    f.experts = config_.num_experts;
    f.k = config_.top_k;
    f.column_blocks = int((config_.ffn_size + Kernel::BN - 1) / Kernel::BN);
    f.gate = weights_.gate;
    f.up = weights_.up;
    f.gate_scale = weights_.gate_scale;
    f.up_scale = weights_.up_scale;
    f.h = h_;
    f.assignments = int(assignments);
    f.maps = maps_of<Kernel>();
    if constexpr (packs_weights<typename Kernel::frag, Scalar>) {
      f.gate_panels = panels_.gate;
      f.up_panels = panels_.up;
    }
  }
  template <class Kernel>
  int launch_down(Kernel& f, std::int64_t assignments, const plan_type& plan) {
    f.plan = plan;
    f.experts = config_.num_experts;
    f.k = config_.top_k;
    f.column_blocks = int((config_.hidden_size + Kernel::BN - 1) / Kernel::BN);
    f.h = h_;
    f.down = weights_.down;
    f.down_scale = weights_.down_scale;
    f.y = y_;
    f.assignments = int(assignments);
    f.maps = maps_of<Kernel>();
    if constexpr (packs_weights<typename Kernel::frag, Scalar>) f.down_panels = panels_.down;
    const auto tiles = plan_type::max_tiles(assignments, config_.num_experts, Kernel::BM);
    // Few tokens leave few tiles and a long F: split F so that the launch
    // still fills the device (partial sums go to spare rows of y); not in a
    // batch-invariant layer.
    if (!config_.batch_invariant)
      f.split_k(tiles, int(config_.ffn_size), assignments, std::int64_t(y_.extent(0)),
                Kernel::frag::split_k_teams());
    Kokkos::parallel_for("KokkosMoE::down",
                         f.make_policy(exec_, tiles, Kernel::scratch_bytes(), "KokkosMoE::down"),
                         f);
    return f.splits;
  }

  // The weights' panels, packed by the first batch whose shape takes them
  // (a one-time copy: decode-only use never makes it). Weights changed after
  // that are not seen by the packing shapes (Layer says so).
  void pack_weights() {
    if constexpr (panel_layout.columns > 0) {
      if (panels_.gate.extent(0) > 0 || config_.num_experts == 0) return;
      panels_.gate = pack_panels<ExecutionSpace, Scalar>(exec_, weights_.gate, panel_layout,
                                                         "KokkosMoE::gate_panels");
      panels_.up = pack_panels<ExecutionSpace, Scalar>(exec_, weights_.up, panel_layout,
                                                       "KokkosMoE::up_panels");
      panels_.down = pack_panels<ExecutionSpace, Scalar>(exec_, weights_.down, panel_layout,
                                                         "KokkosMoE::down_panels");
    }
  }

  // The weighted sum of each token's expert outputs (the sum of `splits` K
  // parts each), Width columns per item where y's rows allow, else four,
  // else one.
  template <int Width>
  void combine(const const_weights_view& routing_weights, const rows_view& out,
               std::int64_t num_tokens, int splits, const plan_type& plan) {
    using kernel = CombineKernel<ExecutionSpace, token_type, Width>;
    if constexpr (Width > 1) {
      if (!kernel::applies(y_.data(), config_.hidden_size, splits))
        return combine<(Width > 4 ? 4 : 1)>(routing_weights, out, num_tokens, splits, plan);
    }
    Kokkos::parallel_for("KokkosMoE::combine",
                         Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
                             exec_, 0, kernel::items(num_tokens, config_.hidden_size)),
                         kernel{y_, plan.position, routing_weights, out, config_.top_k,
                                config_.hidden_size, splits, num_tokens * config_.top_k});
  }

  // Quantises `rows` tile-major rows (gathered from x's, or h's own) in
  // groups (see quantizes_activations).
  template <class Source>
  void quantize_rows(const Source& source, bool gather, bool zero_padding, int tile_rows,
                     std::int64_t tiles, std::int64_t assignments, const plan_type& plan,
                     const Kokkos::View<float8_e4m3**, Kokkos::LayoutRight, memory_space>& codes,
                     const Kokkos::View<float**, Kokkos::LayoutRight, memory_space>& scales) {
    using kernel = QuantizeGroupsKernel<ExecutionSpace, token_type>;
    kernel q;
    q.plan = plan;
    q.source = source;
    q.codes = codes;
    q.scales = scales;
    q.k = config_.top_k;
    q.experts = config_.num_experts;
    q.tile_rows = tile_rows;
    q.rows = tiles * tile_rows;
    q.assignments = assignments;
    q.gather = gather;
    q.zero_padding = zero_padding;
    q.parts = q.parts_for_pass();
    Kokkos::parallel_for("KokkosMoE::quantize_rows", q.policy(exec_), q);
  }

  // The rows of `tiles` tiles of tile_rows rows from their tokens' rows of
  // `from` (x, or its codes), tile-major (GatherRowsKernel).
  template <class T>
  void gather_rows(const char* name,
                   const Kokkos::View<const T**, Kokkos::LayoutRight, memory_space>& from,
                   const Kokkos::View<T**, Kokkos::LayoutRight, memory_space>& to,
                   std::int64_t tiles, int tile_rows, const plan_type& plan) {
    using gather = GatherRowsKernel<ExecutionSpace, T>;
    const bool aligned = reinterpret_cast<std::uintptr_t>(from.data()) % 16 == 0;
    Kokkos::parallel_for(name,
                         Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
                             exec_, 0, gather::items(tiles, tile_rows, config_.hidden_size)),
                         gather{plan, from, to, int(config_.top_k), int(config_.num_experts),
                                tile_rows, aligned});
  }

  // x's rows quantised once per token, then their codes and scales laid out
  // as the `tiles` tiles' rows (large tiles: every row written, zero past
  // each tile's last).
  void quantize_tokens(const const_rows_view& x, std::int64_t num_tokens, std::int64_t tiles,
                       int tile_rows, const plan_type& plan) {
    auto q = QuantizeGroupsKernel<ExecutionSpace, token_type>::tokens(x, token_codes_,
                                                                      token_scales_, num_tokens);
    q.parts = q.parts_for_pass();
    Kokkos::parallel_for("KokkosMoE::quantize_tokens", q.policy(exec_), q);
    gather_rows<float8_e4m3>("KokkosMoE::gather_codes", token_codes_, x_codes_, tiles, tile_rows,
                             plan);
    const GatherGroupScalesKernel<ExecutionSpace> scales{
        plan,      token_scales_,    x_scales_, int(config_.top_k), int(config_.num_experts),
        tile_rows, tiles * tile_rows};
    Kokkos::parallel_for("KokkosMoE::gather_scales", scales.policy(exec_), scales);
  }

  // The same with e4m3 operands (quantizes_activations).
  template <TileSize Size>
  void gate_up_e4m3(const const_rows_view& x, std::int64_t num_tokens, const plan_type& plan) {
    if constexpr (has_e4m3_fragments<ExecutionSpace>() && is_block_scaled<Scalar>::value) {
      using kernel = GateUpE4m3Kernel<ExecutionSpace, Size>;
      const std::int64_t assignments = num_tokens * config_.top_k;
      const auto tiles = plan_type::max_tiles(assignments, config_.num_experts, kernel::BM);
      constexpr bool pad = zeroes_padding_rows(Size);
      if (pad && token_codes_.extent(0) > 0)
        quantize_tokens(x, num_tokens, tiles, kernel::BM, plan);
      else quantize_rows(x, true, pad, kernel::BM, tiles, assignments, plan, x_codes_, x_scales_);
      kernel f;
      set_gate_up(f, assignments, plan);
      f.activation_scales = x_scales_;
      f.depth = int(config_.hidden_size);
      Kokkos::parallel_for(
          "KokkosMoE::gate_up",
          f.make_policy(exec_, tiles, kernel::scratch_bytes(), "KokkosMoE::gate_up"), f);
      quantize_rows(h_, false, pad, kernel::BM, tiles, assignments, plan, h_codes_, h_scales_);
    } else {
      (void)x, (void)num_tokens, (void)plan;
    }
  }
  template <TileSize Size>
  int down_e4m3(std::int64_t num_tokens, const plan_type& plan) {
    if constexpr (has_e4m3_fragments<ExecutionSpace>() && is_block_scaled<Scalar>::value) {
      DownE4m3Kernel<ExecutionSpace, Size> f;
      f.activation_scales = h_scales_;
      f.depth = int(config_.ffn_size);
      return launch_down(f, num_tokens * config_.top_k, plan);
    } else {
      (void)num_tokens, (void)plan;
      return 1;
    }
  }

  Config config_;
  weights_type weights_;
  ExecutionSpace exec_;
  struct Panels {
    weight_panels<Scalar, memory_space> gate, up, down;
  } panels_;     // pack_weights
  rows_view h_;  // [max_tokens * k or tile-major rows, F]
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> y_;  // [max_tokens * k, H]
  // Split-K parts of the gate and up products of small batches: [rows, 2F].
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> gate_up_parts_;
  // Descriptors of the weights, h and the gathered rows of x for bulk tensor
  // copies, and those rows ([rows, H], tile-major), where the backend's
  // large kernels use them (empty otherwise).
  Kokkos::View<std::uint64_t*, memory_space> copy_maps_;
  // The same with activation boxes of few_row_boxes kernels (e4m3 operands).
  Kokkos::View<std::uint64_t*, memory_space> few_row_maps_;
  rows_view gathered_rows_;
  // With e4m3 operands (quantizes_activations): x's gathered rows and h as
  // e4m3 codes, tile-major, and their scales ([ceil(H or F / 128), rows]).
  bool e4m3_operands_ = false;
  Kokkos::View<float8_e4m3**, Kokkos::LayoutRight, memory_space> x_codes_, h_codes_;
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> x_scales_, h_scales_;
  // x's rows quantised per token ([max_tokens, H], [ceil(H / 128),
  // max_tokens]; quantizes_per_token).
  Kokkos::View<float8_e4m3**, Kokkos::LayoutRight, memory_space> token_codes_;
  Kokkos::View<float**, Kokkos::LayoutRight, memory_space> token_scales_;
};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
