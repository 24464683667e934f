// Shard files across runs (PSD-008 §3.2, §11.1, DESIGN.md §8): a shard with an unknown
// schema_version or overwritten with garbage is never written again and never deleted — it is
// renamed shard-NNNN.quarantined-<time>.db, byte for byte as it was, a fresh shard takes its
// place, a storage_error naming its shard_index goes to another shard, and ingestion goes on.
// A changed StorageShards applies at restart and keeps the old files.
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "pipeline.hpp"
#include "support/eventually.hpp"

using namespace eventd::it;

namespace {

namespace fs = std::filesystem;

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void exec(sqlite3* db, const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &error) != SQLITE_OK) {
        const std::string text = error ? error : "?";
        sqlite3_free(error);
        FAIL("sqlite: " << text << " in " << sql);
    }
}

// A shard as a future eventd might write it: the §3.1 tables, schema_version 2, one row.
void write_schema_v2_shard(const std::string& path) {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    exec(db,
         "CREATE TABLE events (id INTEGER PRIMARY KEY, boot_id BLOB NOT NULL, timestamp INTEGER NOT NULL, "
         "cpu_id INTEGER, sequence INTEGER, origin_class INTEGER, event_type TEXT NOT NULL, "
         "effective_token_guid BLOB, true_token_guid BLOB, process_guid BLOB, payload BLOB);"
         "CREATE INDEX idx_events_timestamp ON events(timestamp);"
         "CREATE TABLE metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
         "INSERT INTO metadata VALUES ('schema_version', '2'), ('created_at', '2030-01-01T00:00:00Z');"
         "INSERT INTO events (boot_id, timestamp, cpu_id, sequence, origin_class, event_type, payload) "
         "VALUES (x'0102030405060708090a0b0c0d0e0f10', 1, 0, 1, 0, 'future.event', x'c0');");
    sqlite3_close(db);
}

// Quarantined files of shard `index` in `dir` (DESIGN.md §8 naming).
std::vector<std::string> quarantined(const std::string& dir, uint32_t index) {
    char prefix[32];
    std::snprintf(prefix, sizeof prefix, "shard-%04u", index);
    const std::regex name(std::string(prefix) + "\\.quarantined-[0-9]+(-[0-9]+)?\\.db");
    std::vector<std::string> out;
    for (const std::string& f : shard_files(dir))
        if (std::regex_match(f, name)) out.push_back(f);
    return out;
}

// Let the eventd just started store events of every CPU emitted from now on: this eventd has
// written each CPU's shard.
void run_past(Pipeline& p) {
    const Highest since = p.watch().highest();
    Highest target;
    REQUIRE(test_support::eventually([&] {
        target = p.watch().highest();
        for (const auto& [cpu, top] : target)
            if (top <= since.at(cpu)) return false;
        return true;
    }));
    std::string progress;
    INFO("eventd log:\n" << p.eventd().log());
    REQUIRE(wait_accounted(p.store(), p.boot(), target, std::chrono::seconds(30), &progress));
    REQUIRE(p.eventd().running());
}

}  // namespace

TEST_CASE("shard files: a shard with schema_version 2 is set aside untouched and readable, named in a storage_error",
          "[shard-files]") {
    Pipeline p({.cpus = 2, .generate = "rate=1000,payload=64", .eventd = {{"StorageShards", 2}}});
    fs::create_directories(p.store());
    write_schema_v2_shard(p.store() + "/shard-0001.db");
    const std::string original = read_bytes(p.store() + "/shard-0001.db");

    p.start_eventd();
    run_past(p);
    const Highest highest = p.finish();

    const auto aside = quarantined(p.store(), 1);
    REQUIRE(aside.size() == 1);
    const std::string aside_path = p.store() + "/" + aside[0];
    CHECK(read_bytes(aside_path) == original);  // never written
    CHECK(query_text(aside_path, "SELECT value FROM metadata WHERE key = 'schema_version'") == "2");
    CHECK(query_text(aside_path, "SELECT event_type FROM events") == "future.event");
    CHECK(fs::exists(p.store() + "/shard-0001.db"));  // a fresh shard took its place
    CHECK(query_text(p.store() + "/shard-0001.db", "SELECT value FROM metadata WHERE key = 'schema_version'") == "1");

    const StoreContents store = read_store(p.store());
    REQUIRE(store.unreadable.empty());
    const auto errors = store.of_type("synthetic.storage_error");
    REQUIRE(errors.size() == 1);
    INFO(errors[0].payload.dump());
    CHECK(errors[0].file == "shard-0000.db");
    CHECK(errors[0].payload["store"] == "event");
    CHECK(errors[0].payload["shard_index"] == 1);
    const std::string text = errors[0].payload["error"].get<std::string>();
    CHECK(text.find("schema_version") != std::string::npos);
    CHECK(text.find(aside[0]) != std::string::npos);  // says where the file went

    const AccountingReport report = check_accounting(store, p.boot(), highest);
    CHECK(report.lost() == 0);
    CHECK(store.in_file("shard-0001.db").size() > 0);  // CPU 1 writes into the fresh shard 1
    CHECK(store.in_file(aside[0]).size() == 1);        // the old row, still there for queries
}

