// Who this exporter is, as the probes and the metrics say it: the host label
// of every row, the User-Agent of every request, the build of
// llm_stream_exporter_build_info. One home for `serve` and `run`.
#pragma once
#include <string>

#include "metrics/metrics.hpp"

namespace lse::service {

// LSE_HOST first, then the Kubernetes node (NODE_NAME, the chart's daemonset
// mode: the "second host" of a comparison is a node), then the hostname.
std::string host_label();

// "llm-stream-exporter/<version>".
std::string user_agent();

// Version and revision this binary was built from.
metrics::BuildInfo build_info();

}  // namespace lse::service
