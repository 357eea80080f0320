// SPDX-License-Identifier: BSD-3-Clause
#include "ErrorModel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace KokkosMoE {
namespace Driver {

double ErrorModel::term_error() const {
  const double H = double(std::max<std::int64_t>(hidden, 0));
  const double F = double(std::max<std::int64_t>(ffn, 0));
  // A rounded weight perturbs a term directly (down) and through h
  // (gate, up): eps_w / 2 each.
  return unit_roundoff() + weight_epsilon +
         float_unit_roundoff * (8.0 + std::sqrt(H) + std::sqrt(F));
}

double ErrorModel::terms_factor() const {
  const double terms = double(std::max(top_k, 1)) * double(std::max<std::int64_t>(ffn, 1));
  return std::min(std::sqrt(terms), 3.5);
}

double RowCheck::ratio() const {
  if (std::isnan(error)) return std::numeric_limits<double>::infinity();
  if (tolerance > 0) return error / tolerance;
  return error > 0 ? std::numeric_limits<double>::infinity() : 0;
}

RowCheck check_row(const double* out, const double* ref, const double* rss, std::size_t n,
                   const ErrorModel& m) {
  double diff = 0, scale = 0, q = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // NaN anywhere must fail the check: comparisons with NaN are false.
    if (std::isnan(out[i])) diff = std::numeric_limits<double>::infinity();
    else diff = std::max(diff, std::abs(out[i] - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
    q = std::max(q, rss[i]);
  }
  const double u_s = m.unit_roundoff(), spread = m.terms_factor() * m.term_error() * q;
  RowCheck r;
  r.error = scale > 0 ? diff / scale : diff;
  r.tolerance = std::max(m.floor, scale > 0 ? u_s + spread / scale : spread);
  return r;
}

RowCheck worse(const RowCheck& a, const RowCheck& b) { return b.ratio() > a.ratio() ? b : a; }

std::vector<int> check_sample(std::int64_t n) {
  const std::int64_t size = std::min<std::int64_t>(16, n);
  std::vector<int> sample;
  for (std::int64_t i = 0; i < size; ++i) sample.push_back(int(i * n / size));
  return sample;
}

}  // namespace Driver
}  // namespace KokkosMoE
