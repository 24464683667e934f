// eventd configuration (PSD-008 §12.1, DESIGN.md §8): required keys, defaults, invalid values,
// and the changes a reload records as synthetic.config_change.
#include <catch2/catch.hpp>

#include "eventd/config.hpp"

using eventd::parse_eventd_config;
using eventd::tuning_changes;
using nlohmann::json;

namespace {
json minimal() { return {{"EventStorePath", "/tmp/s"}, {"QuerySocketPath", "/tmp/q.sock"}}; }
}  // namespace

TEST_CASE("a missing required key refuses the configuration and names the key", "[config]") {
    auto r = parse_eventd_config(json{{"QuerySocketPath", "/tmp/q.sock"}});
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message, Catch::Contains("EventStorePath"));
    auto s = parse_eventd_config(json{{"EventStorePath", "/tmp/s"}, {"QuerySocketPath", 5}});
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.error().message, Catch::Contains("QuerySocketPath"));
}

TEST_CASE("absent optional keys take the spec defaults", "[config]") {
    auto r = parse_eventd_config(minimal());
    REQUIRE(r.ok());
    CHECK(r->config.storage_shards == 0);
    CHECK(r->config.max_batch_size == 10000);
    CHECK(r->config.max_batch_latency_ms == 100);
    CHECK(r->config.event_retention_days == 30);
    CHECK(r->config.event_retention_max_bytes == 0);
    CHECK(r->config.retention_check_interval_minutes == 60);
    CHECK(r->config.kmes_socket_path == "/run/kmes/kmes.sock");
    CHECK(r->problems.empty());
}

TEST_CASE("an invalid optional value keeps the value in force and is reported", "[config]") {
    eventd::EventdConfig in_force;
    in_force.max_batch_size = 500;
    json doc = minimal();
    doc["MaxBatchSize"] = 99;        // below the range 100..100000
    doc["StorageShards"] = "four";   // wrong type
    doc["MaxBatchLatencyMs"] = 250;  // valid
    doc["SomethingElse"] = true;     // unknown: ignored
    auto r = parse_eventd_config(doc, in_force);
    REQUIRE(r.ok());
    CHECK(r->config.max_batch_size == 500);
    CHECK(r->config.storage_shards == 0);
    CHECK(r->config.max_batch_latency_ms == 250);
    REQUIRE(r->problems.size() == 2);
    CHECK(r->problems[0].key == "StorageShards");
    CHECK(r->problems[1].key == "MaxBatchSize");
}

TEST_CASE("a reload records changed, added and removed tuning keys", "[config]") {
    json before = minimal();
    before["MaxBatchLatencyMs"] = 100;
    before["EventRetentionDays"] = 7;
    json after = minimal();
    after["MaxBatchLatencyMs"] = 50;  // changed
    after["MaxBatchSize"] = 2000;     // added
    // EventRetentionDays removed: back to the default 30
    auto from = parse_eventd_config(before);
    auto to = parse_eventd_config(after, from->config);
    REQUIRE((from.ok() && to.ok()));
    std::vector<std::string> restart_only;
    const auto changes = tuning_changes(*from, *to, &restart_only);
    REQUIRE(changes.size() == 3);
    CHECK(changes[0].key == "MaxBatchSize");
    CHECK(changes[0].old_value.is_null());
    CHECK(changes[0].new_value == 2000);
    CHECK(changes[1].key == "MaxBatchLatencyMs");
    CHECK(changes[1].old_value == 100);
    CHECK(changes[1].new_value == 50);
    CHECK(changes[2].key == "EventRetentionDays");
    CHECK(changes[2].old_value == 7);
    CHECK(changes[2].new_value.is_null());
    CHECK(to->config.event_retention_days == 30);
    CHECK(restart_only.empty());
}

TEST_CASE("a changed store path or shard count is restart-only", "[config]") {
    json after = minimal();
    after["EventStorePath"] = "/tmp/other";
    after["StorageShards"] = 4;
    auto from = parse_eventd_config(minimal());
    auto to = parse_eventd_config(after);
    std::vector<std::string> restart_only;
    CHECK(tuning_changes(*from, *to, &restart_only).empty());
    CHECK(restart_only == std::vector<std::string>{"EventStorePath", "StorageShards"});
}
