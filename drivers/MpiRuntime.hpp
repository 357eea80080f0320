// SPDX-License-Identifier: BSD-3-Clause
// kokkos-moe-replay --ep: MPI's lifetime and how errors end an MPI run.
// Built only with KokkosMoE_ENABLE_MPI (KOKKOSMOE_REPLAY_EXPERT_PARALLEL).
#ifndef KOKKOSMOE_DRIVER_MPIRUNTIME_HPP
#define KOKKOSMOE_DRIVER_MPIRUNTIME_HPP

#include <stdexcept>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace Driver {

// MPI for --ep only, initialized before Kokkos and finalized after it (the
// runtime outlives Kokkos in main), so that a replay on one device needs no
// MPI launcher.
class MpiRuntime {
 public:
  MpiRuntime(int& argc, char**& argv);
  ~MpiRuntime();
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;

  bool active() const { return active_; }
  // Whether this process reports (errors included): rank 0, or the only one.
  bool reports() const { return rank_ == 0; }
  // An error of this rank alone: the others may wait in a collective, so
  // the whole run ends here.
  [[noreturn]] void abort(const std::string& message) const;

 private:
  // GPU builds: each rank on its node's GPUs by node-local rank, given to
  // Kokkos as --kokkos-device-id, unless the command line chooses Kokkos'
  // device itself.
  void choose_device(int& argc, char**& argv);

  bool active_ = false;
  int rank_ = 0, size_ = 1;
  std::string device_arg_;
  std::vector<char*> args_;  // argv with device_arg_
};

// An error every rank has alike: the layer's (it agrees on its errors
// across ranks before throwing) or the replay's own on the same inputs.
// Rank 0 reports it and every rank exits 1, without MPI_Abort.
struct AgreedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// f(), its exceptions as AgreedErrors.
template <class F>
decltype(auto) agreed(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    throw AgreedError(e.what());
  }
}

// Every rank's `values` (the same count on each), by rank.
std::vector<double> gather_all(const std::vector<double>& values);

// Rank 0's error text on every rank ("" on all when rank 0 had none).
std::string broadcast_error(std::string error);

}  // namespace Driver
}  // namespace KokkosMoE

#endif
