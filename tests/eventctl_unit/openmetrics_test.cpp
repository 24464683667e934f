// eventctl status --format openmetrics: families once with HELP and TYPE, labels escaped, unknown
// values (nil) left out, summaries as _sum and _count, # EOF last (openmetrics.hpp).
#include <catch2/catch.hpp>

#include "eventctl/openmetrics.hpp"

namespace eventctl::test {

TEST_CASE("openmetrics: families once, labelled series, nil left out, summary, EOF", "[openmetrics]") {
    const std::vector<Json> records = {
        Json{{"kind", "daemon"}, {"boot_id", "b\"1\\"}, {"mode", "host"}, {"uptime_s", 5}},
        Json{{"kind", "ring"}, {"cpu", 0}, {"lost_events", 3}, {"fill_percent", 12.5}},
        Json{{"kind", "ring"}, {"cpu", 1}, {"lost_events", 0}, {"fill_percent", 0.0}},
        Json{{"kind", "shard"}, {"shard", 0}, {"rows", nullptr}, {"commit_ns_total", 1500000000}, {"batches", 3}},
        Json{{"kind", "queries"}, {"refused_streaming", 2}},
        Json{{"kind", "retention"}, {"runs", 4}, {"deleted_rows", 120}, {"last_run_ns", nullptr}},
        Json{{"kind", "access_policy"}, {"refused", false}, {"deny_failing_closed", 2}},
    };
    const std::string text = render_openmetrics(records);
    CHECK_THAT(text, Catch::Contains("eventd_info{boot_id=\"b\\\"1\\\\\",mode=\"host\"} 1\n"));
    CHECK_THAT(text, Catch::Contains("# HELP eventd_events_lost_total Events lost in sequence gaps"));
    CHECK_THAT(text, Catch::Contains("# TYPE eventd_events_lost_total counter\n"
                                     "eventd_events_lost_total{cpu=\"0\"} 3\n"
                                     "eventd_events_lost_total{cpu=\"1\"} 0\n"));
    CHECK_THAT(text, Catch::Contains("eventd_ring_fill_ratio{cpu=\"0\"} 0.125\n"));
    CHECK_THAT(text, Catch::Contains("eventd_commit_duration_seconds_sum{shard=\"0\"} 1.5\n"
                                     "eventd_commit_duration_seconds_count{shard=\"0\"} 3\n"));
    CHECK_THAT(text, Catch::Contains("eventd_queries_refused_total{reason=\"streaming\"} 2\n"));
    CHECK_THAT(text, Catch::Contains("# TYPE eventd_retention_runs_total counter\neventd_retention_runs_total 4\n"));
    CHECK_THAT(text, Catch::Contains("eventd_retention_deleted_rows_total 120\n"));
    // Issue 39: something to alert on when a deny fails closed or the policy was refused.
    CHECK_THAT(text, Catch::Contains("# TYPE eventd_access_policy_refused gauge\neventd_access_policy_refused 0\n"));
    CHECK_THAT(text, Catch::Contains("eventd_access_policy_deny_failing_closed 2\n"));
    CHECK(text.find("eventd_retention_last_run_timestamp_seconds") == std::string::npos);  // nil: no run yet
    CHECK(text.find("eventd_shard_rows") == std::string::npos);  // nil: not known, not 0
    CHECK(text.find("# TYPE eventd_events_lost_total") == text.rfind("# TYPE eventd_events_lost_total"));
    CHECK(text.ends_with("# EOF\n"));
    CHECK(render_openmetrics({}) == "# EOF\n");
}

}  // namespace eventctl::test
