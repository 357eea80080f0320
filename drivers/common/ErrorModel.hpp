// SPDX-License-Identifier: BSD-3-Clause
// kokkos-moe-replay --check: how far the layer's output may be from the
// float64 reference (KokkosMoE_Reference.hpp) and still be right, for any
// width (H and F from 1 up). Plain C++ on host arrays, so that the model is
// unit-tested on its own (tests/drivers/Test_ErrorModel.cpp).
//
// The error model. For one token, output element n is the sum of the k * F
// terms a_jf = w_j down[e_j](n, f) h_jf. The reference computes them in
// double from the same stored x, gate, up, down and routing weights as the
// layer, so the layer's error comes from its own roundings only:
//
//   - h is rounded to the storage type once (at most u_s |h|, u_s = eps_s / 2,
//     the storage type's unit roundoff), after float arithmetic whose error
//     (the sums over H terms, silu's exp and division) is a few float ulps;
//   - the down sum over F terms and the weighted combine over k run in float;
//   - the output is rounded to the storage type once (u_s |out_n|).
//
// So each term carries a relative error of at most
//
//   u_h = u_s + u_f (8 + sqrt(H) + sqrt(F)),  u_f = 2^-24 (float),
//
// (8 float roundings of fixed operations, and the float sums over H and F
// as random walks), and
//
//   |out_n - ref_n| <= u_s |ref_n| + u_h sum |a_jf|
//                   <= u_s |ref_n| + c u_h Q_n,   Q_n = sqrt(sum a_jf^2),
//
// with c = sqrt(k F) by Cauchy-Schwarz: rigorous, and what decides at tiny
// widths. For wide rows, where the kF errors are independent and each of
// standard deviation at most u_h |a_jf| / sqrt(3), their sum stays within
// 6 standard deviations, 3.5 u_h Q_n: c = min(sqrt(k F), 3.5).
//
// The reported error is the row-relative one of the unit tests: max_n
// |out_n - ref_n| over the row's scale R = max_n |ref_n| (absolute where
// the reference row is 0). The bound gives the row's tolerance
//
//   tol = (u_s R + c u_h max_n Q_n) / R,
//
// never below reference_tolerance (eps_s for 16-bit storage, 1e-4 for
// float), which the layer's unit tests hold it to at their widths. For wide
// rows R is about 3.5 Q (the largest of H sums of kF terms), so tol is about
// eps_s, the unit tests' tolerance, and a 1 % error in any stage fails. For
// narrow ones (H = 1, k = 2) an output can be the difference of two large
// terms: R is then much smaller than Q, the row-relative error large, and
// so is tol, as it must be: the bound, not a constant, follows the
// cancellation.
#ifndef KOKKOSMOE_DRIVER_ERRORMODEL_HPP
#define KOKKOSMOE_DRIVER_ERRORMODEL_HPP

#include <cstddef>
#include <cstdint>
#include <vector>

namespace KokkosMoE {
namespace Driver {

struct ErrorModel {
  double storage_epsilon = 0;  // eps_s: 2^-7 bf16, 2^-10 fp16, 2^-23 fp32
  double floor = 0;            // reference_tolerance of the storage type
  // eps_w: the rounding of each weight where the layer multiplies it in a
  // narrower type than it stands for (e4m3 times its scale, as bf16 on
  // GPUs); 0 where the values are multiplied exactly.
  double weight_epsilon = 0;
  std::int64_t hidden = 0, ffn = 0;
  int top_k = 0;

  static constexpr double float_unit_roundoff = 0x1.0p-24;

  double unit_roundoff() const { return storage_epsilon / 2; }
  // u_h: the relative error bound of one term w_j down(n, f) h_jf.
  double term_error() const;
  // c: Cauchy-Schwarz for few terms, 6 standard deviations for many.
  double terms_factor() const;
};

// One row's error and the tolerance the model gives it.
struct RowCheck {
  double error = 0, tolerance = 0;
  // error / tolerance: the row that decides the check is the largest.
  double ratio() const;
  bool passed() const { return ratio() <= 1; }
};

// out: the layer's row (float values of the storage type), ref: the
// reference's, rss: Q_n; n elements each.
RowCheck check_row(const double* out, const double* ref, const double* rss, std::size_t n,
                   const ErrorModel& m);

// The row that decides: the larger error / tolerance.
RowCheck worse(const RowCheck& a, const RowCheck& b);

// The tokens a check compares: up to 16 of a batch's n, spread over it.
std::vector<int> check_sample(std::int64_t n);

}  // namespace Driver
}  // namespace KokkosMoE

#endif
