// SPDX-License-Identifier: BSD-3-Clause
// Private: runs a trace reader in a forked child process, so that HDF5
// crashing or looping forever on a corrupt file (HDF5 1.10 does both on a
// damaged global heap) becomes a TraceError instead of taking the caller
// down. The child sends the Trace back through a pipe.
#ifndef KOKKOSMOE_TRACEISOLATION_HPP
#define KOKKOSMOE_TRACEISOLATION_HPP

#include <KokkosMoE/KokkosMoE_Trace.hpp>

#include <functional>
#include <string>

namespace KokkosMoE {
namespace Impl {

// Calls `read` in a child process and returns the trace it produced there.
// A TraceError thrown by `read` is rethrown here with the same message (any
// other exception becomes "<path>: <what>"). A child that dies, exits without
// a complete reply, or runs longer than `timeout_s` seconds (<= 0: no limit)
// gives a TraceError naming `path`. The child does nothing but `read`, the
// serialisation and _exit. Where fork is not available (or fails), `read`
// runs in this process.
Trace read_isolated(const std::string& path, const std::function<Trace()>& read, double timeout_s);

}  // namespace Impl
}  // namespace KokkosMoE

#endif
