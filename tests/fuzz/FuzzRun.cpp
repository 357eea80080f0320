// SPDX-License-Identifier: BSD-3-Clause
// Running and judging the fuzz cases (FuzzRun.hpp).
#include "FuzzRun.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace KokkosMoE {
namespace Fuzz {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxCaptured = std::size_t(1) << 20;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(kMaxCaptured, '\0');
  in.read(&text[0], static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

struct Running {
  std::size_t index;
  pid_t pid;
  Clock::time_point start, deadline;
  bool killed = false;
  std::string out, err;
};

// fork + exec with the case's stdio; the child is its own process group.
pid_t spawn(const Case& c, const std::string& dir, const std::string& out, const std::string& err,
            std::string& error) {
  std::vector<char*> argv;
  for (const std::string& a : c.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int status_pipe[2];  // closed on exec; an exec failure writes errno into it
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    ::close(status_pipe[0]);
    ::close(status_pipe[1]);
    return -1;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    const int in_fd = ::open("/dev/null", O_RDONLY);
    const int out_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = 0;
    if (in_fd < 0 || out_fd < 0 || err_fd < 0 || ::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 ||
        ::dup2(err_fd, 2) < 0 || ::chdir(dir.c_str()) != 0) {
      e = errno;
    } else {
      ::execv(argv[0], argv.data());
      e = errno;
    }
    (void)!::write(status_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever runs first
  ::close(status_pipe[1]);
  int e = 0;
  ssize_t n;
  do n = ::read(status_pipe[0], &e, sizeof e);
  while (n < 0 && errno == EINTR);
  ::close(status_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {
    ::waitpid(pid, nullptr, 0);
    error = "cannot run " + c.argv[0] + ": " + std::strerror(e);
    return -1;
  }
  return pid;
}

bool contains(const std::string& text, const char* what) {
  return text.find(what) != std::string::npos;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

std::string signal_name(int sig) {
  const char* name = ::strsignal(sig);
  return std::to_string(sig) + (name ? std::string(" (") + name + ")" : "");
}

}  // namespace

void run_cases(const std::vector<Case>& cases, int jobs, double timeout_s, const std::string& dir,
               const std::function<void(std::size_t, Outcome&&)>& done) {
  std::vector<Running> running;
  std::size_t next = 0;
  const auto timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  while (next < cases.size() || !running.empty()) {
    while (static_cast<int>(running.size()) < jobs && next < cases.size()) {
      Running r;
      r.index = next++;
      const std::string base = dir + "/run-" + std::to_string(cases[r.index].id);
      r.out = base + ".stdout";
      r.err = base + ".stderr";
      std::string error;
      r.start = Clock::now();
      r.deadline = r.start + timeout;
      r.pid = spawn(cases[r.index], dir, r.out, r.err, error);
      if (r.pid < 0) {
        Outcome o;
        o.start_error = error;
        done(r.index, std::move(o));
        continue;
      }
      running.push_back(r);
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      const auto it = std::find_if(running.begin(), running.end(),
                                   [pid](const Running& r) { return r.pid == pid; });
      if (it == running.end()) continue;
      // Whatever the driver left behind in its group (it should be nothing).
      ::kill(-pid, SIGKILL);
      Outcome o;
      o.seconds = std::chrono::duration<double>(Clock::now() - it->start).count();
      o.timed_out = it->killed;
      if (WIFEXITED(status)) o.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
      o.out = read_file(it->out);
      o.err = read_file(it->err);
      std::remove(it->out.c_str());
      std::remove(it->err.c_str());
      const std::size_t index = it->index;
      running.erase(it);
      done(index, std::move(o));
      continue;
    }
    if (pid < 0 && errno != EINTR && errno != ECHILD)
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    const auto now = Clock::now();
    for (Running& r : running)
      if (!r.killed && now > r.deadline) {
        ::kill(-r.pid, SIGKILL);
        r.killed = true;
      }
    ::usleep(2000);
  }
}

std::string without_allocation_warnings(const std::string& err) {
  std::string kept;
  for (const std::string& line : lines_of(err)) {
    // ==<pid>==WARNING: AddressSanitizer failed to allocate 0x<hex> bytes
    const std::size_t w = line.find("==WARNING: AddressSanitizer failed to allocate 0x");
    if (line.rfind("==", 0) == 0 && w != std::string::npos &&
        line.compare(line.size() - 6, 6, " bytes") == 0)
      continue;
    kept += line + "\n";
  }
  return kept;
}

std::vector<std::string> judge(const Case& c, const Outcome& o) {
  std::vector<std::string> problems;
  if (!o.start_error.empty()) return {o.start_error};
  if (o.timed_out) problems.push_back("no end within the time limit (killed)");
  else if (o.signal != 0) problems.push_back("killed by signal " + signal_name(o.signal));
  else if (o.exit_code > 127)
    problems.push_back("exit code " + std::to_string(o.exit_code) + ", beyond 1..127");
  const std::string err = without_allocation_warnings(o.err);
  for (const char* marker : {"AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                             "runtime error:", "terminate called"})
    if (contains(err, marker) || contains(o.out, marker)) {
      problems.push_back(std::string("sanitizer or runtime report ('") + marker + "')");
      break;
    }
  if (o.timed_out || o.signal != 0) return problems;

  if (o.exit_code == 0) {
    if (c.expect == Expect::failure) problems.push_back("exit 0: the malformed input was accepted");
    else if (!c.success_stdout.empty() && !contains(o.out, c.success_stdout.c_str()))
      problems.push_back("exit 0 without '" + c.success_stdout + "' on stdout");
    return problems;
  }
  const std::vector<std::string> lines = lines_of(err);
  const std::string first = lines.empty() ? "" : lines.front();
  if (c.expect == Expect::success)
    problems.push_back("exit " + std::to_string(o.exit_code) + " for a valid input");
  if (o.exit_code <= 127 && !c.failure_codes.empty() &&
      std::find(c.failure_codes.begin(), c.failure_codes.end(), o.exit_code) ==
          c.failure_codes.end()) {
    std::string codes;
    for (int code : c.failure_codes) codes += (codes.empty() ? "" : " or ") + std::to_string(code);
    problems.push_back("exit " + std::to_string(o.exit_code) + ", expected " + codes);
  }
  if (lines.empty()) problems.push_back("a failure with nothing on stderr");
  else if (lines.size() > 1)
    problems.push_back(std::to_string(lines.size()) + " lines on stderr, not one");
  else if (first.rfind("error: ", 0) != 0)
    problems.push_back("the stderr line does not start with 'error: '");
  if (lines.size() == 1 && std::any_of(first.begin(), first.end(), [](char ch) {
        return (static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f;
      }))
    problems.push_back("control characters in the error line");
  return problems;
}

std::string shell_command(const std::vector<std::string>& argv) {
  std::string line;
  for (const std::string& a : argv) {
    if (!line.empty()) line += ' ';
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || std::strchr("-_./=,:+@%", ch);
    });
    if (plain) {
      line += a;
      continue;
    }
    const bool printable = std::all_of(a.begin(), a.end(), [](char ch) {
      return static_cast<unsigned char>(ch) >= 0x20 && static_cast<unsigned char>(ch) < 0x7f;
    });
    if (printable && a.find('\'') == std::string::npos) {
      line += "'" + a + "'";
      continue;
    }
    line += "$'";
    for (char ch : a) {
      const auto u = static_cast<unsigned char>(ch);
      if (ch == '\'' || ch == '\\') line += std::string("\\") + ch;
      else if (ch == '\n') line += "\\n";
      else if (ch == '\t') line += "\\t";
      else if (u < 0x20 || u >= 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02x", u);
        line += hex;
      } else {
        line += ch;
      }
    }
    line += "'";
  }
  return line;
}

std::string shown(const std::string& text, std::size_t max) {
  std::string s;
  for (std::size_t i = 0; i < text.size() && s.size() < max; ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    if (text[i] == '\n') s += "\\n";
    else if (text[i] == '\\') s += "\\\\";
    else if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      s += hex;
    } else {
      s += text[i];
    }
  }
  if (text.size() > max) s += "...(" + std::to_string(text.size()) + " bytes)";
  return s;
}

}  // namespace Fuzz
}  // namespace KokkosMoE
