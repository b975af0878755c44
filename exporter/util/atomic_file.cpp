#include "util/atomic_file.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace lse::util {

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      throw std::runtime_error(fmt::format("cannot write '{}': {}", tmp, std::strerror(errno)));
    f << text;
    f.flush();
    if (!f)
      throw std::runtime_error(fmt::format("cannot write '{}': {}", tmp, std::strerror(errno)));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot write '{}': {}", path, ec.message()));
}

}  // namespace lse::util
