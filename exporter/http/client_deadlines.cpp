// Client's deadlines and cancellation: one timer per client, armed for each
// opening step (expiry closes the socket) and watched lazily for reads.
#include "http/client.hpp"
#include "http/client_conn.hpp"

namespace lse::http {

void Client::arm(TimePoint deadline, std::function<void()> on_expiry) {
  timed_out_ = false;
  watch_armed_ = false;
  abort_ = std::move(on_expiry);
  const auto generation = ++timer_generation_;
  timer_.expires_at(deadline);
  timer_.async_wait([this, generation](error_code ec) {
    // A stale expiry (the operation already finished) must not touch the next one.
    if (ec || generation != timer_generation_) return;
    timed_out_ = true;
    if (abort_) abort_();
  });
}

// Connect, CONNECT, handshake and write are aborted by closing the socket.
void Client::arm_close(TimePoint deadline) {
  arm(deadline, [c = conn_.get()] {
    error_code ignored;
    c->socket.close(ignored);
  });
}

void Client::disarm() {
  ++timer_generation_;
  timer_.cancel();
  abort_ = nullptr;
  watch_armed_ = false;
}

void Client::watch_reads(TimePoint deadline) {
  timed_out_ = false;
  abort_ = nullptr;  // cancel() cancels the socket itself
  read_deadline_ = deadline;
  const TimePoint at = std::min(deadline, Clock::now() + kSilenceRecheck);
  if (!watch_armed_ || watch_at_ > at) arm_watch(at);
}

void Client::arm_watch(TimePoint at) {
  const auto generation = ++timer_generation_;
  watch_armed_ = true;
  watch_at_ = at;
  timer_.expires_at(at);
  timer_.async_wait([this, generation](error_code ec) {
    if (ec || generation != timer_generation_) return;
    watch_armed_ = false;
    // No read in flight: the next one arms the watch at its own deadline
    // (and one past it is caught by its arrival stamp).
    if (!read_in_flight_) return;
    const TimePoint now = Clock::now();
    if (now < read_deadline_) {
      // A read waiting for the reactor's next edge may wait for one that
      // already came with the last bytes (a reset right behind them): after
      // a silence, the edge is re-armed so that it reports what is pending.
      const bool silent = now - last_read_at_ >= kSilenceRecheck;
      if (silent && conn_ && conn_->reader.drained()) conn_->reader.rearm();
      arm_watch(std::min(read_deadline_, (silent ? now : last_read_at_) + kSilenceRecheck));
      return;
    }
    timed_out_ = true;
    error_code ignored;
    conn_->socket.cancel(ignored);
  });
}

void Client::cancel() {
  canceled_ = true;
  if (abort_) abort_();
  if (conn_) {
    error_code ignored;
    conn_->socket.cancel(ignored);
  }
}

Client::Step Client::outcome(Stage stage, const error_code& ec, std::string_view timeout_detail,
                             std::string error_detail) const {
  if (canceled_) return Fault{stage, Interrupt::canceled, ec, "canceled"};
  if (timed_out_) return Fault{stage, Interrupt::deadline, ec, std::string(timeout_detail)};
  if (ec) return Fault{stage, Interrupt::none, ec, std::move(error_detail) + ec.message()};
  return std::nullopt;
}

}  // namespace lse::http
