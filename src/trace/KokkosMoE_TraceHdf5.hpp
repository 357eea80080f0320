// SPDX-License-Identifier: BSD-3-Clause
// Private helpers for the HDF5 side of the trace component: an owning wrapper
// for hid_t so that every early return (and every TraceError) closes what was
// opened, and a way to quote HDF5's own reason for a failure.
#ifndef KOKKOSMOE_TRACEHDF5_HPP
#define KOKKOSMOE_TRACEHDF5_HPP

#include <hdf5.h>

#include <string>
#include <utility>

namespace KokkosMoE {
namespace Impl {

// Owns one HDF5 identifier; the close function depends on the kind of object
// (H5Fclose, H5Gclose, ...), so it is part of the handle.
class H5Handle {
 public:
  using Closer = herr_t (*)(hid_t);

  H5Handle() = default;
  H5Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), closer_(other.closer_) {}
  H5Handle& operator=(H5Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      closer_ = other.closer_;
    }
    return *this;
  }
  ~H5Handle() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  explicit operator bool() const { return valid(); }

  void reset() {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// HDF5 prints its error stack to stderr by default; the trace component
// reports errors itself, as TraceError, so the printing is switched off.
inline void silence_hdf5_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// The description of the innermost error on HDF5's default error stack (the
// most specific reason, e.g. "truncated file"), or "" when there is none.
// Clears the stack.
inline std::string hdf5_error_detail() {
  std::string detail;
  auto walker = [](unsigned n, const H5E_error2_t* err, void* data) -> herr_t {
    auto* out = static_cast<std::string*>(data);
    if (n == 0 && err != nullptr && err->desc != nullptr) *out = err->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walker, &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
