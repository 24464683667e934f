// [fair-sockets]: no local user can take kmes-shimd's connections from the others (issue 40,
// docs/KMES-SHIM.md "Connections"). `nobody`, in no group, opens 1,100 connections and holds
// them: it gets MaxConnectionsPerUser (64), the rest are closed at once; then eventd, killed
// and restarted, attaches every ring and stores new events, and root and another user of the
// emit group emit — while nobody still holds its 64.
#include <algorithm>
#include <chrono>
#include <string>

#include <catch2/catch.hpp>

#include "pipeline.hpp"
#include "support/eventually.hpp"
#include "support/probe_runner.hpp"

using namespace eventd::it;
using kmes::it::as_nobody;
using kmes::it::as_user;
using kmes::it::BackgroundProbe;
using kmes::it::kEmitGid;
using kmes::it::ProbeRun;
using kmes::it::run_probe;

namespace {

constexpr uid_t kOtherEmitter = 64100;  // no passwd entry needed: the shim judges the socket's ids

size_t occurrences(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("fair sockets: one user holding 1,100 connections leaves eventd's attach, root and other emitters a slot",
          "[fair-sockets]") {
    Pipeline p({.cpus = 2, .generate = "", .kmes_config = {{"EmitGroup", kEmitGid}}});
    p.start_eventd();

    BackgroundProbe holder(as_nobody(), {"hold:1100", "pause:600000"});
    // The 65th connection is the first refused: the rest follow at once.
    REQUIRE(p.shim().wait_log("(MaxConnectionsPerUser 64)", std::chrono::seconds(60)));

    // eventd after a crash: it attaches every ring again, and stores what is emitted next.
    p.kill_eventd();
    p.start_eventd();
    const ProbeRun root = run_probe({}, {"emit:50:fair.root"});
    INFO(root.output());
    CHECK(root.get("emit", "ok") == "50");
    const ProbeRun other = run_probe(as_user(kOtherEmitter, {kEmitGid}), {"emit:50:fair.other"});
    INFO(other.output());
    CHECK(other.get("emit", "ok") == "50");
    size_t stored_root = 0, stored_other = 0;
    const bool stored = test_support::eventually(
        [&] {
            const StoreContents store = read_store(p.store());
            stored_root = store.of_type("fair.root").size();
            stored_other = store.of_type("fair.other").size();
            return stored_root == 50 && stored_other == 50;
        },
        std::chrono::seconds(30));
    INFO("stored: " << stored_root << " of root's, " << stored_other << " of the other emitter's");
    CHECK(stored);

    // Still held while all that happened: nobody got 64 and no more.
    const ProbeRun held = holder.terminate();
    INFO(held.output());
    CHECK(held.get("hold", "served") == "64");
    CHECK(held.get("hold", "refused") == "1036");
    // 1,036 refusals, ten of them logged one by one (the rest are counted once the minute is over).
    const std::string log = p.shim().log();
    CHECK(occurrences(log, "(MaxConnectionsPerUser 64)") == 10);
    p.stop_eventd();
}
