#include "http/tls_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#include <openssl/ssl.h>

#include <boost/version.hpp>

namespace lse::http {

std::size_t release_zero_pages(void* data, std::size_t size) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + page - 1) / page * page;
  const std::uintptr_t last = (begin + size) / page * page;
  if (last <= first) return 0;
  // The first whole page as an offset into the buffer, not a cast integer.
  char* start = static_cast<char*>(data) + (first - begin);
  // MADV_DONTNEED on private anonymous memory: the next touch maps a zero page.
  if (::madvise(start, last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

void keep_record_buffers(boost::asio::ssl::stream<TimestampingSocket&>& stream) {
  SSL_clear_mode(stream.native_handle(), SSL_MODE_RELEASE_BUFFERS);
}

#if BOOST_VERSION == 107400
namespace {

using Stream = boost::asio::ssl::stream<TimestampingSocket&>;
using Core = boost::asio::ssl::detail::stream_core;

// ssl::stream keeps its stream_core private; an explicit instantiation may
// name a private member, and this one hands out a pointer to it.
struct CoreMember {
  using type = Core Stream::*;
  friend type core_member(CoreMember);
};
template <CoreMember::type M>
struct ExposeCore {
  friend CoreMember::type core_member(CoreMember) { return M; }
};
template struct ExposeCore<&Stream::core_>;

}  // namespace

std::size_t release_untouched_record_buffers(Stream& stream) {
  Core& core = stream.*core_member(CoreMember{});
  auto& in = core.input_buffer_space_;
  auto& out = core.output_buffer_space_;
  return release_zero_pages(in.data(), in.size()) + release_zero_pages(out.data(), out.size());
}
#else
std::size_t release_untouched_record_buffers(boost::asio::ssl::stream<TimestampingSocket&>&) {
  return 0;
}
#endif

}  // namespace lse::http
