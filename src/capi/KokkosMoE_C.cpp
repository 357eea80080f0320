// SPDX-License-Identifier: BSD-3-Clause
// The C interface (include/KokkosMoE/kokkos_moe.h) over
// KokkosMoE::Layer<Kokkos::DefaultExecutionSpace, Scalar>, the storage type
// chosen at run time. Host arrays are wrapped in unmanaged views and copied
// to and from buffers of max_tokens rows allocated with the layer.
//
// Kokkos' lifetime: every live layer is in a registry, and a finalize hook
// (Kokkos::push_finalize_hook, pushed with the first layer of each Kokkos
// lifetime) releases the views of all of them while Kokkos is still alive.
// A layer destroyed after the application finalized Kokkos then has only
// its handle left to free; views destroyed after Kokkos::finalize would
// make Kokkos abort, and views never destroyed would leak.
#include <KokkosMoE/kokkos_moe.h>

#include <KokkosMoE/KokkosMoE_Layer.hpp>
#include <KokkosMoE/KokkosMoE_ErrorText.hpp>
#include <KokkosMoE/KokkosMoE_Quantize.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <string>

struct kmoe_layer {
  virtual ~kmoe_layer() = default;
  // ids and weights are null for the layer's own routing.
  virtual void forward(const void* x, const std::int32_t* ids, const float* weights, void* out,
                       std::int64_t num_tokens) = 0;
  // Destroys the layer's views (Kokkos must be initialized); the handle
  // stays, and forwards fail with KMOE_ERROR_STATE.
  virtual void release() noexcept = 0;
  // Drops the views without destroying them, for when Kokkos is gone.
  virtual void abandon() noexcept = 0;
};

namespace {

using Space = Kokkos::DefaultExecutionSpace;

// A host array (row-major) seen with the extents of v.
template <class T, class View>
auto host_view(T* p, const View& v) {
  using U = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  using H = Kokkos::HostSpace;
  if constexpr (View::rank == 1) {
    return Kokkos::View<T*, H, U>(p, v.extent(0));
  } else if constexpr (View::rank == 2) {
    return Kokkos::View<T**, Kokkos::LayoutRight, H, U>(p, v.extent(0), v.extent(1));
  } else {
    return Kokkos::View<T***, Kokkos::LayoutRight, H, U>(p, v.extent(0), v.extent(1), v.extent(2));
  }
}

thread_local std::string last_error;
bool initialized_here = false;

// A call that the layer's state does not allow (KMOE_ERROR_STATE).
struct StateError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The layers created and not yet destroyed, and whether this Kokkos
// lifetime has our finalize hook.
std::mutex registry_mutex;
std::set<kmoe_layer*> live_layers;
bool finalize_hook_pushed = false;

// Runs inside Kokkos::finalize, before Kokkos releases its memory spaces.
void release_all_layers() noexcept {
  const std::lock_guard<std::mutex> lock(registry_mutex);
  for (kmoe_layer* layer : live_layers) layer->release();
  finalize_hook_pushed = false;  // Kokkos pops the hook; a new lifetime needs a new one
}

void register_layer(kmoe_layer* layer) {
  const std::lock_guard<std::mutex> lock(registry_mutex);
  live_layers.insert(layer);  // may throw bad_alloc: the caller still owns the layer
  if (!finalize_hook_pushed) {
    try {
      Kokkos::push_finalize_hook(release_all_layers);
    } catch (...) {
      live_layers.erase(layer);
      throw;
    }
    finalize_hook_pushed = true;
  }
}

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(what);
}

// Copies a host array (row-major, the extents of dst) into a device view.
template <class DeviceView>
void upload(const DeviceView& dst, const void* src) {
  using value = typename DeviceView::non_const_value_type;
  Kokkos::deep_copy(dst, host_view(static_cast<const value*>(src), dst));
}

// The first n rows of a [max_tokens, w] buffer, as a view of the same type.
template <class View>
View rows(const View& v, std::int64_t n) {
  return View(v.data(), n, v.extent(1));
}

template <class Scalar>
class LayerImpl final : public kmoe_layer {
  using layer_type = KokkosMoE::Layer<Space, Scalar>;
  using token = typename layer_type::token_type;
  static_assert(sizeof(token) == sizeof(float) || sizeof(token) == sizeof(std::uint16_t),
                "hidden states of a C dtype are float or 16-bit bits");

 public:
  // The block scales (gate, up, down) of block-scaled types; null otherwise.
  struct Scales {
    const float *gate = nullptr, *up = nullptr, *down = nullptr;
  };
  LayerImpl(const KokkosMoE::Config& c, const float* router, const float* bias, const void* gate,
            const void* up, const void* down, const Scales& scales = {})
      : state_(std::make_unique<State>(c, make_weights(c, router, bias, gate, up, down, scales))) {}

