// The matrix-multiply-accumulate fragment the expert kernels are written
// against: zero, mma_nt (acc += a b^T on scratch tiles) and store, plus the
// tile shape. Kernels above this header never name a backend.
#ifndef KOKKOSMOE_FRAGMENT_HPP
#define KOKKOSMOE_FRAGMENT_HPP

#include "KokkosMoE_Host_Fragment.hpp"

namespace KokkosMoE {
namespace Impl {

// Backends specialise this (CUDA tensor cores, AMD matrix cores); until a
// backend has its own, the portable fragment serves it.
template <class ExecutionSpace, class Scalar>
struct Fragment : PortableFragment<ExecutionSpace> {};

}  // namespace Impl
}  // namespace KokkosMoE

#endif
