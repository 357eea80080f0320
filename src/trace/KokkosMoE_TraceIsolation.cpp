// SPDX-License-Identifier: BSD-3-Clause
// Reading a trace in a forked child process (see KokkosMoE_TraceIsolation.hpp).
#include "KokkosMoE_TraceIsolation.hpp"

#if !defined(__unix__) && !defined(__APPLE__)

namespace KokkosMoE {
namespace Impl {

// No fork here: the reader runs in this process.
Trace read_isolated(const std::string&, const std::function<Trace()>& read, double) {
  return read();
}

}  // namespace Impl
}  // namespace KokkosMoE

#else

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace KokkosMoE {
namespace Impl {
namespace {

// ---------------------------------------------------------------- wire format
//
// reply  := tag:u8, then the fields of the Trace (visit below) for kTagTrace,
//           or the message string for kTagError
// string := size:u64, then the bytes; vector := size:u64, then the elements
// Numbers travel in their native representation: both ends are one binary.

constexpr std::uint8_t kTagTrace = 0;
constexpr std::uint8_t kTagError = 1;

// The one list of fields, for both directions, so that the writer and the
// reader cannot disagree. T is Trace or TraceLayer, const when writing.
template <class IO, class T>
void visit(IO& io, T& t) {
  if constexpr (std::is_same_v<std::remove_const_t<T>, TraceLayer>) {
    io(t.index);
    io(t.expert_ids);
    io(t.weights);
  } else {
    static_assert(std::is_same_v<std::remove_const_t<T>, Trace>);
    io(t.model);
    io(t.source);
    io(t.note);
    io(t.num_experts);
    io(t.top_k);
    io(t.hidden_size);
    io(t.ffn_size);
    io(t.num_tokens);
    io(t.layers);
    io(t.sequence_id);
  }
}

// The child's end. Remembers the first failure instead of throwing: the
// child can only report it through its exit status.
class PipeWriter {
 public:
  explicit PipeWriter(int fd) : fd_(fd) {}
  bool ok() const { return ok_; }

  template <class T>
  void operator()(const T& value) {
    static_assert(std::is_arithmetic_v<T>);
    bytes(&value, sizeof value);
  }
  void operator()(const std::string& s) {
    size(s.size());
    bytes(s.data(), s.size());
  }
  template <class T>
  void operator()(const std::vector<T>& v) {
    size(v.size());
    if constexpr (std::is_arithmetic_v<T>) bytes(v.data(), v.size() * sizeof(T));
    else
      for (const T& element : v) visit(*this, element);
  }

 private:
  void size(std::size_t n) { (*this)(static_cast<std::uint64_t>(n)); }
  void bytes(const void* data, std::size_t n) {
    const char* p = static_cast<const char*>(data);
    while (ok_ && n > 0) {
      const ssize_t written = ::write(fd_, p, n);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) {
        ok_ = false;
        return;
      }
      p += written;
      n -= static_cast<std::size_t>(written);
    }
  }

  int fd_;
  bool ok_ = true;
};

// The parent's end. Stops at the first short read, error or timeout and
// remembers it, so that the parent still goes on to collect the child's
// status (which says why the reply is short). Sizes read after a failure
// are 0, so nothing large is allocated for a broken reply.
class PipeReader {
 public:
  using Clock = std::chrono::steady_clock;

  PipeReader(int fd, double timeout_s) : fd_(fd) {
    if (timeout_s > 0 && timeout_s < 1e9)  // beyond that: no limit (and no overflow)
      deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(timeout_s));
  }
  bool ok() const { return ok_; }
  bool timed_out() const { return timed_out_; }

  template <class T>
  void operator()(T& value) {
    static_assert(std::is_arithmetic_v<T>);
    bytes(&value, sizeof value);
  }
  void operator()(std::string& s) {
    s.resize(size());
    bytes(s.data(), s.size());
  }
  template <class T>
  void operator()(std::vector<T>& v) {
    v.resize(size());
    if constexpr (std::is_arithmetic_v<T>) bytes(v.data(), v.size() * sizeof(T));
    else
      for (T& element : v) visit(*this, element);
  }

 private:
  std::size_t size() {
    std::uint64_t n = 0;
    (*this)(n);
    return ok_ ? static_cast<std::size_t>(n) : 0;
  }
  void bytes(void* data, std::size_t n) {
    char* p = static_cast<char*>(data);
    while (ok_ && n > 0) {
      if (!wait_readable()) return;
      const ssize_t got = ::read(fd_, p, n);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {  // end of file before the reply is complete, or an error
        ok_ = false;
        return;
      }
      p += got;
      n -= static_cast<std::size_t>(got);
    }
  }
  // Waits until the pipe has data or is closed, at most until the deadline.
  bool wait_readable() {
    if (!deadline_) return true;
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline_ - Clock::now());
      const int ms = static_cast<int>(std::max<std::chrono::milliseconds::rep>(
          0, std::min<std::chrono::milliseconds::rep>(left.count(), INT_MAX)));
      pollfd pfd{fd_, POLLIN, 0};
      const int ready = ::poll(&pfd, 1, ms);
      if (ready > 0) return true;  // data, or hang-up: read() tells which
      if (ready < 0 && errno == EINTR) continue;
      timed_out_ = ready == 0;
      ok_ = false;
      return false;
    }
  }

  int fd_;
  std::optional<Clock::time_point> deadline_;
  bool ok_ = true;
  bool timed_out_ = false;
};

