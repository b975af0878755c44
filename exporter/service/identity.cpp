// Host label, User-Agent and build info (see identity.hpp). The version and
// revision come from the build (CMake compile definitions).
#include "service/identity.hpp"

#include <unistd.h>

#include <cstdlib>

namespace lse::service {

std::string host_label() {
  if (const char* h = std::getenv("LSE_HOST"); h && *h) return h;
  if (const char* n = std::getenv("NODE_NAME"); n && *n) return n;
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) == 0) return buf;
  return "unknown";
}

std::string user_agent() { return std::string("llm-stream-exporter/") + LSE_VERSION; }

metrics::BuildInfo build_info() { return {LSE_VERSION, LSE_REVISION}; }

}  // namespace lse::service
