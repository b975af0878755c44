// What every libFuzzer target of tests/fuzz/ shares: a broken invariant
// aborts with its condition and the inputs that broke it (libFuzzer then
// saves the reproducer), and files a target keeps under /tmp are named by
// its pid and cleaned up after processes that are gone.
#pragma once
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace lse::fuzz {

[[noreturn]] inline void fail(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "invariant violated: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// What an earlier process of a target left in the temp folder: libFuzzer
// ends without running atexit handlers after a crash (and may after
// -max_total_time). Entries "<prefix><pid>..." whose process is gone go.
inline void remove_stale(const std::string& prefix) {
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid == ::getpid()) continue;
    if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH))
      std::filesystem::remove_all(e.path(), ec);
  }
}

}  // namespace lse::fuzz

#define FUZZ_CHECK(cond, detail)                     \
  do {                                               \
    if (!(cond)) ::lse::fuzz::fail(#cond, (detail)); \
  } while (0)
