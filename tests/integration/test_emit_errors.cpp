// One test per emission errno of kmes_emit / kmes_emit_batch (PSD-003 §4.1.2, §4.1.3),
// including the order of the checks where two of them could apply.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include <catch2/catch.hpp>

#include "emit_checks.hpp"
#include "kmes/kmes.h"
#include "support/probe_runner.hpp"
#include "support/shim_fixture.hpp"

using namespace kmes::it;
using nlohmann::json;

namespace {

constexpr uint32_t kEmitErrorRings = 2;
constexpr uint32_t kIdentityOverhead = KMES_BASE_HEADER_SIZE + KMES_IDENTITY_SIZE;  // 77 bytes

ShimOptions rate_limited() {
    return ShimOptions{.config = {{"AttachGroup", kAttachGid}, {"EmitGroup", kEmitGid}, {"MaxEmitRatePerProcess", 100}},
                       .cpus = kEmitErrorRings};
}

int emit_batch(const std::vector<kmes_emit_entry>& entries, uint32_t* emitted) {
    const int rc = kmes_emit_batch(entries.data(), uint32_t(entries.size()), emitted);
    return rc == 0 ? 0 : errno;
}

// The most tokens the bucket (MaxEmitRatePerProcess 100: 100 a second) can refill in
// `elapsed_us`: a slow run (a sanitizer build, a loaded machine) may emit a few more than the
// burst, at most one per 10 ms, never more.
long max_refill(long elapsed_us) { return elapsed_us * 100 / 1'000'000 + 1; }

// The same since the probe started, as its emit step reports it.
long refill_bound(const ProbeRun& run) { return max_refill(std::stol(run.get("emit", "since_start_us"))); }

}  // namespace

// ---- EPERM -------------------------------------------------------------------------------

TEST_CASE("emit EPERM: a caller neither root nor in EmitGroup, checked before anything else", "[emit-errors]") {
    auto shim = ShimProcess::start(rate_limited());
    SECTION("no groups") {
        const ProbeRun run = run_probe(as_nobody(), {"emit:1", "emit-invalid:1", "batch-count:0", "batch:3"});
        INFO(run.output());
        CHECK(run.get("emit", "err") == "EPERM");
        CHECK(run.get("emit-invalid", "other") == "EPERM");  // EPERM, not EINVAL for the empty type
        CHECK(run.get("batch-count", "err") == "EPERM");     // EPERM, not EINVAL for count 0
        CHECK(run.get("batch", "err") == "EPERM");
    }
    SECTION("in AttachGroup only") {
        const ProbeRun run = run_probe(as_nobody({kAttachGid}), {"emit:1", "batch:3"});
        INFO(run.output());
        CHECK(run.get("emit", "err") == "EPERM");
        CHECK(run.get("batch", "err") == "EPERM");
    }
    require_no_sequence_gap(kEmitErrorRings, 0);
}

// Issue 39 (ABI.md "Reserved namespaces"): the product's own types are refused to every
// emitter — a member of EmitGroup and root alike — as step 13, after the entry's validation.
TEST_CASE("emit EPERM: a type in a reserved namespace, for every emitter, root included", "[emit-errors]") {
    auto shim = ShimProcess::start(rate_limited());
    const std::vector<std::string> reserved = {
        "synthetic.checkpoint", "synthetic.gap", "audit.syscall", "kmes.config_rejected", "bpf.exec",
        "alert.high",           "audit"};
    for (const std::string& type : reserved) {
        INFO(type);
        CHECK(errno_name(emit(type, json{{"uid", 0}})) == "EPERM");
        const ProbeRun member = run_probe(as_nobody({kEmitGid}), {"emit:1:" + type});
        INFO(member.output());
        CHECK(member.get("emit", "err") == "EPERM");
    }
    // Only the first component counts, exactly: these are anyone's.
    const std::vector<std::string> open = {"auditx.y", "Audit.syscall", "app.audit.syscall", "kacs.access_check",
                                           "synthetics"};
    for (const std::string& type : open) {
        INFO(type);
        CHECK(emit(type, json::object()) == 0);
    }
    // In a batch, entry N of a reserved type stops it there: 0..N-1 emitted, N reported.
    static const char ok_type[] = "app.ok", forged[] = "synthetic.checkpoint";
    const auto payload = json::to_msgpack(json::object());
    const kmes_emit_entry good{ok_type, uint16_t(sizeof ok_type - 1), payload.data(), uint32_t(payload.size())};
    const kmes_emit_entry bad{forged, uint16_t(sizeof forged - 1), payload.data(), uint32_t(payload.size())};
    uint32_t emitted = 12345;
    CHECK(errno_name(emit_batch({good, good, bad, good}, &emitted)) == "EPERM");
    CHECK(emitted == 2);
    require_no_sequence_gap(kEmitErrorRings, open.size() + 2);
}