TEST_CASE(
    "shard files: a shard overwritten with garbage while eventd is stopped is set aside; the ring refills the store",
    "[shard-files]") {
    Pipeline p({.cpus = 2, .generate = "rate=1000,payload=64", .eventd = {{"StorageShards", 2}}});
    p.start_eventd();
    run_past(p);
    p.stop_eventd();

    const std::string shard0 = p.store() + "/shard-0000.db";
    REQUIRE(!fs::exists(shard0 + "-wal"));  // a clean shutdown checkpoints and removes the WAL
    std::string garbage(64 * 1024, '\0');
    std::mt19937 rng(42);
    for (char& c : garbage) c = static_cast<char>(rng());
    std::ofstream(shard0, std::ios::binary | std::ios::trunc) << garbage;

    p.start_eventd();
    run_past(p);
    const Highest highest = p.finish();

    const auto aside = quarantined(p.store(), 0);
    REQUIRE(aside.size() == 1);
    CHECK(read_bytes(p.store() + "/" + aside[0]) == garbage);  // kept exactly as found

    const StoreContents store = read_store(p.store());
    REQUIRE(store.unreadable.size() == 1);  // only the garbage file
    CHECK(store.unreadable[0].rfind(aside[0], 0) == 0);
    const auto errors = store.of_type("synthetic.storage_error");
    REQUIRE(errors.size() == 1);
    INFO(errors[0].payload.dump());
    CHECK(errors[0].file == "shard-0001.db");  // never the shard it describes
    CHECK(errors[0].payload["shard_index"] == 0);
    CHECK(errors[0].payload["store"] == "event");

    // CPU 0's first run lived only in the garbage file; its events were still in the ring, so
    // the second run stored them again into the fresh shard 0 — readable accounting is exact.
    const AccountingReport report = check_accounting(store, p.boot(), highest);
    CHECK(report.lost() == 0);
    // The first run's startup record went down with shard 0; the second run knows it restarts
    // within the boot from shard 1's sequence state, and resumes CPU 0 from nothing.
    const auto startups = store.of_type("synthetic.startup");
    REQUIRE(startups.size() == 1);
    INFO(startups[0].payload.dump());
    CHECK(startups[0].file == "shard-0000.db");
    CHECK(startups[0].payload["restart"] == true);
    CHECK(startups[0].payload["resume_points"][0]["sequence"] == 0);
    CHECK(startups[0].payload["resume_points"][1]["sequence"] > 0);
}

TEST_CASE("shard files: StorageShards 2 → 1 → 3 across restarts keeps every file; no duplicate, nothing lost",
          "[shard-files]") {
    Pipeline p({.cpus = 2, .generate = "rate=1000,payload=64", .eventd = {{"StorageShards", 2}}});
    p.start_eventd();
    run_past(p);
    p.stop_eventd();

    p.write_eventd_config({{"StorageShards", 1}});
    p.start_eventd();
    run_past(p);
    p.stop_eventd();

    p.write_eventd_config({{"StorageShards", 3}});
    p.start_eventd();
    run_past(p);
    const Highest highest = p.finish();

    const StoreContents store = read_store(p.store());
    REQUIRE(store.unreadable.empty());
    CHECK(store.files == std::vector<std::string>{"shard-0000.db", "shard-0001.db", "shard-0002.db"});
    const AccountingReport report = check_accounting(store, p.boot(), highest);
    CHECK(report.lost() == 0);  // the 4 MiB rings covered each restart

    auto startups = store.of_type("synthetic.startup");
    std::sort(startups.begin(), startups.end(),
              [](const StoredRow& a, const StoredRow& b) { return a.timestamp < b.timestamp; });
    REQUIRE(startups.size() == 3);
    CHECK(startups[0].payload["shard_count"] == 2);
    CHECK(startups[1].payload["shard_count"] == 1);
    CHECK(startups[2].payload["shard_count"] == 3);
    CHECK(startups[0].payload["restart"] == false);
    CHECK(startups[1].payload["restart"] == true);
    CHECK(startups[2].payload["restart"] == true);
    CHECK(store.of_type("synthetic.shutdown").size() == 3);
    // CPU 1 wrote shard 1 in the first run, shard 0 in the second, shard 1 again in the third.
    std::set<std::string> cpu1_files;
    for (const StoredRow& r : store.rows)
        if (!r.synthetic() && r.cpu_id == 1) cpu1_files.insert(r.file);
    CHECK(cpu1_files == std::set<std::string>{"shard-0000.db", "shard-0001.db"});
}
