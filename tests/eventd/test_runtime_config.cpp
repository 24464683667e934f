// Runtime configuration (PSD-008 §10.1.4, §12.1): on SIGHUP (and when the file changes) tuning
// keys apply at once and each change is recorded as synthetic.config_change — key, old and new
// value as plain strings with their types, "absent" + nil for a key added or removed. Invalid
// values and restart-only keys change nothing at runtime and produce no record.
#include <signal.h>

#include <algorithm>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "pipeline.hpp"
#include "support/eventually.hpp"

using namespace eventd::it;

namespace {

std::vector<StoredRow> config_changes(const Pipeline& p) {
    return read_store(p.store(), {.kmes_rows = false}).of_type("synthetic.config_change");
}

// Rewrite eventd.json, SIGHUP, and wait until `count` config_change records exist. Then wait a
// little longer, so a duplicate (file watch and SIGHUP both reloading) would show up too.
std::vector<StoredRow> reload_and_wait(Pipeline& p, const nlohmann::json& overrides, size_t count) {
    p.write_eventd_config(overrides);
    p.eventd().signal(SIGHUP);
    {
        const bool recorded = test_support::eventually([&] { return config_changes(p).size() >= count; },
                                                       std::chrono::seconds(20), std::chrono::milliseconds(50));
        INFO("eventd log:\n" << p.eventd().log());
        REQUIRE(recorded);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::vector<StoredRow> changes = config_changes(p);
    std::sort(changes.begin(), changes.end(),
              [](const StoredRow& a, const StoredRow& b) { return a.timestamp < b.timestamp; });
    return changes;
}

void check_shape(const StoredRow& r) {
    INFO(r.file << ": " << r.payload.dump());
    std::set<std::string> keys;
    for (auto it = r.payload.begin(); it != r.payload.end(); ++it) keys.insert(it.key());
    CHECK(keys == std::set<std::string>{"key", "old_value", "old_value_type", "new_value", "new_value_type"});
    CHECK(r.file == "shard-0000.db");  // daemon-wide: shard 0
    CHECK_FALSE(r.cpu_id);
}

}  // namespace

TEST_CASE("runtime config: SIGHUP with a changed MaxBatchLatencyMs records one config_change with both values",
          "[runtime-config]") {
    Pipeline p({.cpus = 2, .generate = "rate=500,payload=32", .eventd = {{"MaxBatchLatencyMs", 100}}});
    p.start_eventd();
    const auto changes = reload_and_wait(p, {{"MaxBatchLatencyMs", 250}}, 1);
    REQUIRE(changes.size() == 1);
    check_shape(changes[0]);
    CHECK(changes[0].payload["key"] == "MaxBatchLatencyMs");
    CHECK(changes[0].payload["old_value"] == "100");
    CHECK(changes[0].payload["old_value_type"] == "integer");
    CHECK(changes[0].payload["new_value"] == "250");
    CHECK(changes[0].payload["new_value_type"] == "integer");
    // Ingestion went on through the reload.
    const Highest highest = p.finish();
    check_accounting(read_store(p.store()), p.boot(), highest);
}

TEST_CASE(
    "runtime config: a key added to the file is recorded with an absent old value, removed with an absent new one",
    "[runtime-config]") {
    Pipeline p({.cpus = 1, .generate = ""});
    p.start_eventd();
    auto changes = reload_and_wait(p, {{"EventRetentionDays", 7}}, 1);
    REQUIRE(changes.size() == 1);
    check_shape(changes[0]);
    CHECK(changes[0].payload["key"] == "EventRetentionDays");
    CHECK(changes[0].payload["old_value"].is_null());
    CHECK(changes[0].payload["old_value_type"] == "absent");
    CHECK(changes[0].payload["new_value"] == "7");
    CHECK(changes[0].payload["new_value_type"] == "integer");

    changes = reload_and_wait(p, nlohmann::json::object(), 2);
    REQUIRE(changes.size() == 2);
    const StoredRow& removed = changes[0].payload["new_value"].is_null() ? changes[0] : changes[1];
    check_shape(removed);
    CHECK(removed.payload["key"] == "EventRetentionDays");
    CHECK(removed.payload["old_value"] == "7");
    CHECK(removed.payload["old_value_type"] == "integer");
    CHECK(removed.payload["new_value"].is_null());
    CHECK(removed.payload["new_value_type"] == "absent");
}

TEST_CASE("runtime config: an invalid value or a restart-only key changes nothing at runtime and records nothing",
          "[runtime-config]") {
    Pipeline p({.cpus = 2, .generate = "", .eventd = {{"MaxBatchLatencyMs", 100}, {"StorageShards", 2}}});
    p.start_eventd();
    // MaxBatchLatencyMs 1 is below its range (10–5000); StorageShards applies at restart only.
    // A valid change in the same reload shows the reload happened.
    const auto changes = reload_and_wait(p, {{"MaxBatchLatencyMs", 1}, {"StorageShards", 3}, {"MaxBatchSize", 500}}, 1);
    INFO("eventd log:\n" << p.eventd().log());
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].payload["key"] == "MaxBatchSize");
    const std::string log = p.eventd().log();
    CHECK(log.find("MaxBatchLatencyMs") != std::string::npos);  // the invalid value is reported
    CHECK(log.find("StorageShards") != std::string::npos);      // … and the deferred key
    CHECK(shard_files(p.store()) == std::vector<std::string>{"shard-0000.db", "shard-0001.db"});
    CHECK(p.eventd().running());
}