// The child and the read end of its pipe. On every way out of the parent
// (a TraceError, bad_alloc while rebuilding the trace) the child is killed
// and reaped: no zombie, no child left running.
class ChildProcess {
 public:
  ChildProcess(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
    wait();
  }

  // Closes the pipe (a child still writing then fails rather than blocks)
  // and waits for the child. Its wait status, or nothing when it cannot be
  // had (e.g. the program ignores SIGCHLD, so children are reaped for it).
  std::optional<int> wait() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (pid_ <= 0) return std::nullopt;
    const pid_t pid = pid_;
    pid_ = -1;
    int status = 0;
    for (;;) {
      if (::waitpid(pid, &status, 0) == pid) return status;
      if (errno != EINTR) return std::nullopt;
    }
  }

 private:
  pid_t pid_;
  int fd_;
};

// Runs in the child: only `read`, the serialisation and _exit (no atexit
// handlers, no flushing of stdio buffers copied from the parent). Never
// returns, so no exception can unwind into the parent's code in the child.
[[noreturn]] void run_child(int fd, const std::string& path, const std::function<Trace()>& read) {
  int code = 0;
  try {
    // Crashes are expected here on corrupt files: no core dump, and the
    // default actions rather than crash handlers inherited from the parent.
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, SIG_DFL);
    // The parent reports every failure in one line; the child's own output
    // (glibc prints "free(): invalid pointer" before aborting on a heap that
    // HDF5 corrupted) would only add noise to the caller's stdout/stderr.
    // (A caller that closed its stdout or stderr may have got the pipe there.)
    if (fd <= STDERR_FILENO) fd = ::fcntl(fd, F_DUPFD, STDERR_FILENO + 1);
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) {
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
      if (null > STDERR_FILENO) ::close(null);
    }

    PipeWriter out(fd);
    std::optional<std::string> error;
    try {
      const Trace trace = read();
      out(kTagTrace);
      visit(out, trace);
    } catch (const TraceError& e) {
      error = e.what();
    } catch (const std::exception& e) {
      error = printable_text(path, std::string::npos) + ": " + printable_text(e.what());
    } catch (...) {
      error = printable_text(path, std::string::npos) + ": unknown error while reading";
    }
    if (error) {
      out(kTagError);
      out(*error);
    }
    code = out.ok() ? 0 : 3;
  } catch (...) {
    code = 4;
  }
  ::_exit(code);
}

std::string crash_message(const std::string& path, const std::string& how) {
  return printable_text(path, std::string::npos) + ": HDF5 failed while reading the file (" + how +
         "): the file is corrupt or truncated";
}

}  // namespace

Trace read_isolated(const std::string& path, const std::function<Trace()>& read, double timeout_s) {
  // Without a pipe or a child (out of descriptors or processes) the read
  // still happens, unprotected: isolation is a safety net, not a requirement.
  int fds[2];
  if (::pipe(fds) != 0) return read();
  // A copy of the write end in a program another thread execs meanwhile
  // would hold off the end of file.
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(fds[1], F_SETFD, FD_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return read();
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(fds[1], path, read);
  }
  ::close(fds[1]);
  ChildProcess child(pid, fds[0]);

  // The whole reply is read before waiting: a child blocked on a full pipe
  // would never exit.
  PipeReader in(fds[0], timeout_s);
  std::uint8_t tag = 0xff;
  in(tag);
  Trace trace;
  std::string message;
  if (tag == kTagTrace) visit(in, trace);
  if (tag == kTagError) in(message);
  const bool complete = in.ok() && (tag == kTagTrace || tag == kTagError);
  if (in.timed_out()) {  // ~ChildProcess kills it
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", timeout_s);
    throw TraceError(printable_text(path, std::string::npos) +
                     ": HDF5 did not finish reading the file within " + limit +
                     " s: the file is corrupt (or the limit, KOKKOSMOE_TRACE_TIMEOUT, too short)");
  }

  const std::optional<int> status = child.wait();
  if (status && WIFSIGNALED(*status))
    throw TraceError(crash_message(path, "signal " + std::to_string(WTERMSIG(*status))));
  if (status && WIFEXITED(*status) && WEXITSTATUS(*status) != 0)
    throw TraceError(crash_message(path, "exit status " + std::to_string(WEXITSTATUS(*status))));
  if (!complete)
    throw TraceError(crash_message(path, "no complete reply from the reading process"));
  if (tag == kTagError) throw TraceError(message);
  return trace;
}

}  // namespace Impl
}  // namespace KokkosMoE

#endif