// ---- EAGAIN ------------------------------------------------------------------------------

TEST_CASE("emit EAGAIN: a non-root emitter gets a burst of MaxEmitRatePerProcess, then EAGAIN", "[emit-errors]") {
    auto shim = ShimProcess::start(rate_limited());
    const ProbeRun run = run_probe(as_nobody({kEmitGid}), {"batch:100", "emit:1000"});
    INFO(run.output());
    CHECK(run.get("batch", "rc") == "0");
    CHECK(run.get("batch", "emitted_out") == "100");
    REQUIRE(run.get("emit", "err") == "EAGAIN");
    const long more = std::stol(run.get("emit", "ok"));
    CHECK(more <= refill_bound(run));
    require_no_sequence_gap(kEmitErrorRings, 100 + more);
}

TEST_CASE("emit EAGAIN: single emits stop after the bucket's 100 tokens plus what refilled meanwhile",
          "[emit-errors]") {
    auto shim = ShimProcess::start(rate_limited());
    const ProbeRun run = run_probe(as_nobody({kEmitGid}), {"emit:10000"});
    INFO(run.output());
    REQUIRE(run.get("emit", "err") == "EAGAIN");
    const long ok = std::stol(run.get("emit", "ok"));
    const long elapsed_us = std::stol(run.get("emit", "elapsed_us"));
    CHECK(ok >= 100);
    CHECK(ok <= 100 + max_refill(elapsed_us));
}

TEST_CASE("emit EAGAIN: the rate limit is checked before the event's content", "[emit-errors]") {
    auto shim = ShimProcess::start(rate_limited());
    // emit:1000 runs until the bucket is empty; the invalid emit right after finds it empty (a
    // refill takes 10 ms).
    const ProbeRun run = run_probe(as_nobody({kEmitGid}), {"batch:100", "emit:1000", "emit-invalid:1"});
    INFO(run.output());
    CHECK(run.get("batch", "emitted_out") == "100");
    REQUIRE(run.get("emit", "err") == "EAGAIN");
    CHECK(run.get("emit-invalid", "other") == "EAGAIN");  // §4.1.2 step 2 precedes step 3
}

TEST_CASE("emit EAGAIN: only emitted events are charged — failed validations cost no token", "[emit-errors]") {
    auto shim = ShimProcess::start(rate_limited());
    const ProbeRun run =
        run_probe(as_nobody({kEmitGid}), {"emit-invalid:300", "batch:100:50", "batch:50", "emit:1000"});
    INFO(run.output());
    CHECK(run.get("emit-invalid", "einval") == "300");  // never EAGAIN: rejected emits are free
    CHECK(run.get("emit-invalid", "other") == "-");
    CHECK(run.get("batch", "err", 0) == "EINVAL");  // entry 50 invalid: 50 emitted, 50 charged
    CHECK(run.get("batch", "emitted_out", 0) == "50");
    CHECK(run.get("batch", "rc", 1) == "0");  // so 50 tokens are left
    CHECK(run.get("batch", "emitted_out", 1) == "50");
    REQUIRE(run.get("emit", "err") == "EAGAIN");  // and then none, but for what refilled meanwhile
    const long more = std::stol(run.get("emit", "ok"));
    CHECK(more <= refill_bound(run));
    require_no_sequence_gap(kEmitErrorRings, 100 + more);
}

TEST_CASE("emit EAGAIN: root is exempt from the rate limit", "[emit-errors]") {
    auto shim = ShimProcess::start(rate_limited());
    int failures = 0;
    for (int i = 0; i < 300; ++i) failures += emit("root.unlimited", json{{"i", i}}) != 0;
    CHECK(failures == 0);
    require_no_sequence_gap(kEmitErrorRings, 300);
}

// ---- EINVAL ------------------------------------------------------------------------------

TEST_CASE("emit EINVAL: an empty type", "[emit-errors]") {
    auto shim = ShimProcess::start({.cpus = kEmitErrorRings});
    CHECK(errno_name(emit("", json::object())) == "EINVAL");
    REQUIRE(emit("after", json::object()) == 0);
    require_no_sequence_gap(kEmitErrorRings, 1);
}

TEST_CASE("emit EINVAL: a type that is not valid UTF-8", "[emit-errors]") {
    auto shim = ShimProcess::start({.cpus = kEmitErrorRings});
    for (const std::string type : {"\xff", "bad\xc3", "\xc0\xaf" /* overlong */, "\xed\xa0\x80" /* surrogate */,
                                   "\xf4\x90\x80\x80" /* > U+10FFFF */}) {
        INFO("type bytes of length " << type.size());
        CHECK(errno_name(emit(type, json::object())) == "EINVAL");
    }
    CHECK(emit("caf\xc3\xa9.\xe2\x82\xac", json::object()) == 0);  // valid multi-byte UTF-8 passes
    require_no_sequence_gap(kEmitErrorRings, 1);
}

