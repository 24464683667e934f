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
    CHECK(r->config.commit_delay_ms == 0);  // commit at once when idle (§2.4.2 step 3)
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

TEST_CASE("CommitDelayMs takes 0 to 1000 ms and is a tuning key", "[config]") {
    json doc = minimal();
    doc["CommitDelayMs"] = 20;
    auto r = parse_eventd_config(doc);
    REQUIRE(r.ok());
    CHECK(r->config.commit_delay_ms == 20);
    CHECK(r->problems.empty());
    doc["CommitDelayMs"] = 1001;
    auto bad = parse_eventd_config(doc, r->config);
    REQUIRE(bad.ok());
    CHECK(bad->config.commit_delay_ms == 20);  // the value in force is kept
    REQUIRE(bad->problems.size() == 1);
    CHECK(bad->problems[0].key == "CommitDelayMs");
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

TEST_CASE("the adaptive indexing and shedding keys take the §12.1 defaults and ranges", "[config][index]") {
    auto d = parse_eventd_config(minimal());
    REQUIRE(d.ok());
    CHECK(d->config.adaptive_index_window_hours == 24);
    CHECK(d->config.adaptive_index_policy_interval_minutes == 60);
    CHECK(d->config.adaptive_index_create_threshold == 100);
    CHECK(d->config.adaptive_index_drop_threshold == 10);
    CHECK(d->config.shedding_window_seconds == 30);
    CHECK(d->config.shedding_batch_percent == 75);
    CHECK(d->config.emergency_shedding_buffer_percent == 75);

    json doc = minimal();
    doc["AdaptiveIndexWindowHours"] = 169;           // 1..168
    doc["AdaptiveIndexPolicyIntervalMinutes"] = 59;  // 60..1440
    doc["AdaptiveIndexCreateThreshold"] = 9;         // 10..10000
    doc["AdaptiveIndexDropThreshold"] = 0;           // 1..1000
    doc["SheddingWindowSeconds"] = 301;              // 10..300
    doc["SheddingBatchPercent"] = 49;                // 50..100
    doc["EmergencySheddingBufferPercent"] = 96;      // 50..95
    auto r = parse_eventd_config(doc);
    REQUIRE(r.ok());
    CHECK(r->problems.size() == 7);
    CHECK(r->config.adaptive_index_window_hours == 24);
    CHECK(r->config.adaptive_index_policy_interval_minutes == 60);
    CHECK(r->config.adaptive_index_create_threshold == 100);
    CHECK(r->config.adaptive_index_drop_threshold == 10);
    CHECK(r->config.emergency_shedding_buffer_percent == 75);

    doc = minimal();
    doc["AdaptiveIndexWindowHours"] = 168;
    doc["AdaptiveIndexPolicyIntervalMinutes"] = 1440;
    doc["AdaptiveIndexCreateThreshold"] = 10;
    doc["AdaptiveIndexDropThreshold"] = 9;
    doc["SheddingWindowSeconds"] = 10;
    doc["SheddingBatchPercent"] = 100;
    doc["EmergencySheddingBufferPercent"] = 95;
    auto edges = parse_eventd_config(doc);
    REQUIRE(edges.ok());
    CHECK(edges->problems.empty());
    CHECK(edges->config.adaptive_index_create_threshold == 10);
    CHECK(edges->config.adaptive_index_drop_threshold == 9);
    CHECK(edges->config.shedding_batch_percent == 100);
}

TEST_CASE("a drop threshold not below the create threshold keeps the pair in force", "[config][index]") {
    eventd::EventdConfig in_force;
    in_force.adaptive_index_create_threshold = 50;
    in_force.adaptive_index_drop_threshold = 5;
    for (auto [create, drop] : {std::pair{20, 20}, std::pair{20, 30}}) {
        json doc = minimal();
        doc["AdaptiveIndexCreateThreshold"] = create;
        doc["AdaptiveIndexDropThreshold"] = drop;
        auto r = parse_eventd_config(doc, in_force);
        REQUIRE(r.ok());
        CHECK(r->config.adaptive_index_create_threshold == 50);
        CHECK(r->config.adaptive_index_drop_threshold == 5);
        REQUIRE(r->problems.size() == 1);
        CHECK(r->problems[0].key == "AdaptiveIndexDropThreshold");
        CHECK_THAT(r->problems[0].message, Catch::Contains("not lower than AdaptiveIndexCreateThreshold"));
    }
    // Only the create threshold set, below the default drop (10): the pair is invalid too.
    json doc = minimal();
    doc["AdaptiveIndexCreateThreshold"] = 10;
    auto r = parse_eventd_config(doc);
    REQUIRE(r.ok());
    CHECK(r->config.adaptive_index_create_threshold == 100);
    CHECK(r->config.adaptive_index_drop_threshold == 10);
}

TEST_CASE("adaptive indexing and shedding keys are tuning keys: a reload records them", "[config][index]") {
    json before = minimal();
    json after = minimal();
    after["AdaptiveIndexCreateThreshold"] = 200;
    after["SheddingWindowSeconds"] = 60;
    auto from = parse_eventd_config(before);
    auto to = parse_eventd_config(after);
    REQUIRE(from.ok());
    REQUIRE(to.ok());
    std::vector<std::string> restart_only;
    const auto changes = tuning_changes(*from, *to, &restart_only);
    REQUIRE(changes.size() == 2);
    CHECK(changes[0].key == "AdaptiveIndexCreateThreshold");
    CHECK(changes[0].new_value == 200);
    CHECK(changes[1].key == "SheddingWindowSeconds");
    CHECK(restart_only.empty());
}
