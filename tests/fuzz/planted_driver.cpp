// SPDX-License-Identifier: BSD-3-Clause
// A kokkos-moe-trace with a planted bug, for the tests that show the fuzz
// harness catches each kind of failure: it runs the real program
// (KOKKOSMOE_FUZZ_REAL) for every command but `validate` and `info`, where
// it misbehaves as KOKKOSMOE_FUZZ_PLANT says:
//   crash      dies of SIGSEGV
//   two-lines  two lines on stderr, exit 2
//   hang       never ends
//   exit-200   exit code 200
//   accept     "OK: ..." and exit 0 whatever the file
//   reject     one error line and exit 1 whatever the file
//   overflow   a heap buffer overflow (a sanitizer report in sanitized builds)
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <unistd.h>

int main(int argc, char** argv) {
  const char* real = std::getenv("KOKKOSMOE_FUZZ_REAL");
  const char* plant = std::getenv("KOKKOSMOE_FUZZ_PLANT");
  const std::string command = argc > 1 ? argv[1] : "";
  if (real == nullptr || plant == nullptr) {
    std::fprintf(stderr, "error: set KOKKOSMOE_FUZZ_REAL and KOKKOSMOE_FUZZ_PLANT\n");
    return 2;
  }
  if (command != "validate" && command != "info") {
    argv[0] = const_cast<char*>(real);
    ::execv(real, argv);
    std::perror("error: execv");
    return 1;
  }
  const std::string p = plant;
  if (p == "crash") std::raise(SIGSEGV);
  if (p == "two-lines") {
    std::fprintf(stderr, "error: something went wrong\nwhile reading the file\n");
    return 2;
  }
  if (p == "hang")
    for (;;) ::pause();
  if (p == "exit-200") return 200;
  if (p == "accept") {
    std::printf("OK: %s: 1 layers, 1 tokens, E=1, k=1\nmedian busiest/mean over 1 layers: 1\n",
                argv[argc - 1]);
    return 0;
  }
  if (p == "reject") {
    std::fprintf(stderr, "error: %s: rejected\n", argv[argc - 1]);
    return 1;
  }
  if (p == "overflow") {
    volatile char* buffer = static_cast<char*>(std::malloc(8));
    buffer[std::strlen(argv[0]) + 8] = 1;  // beyond the 8 bytes
    std::free(const_cast<char*>(buffer));
    std::fprintf(stderr, "error: no sanitizer here to see the overflow\n");
    return 3;
  }
  std::fprintf(stderr, "error: unknown KOKKOSMOE_FUZZ_PLANT '%s'\n", plant);
  return 2;
}