TEST_CASE("emit EINVAL: a payload that is not exactly one msgpack value", "[emit-errors]") {
    auto shim = ShimProcess::start({.cpus = kEmitErrorRings});
    const std::vector<std::vector<uint8_t>> invalid{
        {0xc1},            // never-used byte
        {0x92, 0x01},      // array of 2 with one element
        {0xa5, 'a', 'b'},  // string shorter than its length
        {0x01, 0x02},      // two values
        {},                // no value at all
    };
    for (const auto& payload : invalid) {
        INFO("payload of " << payload.size() << " bytes");
        CHECK(errno_name(emit("bad.msgpack", payload)) == "EINVAL");
    }
    REQUIRE(emit("after", json{{"ok", true}}) == 0);
    require_no_sequence_gap(kEmitErrorRings, 1);
}

TEST_CASE("emit EINVAL: a payload nested deeper than MaxNestingDepth", "[emit-errors]") {
    auto shim = ShimProcess::start({.config = {{"MaxNestingDepth", 4}}, .cpus = kEmitErrorRings});
    CHECK(emit("depth.4", nested_arrays(4)) == 0);
    CHECK(errno_name(emit("depth.5", nested_arrays(5))) == "EINVAL");
    CHECK(errno_name(emit("depth.200", nested_arrays(200))) == "EINVAL");
    require_no_sequence_gap(kEmitErrorRings, 1);
}

TEST_CASE("emit EINVAL: a batch count of 0 or more than 256", "[emit-errors]") {
    auto shim = ShimProcess::start({.cpus = kEmitErrorRings});
    const auto payload = msgpack(json::object());
    std::vector<kmes_emit_entry> entries(257, kmes_emit_entry{"t", 1, payload.data(), uint32_t(payload.size())});
    for (uint32_t count : {0u, 257u, 100000u}) {
        uint32_t emitted = 4242;
        INFO("count " << count);
        CHECK(kmes_emit_batch(entries.data(), count, &emitted) == -1);
        CHECK(errno_name(errno) == "EINVAL");
        CHECK(emitted == 4242);  // failure before §4.1.3 step 4: emitted_out untouched
    }
    uint32_t emitted = 0;
    CHECK(kmes_emit_batch(entries.data(), 256, &emitted) == 0);  // the bound itself is fine
    CHECK(emitted == 256);
    require_no_sequence_gap(kEmitErrorRings, 256);
}

TEST_CASE("emit EINVAL: an empty type is rejected before the size checks (single emit)", "[emit-errors]") {
    auto shim = ShimProcess::start({.config = {{"MaxEventSize", 1024}}, .cpus = kEmitErrorRings});
    CHECK(errno_name(emit("", msgpack_of_size(4000))) == "EINVAL");  // §4.1.2 step 3 before step 5
    require_no_sequence_gap(kEmitErrorRings, 0);
}

// ---- ENOSPC ------------------------------------------------------------------------------

TEST_CASE("emit ENOSPC: an event larger than MaxEventSize", "[emit-errors]") {
    auto shim = ShimProcess::start({.config = {{"MaxEventSize", 1024}}, .cpus = kEmitErrorRings});
    const std::string type = "big";
    // The size compared is the event's size in the ring, identity stamps included.
    const size_t fits = 1024 - kIdentityOverhead - type.size();
    CHECK(emit(type, msgpack_of_size(fits)) == 0);
    CHECK(errno_name(emit(type, msgpack_of_size(fits + 1))) == "ENOSPC");
    CHECK(errno_name(emit(type, msgpack_of_size(100000))) == "ENOSPC");
    const auto events = all_events(kEmitErrorRings);
    REQUIRE(events.size() == 1);
    CHECK(events[0].view().event_size() == 1024);
    require_no_sequence_gap(kEmitErrorRings, 1);
}

TEST_CASE("emit ENOSPC: an event larger than half the ring capacity", "[emit-errors]") {
    auto shim =
        ShimProcess::start({.config = {{"BufferCapacity", 65536}, {"MaxEventSize", 4194304}}, .cpus = kEmitErrorRings});
    REQUIRE(attach_capacity(0) == 65536);
    const std::string type = "half";
    const size_t fits = 32768 - kIdentityOverhead - type.size();
    CHECK(emit(type, msgpack_of_size(fits)) == 0);
    CHECK(errno_name(emit(type, msgpack_of_size(fits + 1))) == "ENOSPC");
    CHECK(errno_name(emit(type, msgpack_of_size(60000))) == "ENOSPC");
    const auto events = all_events(kEmitErrorRings);
    REQUIRE(events.size() == 1);
    CHECK(events[0].view().event_size() == 32768);
    require_no_sequence_gap(kEmitErrorRings, 1);
}

