/* SPDX-License-Identifier: BSD-3-Clause */
/* The C interface of KokkosMoE: one MoE layer behind an opaque handle.
 *
 * The layer runs on Kokkos::DefaultExecutionSpace of the library's build
 * (CUDA, HIP, OpenMP or Serial); the storage type is chosen at run time.
 * Every array passed here is a HOST array in row-major (C) order: the layer
 * copies it to its memory space and copies results back. Device pointers are
 * a later extension.
 *
 * Storage of the 16-bit types is their raw bit pattern (uint16_t): IEEE
 * binary16 for KMOE_FP16, the upper half of a float for KMOE_BF16. KMOE_FP32
 * storage is float. Router weights, bias and routing weights are always float.
 *
 * No C++ exception crosses this interface: every call returns a kmoe_status,
 * and kmoe_last_error() gives the message of the last failed call on the
 * calling thread. Kokkos::abort (a kernel's fatal error) still ends the
 * process, as it does in C++.
 */
#ifndef KOKKOS_MOE_H
#define KOKKOS_MOE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kmoe_status {
  KMOE_SUCCESS = 0,
  KMOE_ERROR_INVALID_ARGUMENT = 1, /* bad configuration, shape, pointer or routing */
  KMOE_ERROR_NOT_INITIALIZED = 2,  /* Kokkos is not initialized (see kmoe_initialize) */
  KMOE_ERROR_OUT_OF_MEMORY = 3,    /* an allocation failed */
  KMOE_ERROR_STATE = 4,            /* e.g. kmoe_finalize with layers still alive, or a
                                      forward on a layer whose memory went with Kokkos */
  KMOE_ERROR_INTERNAL = 5          /* any other failure; see kmoe_last_error() */
} kmoe_status;

/* KMOE_FP8: expert weights in float8 e4m3 (uint8_t bit patterns) with a
 * float scale per 128 x 128 block (DeepSeek-V3's layout; made by
 * kmoe_quantize_fp8, given to kmoe_layer_create_fp8), hidden states and
 * outputs in bf16. */
typedef enum kmoe_dtype { KMOE_FP32 = 0, KMOE_FP16 = 1, KMOE_BF16 = 2, KMOE_FP8 = 3 } kmoe_dtype;

typedef enum kmoe_routing {
  KMOE_ROUTING_SOFTMAX_TOPK = 0,       /* softmax over E, top-k (Mixtral) */
  KMOE_ROUTING_SIGMOID_GROUP_TOPK = 1, /* DeepSeek-V3 group-limited top-k */
  KMOE_ROUTING_EXTERNAL = 2            /* ids and weights given: kmoe_forward_routed only */
} kmoe_routing;

/* Shape and routing of a layer; fields as in KokkosMoE::Config. Enumerations
 * are stored as int32_t so that the layout is the same from every language
 * (the Fortran module binds this struct). Fill with kmoe_config_init first. */
typedef struct kmoe_config {
  int32_t num_experts;     /* E */
  int32_t top_k;           /* k */
  int64_t hidden_size;     /* H */
  int64_t ffn_size;        /* F */
  int64_t max_tokens;      /* buffers are sized once for this many tokens */
  int32_t routing;         /* kmoe_routing */
  int32_t renormalize;     /* nonzero: the k weights sum to 1 before scaling */
  int32_t n_group;         /* sigmoid_group_topk: groups of experts */
  int32_t topk_group;      /* sigmoid_group_topk: groups kept per token */
  float routed_scaling;    /* sigmoid_group_topk: weight multiplier */
  int32_t dtype;           /* kmoe_dtype: storage of gate/up/down, x and out */
  int32_t batch_invariant; /* nonzero: a token's output bits do not depend on its
                              batch (KokkosMoE::Config::batch_invariant) */
} kmoe_config;

typedef struct kmoe_layer kmoe_layer;

/* The defaults of KokkosMoE::Config (E=8, k=2, softmax_topk, renormalize),
 * sizes 0, dtype KMOE_FP32. */
void kmoe_config_init(kmoe_config* config);

/* Initializes Kokkos unless the application already did (then nothing is
 * done, and kmoe_finalize will leave Kokkos alone). argv may be NULL when
 * argc is 0; Kokkos' own options (--kokkos-threads=N with Kokkos 3,
 * --kokkos-num-threads=N with Kokkos 4, ...) are honoured. Not thread-safe:
 * call it and kmoe_finalize from one thread. */
