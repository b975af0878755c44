// The real ProbeRunner: a thin adapter over probe::Prober.
#include "schedule/probe_runner.hpp"

#include "probe/prober.hpp"

namespace lse::schedule {
namespace {

class ProberRunner final : public ProbeRunner {
 public:
  ProberRunner(boost::asio::io_context& io, const config::Target& target,
               const std::string& host_label, const std::string& user_agent)
      : prober_(io, target, host_label, user_agent) {}

  boost::asio::awaitable<probe::ProbeResult> run(const config::Prompt& prompt) override {
    co_return co_await prober_.run(prompt);
  }

  void cancel() override { prober_.cancel(); }

 private:
  probe::Prober prober_;
};

}  // namespace

ProbeRunnerFactory prober_factory(std::string host_label, std::string user_agent) {
  return [host_label = std::move(host_label), user_agent = std::move(user_agent)](
             boost::asio::io_context& io,
             const config::Target& target) -> std::unique_ptr<ProbeRunner> {
    return std::make_unique<ProberRunner>(io, target, host_label, user_agent);
  };
}

}  // namespace lse::schedule