TEST_CASE("emit ENOSPC: the size checks come before the UTF-8 and msgpack checks", "[emit-errors]") {
    auto shim = ShimProcess::start({.config = {{"MaxEventSize", 1024}}, .cpus = kEmitErrorRings});
    std::vector<uint8_t> bad_msgpack(2000, 0xc1);
    CHECK(errno_name(emit("\xff\xfe", msgpack_of_size(2000))) == "ENOSPC");  // §4.1.2 step 5 before 7
    CHECK(errno_name(emit("t", bad_msgpack)) == "ENOSPC");                   // step 5 before 8
    require_no_sequence_gap(kEmitErrorRings, 0);
}

TEST_CASE("emit ENOSPC: in a batch the size checks come before the type checks of an entry", "[emit-errors]") {
    auto shim = ShimProcess::start({.config = {{"MaxEventSize", 1024}}, .cpus = kEmitErrorRings});
    const auto small = msgpack(json::object());
    const auto large = msgpack_of_size(2000);
    const std::vector<kmes_emit_entry> entries{
        {"ok", 2, small.data(), uint32_t(small.size())},
        {"", 0, large.data(), uint32_t(large.size())},  // empty type AND too large: §4.1.3 step 7 first
    };
    uint32_t emitted = 4242;
    CHECK(errno_name(emit_batch(entries, &emitted)) == "ENOSPC");
    CHECK(emitted == 1);
    require_no_sequence_gap(kEmitErrorRings, 1);
}

// ---- EFAULT ------------------------------------------------------------------------------

TEST_CASE("emit EFAULT: a NULL payload pointer in batch entry 2 emits entries 0-1 and reports 2", "[emit-errors]") {
    auto shim = ShimProcess::start({.cpus = kEmitErrorRings});
    const auto payload = msgpack(json{{"k", "v"}});
    const std::vector<kmes_emit_entry> entries{
        {"fault.0", 7, payload.data(), uint32_t(payload.size())},
        {"fault.1", 7, payload.data(), uint32_t(payload.size())},
        {"fault.2", 7, nullptr, 16},
        {"fault.3", 7, payload.data(), uint32_t(payload.size())},
    };
    uint32_t emitted = 4242;
    CHECK(errno_name(emit_batch(entries, &emitted)) == "EFAULT");
    CHECK(emitted == 2);
    const auto events = all_events(kEmitErrorRings);
    REQUIRE(events.size() == 2);
    CHECK(events[0].type() == "fault.0");
    CHECK(events[1].type() == "fault.1");
    require_no_sequence_gap(kEmitErrorRings, 2);
}

TEST_CASE("emit EFAULT: a type or payload pointer to unmapped memory", "[emit-errors]") {
    auto shim = ShimProcess::start({.cpus = kEmitErrorRings});
    void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(page != MAP_FAILED);
    REQUIRE(munmap(page, 4096) == 0);  // now an address nothing is mapped at
    const auto payload = msgpack(json::object());
    CHECK(kmes_emit("t", 1, page, 8) == -1);
    CHECK(errno_name(errno) == "EFAULT");
    CHECK(kmes_emit(static_cast<const char*>(page), 4, payload.data(), uint32_t(payload.size())) == -1);
    CHECK(errno_name(errno) == "EFAULT");
    CHECK(kmes_emit(nullptr, 4, payload.data(), uint32_t(payload.size())) == -1);
    CHECK(errno_name(errno) == "EFAULT");
    require_no_sequence_gap(kEmitErrorRings, 0);
}

TEST_CASE("emit EFAULT: a NULL emitted_out emits nothing", "[emit-errors]") {
    auto shim = ShimProcess::start({.cpus = kEmitErrorRings});
    const auto payload = msgpack(json::object());
    const std::vector<kmes_emit_entry> entries(3, kmes_emit_entry{"t", 1, payload.data(), uint32_t(payload.size())});
    CHECK(kmes_emit_batch(entries.data(), 3, nullptr) == -1);
    CHECK(errno_name(errno) == "EFAULT");
    require_no_sequence_gap(kEmitErrorRings, 0);
}

TEST_CASE("emit EFAULT: the size checks come before the payload is touched", "[emit-errors]") {
    auto shim = ShimProcess::start({.config = {{"MaxEventSize", 1024}}, .cpus = kEmitErrorRings});
    CHECK(kmes_emit("t", 1, nullptr, 5000) == -1);  // §4.1.2 steps 5–6 before the copy of step 7
    CHECK(errno_name(errno) == "ENOSPC");
    require_no_sequence_gap(kEmitErrorRings, 0);
}
