// SPDX-License-Identifier: BSD-3-Clause
// Error paths of the C interface, in one process from Kokkos' start to its
// end: every bad call returns its status with a message naming the problem,
// and none crashes (also after the application finalizes Kokkos itself
// under a live layer, whose memory Kokkos' finalize then releases: checked
// with Kokkos Tools' allocation callbacks). A plain main: the order of
// initialize and finalize is part of what is tested.
#include <KokkosMoE/kokkos_moe.h>

#include <KokkosMoE/KokkosMoE_Scalar.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {
int failures = 0;

// The live allocations of KokkosMoE (labels "KokkosMoE::..."), as Kokkos
// Tools reports them.
std::map<const void*, std::string> live_allocations;

void on_allocate(Kokkos_Profiling_SpaceHandle, const char* label, const void* ptr, std::uint64_t) {
  if (std::strncmp(label, "KokkosMoE", 9) == 0) live_allocations[ptr] = label;
}
void on_deallocate(Kokkos_Profiling_SpaceHandle, const char*, const void* ptr, std::uint64_t) {
  live_allocations.erase(ptr);
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED %s\n", what);
    ++failures;
  }
}

void expect(kmoe_status got, kmoe_status want, const char* fragment, const char* call) {
  const char* message = kmoe_last_error();
  if (got != want || std::strstr(message, fragment) == nullptr) {
    std::printf("FAILED %s: %s \"%s\", expected %s with \"%s\"\n", call, kmoe_status_string(got),
                message, kmoe_status_string(want), fragment);
    ++failures;
  }
}
#define EXPECT_STATUS(call, want, fragment) expect((call), (want), (fragment), #call)
}  // namespace

