// kmes-shimd configuration (PSD-003 §6.1, docs/CONFIGURATION.md) and the per-process emit
// token bucket (§4.1.2).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "shimd/config.hpp"
#include "shimd/rate_limiter.hpp"

using kmes::shim::ConfigLoad;
using kmes::shim::RateLimiter;
using kmes::shim::Rejection;
using kmes::shim::ShimConfig;
using nlohmann::json;

namespace {

// A non-default starting point, so "kept the previous value" differs from "reset to default".
ShimConfig previous() {
    ShimConfig c;
    c.buffer_capacity = 1 << 20;
    c.max_event_size = 8192;
    c.max_nesting_depth = 16;
    c.max_emit_rate = 500;
    c.cpus = 2;
    c.socket_path = "/tmp/kmes-test.sock";
    c.config_delay_ms = 10;
    c.mlock = true;
    return c;
}

bool same(const ShimConfig& a, const ShimConfig& b) {
    return a.buffer_capacity == b.buffer_capacity && a.max_event_size == b.max_event_size &&
           a.max_nesting_depth == b.max_nesting_depth && a.max_emit_rate == b.max_emit_rate && a.cpus == b.cpus &&
           a.socket_path == b.socket_path && a.attach_group == b.attach_group && a.emit_group == b.emit_group &&
           a.config_delay_ms == b.config_delay_ms && a.mlock == b.mlock && a.hugepages == b.hugepages &&
           a.generators == b.generators;
}

const Rejection* rejection_for(const ConfigLoad& load, const std::string& key) {
    for (const auto& r : load.rejections)
        if (r.key == key) return &r;
    return nullptr;
}

// A file in the temp directory, removed at scope end.
struct TempFile {
    explicit TempFile(const std::string& content) {
        char name[] = "/tmp/kmes-config-test-XXXXXX";
        const int fd = mkstemp(name);
        REQUIRE(fd >= 0);
        close(fd);
        path = name;
        std::ofstream(path) << content;
    }
    ~TempFile() { std::remove(path.c_str()); }
    std::string path;
};

const RateLimiter::ProcessKey kProcess{1234, 1};
const RateLimiter::Clock::time_point t0{};

RateLimiter::Clock::time_point at(double seconds) {
    return t0 + std::chrono::duration_cast<RateLimiter::Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace

// ---- configuration -------------------------------------------------------------------------

TEST_CASE("valid values are applied", "[config]") {
    const ConfigLoad load = kmes::shim::apply_config(json{{"BufferCapacity", 65536},
                                                          {"MaxEventSize", 1024},
                                                          {"MaxNestingDepth", 256},
                                                          {"MaxEmitRatePerProcess", 1000000},
                                                          {"Mlock", false},
                                                          {"SocketPath", "/run/x.sock"}},
                                                     previous());
    CHECK(load.rejections.empty());
    CHECK_FALSE(load.file_error);
    CHECK(load.config.buffer_capacity == 65536);
    CHECK(load.config.max_event_size == 1024);
    CHECK(load.config.max_nesting_depth == 256);
    CHECK(load.config.max_emit_rate == 1000000);
    CHECK(load.config.mlock == false);
    CHECK(load.config.socket_path == "/run/x.sock");
}

TEST_CASE("an invalid value keeps the previous one and reports key, rejected and retained value", "[config]") {
    struct Case {
        const char* key;
        json value;
        json retained;
    };
    const ShimConfig before = previous();
    const Case cases[] = {
        {"MaxEventSize", 1023, before.max_event_size},
        {"MaxEventSize", 4194305, before.max_event_size},
        {"MaxEventSize", "big", before.max_event_size},
        {"MaxNestingDepth", 3, before.max_nesting_depth},
        {"MaxNestingDepth", 257, before.max_nesting_depth},
        {"MaxNestingDepth", -1, before.max_nesting_depth},
        {"MaxEmitRatePerProcess", 99, before.max_emit_rate},
        {"MaxEmitRatePerProcess", 1000001, before.max_emit_rate},
        {"MaxEmitRatePerProcess", 2.5, before.max_emit_rate},
        {"Mlock", "yes", before.mlock},
        {"SocketPath", "", before.socket_path},
        {"SocketPath", 7, before.socket_path},
        {"Cpus", 4097, before.cpus},
        {"ConfigDelayMs", 600001, before.config_delay_ms},
    };
    for (const Case& c : cases) {
        INFO(c.key << " = " << c.value.dump());
        const ConfigLoad load = kmes::shim::apply_config(json{{c.key, c.value}}, before);
        CHECK_FALSE(load.file_error);
        CHECK(same(load.config, before));
        REQUIRE(load.rejections.size() == 1);
        CHECK(load.rejections[0].key == c.key);
        CHECK(load.rejections[0].rejected == c.value);
        CHECK(load.rejections[0].retained == c.retained);
    }
}

TEST_CASE("BufferCapacity must be a power of two within 64 KiB..256 MiB", "[config]") {
    const ShimConfig before = previous();
    for (const json& bad : {json(100000), json(65537), json(3 << 20), json(32768), json(0), json(536870912),
                            json(1ull << 40), json(-65536), json("4M"), json(65536.0)}) {
        INFO("BufferCapacity = " << bad.dump());
        const ConfigLoad load = kmes::shim::apply_config(json{{"BufferCapacity", bad}}, before);
        CHECK(load.config.buffer_capacity == before.buffer_capacity);
        const Rejection* r = rejection_for(load, "BufferCapacity");
        REQUIRE(r != nullptr);
        CHECK(r->rejected == bad);
        CHECK(r->retained == before.buffer_capacity);
    }
    for (uint64_t good : {65536ull, 131072ull, 4194304ull, 268435456ull}) {
        const ConfigLoad load = kmes::shim::apply_config(json{{"BufferCapacity", good}}, before);
        CHECK(load.rejections.empty());
        CHECK(load.config.buffer_capacity == good);
    }
}

TEST_CASE("one invalid key does not stop the valid ones beside it", "[config]") {
    const ConfigLoad load = kmes::shim::apply_config(
        json{{"BufferCapacity", 100000}, {"MaxEventSize", 2048}, {"MaxNestingDepth", 1000}}, previous());
    CHECK(load.config.buffer_capacity == previous().buffer_capacity);
    CHECK(load.config.max_event_size == 2048);
    CHECK(load.config.max_nesting_depth == previous().max_nesting_depth);
    CHECK(load.rejections.size() == 2);
    CHECK(rejection_for(load, "BufferCapacity") != nullptr);
    CHECK(rejection_for(load, "MaxNestingDepth") != nullptr);
}

TEST_CASE("unknown keys are ignored", "[config]") {
    const ConfigLoad load =
        kmes::shim::apply_config(json{{"NoSuchKey", 1}, {"buffercapacity", 1}, {"Extra", {{"x", 1}}}}, previous());
    CHECK(load.rejections.empty());
    CHECK_FALSE(load.file_error);
    CHECK(same(load.config, previous()));
}

TEST_CASE("a malformed file changes nothing and reports a file error", "[config]") {
    const std::string content = GENERATE(as<std::string>{}, "{ \"BufferCapacity\": 65536", "not json at all",
                                         "[1, 2, 3]", "\"BufferCapacity\"", "");
    INFO("file content: " << content);
    TempFile file(content);
    const ConfigLoad load = kmes::shim::load_config(file.path, previous());
    REQUIRE(load.file_error);
    CHECK(load.file_error->find(file.path) != std::string::npos);  // names the file
    CHECK(load.rejections.empty());
    CHECK(same(load.config, previous()));
}

TEST_CASE("an unreadable file changes nothing and reports a file error", "[config]") {
    const ConfigLoad load = kmes::shim::load_config("/nonexistent/kmes.json", previous());
    REQUIRE(load.file_error);
    CHECK(load.file_error->find("/nonexistent/kmes.json") != std::string::npos);
    CHECK(same(load.config, previous()));
}

TEST_CASE("a well-formed file is applied", "[config]") {
    TempFile file("// comments are allowed\n{ \"BufferCapacity\": 131072, \"MaxNestingDepth\": 8 }\n");
    const ConfigLoad load = kmes::shim::load_config(file.path, previous());
    CHECK_FALSE(load.file_error);
    CHECK(load.rejections.empty());
    CHECK(load.config.buffer_capacity == 131072);
    CHECK(load.config.max_nesting_depth == 8);
}

// ---- rate limiter ----------------------------------------------------------------------------

TEST_CASE("a new process's bucket starts full: burst equals the rate", "[rate-limit]") {
    RateLimiter limiter(100);
    CHECK(limiter.reserve(kProcess, 100, at(0)));
    CHECK_FALSE(limiter.reserve(kProcess, 1, at(0)));
}

TEST_CASE("a batch larger than the tokens left is refused as a whole", "[rate-limit]") {
    RateLimiter limiter(100);
    CHECK(limiter.reserve(kProcess, 60, at(0)));
    CHECK_FALSE(limiter.reserve(kProcess, 41, at(0)));
    CHECK(limiter.reserve(kProcess, 40, at(0)));  // the refused batch took nothing
}

TEST_CASE("tokens refill at the rate and never beyond the burst", "[rate-limit]") {
    RateLimiter limiter(100);
    REQUIRE(limiter.reserve(kProcess, 100, at(0)));
    CHECK_FALSE(limiter.reserve(kProcess, 51, at(0.5)));  // 50 refilled by now
    CHECK(limiter.reserve(kProcess, 50, at(0.5)));
    CHECK_FALSE(limiter.reserve(kProcess, 1, at(0.5)));
    CHECK_FALSE(limiter.reserve(kProcess, 26, at(0.75)));  // 25 more after 0.25 s
    CHECK(limiter.reserve(kProcess, 25, at(0.75)));
    // After a long idle time the bucket holds exactly one burst.
    CHECK_FALSE(limiter.reserve(kProcess, 101, at(100)));
    CHECK(limiter.reserve(kProcess, 100, at(100)));
}

TEST_CASE("processes have separate buckets", "[rate-limit]") {
    RateLimiter limiter(100);
    CHECK(limiter.reserve(kProcess, 100, at(0)));
    CHECK(limiter.reserve({1234, 2}, 100, at(0)));  // same pid, other start time: a new process
    CHECK(limiter.reserve({4321, 1}, 100, at(0)));
}

TEST_CASE("refunded tokens can be used again, up to the burst", "[rate-limit]") {
    RateLimiter limiter(100);
    REQUIRE(limiter.reserve(kProcess, 100, at(0)));
    limiter.refund(kProcess, 30);  // 30 of a reserved batch were not emitted
    CHECK(limiter.reserve(kProcess, 30, at(0)));
    CHECK_FALSE(limiter.reserve(kProcess, 1, at(0)));
    limiter.refund(kProcess, 1000);  // never above the burst
    CHECK_FALSE(limiter.reserve(kProcess, 101, at(0)));
    CHECK(limiter.reserve(kProcess, 100, at(0)));
}

TEST_CASE("set_rate clamps the tokens to the new burst", "[rate-limit]") {
    RateLimiter limiter(100);
    REQUIRE(limiter.reserve(kProcess, 1, at(0)));  // creates the bucket; 99 left
    limiter.set_rate(10);
    CHECK_FALSE(limiter.reserve(kProcess, 11, at(0)));
    CHECK(limiter.reserve(kProcess, 10, at(0)));
    // Refill follows the new rate: 10 per second.
    CHECK_FALSE(limiter.reserve(kProcess, 6, at(0.5)));
    CHECK(limiter.reserve(kProcess, 5, at(0.5)));
    // Raising the rate does not grant tokens at once, only a larger bucket over time.
    limiter.set_rate(1000);
    CHECK_FALSE(limiter.reserve(kProcess, 1, at(0.5)));
    CHECK(limiter.reserve(kProcess, 1000, at(10)));
}