  void forward(const void* x, const std::int32_t* ids, const float* weights, void* out,
               std::int64_t T) override {
    const std::string who = ids ? "kmoe_forward_routed: " : "kmoe_forward: ";
    if (!state_)
      throw StateError(who +
                       "the layer's memory was released when Kokkos was finalized; "
                       "destroy the layer");
    State& s = *state_;
    require(x != nullptr && out != nullptr, (who + "x and out must not be NULL").c_str());
    require(T >= 0 && T <= s.layer.config().max_tokens,
            (who + "num_tokens = " + std::to_string(T) +
             " is outside [0, max_tokens = " + std::to_string(s.layer.config().max_tokens) + "]")
                .c_str());
    if (T == 0) return;
    upload(rows(s.x, T), x);
    if (ids != nullptr) {
      upload(rows(s.ids, T), ids);
      upload(rows(s.weights, T), weights);
      s.layer.check_routing(s.ids, s.weights, T);
      s.layer.forward(s.x, s.ids, s.weights, s.out, T);
    } else {
      s.layer.forward(s.x, s.out, T);
    }
    const auto result = rows(s.out, T);
    Kokkos::deep_copy(host_view(static_cast<token*>(out), result), result);
  }

  void release() noexcept override { state_.reset(); }
  // Destroying views after Kokkos::finalize makes Kokkos abort. Not expected
  // (the hook released them in finalize), but should Kokkos ever be
  // finalized without running its hooks, they are left to the process.
  void abandon() noexcept override { static_cast<void>(state_.release()); }

 private:
  // Everything that holds Kokkos memory.
  struct State {
    State(const KokkosMoE::Config& c, typename layer_type::weights_type w)
        : layer(c, std::move(w)),
          x("KokkosMoE::C::x", c.max_tokens, c.hidden_size),
          out("KokkosMoE::C::out", c.max_tokens, c.hidden_size),
          ids("KokkosMoE::C::ids", c.max_tokens, c.top_k),
          weights("KokkosMoE::C::weights", c.max_tokens, c.top_k) {}
    layer_type layer;
    typename layer_type::tokens_view x, out;
    typename layer_type::ids_view ids;
    typename layer_type::weights_view weights;
  };

  static typename layer_type::weights_type make_weights(const KokkosMoE::Config& c,
                                                        const float* router, const float* bias,
                                                        const void* gate, const void* up,
                                                        const void* down, const Scales& scales) {
    require(router && gate && up && down,
            KokkosMoE::is_block_scaled<Scalar>::value
                ? "kmoe_layer_create_fp8: router, gate, up and down must not be NULL"
                : "kmoe_layer_create: router, gate, up and down must not be NULL");
    c.validate();
    auto w = layer_type::weights_type::allocate(c);
    upload(w.router, router);
    if (bias != nullptr) upload(w.bias, bias);
    upload(w.gate, gate);
    upload(w.up, up);
    upload(w.down, down);
    if constexpr (KokkosMoE::is_block_scaled<Scalar>::value) {
      require(scales.gate && scales.up && scales.down,
              "kmoe_layer_create_fp8: gate_scale, up_scale and down_scale must not be NULL");
      upload(w.gate_scale, scales.gate);
      upload(w.up_scale, scales.up);
      upload(w.down_scale, scales.down);
    }
    return w;
  }

  std::unique_ptr<State> state_;
};

KokkosMoE::Config to_config(const kmoe_config& in) {
  KokkosMoE::Config c;
  c.num_experts = in.num_experts;
  c.top_k = in.top_k;
  c.hidden_size = in.hidden_size;
  c.ffn_size = in.ffn_size;
  c.max_tokens = in.max_tokens;
  switch (in.routing) {
    case KMOE_ROUTING_SOFTMAX_TOPK: c.routing = KokkosMoE::RoutingMode::softmax_topk; break;
    case KMOE_ROUTING_SIGMOID_GROUP_TOPK:
      c.routing = KokkosMoE::RoutingMode::sigmoid_group_topk;
      break;
    case KMOE_ROUTING_EXTERNAL: c.routing = KokkosMoE::RoutingMode::external; break;
    default:
      throw std::invalid_argument("kmoe_config: unknown routing " + std::to_string(in.routing));
  }
  c.renormalize = in.renormalize != 0;
  c.n_group = in.n_group;
  c.topk_group = in.topk_group;
  c.routed_scaling = in.routed_scaling;
  c.batch_invariant = in.batch_invariant != 0;
  return c;
}