kmoe_status kmoe_initialize(int argc, char** argv);
/* Finalizes Kokkos if kmoe_initialize initialized it. All layers must have
 * been destroyed (KMOE_ERROR_STATE otherwise, and nothing is finalized). */
kmoe_status kmoe_finalize(void);

/* Creates a layer and uploads its weights (host arrays, row-major):
 *   router float[E*H], bias float[E] or NULL (zeros),
 *   gate, up [E*F*H] and down [E*H*F] in the storage of config->dtype
 *   (not KMOE_FP8: see kmoe_layer_create_fp8). */
kmoe_status kmoe_layer_create(const kmoe_config* config, const float* router, const float* bias,
                              const void* gate, const void* up, const void* down,
                              kmoe_layer** layer);
/* Block-scaled e4m3 weights from float ones (Kokkos initialized): count
 * row-major matrices [rows, cols], one after another, in w, to q
 * [count * rows * cols] and scales [count, ceil(rows / 128), ceil(cols / 128)]:
 * each 128 x 128 block's scale is its largest magnitude / 448 (1 for zeros),
 * its elements value / scale rounded to nearest even. A non-finite weight is
 * KMOE_ERROR_INVALID_ARGUMENT, naming it. For gate and up count = E, rows = F,
 * cols = H; for down rows = H, cols = F. */
kmoe_status kmoe_quantize_fp8(int64_t count, int64_t rows, int64_t cols, const float* w, uint8_t* q,
                              float* scales);
/* A layer with e4m3 expert weights (config->dtype KMOE_FP8): gate, up
 * [E*F*H] and down [E*H*F] as e4m3 bytes with their block scales
 * gate_scale, up_scale [E, ceil(F/128), ceil(H/128)] and down_scale
 * [E, ceil(H/128), ceil(F/128)] (kmoe_quantize_fp8's); router and bias as
 * for kmoe_layer_create. x and out of its forwards are bf16. NaN codes and
 * non-finite scales are refused. */
kmoe_status kmoe_layer_create_fp8(const kmoe_config* config, const float* router, const float* bias,
                                  const uint8_t* gate, const float* gate_scale, const uint8_t* up,
                                  const float* up_scale, const uint8_t* down,
                                  const float* down_scale, kmoe_layer** layer);
/* Frees the layer: its Kokkos memory (weights, buffers) and its handle.
 * NULL is ignored; the handle is invalid afterwards (set it to NULL: a
 * second destroy of the same handle is undefined, as for free).
 * If the application finalizes Kokkos itself while layers are alive,
 * Kokkos::finalize releases their Kokkos memory (a finalize hook the
 * interface registers with Kokkos::push_finalize_hook: views cannot be
 * freed once Kokkos is gone); such a layer keeps only its handle, its
 * forwards return KMOE_ERROR_NOT_INITIALIZED (KMOE_ERROR_STATE if Kokkos was
 * initialized again), and kmoe_layer_destroy frees the handle. Nothing
 * leaks either way. */
void kmoe_layer_destroy(kmoe_layer* layer);

/* out[T, H] = the layer applied to x[T, H] with its own router (not for
 * KMOE_ROUTING_EXTERNAL). x and out in the storage of the layer's dtype;
 * num_tokens <= max_tokens. Returns when out is written. */
kmoe_status kmoe_forward(kmoe_layer* layer, const void* x, void* out, int64_t num_tokens);
/* The same with given routing: ids int32[T*k] (0-based expert indices,
 * distinct per token) and weights float[T*k]; checked before use. */
kmoe_status kmoe_forward_routed(kmoe_layer* layer, const void* x, const int32_t* ids,
                                const float* weights, void* out, int64_t num_tokens);

/* The message of the last failed call on this thread ("" if none). Valid
 * until the next call on this thread. */
const char* kmoe_last_error(void);
/* A constant name for a status ("KMOE_SUCCESS", ...). */
const char* kmoe_status_string(kmoe_status status);
/* Sets this thread's last error message: for language bindings that check
 * their arguments before calling in (the Fortran module). */
void kmoe_set_last_error(const char* message);

#ifdef __cplusplus
}
#endif

#endif
