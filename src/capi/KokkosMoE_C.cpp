// The C interface (include/KokkosMoE/kokkos_moe.h) over
// KokkosMoE::Layer<Kokkos::DefaultExecutionSpace, Scalar>, the storage type
// chosen at run time. Host arrays are wrapped in unmanaged views and copied
// to and from buffers of max_tokens rows allocated with the layer.
#include <KokkosMoE/kokkos_moe.h>

#include <KokkosMoE/KokkosMoE_Layer.hpp>

#include <Kokkos_Core.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

struct kmoe_layer {
  virtual ~kmoe_layer() = default;
  // ids and weights are null for the layer's own routing.
  virtual void forward(const void* x, const std::int32_t* ids, const float* weights, void* out,
                       std::int64_t num_tokens) = 0;
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
std::atomic<int> live_layers{0};
bool initialized_here = false;

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
  static_assert(sizeof(Scalar) == sizeof(float) || sizeof(Scalar) == sizeof(std::uint16_t),
                "storage of a C dtype is float or 16-bit bits");
  using layer_type = KokkosMoE::Layer<Space, Scalar>;

 public:
  LayerImpl(const KokkosMoE::Config& c, const float* router, const float* bias, const void* gate,
            const void* up, const void* down)
      : layer_(c, make_weights(c, router, bias, gate, up, down)),
        x_("KokkosMoE::C::x", c.max_tokens, c.hidden_size),
        out_("KokkosMoE::C::out", c.max_tokens, c.hidden_size),
        ids_("KokkosMoE::C::ids", c.max_tokens, c.top_k),
        weights_("KokkosMoE::C::weights", c.max_tokens, c.top_k) {}

  void forward(const void* x, const std::int32_t* ids, const float* weights, void* out,
               std::int64_t T) override {
    const std::string who = ids ? "kmoe_forward_routed: " : "kmoe_forward: ";
    require(x != nullptr && out != nullptr, (who + "x and out must not be NULL").c_str());
    require(T >= 0 && T <= layer_.config().max_tokens,
            (who + "num_tokens = " + std::to_string(T) + " is outside [0, max_tokens = " +
             std::to_string(layer_.config().max_tokens) + "]")
                .c_str());
    if (T == 0) return;
    upload(rows(x_, T), x);
    if (ids != nullptr) {
      upload(rows(ids_, T), ids);
      upload(rows(weights_, T), weights);
      layer_.check_routing(ids_, weights_, T);
      layer_.forward(x_, ids_, weights_, out_, T);
    } else {
      layer_.forward(x_, out_, T);
    }
    const auto result = rows(out_, T);
    Kokkos::deep_copy(host_view(static_cast<Scalar*>(out), result), result);
  }

 private:
  static typename layer_type::weights_type make_weights(const KokkosMoE::Config& c,
                                                        const float* router, const float* bias,
                                                        const void* gate, const void* up,
                                                        const void* down) {
    require(router && gate && up && down,
            "kmoe_layer_create: router, gate, up and down must not be NULL");
    c.validate();
    auto w = layer_type::weights_type::allocate(c);
    upload(w.router, router);
    if (bias != nullptr) upload(w.bias, bias);
    upload(w.gate, gate);
    upload(w.up, up);
    upload(w.down, down);
    return w;
  }

  layer_type layer_;
  typename layer_type::tokens_view x_, out_;
  typename layer_type::ids_view ids_;
  typename layer_type::weights_view weights_;
};

KokkosMoE::Config to_config(const kmoe_config& in) {
  KokkosMoE::Config c;
  c.num_experts = in.num_experts;
  c.top_k       = in.top_k;
  c.hidden_size = in.hidden_size;
  c.ffn_size    = in.ffn_size;
  c.max_tokens  = in.max_tokens;
  switch (in.routing) {
    case KMOE_ROUTING_SOFTMAX_TOPK: c.routing = KokkosMoE::RoutingMode::softmax_topk; break;
    case KMOE_ROUTING_SIGMOID_GROUP_TOPK:
      c.routing = KokkosMoE::RoutingMode::sigmoid_group_topk;
      break;
    case KMOE_ROUTING_EXTERNAL: c.routing = KokkosMoE::RoutingMode::external; break;
    default: throw std::invalid_argument("kmoe_config: unknown routing " + std::to_string(in.routing));
  }
  c.renormalize    = in.renormalize != 0;
  c.n_group        = in.n_group;
  c.topk_group     = in.topk_group;
  c.routed_scaling = in.routed_scaling;
  return c;
}

// A message on one line: Kokkos appends a blank line and a traceback note.
std::string first_paragraph(const char* what) {
  std::string s(what);
  return s.substr(0, s.find("\n\n"));
}

// Runs f, turning every exception into a status and a thread-local message.
template <class F>
kmoe_status guarded(F&& f) noexcept {
  try {
    f();
    last_error.clear();
    return KMOE_SUCCESS;
  } catch (const std::invalid_argument& e) {
    last_error = e.what();
    return KMOE_ERROR_INVALID_ARGUMENT;
  } catch (const std::logic_error& e) {
    last_error = e.what();
    return KMOE_ERROR_INVALID_ARGUMENT;
  } catch (const std::bad_alloc& e) {
    last_error = std::string("out of memory: ") + e.what();
    return KMOE_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    last_error = first_paragraph(e.what());
    // Kokkos 3 reports a failed allocation as a runtime_error.
    if (last_error.find("failed to allocate") != std::string::npos)
      return KMOE_ERROR_OUT_OF_MEMORY;
    return KMOE_ERROR_INTERNAL;
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
  *config                = kmoe_config{};
  config->num_experts    = d.num_experts;
  config->top_k          = d.top_k;
  config->routing        = KMOE_ROUTING_SOFTMAX_TOPK;
  config->renormalize    = d.renormalize ? 1 : 0;
  config->n_group        = d.n_group;
  config->topk_group     = d.topk_group;
  config->routed_scaling = d.routed_scaling;
  config->dtype          = KMOE_FP32;
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
  if (live_layers.load() != 0)
    return fail(KMOE_ERROR_STATE, "kmoe_finalize: destroy every layer first");
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
    return fail(KMOE_ERROR_INVALID_ARGUMENT, "kmoe_layer_create: config and layer must not be NULL");
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
      default:
        throw std::invalid_argument("kmoe_layer_create: unknown dtype " +
                                    std::to_string(config->dtype));
    }
    *layer = made.release();
    ++live_layers;
  });
}

void kmoe_layer_destroy(kmoe_layer* layer) {
  if (layer == nullptr) return;
  // Its views would free memory that Kokkos' finalize already released
  // (Kokkos aborts then): release the handle only.
  if (Kokkos::is_initialized()) delete layer;
  --live_layers;
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
