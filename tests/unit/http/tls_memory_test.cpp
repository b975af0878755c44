// The record buffers asio's ssl::stream zero-fills per connection are given
// back to the kernel where untouched, and still read as zeros (issue 11 §2);
// OpenSSL's own record buffers stay between records (issue 11 §1).
#include "http/tls_memory.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/ssl.h>
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/version.hpp>
#include <cstdint>
#include <vector>

namespace {

const std::uintptr_t kPage = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));

// Resident pages among the whole pages inside [data, data + size).
std::size_t resident_pages(const void* data, std::size_t size) {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kPage - 1) / kPage * kPage;
  const std::uintptr_t last = (begin + size) / kPage * kPage;
  std::vector<unsigned char> in((last - first) / kPage);
  EXPECT_EQ(::mincore(reinterpret_cast<void*>(first), last - first, in.data()), 0);
  return static_cast<std::size_t>(
      std::count_if(in.begin(), in.end(), [](unsigned char v) { return (v & 1) != 0; }));
}

TEST(TlsMemory, ZeroPagesGoBackToTheKernelAndStillReadAsZeros) {
  std::vector<unsigned char> buffer(17 * 1024);  // zero-filled: every page touched
  const std::size_t whole = resident_pages(buffer.data(), buffer.size());
  ASSERT_GE(whole, 3u);

  const std::size_t released = lse::http::release_zero_pages(buffer.data(), buffer.size());
  EXPECT_EQ(released, whole * kPage);
  EXPECT_EQ(resident_pages(buffer.data(), buffer.size()), 0u);
  // The bytes around the whole pages (shared with other allocations) are untouched.
  EXPECT_TRUE(std::all_of(buffer.begin(), buffer.end(), [](unsigned char v) { return v == 0; }));
  buffer[8 * 1024] = 7;
  EXPECT_EQ(buffer[8 * 1024], 7);
  EXPECT_EQ(lse::http::release_zero_pages(buffer.data(), kPage - 1), 0u);  // no whole page
}

TEST(TlsMemory, AFreshStreamGivesBackMostOfItsTwoRecordBuffers) {
#if BOOST_VERSION != 107400
  GTEST_SKIP() << "the stream's layout is read for Boost 1.74 only";
#endif
  boost::asio::io_context io;
  lse::http::ProbeSocket socket(io);
  lse::http::TimestampingSocket reader(socket);
  boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_client);
  boost::asio::ssl::stream<lse::http::TimestampingSocket&> stream(reader, ctx);
  // Two buffers of 17 KiB: at least three whole pages each, whatever their alignment.
  EXPECT_GE(lse::http::release_untouched_record_buffers(stream), 2 * 3 * kPage);
}

TEST(TlsMemory, AStreamKeepsItsRecordBuffersBetweenRecords) {
  boost::asio::io_context io;
  lse::http::ProbeSocket socket(io);
  lse::http::TimestampingSocket reader(socket);
  boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_client);
  boost::asio::ssl::stream<lse::http::TimestampingSocket&> stream(reader, ctx);
  // asio's default, which frees and allocates the read buffer per record.
  ASSERT_NE(SSL_get_mode(stream.native_handle()) & SSL_MODE_RELEASE_BUFFERS, 0u);
  lse::http::keep_record_buffers(stream);
  EXPECT_EQ(SSL_get_mode(stream.native_handle()) & SSL_MODE_RELEASE_BUFFERS, 0u);
  // The modes asio's reads and writes rely on are left as they were.
  EXPECT_NE(SSL_get_mode(stream.native_handle()) & SSL_MODE_ENABLE_PARTIAL_WRITE, 0u);
}

}  // namespace