// Runs f, turning every exception into a status and a thread-local message.
template <class F>
kmoe_status guarded(F&& f) noexcept {
  try {
    f();
    last_error.clear();
    return KMOE_SUCCESS;
  } catch (const StateError& e) {
    last_error = e.what();
    return KMOE_ERROR_STATE;
  } catch (const std::invalid_argument& e) {
    last_error = KokkosMoE::one_line_message(e.what());
    return KMOE_ERROR_INVALID_ARGUMENT;
  } catch (const std::logic_error& e) {
    last_error = KokkosMoE::one_line_message(e.what());
    return KMOE_ERROR_INVALID_ARGUMENT;
  } catch (const std::bad_alloc& e) {
    last_error = std::string("out of memory: ") + e.what();
    return KMOE_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    last_error = KokkosMoE::one_line_message(e.what());
    // Kokkos reports a failed allocation as a runtime_error.
    return KokkosMoE::is_allocation_failure(e) ? KMOE_ERROR_OUT_OF_MEMORY : KMOE_ERROR_INTERNAL;
  } catch (...) {
    last_error = "unknown exception";
    return KMOE_ERROR_INTERNAL;
  }
}

kmoe_status fail(kmoe_status s, const char* what) {
  last_error = what;
  return s;
}

}  // namespace

