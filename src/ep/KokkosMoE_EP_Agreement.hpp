// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
//
// Errors of one rank become errors of every rank. A rank that threw alone
// would leave the others waiting in the next collective; instead each rank
// states its own error (or none), one collective finds the lowest rank that
// has one, and every rank throws that rank's message, broadcast, so all of
// them report the same text.
#ifndef KOKKOSMOE_EP_AGREEMENT_HPP
#define KOKKOSMOE_EP_AGREEMENT_HPP

#include <mpi.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace KokkosMoE {
namespace Impl {

enum class ErrorKind { invalid_argument, runtime_error };

struct LocalError {
  std::string message;  // empty: none on this rank
  ErrorKind kind;
};

// Collective. The errors are in order of precedence: the first that some
// rank has is thrown on every rank, with the message of the lowest rank
// that has it. Returns when no rank has any.
void throw_first_error(MPI_Comm comm, std::initializer_list<LocalError> errors);

// A value every rank must have alike, and how to name it.
struct AgreedValue {
  const char* name;
  std::int64_t value;
  bool show = true;  // print the values (false for hashes)
};

// Collective: "" when every rank has the same values, else a message naming
// the first that differs (the same on every rank).
std::string first_difference(MPI_Comm comm, const std::vector<AgreedValue>& values);

}  // namespace Impl
}  // namespace KokkosMoE

#endif
