// Identity stamps (DESIGN.md §2): three GUIDs between the type and the payload, so
// header_size = 29 + type_len + 48. Token GUIDs follow the effective and real uid, the
// process GUID the emitting process; kernel emitters (generators, KMES itself) carry nulls.
#include <thread>

#include <catch2/catch.hpp>

#include "kmes/kmes.h"
#include "support/probe_runner.hpp"
#include "ring_capture.hpp"
#include "support/shim_fixture.hpp"

using namespace kmes::it;
using nlohmann::json;

namespace {

constexpr uint32_t kIdentityRings = 2;
const kmes::Guid kNull{};

ShimOptions emit_group() { return ShimOptions{.config = {{"EmitGroup", kEmitGid}}, .cpus = kIdentityRings}; }

// The single event of `type` in any ring.
CapturedEvent only(const std::string& type) {
    const auto events = of_type(all_events(kIdentityRings), type);
    REQUIRE(events.size() == 1);
    return events[0];
}

void require_emitted(const ProbeRun& run, const std::string& count) {
    INFO(run.output());
    REQUIRE(run.get("emit", "ok") == count);
}

}  // namespace

TEST_CASE("identity: header_size is 29 + type_len + 48 and the payload follows it", "[identity]") {
    auto shim = ShimProcess::start({.cpus = kIdentityRings});
    for (size_t len : {size_t{1}, size_t{17}, size_t{300}}) {
        const std::string type(len, 't');
        REQUIRE(emit(type, json{{"len", len}}) == 0);
        const CapturedEvent e = only(type);
        CHECK(e.view().type_len() == len);
        CHECK(e.view().header_size() == KMES_BASE_HEADER_SIZE + len + KMES_IDENTITY_SIZE);
        CHECK(e.view().has_identity());
        CHECK(e.payload() == json{{"len", len}});
    }
}

TEST_CASE("identity: socket emits carry origin_class 0", "[identity]") {
    auto shim = ShimProcess::start({.cpus = kIdentityRings});
    REQUIRE(emit("origin.check", json::object()) == 0);
    CHECK(only("origin.check").view().origin_class() == KMES_ORIGIN_USERSPACE);
}

TEST_CASE("identity: a root emitter's token GUIDs are equal to each other and differ from nobody's", "[identity]") {
    auto shim = ShimProcess::start(emit_group());
    require_emitted(run_probe({}, {"emit:1:id.root"}), "1");
    require_emitted(run_probe(as_nobody({kEmitGid}), {"emit:1:id.nobody"}), "1");
    const CapturedEvent root_event = only("id.root");  // views borrow the captured bytes
    const CapturedEvent nobody_event = only("id.nobody");
    const auto root = root_event.view();
    const auto nobody = nobody_event.view();
    CHECK(root.effective_token() == root.true_token());
    CHECK(nobody.effective_token() == nobody.true_token());
    CHECK(root.effective_token() != nobody.effective_token());
    CHECK(root.effective_token() != kNull);
    CHECK(nobody.effective_token() != kNull);
}

TEST_CASE("identity: the effective token follows the effective uid and the true token the real uid", "[identity]") {
    auto shim = ShimProcess::start(emit_group());
    require_emitted(run_probe({}, {"emit:1:id.root"}), "1");
    require_emitted(run_probe(as_nobody({kEmitGid}), {"emit:1:id.nobody"}), "1");
    // Real uid stays root, effective uid becomes nobody (a setuid-style process).
    require_emitted(run_probe({"setpriv", "--euid=65534", "--groups=" + std::to_string(kEmitGid)}, {"emit:1:id.mixed"}),
                    "1");
    const CapturedEvent mixed = only("id.mixed");
    CHECK(mixed.view().effective_token() == only("id.nobody").view().effective_token());
    CHECK(mixed.view().true_token() == only("id.root").view().true_token());
}

TEST_CASE("identity: the process GUID is shared within a process and differs between processes", "[identity]") {
    auto shim = ShimProcess::start({.cpus = kIdentityRings});
    require_emitted(run_probe({}, {"emit:2:id.first"}), "2");
    require_emitted(run_probe({}, {"emit:1:id.second"}), "1");
    const auto first = of_type(all_events(kIdentityRings), "id.first");
    REQUIRE(first.size() == 2);
    CHECK(first[0].view().process() == first[1].view().process());
    CHECK(first[0].view().process() != only("id.second").view().process());
    CHECK(first[0].view().process() != kNull);
}

TEST_CASE("identity: generator events and KMES self-events carry null GUIDs", "[identity]") {
    auto shim = ShimProcess::start({.config = {{"BufferCapacity", 1000}},  // rejected → a self-event
                                    .cpus = kIdentityRings,
                                    .extra_args = {"--generate", "rate=1000,payload=16,origin=2,types=gen.event:1"}});
    std::vector<CapturedEvent> generated;
    for (int attempt = 0; attempt < 200 && generated.empty(); ++attempt) {
        generated = of_type(all_events(kIdentityRings), "gen.event");
        if (generated.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE_FALSE(generated.empty());
    const auto self = of_type(all_events(kIdentityRings), "kmes.config_rejected");
    REQUIRE(self.size() == 1);
    for (const CapturedEvent* e : std::initializer_list<const CapturedEvent*>{&generated.front(), &self.front()}) {
        INFO(e->type());
        CHECK(e->view().header_size() == KMES_BASE_HEADER_SIZE + e->view().type_len() + KMES_IDENTITY_SIZE);
        CHECK(e->view().effective_token() == kNull);
        CHECK(e->view().true_token() == kNull);
        CHECK(e->view().process() == kNull);
    }
}
