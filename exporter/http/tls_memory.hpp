// Resident memory of a TLS connection (issue 11 §2).
//
// asio's ssl::stream keeps two record buffers of 17 KiB per connection (the
// records read from and written to the socket) and zero-fills both when it is
// built, so all 34 KiB are resident from the start although a probe's records
// (a request, then small chunks) use the first page of each. The pages past
// that are handed back to the kernel right after construction: they read as
// zeros, as before, and come back one page at a time if a large record is
// ever read or written.
#pragma once
#include <cstddef>

#include <boost/asio/ssl/stream.hpp>

#include "http/timestamping_socket.hpp"

namespace lse::http {

// Gives the kernel back the whole pages inside [data, data + size), which
// must hold zeros only (a later read of them sees zeros). Bytes given back.
std::size_t release_zero_pages(void* data, std::size_t size);

// release_zero_pages() on the two record buffers of a stream just built (no
// byte read or written yet). Bytes given back; 0 with a Boost other than the
// 1.74 whose stream layout this reads.
std::size_t release_untouched_record_buffers(boost::asio::ssl::stream<TimestampingSocket&>& stream);

// asio builds every stream in SSL_MODE_RELEASE_BUFFERS: OpenSSL then frees
// its read buffer after each record and allocates it for the next, one
// malloc and free per streamed chunk. This clears the mode on a stream just
// built: the buffers stay for the connection's life (malloc'd, so only the
// pages a record touches are resident: small records touch the first).
void keep_record_buffers(boost::asio::ssl::stream<TimestampingSocket&>& stream);

}  // namespace lse::http
