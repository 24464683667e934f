// `eventctl status --format openmetrics` (issue 13, "Metrics"): eventd's STATUS records as
// metrics text — the Prometheus exposition format that node_exporter's textfile collector and
// `promtool check metrics` read, with OpenMetrics' `# EOF` last (a comment to them). Names and units by Prometheus conventions (`eventd_` prefix, base
// units: seconds, bytes, ratios 0..1; counters end in `_total`), each family with # HELP and
// # TYPE once, labels for the per-CPU, per-shard and per-reason series, and `# EOF` last:
//
//   # HELP eventd_events_lost_total Events lost in sequence gaps (…), per KMES ring.
//   # TYPE eventd_events_lost_total counter
//   eventd_events_lost_total{cpu="0"} 12
//   ...
//   # EOF
//
// The families and where each comes from: kMetrics in openmetrics.cpp; docs/OPERATIONS.md
// "Metrics" lists them.
#pragma once

#include <string>
#include <vector>

#include "status_view.hpp"

namespace eventctl {

std::string render_openmetrics(const std::vector<Json>& records);

}  // namespace eventctl