extern "C" {

void kmoe_config_init(kmoe_config* config) {
  if (config == nullptr) return;
  const KokkosMoE::Config d;
  *config = kmoe_config{};
  config->num_experts = d.num_experts;
  config->top_k = d.top_k;
  config->routing = KMOE_ROUTING_SOFTMAX_TOPK;
  config->renormalize = d.renormalize ? 1 : 0;
  config->n_group = d.n_group;
  config->topk_group = d.topk_group;
  config->routed_scaling = d.routed_scaling;
  config->dtype = KMOE_FP32;
  config->batch_invariant = d.batch_invariant ? 1 : 0;
}

kmoe_status kmoe_initialize(int argc, char** argv) {
  if (argc < 0 || (argc > 0 && argv == nullptr))
    return fail(KMOE_ERROR_INVALID_ARGUMENT, "kmoe_initialize: argv is NULL with argc > 0");
  return guarded([&] {
    if (Kokkos::is_initialized()) return;
    Kokkos::initialize(argc, argv);
    initialized_here = true;
  });
}

kmoe_status kmoe_finalize(void) {
  bool layers_alive = false;
  {
    const std::lock_guard<std::mutex> lock(registry_mutex);
    layers_alive = !live_layers.empty();
  }
  if (layers_alive) return fail(KMOE_ERROR_STATE, "kmoe_finalize: destroy every layer first");
  return guarded([] {
    // The application may have finalized Kokkos itself meanwhile.
    if (initialized_here && Kokkos::is_initialized()) Kokkos::finalize();
    initialized_here = false;
  });
}

kmoe_status kmoe_layer_create(const kmoe_config* config, const float* router, const float* bias,
                              const void* gate, const void* up, const void* down,
                              kmoe_layer** layer) {
  if (config == nullptr || layer == nullptr)
    return fail(KMOE_ERROR_INVALID_ARGUMENT,
                "kmoe_layer_create: config and layer must not be NULL");
  *layer = nullptr;
  if (!Kokkos::is_initialized())
    return fail(KMOE_ERROR_NOT_INITIALIZED, "kmoe_layer_create: Kokkos is not initialized");
  return guarded([&] {
    const KokkosMoE::Config c = to_config(*config);
    std::unique_ptr<kmoe_layer> made;
    switch (config->dtype) {
      case KMOE_FP32: made.reset(new LayerImpl<float>(c, router, bias, gate, up, down)); break;
      case KMOE_FP16:
        made.reset(new LayerImpl<KokkosMoE::float16>(c, router, bias, gate, up, down));
        break;
      case KMOE_BF16:
        made.reset(new LayerImpl<KokkosMoE::bfloat16>(c, router, bias, gate, up, down));
        break;
      case KMOE_FP8:
        throw std::invalid_argument(
            "kmoe_layer_create: KMOE_FP8 weights come with block scales: call "
            "kmoe_layer_create_fp8");
      default:
        throw std::invalid_argument("kmoe_layer_create: unknown dtype " +
                                    std::to_string(config->dtype));
    }
    register_layer(made.get());
    *layer = made.release();
  });
}

kmoe_status kmoe_quantize_fp8(int64_t count, int64_t rows, int64_t cols, const float* w, uint8_t* q,
                              float* scales) {
  if (!Kokkos::is_initialized())
    return fail(KMOE_ERROR_NOT_INITIALIZED, "kmoe_quantize_fp8: Kokkos is not initialized");
  return guarded([&] {
    require(w && q && scales, "kmoe_quantize_fp8: w, q and scales must not be NULL");
    require(count >= 0 && rows >= 0 && cols >= 0,
            "kmoe_quantize_fp8: count, rows and cols must be >= 0");
    const std::int64_t block = KokkosMoE::weight_block;
    using tensor = Kokkos::View<const float***, Kokkos::LayoutRight, Kokkos::HostSpace,
                                Kokkos::MemoryUnmanaged>;
    using codes = Kokkos::View<KokkosMoE::float8_e4m3***, Kokkos::LayoutRight, Kokkos::HostSpace,
                               Kokkos::MemoryUnmanaged>;
    using scale_tensor =
        Kokkos::View<float***, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
    KokkosMoE::Impl::quantize_blocks(
        tensor(w, count, rows, cols),
        codes(reinterpret_cast<KokkosMoE::float8_e4m3*>(q), count, rows, cols),
        scale_tensor(scales, count, (rows + block - 1) / block, (cols + block - 1) / block),
        "kmoe_quantize_fp8: w");
    Kokkos::fence();
  });
}

kmoe_status kmoe_layer_create_fp8(const kmoe_config* config, const float* router, const float* bias,
                                  const uint8_t* gate, const float* gate_scale, const uint8_t* up,
                                  const float* up_scale, const uint8_t* down,
                                  const float* down_scale, kmoe_layer** layer) {
  if (config == nullptr || layer == nullptr)
    return fail(KMOE_ERROR_INVALID_ARGUMENT,
                "kmoe_layer_create_fp8: config and layer must not be NULL");
  *layer = nullptr;
  if (!Kokkos::is_initialized())
    return fail(KMOE_ERROR_NOT_INITIALIZED, "kmoe_layer_create_fp8: Kokkos is not initialized");
  return guarded([&] {
    require(config->dtype == KMOE_FP8, "kmoe_layer_create_fp8: config->dtype must be KMOE_FP8");
    using impl = LayerImpl<KokkosMoE::float8_e4m3>;
    std::unique_ptr<kmoe_layer> made(new impl(to_config(*config), router, bias, gate, up, down,
                                              impl::Scales{gate_scale, up_scale, down_scale}));
    register_layer(made.get());
    *layer = made.release();
  });
}

void kmoe_layer_destroy(kmoe_layer* layer) {
  if (layer == nullptr) return;
  const std::lock_guard<std::mutex> lock(registry_mutex);
  live_layers.erase(layer);
  // After the application finalized Kokkos, the finalize hook has released
  // the views already: only the handle is left.
  if (!Kokkos::is_initialized()) layer->abandon();
  delete layer;
}

kmoe_status kmoe_forward(kmoe_layer* layer, const void* x, void* out, int64_t num_tokens) {
  if (layer == nullptr) return fail(KMOE_ERROR_INVALID_ARGUMENT, "kmoe_forward: layer is NULL");
  if (!Kokkos::is_initialized())
    return fail(KMOE_ERROR_NOT_INITIALIZED, "kmoe_forward: Kokkos has been finalized");
  return guarded([&] { layer->forward(x, nullptr, nullptr, out, num_tokens); });
}

kmoe_status kmoe_forward_routed(kmoe_layer* layer, const void* x, const int32_t* ids,
                                const float* weights, void* out, int64_t num_tokens) {
  if (layer == nullptr || ids == nullptr || weights == nullptr)
    return fail(KMOE_ERROR_INVALID_ARGUMENT,
                "kmoe_forward_routed: layer, ids and weights must not be NULL");
  if (!Kokkos::is_initialized())
    return fail(KMOE_ERROR_NOT_INITIALIZED, "kmoe_forward_routed: Kokkos has been finalized");
  return guarded([&] { layer->forward(x, ids, weights, out, num_tokens); });
}

const char* kmoe_last_error(void) { return last_error.c_str(); }

void kmoe_set_last_error(const char* message) { last_error = message ? message : ""; }

const char* kmoe_status_string(kmoe_status status) {
  switch (status) {
    case KMOE_SUCCESS: return "KMOE_SUCCESS";
    case KMOE_ERROR_INVALID_ARGUMENT: return "KMOE_ERROR_INVALID_ARGUMENT";
    case KMOE_ERROR_NOT_INITIALIZED: return "KMOE_ERROR_NOT_INITIALIZED";
    case KMOE_ERROR_OUT_OF_MEMORY: return "KMOE_ERROR_OUT_OF_MEMORY";
    case KMOE_ERROR_STATE: return "KMOE_ERROR_STATE";
    case KMOE_ERROR_INTERNAL: return "KMOE_ERROR_INTERNAL";
  }
  return "unknown kmoe_status";
}

}  // extern "C"
