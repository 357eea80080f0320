// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
#include <KokkosMoE/KokkosMoE_ExpertParallel.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace KokkosMoE {

ExpertPlacement ExpertPlacement::contiguous(int num_experts, int num_ranks) {
  if (num_experts < 1 || num_ranks < 1)
    throw std::invalid_argument(
        "KokkosMoE::ExpertPlacement::contiguous: needs num_experts >= 1 "
        "and num_ranks >= 1, got " +
        std::to_string(num_experts) + " and " + std::to_string(num_ranks));
  std::vector<int> owners;
  owners.reserve(std::size_t(num_experts));
  const int per = num_experts / num_ranks, extra = num_experts % num_ranks;
  for (int r = 0; r < num_ranks; ++r)
    for (int i = 0; i < per + (r < extra ? 1 : 0); ++i) owners.push_back(r);
  return ExpertPlacement(std::move(owners), num_ranks);
}

ExpertPlacement::ExpertPlacement(std::vector<int> owners, int num_ranks)
    : owners_(std::move(owners)), num_ranks_(num_ranks) {
  const std::string head = "KokkosMoE::ExpertPlacement: ";
  if (num_ranks_ < 1)
    throw std::invalid_argument(head + "num_ranks must be >= 1, got " + std::to_string(num_ranks_));
  if (owners_.empty()) throw std::invalid_argument(head + "no experts");
  counts_.assign(std::size_t(num_ranks_), 0);
  local_index_.resize(owners_.size());
  for (std::size_t e = 0; e < owners_.size(); ++e) {
    const int r = owners_[e];
    if (r < 0 || r >= num_ranks_)
      throw std::invalid_argument(head + "expert " + std::to_string(e) + " has owner " +
                                  std::to_string(r) + ", outside [0, " +
                                  std::to_string(num_ranks_) + ")");
    local_index_[e] = counts_[std::size_t(r)]++;
  }
}

std::vector<int> ExpertPlacement::experts_of(int rank) const {
  std::vector<int> experts;
  for (std::size_t e = 0; e < owners_.size(); ++e)
    if (owners_[e] == rank) experts.push_back(int(e));
  return experts;
}

std::uint64_t ExpertPlacement::fingerprint() const {
  // FNV-1a over P and the owners.
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xffu)) * 0x100000001b3ull;
  };
  mix(std::uint64_t(num_ranks_));
  mix(owners_.size());
  for (int r : owners_) mix(std::uint64_t(r));
  return h;
}

}  // namespace KokkosMoE
