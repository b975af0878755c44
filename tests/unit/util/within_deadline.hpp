// Test support: runs a step that must end quickly (reading a FIFO or
// /dev/zero) in a forked child, so a step that blocks or reads forever fails
// the test after the deadline instead of hanging the test binary or eating
// the machine's memory: the child is killed.
#pragma once
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace lse::test {

// What `step` returned, or nullopt when it did not end within `limit`.
inline std::optional<std::string> within_deadline(std::chrono::milliseconds limit,
                                                  const std::function<std::string()>& step) {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      out = step();
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    }
    for (std::size_t done = 0; done < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  bool ended = false;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!ended) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) ended = true;  // the child closed its end: it is done
    if (n > 0) got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (!ended) ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  if (!ended) return std::nullopt;
  return got;
}

}  // namespace lse::test
