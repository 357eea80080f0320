// SPDX-License-Identifier: BSD-3-Clause
#include "MpiRuntime.hpp"

#include <KokkosMoE/KokkosMoE_ExpertParallel.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <iostream>

namespace KokkosMoE {
namespace Driver {

MpiRuntime::MpiRuntime(int& argc, char**& argv) {
  for (int i = 1; i < argc; ++i) active_ = active_ || std::strcmp(argv[i], "--ep") == 0;
  if (!active_) return;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  choose_device(argc, argv);
}

MpiRuntime::~MpiRuntime() {
  if (active_) MPI_Finalize();
}

void MpiRuntime::abort(const std::string& message) const {
  std::cerr << "error: rank " << rank_ << ": " << message << std::endl;
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

void MpiRuntime::choose_device(int& argc, char**& argv) {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  for (int i = 1; i < argc; ++i)
    for (const char* chooser :
         {"--kokkos-device-id", "--kokkos-map-device-id-by", "--kokkos-num-devices"})
      if (std::strncmp(argv[i], chooser, std::strlen(chooser)) == 0) return;
  device_arg_ = "--kokkos-device-id=" + std::to_string(node_local_device(MPI_COMM_WORLD));
  args_.assign(argv, argv + argc);
  args_.push_back(&device_arg_[0]);
  args_.push_back(nullptr);
  argc += 1;
  argv = args_.data();
#else
  (void)argc, (void)argv;
#endif
}

std::vector<double> gather_all(const std::vector<double>& values) {
  int P = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  std::vector<double> all(values.size() * std::size_t(P));
  MPI_Allgather(values.data(), int(values.size()), MPI_DOUBLE, all.data(), int(values.size()),
                MPI_DOUBLE, MPI_COMM_WORLD);
  return all;
}

std::string broadcast_error(std::string error) {
  int length = int(error.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  error.resize(std::size_t(length));
  if (length > 0) MPI_Bcast(&error[0], length, MPI_CHAR, 0, MPI_COMM_WORLD);
  return error;
}

}  // namespace Driver
}  // namespace KokkosMoE
