// SPDX-License-Identifier: BSD-3-Clause
// Work enqueued on an execution space instance, recorded once and replayed
// with one launch: a CUDA graph on CUDA, the work itself elsewhere.
//
// The layer's forward with given routing only enqueues kernels on the
// layer's instance (no fence, no host copy: tested), so it can be recorded:
//
//   auto exec = KokkosMoE::WorkGraph<Space>::capture_instance();
//   KokkosMoE::Layer<Space, Scalar> layer(config, weights, exec);
//   layer.forward(x, ids, w, out, n);        // once first: kernel attributes, tensor maps
//   KokkosMoE::WorkGraph<Space> graph(exec, [&, n] { layer.forward(x, ids, w, out, n); });
//   graph.launch();                           // asynchronous on exec
//
// A recorded forward keeps its views (it reads their current contents at
// each launch) and its number of tokens. On CUDA the graph holds the
// kernels as recorded; elsewhere launch() runs the work again, reading what
// the lambda captured by reference anew: capture the token count by value,
// as above, to get the same forward on every backend.
#ifndef KOKKOSMOE_WORKGRAPH_HPP
#define KOKKOSMOE_WORKGRAPH_HPP

#include <Kokkos_Core.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

namespace KokkosMoE {

template <class ExecutionSpace>
class WorkGraph {
 public:
  // An instance whose work can be recorded: the default one here.
  static ExecutionSpace capture_instance() { return ExecutionSpace(); }

  template <class Enqueue>
  WorkGraph(const ExecutionSpace&, Enqueue&& enqueue) : enqueue_(std::forward<Enqueue>(enqueue)) {}
  // Movable, not copyable, as on CUDA: code that builds here builds there.
  WorkGraph(const WorkGraph&) = delete;
  WorkGraph& operator=(const WorkGraph&) = delete;
  WorkGraph(WorkGraph&& o) noexcept : enqueue_(std::exchange(o.enqueue_, nullptr)) {}

  void launch() const {
    if (!enqueue_) throw std::logic_error("KokkosMoE::WorkGraph::launch: moved from");
    enqueue_();
  }

 private:
  std::function<void()> enqueue_;
};

#ifdef KOKKOS_ENABLE_CUDA
namespace Impl {
inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("KokkosMoE::WorkGraph: ") + what + ": " +
                             cudaGetErrorString(e));
}
}  // namespace Impl

template <>
class WorkGraph<Kokkos::Cuda> {
 public:
  // A Kokkos::Cuda instance on a stream of its own (the default instance
  // may run on the legacy stream, which cannot be captured). The stream is
  // destroyed at Kokkos::finalize.
  static Kokkos::Cuda capture_instance() {
    cudaStream_t stream = nullptr;
    Impl::cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    Kokkos::push_finalize_hook([stream] { cudaStreamDestroy(stream); });
    return Kokkos::Cuda(stream);
  }

  // Captures what enqueue() puts on exec's stream. Run the work once before,
  // so that buffers and kernel attributes exist: allocations and host
  // synchronisation cannot be captured.
  template <class Enqueue>
  WorkGraph(const Kokkos::Cuda& exec, Enqueue&& enqueue) : stream_(exec.cuda_stream()) {
    if (stream_ == nullptr)
      throw std::invalid_argument(
          "KokkosMoE::WorkGraph: the instance runs on the legacy default stream, which cannot "
          "be captured; use WorkGraph<Kokkos::Cuda>::capture_instance()");
    Impl::cuda_check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed),
                     "cudaStreamBeginCapture");
    cudaGraph_t graph = nullptr;
    try {
      enqueue();
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    Impl::cuda_check(cudaStreamEndCapture(stream_, &graph), "capture of the work");
    const cudaError_t e = cudaGraphInstantiateWithFlags(&exec_, graph, 0);
    cudaGraphDestroy(graph);
    Impl::cuda_check(e, "cudaGraphInstantiate");
  }
  WorkGraph(const WorkGraph&) = delete;
  WorkGraph& operator=(const WorkGraph&) = delete;
  WorkGraph(WorkGraph&& o) noexcept : stream_(o.stream_), exec_(std::exchange(o.exec_, nullptr)) {}
  ~WorkGraph() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }

  void launch() const {
    if (!exec_) throw std::logic_error("KokkosMoE::WorkGraph::launch: moved from");
    Impl::cuda_check(cudaGraphLaunch(exec_, stream_), "cudaGraphLaunch");
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};
#endif

}  // namespace KokkosMoE

#endif
