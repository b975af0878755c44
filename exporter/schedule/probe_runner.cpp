// The real ProbeRunner: a thin adapter over probe::Prober that masks the
// target's secrets in what each probe brings back.
#include "schedule/probe_runner.hpp"

#include "probe/prober.hpp"
#include "util/text.hpp"

namespace lse::schedule {
namespace {

class ProberRunner final : public ProbeRunner {
 public:
  ProberRunner(boost::asio::io_context& io, const config::Target& target,
               const std::string& host_label, const std::string& user_agent)
      : prober_(io, target, host_label, user_agent), secrets_(config::secret_values(target)) {}

  boost::asio::awaitable<probe::ProbeResult> run(const config::Prompt& prompt) override {
    probe::ProbeResult result = co_await prober_.run(prompt);
    clean_upstream_text(result, secrets_);
    co_return result;
  }

  void cancel() override { prober_.cancel(); }

 private:
  probe::Prober prober_;
  util::Redactor secrets_;
};

}  // namespace

void clean_upstream_text(probe::ProbeResult& result, const util::Redactor& secrets) {
  for (std::string* text : {&result.error_detail, &result.finish_reason, &result.content_encoding,
                            &result.content_type}) {
    if (!secrets.empty()) *text = secrets.mask(*text);
    *text = text::one_line(*text);
  }
}

ProbeRunnerFactory prober_factory(std::string host_label, std::string user_agent) {
  return [host_label = std::move(host_label), user_agent = std::move(user_agent)](
             boost::asio::io_context& io,
             const config::Target& target) -> std::unique_ptr<ProbeRunner> {
    return std::make_unique<ProberRunner>(io, target, host_label, user_agent);
  };
}

}  // namespace lse::schedule