int main() {
  EXPECT_STATUS(kmoe_initialize(1, nullptr), KMOE_ERROR_INVALID_ARGUMENT, "argv is NULL");

  kmoe_config c;
  kmoe_config_init(&c);
  c.num_experts = 4, c.top_k = 2, c.hidden_size = 8, c.ffn_size = 4, c.max_tokens = 3;
  c.routing = KMOE_ROUTING_EXTERNAL;
  std::vector<float> router(4 * 8, 0.1f), gate(4 * 4 * 8, 0.01f), up(gate), down(gate);
  std::vector<float> x(3 * 8, 1.0f), out(3 * 8), weights(3 * 2, 0.5f);
  std::vector<std::int32_t> ids = {0, 1, 2, 3, 1, 1};  // token 2 repeats expert 1
  kmoe_layer* layer = nullptr;
  EXPECT_STATUS(kmoe_layer_create(&c, router.data(), nullptr, gate.data(), up.data(), down.data(),
                                  &layer),
                KMOE_ERROR_NOT_INITIALIZED, "not initialized");

  EXPECT_STATUS(kmoe_initialize(0, nullptr), KMOE_SUCCESS, "");
  Kokkos::Tools::Experimental::set_allocate_data_callback(on_allocate);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(on_deallocate);

  // An allocation that cannot succeed (1 PiB of weights, beyond any address
  // space): out of memory, in one line (Kokkos 3 appends a paragraph).
  kmoe_config huge = c;
  huge.hidden_size = std::int64_t(1) << 21, huge.ffn_size = std::int64_t(1) << 25;
  huge.max_tokens = 1, huge.dtype = KMOE_BF16;
  EXPECT_STATUS(kmoe_layer_create(&huge, router.data(), nullptr, gate.data(), up.data(),
                                  down.data(), &layer),
                KMOE_ERROR_OUT_OF_MEMORY, "failed to allocate");
  check(std::strchr(kmoe_last_error(), '\n') == nullptr, "out-of-memory message on one line");
  check(layer == nullptr, "no layer after a failed create");
  check(live_allocations.empty(), "a failed create leaves no allocation");

  kmoe_config wraps = c;
  wraps.top_k = 4, wraps.max_tokens = std::int64_t(1) << 62;  // max_tokens * top_k wraps to 0
  EXPECT_STATUS(kmoe_layer_create(&wraps, router.data(), nullptr, gate.data(), up.data(),
                                  down.data(), &layer),
                KMOE_ERROR_INVALID_ARGUMENT, "max_tokens");
  EXPECT_STATUS(kmoe_layer_create(&c, router.data(), nullptr, gate.data(), up.data(), down.data(),
                                  &layer),
                KMOE_SUCCESS, "");
  EXPECT_STATUS(kmoe_forward_routed(layer, nullptr, ids.data(), weights.data(), out.data(), 1),
                KMOE_ERROR_INVALID_ARGUMENT, "kmoe_forward_routed: x and out");
  EXPECT_STATUS(kmoe_forward_routed(layer, x.data(), ids.data(), weights.data(), out.data(), 4),
                KMOE_ERROR_INVALID_ARGUMENT, "num_tokens = 4 is outside [0, max_tokens = 3]");
  EXPECT_STATUS(kmoe_forward_routed(layer, x.data(), ids.data(), weights.data(), out.data(), 3),
                KMOE_ERROR_INVALID_ARGUMENT, "token 2");
  EXPECT_STATUS(kmoe_forward_routed(layer, x.data(), ids.data(), weights.data(), out.data(), 2),
                KMOE_SUCCESS, "");
  EXPECT_STATUS(kmoe_forward(layer, x.data(), out.data(), 1), KMOE_ERROR_INVALID_ARGUMENT,
                "external");
  EXPECT_STATUS(kmoe_finalize(), KMOE_ERROR_STATE, "destroy every layer");

  // batch_invariant reaches the layer: a token alone gives the bits it has in
  // a batch of 3 (a shape whose default mode splits H differently for 1
  // and 3 tokens, and so differs in the last bits).
  {
    kmoe_config bi = c;
    bi.hidden_size = 1700, bi.ffn_size = 40, bi.batch_invariant = 1;
    std::vector<float> g(4 * 40 * 1700), u(g.size()), d(g.size()), xs(3 * 1700), o3(3 * 1700),
        o1(1700), r(4 * 1700, 0.1f);
    for (std::size_t i = 0; i < g.size(); ++i) {
      g[i] = 0.02f * float(int(i * 7919 % 201) - 100) / 100;
      u[i] = 0.02f * float(int(i * 6271 % 199) - 99) / 99;
      d[i] = 0.1f * float(int(i * 4513 % 197) - 98) / 98;
    }
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = float(int(i * 3541 % 101) - 50) / 50;
    std::vector<std::int32_t> bi_ids = {0, 1, 2, 3, 1, 0};
    kmoe_layer* invariant = nullptr;
    EXPECT_STATUS(kmoe_layer_create(&bi, r.data(), nullptr, g.data(), u.data(), d.data(),
                                    &invariant),
                  KMOE_SUCCESS, "");
    EXPECT_STATUS(kmoe_forward_routed(invariant, xs.data(), bi_ids.data(), weights.data(),
                                      o3.data(), 3),
                  KMOE_SUCCESS, "");
    EXPECT_STATUS(kmoe_forward_routed(invariant, xs.data(), bi_ids.data(), weights.data(),
                                      o1.data(), 1),
                  KMOE_SUCCESS, "");
    check(std::memcmp(o1.data(), o3.data(), o1.size() * sizeof(float)) == 0,
          "a batch-invariant layer: token 0 alone has its bits in the batch");
    kmoe_layer_destroy(invariant);
  }

  // fp8: weights quantised by kmoe_quantize_fp8 (a NaN refused), a layer
  // of them (not through kmoe_layer_create; scales required), its bf16
  // output against float64 on the values the codes stand for.
  {
    const int E = 3, K = 2, T = 2;
    const std::int64_t H = 160, F = 136;  // blocks 2 x 2, partial
    kmoe_config q8 = c;
    q8.num_experts = E, q8.top_k = K, q8.hidden_size = H, q8.ffn_size = F, q8.max_tokens = T;
    q8.dtype = KMOE_FP8;
    std::vector<float> g(E * F * H), u(g.size()), d(g.size()), r(E * H, 0.1f);
    for (std::size_t i = 0; i < g.size(); ++i) {
      g[i] = 0.1f * float(int(i * 7919 % 201) - 100) / 100;
      u[i] = 0.1f * float(int(i * 6271 % 199) - 99) / 99;
      d[i] = 0.1f * float(int(i * 4513 % 197) - 98) / 98;
    }
    std::vector<std::uint8_t> gq(g.size()), uq(g.size()), dq(g.size());
    std::vector<float> gs(E * 2 * 2), us(gs.size()), ds(gs.size());
    std::vector<float> bad(g);
    bad[5 * H + 3] = NAN;
    EXPECT_STATUS(kmoe_quantize_fp8(E, F, H, bad.data(), gq.data(), gs.data()),
                  KMOE_ERROR_INVALID_ARGUMENT, "w is not finite at expert 0, row 5, column 3");
    EXPECT_STATUS(kmoe_quantize_fp8(E, F, H, g.data(), gq.data(), gs.data()), KMOE_SUCCESS, "");
    EXPECT_STATUS(kmoe_quantize_fp8(E, F, H, u.data(), uq.data(), us.data()), KMOE_SUCCESS, "");
    EXPECT_STATUS(kmoe_quantize_fp8(E, H, F, d.data(), dq.data(), ds.data()), KMOE_SUCCESS, "");
    kmoe_layer* fp8 = nullptr;
    EXPECT_STATUS(kmoe_layer_create(&q8, r.data(), nullptr, gq.data(), uq.data(), dq.data(), &fp8),
                  KMOE_ERROR_INVALID_ARGUMENT, "kmoe_layer_create_fp8");
    EXPECT_STATUS(kmoe_layer_create_fp8(&q8, r.data(), nullptr, gq.data(), gs.data(), uq.data(),
                                        nullptr, dq.data(), ds.data(), &fp8),
                  KMOE_ERROR_INVALID_ARGUMENT, "up_scale");
    EXPECT_STATUS(kmoe_layer_create_fp8(&q8, r.data(), nullptr, gq.data(), gs.data(), uq.data(),
                                        us.data(), dq.data(), ds.data(), &fp8),
                  KMOE_SUCCESS, "");
    std::vector<std::uint16_t> xb(T * H), ob(T * H);
    for (std::size_t i = 0; i < xb.size(); ++i)
      xb[i] = KokkosMoE::bfloat16(float(int(i * 3541 % 101) - 50) / 50).bits;
    std::vector<std::int32_t> q8_ids = {0, 2, 1, 2};
    std::vector<float> q8_w = {0.7f, 0.3f, 0.4f, 0.6f};
    EXPECT_STATUS(kmoe_forward_routed(fp8, xb.data(), q8_ids.data(), q8_w.data(), ob.data(), T),
                  KMOE_SUCCESS, "");
    const auto value = [](const std::vector<std::uint8_t>& codes, const std::vector<float>& scale,
                          std::int64_t rows, std::int64_t cols, int e, std::int64_t i,
                          std::int64_t j) {
      const std::int64_t rb = (rows + 127) / 128, cb = (cols + 127) / 128;
      return double(KokkosMoE::float8_e4m3::to_float(codes[(e * rows + i) * cols + j])) *
             scale[(e * rb + i / 128) * cb + j / 128];
    };
    double worst = 0;
    for (int t = 0; t < T; ++t) {
      std::vector<double> ref(H, 0.0);
      for (int j = 0; j < K; ++j) {
        const int e = q8_ids[t * K + j];
        std::vector<double> h(F);
        for (std::int64_t f = 0; f < F; ++f) {
          double gv = 0, uv = 0;
          for (std::int64_t col = 0; col < H; ++col) {
            const double xv = KokkosMoE::Impl::bits_float(std::uint32_t(xb[t * H + col]) << 16);
            gv += xv * value(gq, gs, F, H, e, f, col);
            uv += xv * value(uq, us, F, H, e, f, col);
          }
          h[f] = gv / (1 + std::exp(-gv)) * uv;
        }
        for (std::int64_t n = 0; n < H; ++n) {
          double acc = 0;
          for (std::int64_t f = 0; f < F; ++f) acc += h[f] * value(dq, ds, H, F, e, n, f);
          ref[n] += q8_w[t * K + j] * acc;
        }
      }
      double diff = 0, scale = 0;
      for (std::int64_t n = 0; n < H; ++n) {
        const double got = KokkosMoE::Impl::bits_float(std::uint32_t(ob[t * H + n]) << 16);
        diff = std::max(diff, std::isnan(got) ? INFINITY : std::abs(got - ref[n]));
        scale = std::max(scale, std::abs(ref[n]));
      }
      worst = std::max(worst, diff / scale);
    }
    check(worst < 1e-2, "fp8 layer from C against float64 on its dequantised weights");
    kmoe_layer_destroy(fp8);
  }

  // A second layer, destroyed while Kokkos lives: all its memory goes.
  const std::size_t before_second = live_allocations.size();
  kmoe_layer* second = nullptr;
  EXPECT_STATUS(kmoe_layer_create(&c, router.data(), nullptr, gate.data(), up.data(), down.data(),
                                  &second),
                KMOE_SUCCESS, "");
  check(live_allocations.size() > before_second, "the allocation callbacks see the layer");
  kmoe_layer_destroy(second);
  check(live_allocations.size() == before_second, "destroy frees the layer's views");

  // The application ends Kokkos itself, the layer still alive: Kokkos'
  // finalize releases the layer's views (its finalize hook), and destroy
  // afterwards frees the handle (kokkos_moe.h).
  check(!live_allocations.empty(), "the live layer holds views");
  Kokkos::finalize();
  for (const auto& a : live_allocations) std::printf("still allocated: %s\n", a.second.c_str());
  check(live_allocations.empty(), "Kokkos::finalize released the live layer's views");
  EXPECT_STATUS(kmoe_forward_routed(layer, x.data(), ids.data(), weights.data(), out.data(), 2),
                KMOE_ERROR_NOT_INITIALIZED, "finalized");
  EXPECT_STATUS(kmoe_finalize(), KMOE_ERROR_STATE, "destroy every layer");
  kmoe_layer_destroy(layer);  // frees the handle; must not abort
  EXPECT_STATUS(kmoe_finalize(), KMOE_SUCCESS, "");

  std::printf("%s\n", failures == 0 ? "C interface error paths: PASSED" : "FAILED");
  return failures == 0 ? 0 : 1;
}
