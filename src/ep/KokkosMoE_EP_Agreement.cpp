// SPDX-FileCopyrightText: 2026 the KokkosMoE authors
// SPDX-License-Identifier: BSD-3-Clause
#include "KokkosMoE_EP_Agreement.hpp"

#include "KokkosMoE_EP_Transport.hpp"

#include <stdexcept>

namespace KokkosMoE {
namespace Impl {

void throw_first_error(MPI_Comm comm, std::initializer_list<LocalError> errors) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Per error, the lowest rank that has it (size: none).
  std::vector<int> lowest;
  for (const LocalError& e : errors) lowest.push_back(e.message.empty() ? size : rank);
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, lowest.data(), int(lowest.size()), MPI_INT, MPI_MIN, comm),
            "MPI_Allreduce");
  std::size_t i = 0;
  for (const LocalError& e : errors) {
    const int root = lowest[i++];
    if (root == size) continue;
    std::string text = e.message;
    int length = int(text.size());
    check_mpi(MPI_Bcast(&length, 1, MPI_INT, root, comm), "MPI_Bcast");
    text.resize(std::size_t(length));
    check_mpi(MPI_Bcast(&text[0], length, MPI_CHAR, root, comm), "MPI_Bcast");
    if (e.kind == ErrorKind::runtime_error) throw std::runtime_error(text);
    throw std::invalid_argument(text);
  }
}

std::string first_difference(MPI_Comm comm, const std::vector<AgreedValue>& values) {
  std::vector<std::int64_t> low, high;
  for (const AgreedValue& v : values) low.push_back(v.value);
  high = low;
  const int n = int(values.size());
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, low.data(), n, MPI_INT64_T, MPI_MIN, comm),
            "MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, high.data(), n, MPI_INT64_T, MPI_MAX, comm),
            "MPI_Allreduce");
  for (int i = 0; i < n; ++i) {
    if (low[i] == high[i]) continue;
    std::string text = std::string(values[i].name) + " differs between ranks";
    if (values[i].show)
      text += " (" + std::to_string(low[i]) + " on some, " + std::to_string(high[i]) +
              " on others)";
    return text + ": every rank must construct the layer alike";
  }
  return "";
}

}  // namespace Impl
}  // namespace KokkosMoE
