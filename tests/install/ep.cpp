// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// Install test of the ep component: under mpiexec, an expert-parallel
// forward with the replicated router on each rank's tokens, bitwise equal
// to a single-device Layer with every expert (fp32, batch_invariant).
#include <KokkosMoE/KokkosMoE_ExpertParallel.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <random>

namespace {

using Space = Kokkos::DefaultExecutionSpace;
using Mem = Space::memory_space;

template <class View>
void fill(const View& v, double scale, unsigned seed) {
  auto host = Kokkos::create_mirror_view(v);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> d(-scale, scale);
  for (std::size_t i = 0; i < host.span(); ++i) host.data()[i] = float(d(rng));
  Kokkos::deep_copy(v, host);
}

bool check(int rank, int ranks) {
  KokkosMoE::Config c;
  c.num_experts = 6;
  c.top_k = 2;
  c.hidden_size = 32;
  c.ffn_size = 48;
  c.max_tokens = 20;
  c.batch_invariant = true;
  auto w = KokkosMoE::Weights<float, Mem>::allocate(c);
  fill(w.router, 0.2, 1);
  fill(w.gate, 0.3, 2);
  fill(w.up, 0.3, 3);
  fill(w.down, 0.25, 4);
  const auto placement = KokkosMoE::ExpertPlacement::contiguous(c.num_experts, ranks);
  KokkosMoE::ExpertParallelLayer<Space, float> ep(
      c, MPI_COMM_WORLD, KokkosMoE::local_expert_weights(w, placement, rank), placement);
  KokkosMoE::Layer<Space, float> single(c, w);
  const std::int64_t T = 7 + 5 * rank;
  KokkosMoE::Layer<Space, float>::tokens_view x("x", T, c.hidden_size),
      out("out", T, c.hidden_size), expected("expected", T, c.hidden_size);
  fill(x, 1.0, 10 + unsigned(rank));
  ep.forward(x, out, T);
  single.forward(x, expected, T);
  auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), expected);
  return std::memcmp(a.data(), b.data(), sizeof(float) * std::size_t(T * c.hidden_size)) == 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Kokkos::initialize(argc, argv);
  int ok = check(rank, ranks) ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("install test expert parallel on %d ranks: %s\n", ranks, ok ? "PASSED" : "FAILED");
  Kokkos::finalize();
  MPI_Finalize();
  return ok ? 0 : 1;
}
