// SPDX-License-Identifier: BSD-3-Clause
#include <KokkosMoE/KokkosMoE_HostTuning.hpp>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace KokkosMoE {

const char* to_string(HostWeightPrefetch hint) {
  switch (hint) {
    case HostWeightPrefetch::l2: return "l2";
    case HostWeightPrefetch::non_temporal: return "nta";
  }
  return "unknown";
}

namespace Impl {
namespace {
bool is_set(const char* v) { return v && *v; }
[[noreturn]] void refuse(const char* variable, const char* allowed, const char* value) {
  throw std::invalid_argument(std::string(variable) + " must be " + allowed + ", got '" + value +
                              "'");
}
}  // namespace

// Each CPU's choice is the faster of the two measured on it at decode
// (one token and 8, 1 thread; docs/performance.md, "Host backends"): on
// Zen 5, prefetchnta took 0.77-1.05x the time of a prefetch into L2, and
// 1024-deep blocks 0.91-1.01x that of 4096 at 8 tokens; on Zen 4, the two
// together took 1.2-1.7x the time of L2 and 4096.
HostTuning choose_host_tuning(const char* decode_prefetch, const char* decode_depth, bool amd,
                              unsigned family) {
  HostTuning t;
  if (amd && family >= 0x1a) {
    t.decode_prefetch = HostWeightPrefetch::non_temporal;
    t.decode_depth = 1024;
  }
  if (is_set(decode_prefetch)) {
    if (!std::strcmp(decode_prefetch, "l2")) t.decode_prefetch = HostWeightPrefetch::l2;
    else if (!std::strcmp(decode_prefetch, "nta"))
      t.decode_prefetch = HostWeightPrefetch::non_temporal;
    else refuse("KOKKOSMOE_HOST_DECODE_PREFETCH", "l2 or nta", decode_prefetch);
  }
  if (is_set(decode_depth)) {
    int depth = 0;
    for (int allowed : {512, 1024, 2048, 4096})
      if (std::to_string(allowed) == decode_depth) depth = allowed;
    if (!depth) refuse("KOKKOSMOE_HOST_DECODE_DEPTH", "512, 1024, 2048 or 4096", decode_depth);
    t.decode_depth = depth;
  }
  return t;
}

namespace {
// The CPU's vendor and family (the base family plus the extended one where
// the base is 0xF), by cpuid; family 0 off x86.
void cpu_family(bool& amd, unsigned& family) {
  amd = false;
  family = 0;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return;
  char vendor[13] = {};
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  amd = !std::strcmp(vendor, "AuthenticAMD");
  if (!__get_cpuid(1, &a, &b, &c, &d)) return;
  family = (a >> 8) & 0xf;
  if (family == 0xf) family += (a >> 20) & 0xff;
#endif
}

HostTuning from_environment() {
  bool amd = false;
  unsigned family = 0;
  cpu_family(amd, family);
  return choose_host_tuning(std::getenv("KOKKOSMOE_HOST_DECODE_PREFETCH"),
                            std::getenv("KOKKOSMOE_HOST_DECODE_DEPTH"), amd, family);
}
}  // namespace
}  // namespace Impl

const HostTuning& host_tuning() {
  // Once per process (a bad setting throws again on the next call).
  static const HostTuning tuning = Impl::from_environment();
  return tuning;
}

}  // namespace KokkosMoE
