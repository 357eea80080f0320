// Error paths of the C interface, in one process from Kokkos' start to its
// end: every bad call returns its status with a message naming the problem,
// and none crashes (also after the application finalizes Kokkos itself
// under a live layer). A plain main: the order of initialize and finalize
// is part of what is tested.
#include <KokkosMoE/kokkos_moe.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {
int failures = 0;

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

  // The application ends Kokkos itself, the layer still alive.
  Kokkos::finalize();
  EXPECT_STATUS(kmoe_forward_routed(layer, x.data(), ids.data(), weights.data(), out.data(), 2),
                KMOE_ERROR_NOT_INITIALIZED, "finalized");
  kmoe_layer_destroy(layer);  // releases the handle only; must not abort
  EXPECT_STATUS(kmoe_finalize(), KMOE_SUCCESS, "");

  std::printf("%s\n", failures == 0 ? "C interface error paths: PASSED" : "FAILED");
  return failures == 0 ? 0 : 1;
}
