/* SPDX-License-Identifier: BSD-3-Clause */
/* KokkosMoE from C: a small softmax-top-k layer (E=4, k=2, H=32, F=48) with
 * deterministic weights, run with the layer's router (kmoe_forward) and with
 * given routing (kmoe_forward_routed), each checked against a double
 * precision reference computed here. Exit code 0 when both match. */
#include <KokkosMoE/kokkos_moe.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { E = 4, K = 2, H = 32, F = 48, T = 6 };

/* Deterministic values in [-scale, scale). */
static void fill(float* a, int n, unsigned seed, double scale) {
  for (int i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    a[i] = (float)(scale * ((double)(seed >> 8) / 8388608.0 - 1.0));
  }
}

/* Softmax over the router logits, the k best experts, renormalised. */
static void route(const float* x, const float* router, int* ids, double* w) {
  double p[E], m = -INFINITY, z = 0, sum = 0;
  for (int e = 0; e < E; ++e) {
    p[e] = 0;
    for (int c = 0; c < H; ++c) p[e] += (double)x[c] * router[e * H + c];
    if (p[e] > m) m = p[e];
  }
  for (int e = 0; e < E; ++e) z += p[e] = exp(p[e] - m);
  for (int j = 0; j < K; ++j) {
    int best = -1;
    for (int e = 0; e < E; ++e) {
      int taken = 0;
      for (int i = 0; i < j; ++i) taken |= ids[i] == e;
      if (!taken && (best < 0 || p[e] > p[best])) best = e;
    }
    ids[j] = best;
    sum += w[j] = p[best] / z;
  }
  for (int j = 0; j < K; ++j) w[j] /= sum;
}

/* out = sum_j w_j down[e_j] (silu(gate[e_j] x) * (up[e_j] x)) for one token. */
static void experts(const float* x, const int* ids, const double* w, const float* gate,
                    const float* up, const float* down, double* out) {
  double h[F];
  for (int n = 0; n < H; ++n) out[n] = 0;
  for (int j = 0; j < K; ++j) {
    const int e = ids[j];
    for (int f = 0; f < F; ++f) {
      double g = 0, u = 0;
      for (int c = 0; c < H; ++c) {
        g += (double)x[c] * gate[(e * F + f) * H + c];
        u += (double)x[c] * up[(e * F + f) * H + c];
      }
      h[f] = g / (1 + exp(-g)) * u;
    }
    for (int n = 0; n < H; ++n) {
      double d = 0;
      for (int f = 0; f < F; ++f) d += h[f] * down[(e * H + n) * F + f];
      out[n] += w[j] * d;
    }
  }
}

/* Largest row-relative error of out against ref. */
static double max_error(const float* out, const double* ref) {
  double worst = 0;
  for (int t = 0; t < T; ++t) {
    double diff = 0, scale = 0;
    for (int n = 0; n < H; ++n) {
      const double d = fabs(out[t * H + n] - ref[t * H + n]);
      diff = d > diff || isnan(d) ? d : diff;
      scale = fabs(ref[t * H + n]) > scale ? fabs(ref[t * H + n]) : scale;
    }
    diff /= scale;
    if (!(diff <= worst)) worst = diff;
  }
  return worst;
}

#define CHECK(call) \
  do { \
    kmoe_status s_ = (call); \
    if (s_ != KMOE_SUCCESS) { \
      fprintf(stderr, "%s: %s: %s\n", #call, kmoe_status_string(s_), kmoe_last_error()); \
      return 1; \
    } \
  } while (0)

int main(int argc, char** argv) {
  static float router[E * H], gate[E * F * H], up[E * F * H], down[E * H * F];
  static float x[T * H], out[T * H], routed_weights[T * K];
  static double ref[T * H], w[T * K];
  static int ids[T * K];
  static int32_t ids32[T * K];
  fill(router, E * H, 1, 0.5);
  fill(gate, E * F * H, 2, 0.35);
  fill(up, E * F * H, 3, 0.35);
  fill(down, E * H * F, 4, 0.3);
  fill(x, T * H, 5, 1.0);
  for (int t = 0; t < T; ++t) {
    route(x + t * H, router, ids + t * K, w + t * K);
    experts(x + t * H, ids + t * K, w + t * K, gate, up, down, ref + t * H);
  }
  for (int i = 0; i < T * K; ++i) {
    ids32[i] = ids[i];
    routed_weights[i] = (float)w[i];
  }

  CHECK(kmoe_initialize(argc, argv));
  kmoe_config c;
  kmoe_config_init(&c);
  c.num_experts = E, c.top_k = K, c.hidden_size = H, c.ffn_size = F;
  c.max_tokens = T, c.dtype = KMOE_FP32;
  kmoe_layer* layer = NULL;
  CHECK(kmoe_layer_create(&c, router, NULL, gate, up, down, &layer));

  CHECK(kmoe_forward(layer, x, out, T));
  const double err_router = max_error(out, ref);
  CHECK(kmoe_forward_routed(layer, x, ids32, routed_weights, out, T));
  const double err_routed = max_error(out, ref);
  /* Errors come back as codes with a message, never as exceptions. */
  const kmoe_status too_many = kmoe_forward(layer, x, out, T + 1);

  kmoe_layer_destroy(layer);
  CHECK(kmoe_finalize());

  const int ok = err_router < 1e-4 && err_routed < 1e-4 && too_many == KMOE_ERROR_INVALID_ARGUMENT;
  printf("C example: E=%d k=%d H=%d F=%d T=%d, max error %.2e (router) %.2e (routed), %s\n", E, K,
         H, F, T, err_router, err_routed, ok ? "PASSED" : "FAILED");
  return ok ? 0 : 1;
}
