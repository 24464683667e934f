// Privileges with real users (DESIGN.md §2): attach = root or AttachGroup, emit = root or
// EmitGroup, judged on the peer process's real groups; and the OS — not politeness — keeps
// a consumer from writing the producer page or the data region (§5.1.5).
#include <sys/wait.h>

#include <csignal>

#include <catch2/catch.hpp>

#include "support/probe_runner.hpp"
#include "support/shim_fixture.hpp"

using namespace kmes::it;

namespace {

ShimOptions with_groups() {
    return ShimOptions{.config = {{"AttachGroup", kAttachGid}, {"EmitGroup", kEmitGid}}, .cpus = 1};
}

}  // namespace

TEST_CASE("permissions: a user outside both groups gets EPERM for attach and for emit", "[permissions]") {
    auto shim = ShimProcess::start(with_groups());
    const ProbeRun run = run_probe(as_nobody(), {"ident", "attach:0", "emit:1"});
    INFO(run.output());
    REQUIRE(run.exited_cleanly());
    REQUIRE(run.get("ident", "uid") == "65534");
    CHECK(run.get("attach", "err") == "EPERM");
    CHECK(run.get("emit", "err") == "EPERM");
    CHECK(run.get("emit", "ok") == "0");
}

TEST_CASE("permissions: a member of both groups may attach and emit", "[permissions]") {
    auto shim = ShimProcess::start(with_groups());
    const ProbeRun run = run_probe(as_nobody({kAttachGid, kEmitGid}), {"attach:0", "map", "emit:3"});
    INFO(run.output());
    REQUIRE(run.exited_cleanly());
    CHECK(run.get("attach", "ok") == "1");
    CHECK(run.get("map", "ok") == "1");
    CHECK(run.get("emit", "ok") == "3");
}

TEST_CASE("permissions: AttachGroup grants attach only and EmitGroup grants emit only", "[permissions]") {
    auto shim = ShimProcess::start(with_groups());
    const ProbeRun consumer = run_probe(as_nobody({kAttachGid}), {"attach:0", "emit:1"});
    INFO(consumer.output());
    CHECK(consumer.get("attach", "ok") == "1");
    CHECK(consumer.get("emit", "err") == "EPERM");

    const ProbeRun emitter = run_probe(as_nobody({kEmitGid}), {"attach:0", "emit:1"});
    INFO(emitter.output());
    CHECK(emitter.get("attach", "err") == "EPERM");
    CHECK(emitter.get("emit", "ok") == "1");
}

TEST_CASE("permissions: without configured groups only root may attach and emit", "[permissions]") {
    auto shim = ShimProcess::start({.cpus = 1});
    const ProbeRun nobody = run_probe(as_nobody({kAttachGid, kEmitGid}), {"attach:0", "emit:1"});
    INFO(nobody.output());
    CHECK(nobody.get("attach", "err") == "EPERM");
    CHECK(nobody.get("emit", "err") == "EPERM");

    const ProbeRun root = run_probe({}, {"attach:0", "emit:1"});
    INFO(root.output());
    CHECK(root.get("attach", "ok") == "1");
    CHECK(root.get("emit", "ok") == "1");
}

TEST_CASE("permissions: a consumer writing into the producer page is killed by SIGSEGV", "[permissions]") {
    auto shim = ShimProcess::start(with_groups());
    const ProbeRun run = run_probe(as_nobody({kAttachGid}), {"attach:0", "map", "write-producer"});
    INFO(run.output());
    REQUIRE(run.get("map", "ok") == "1");
    REQUIRE(run.has_line("write-producer started"));
    CHECK(WIFSIGNALED(run.status));
    CHECK(WTERMSIG(run.status) == SIGSEGV);
    CHECK_FALSE(run.has_line("write-producer ok=1"));
}

TEST_CASE("permissions: a consumer writing into the data region is killed by SIGSEGV", "[permissions]") {
    auto shim = ShimProcess::start(with_groups());
    const ProbeRun run = run_probe(as_nobody({kAttachGid}), {"attach:0", "map", "write-data"});
    INFO(run.output());
    REQUIRE(run.get("map", "ok") == "1");
    REQUIRE(run.has_line("write-data started"));
    CHECK(WIFSIGNALED(run.status));
    CHECK(WTERMSIG(run.status) == SIGSEGV);
    CHECK_FALSE(run.has_line("write-data ok=1"));
}

TEST_CASE("permissions: mprotect cannot make the producer page or the data region writable (EACCES)", "[permissions]") {
    auto shim = ShimProcess::start(with_groups());
    SECTION("as a group member") {
        const ProbeRun run =
            run_probe(as_nobody({kAttachGid}), {"attach:0", "map", "mprotect-producer", "mprotect-data"});
        INFO(run.output());
        REQUIRE(run.get("map", "ok") == "1");
        CHECK(run.get("mprotect-producer", "err") == "EACCES");
        CHECK(run.get("mprotect-data", "err") == "EACCES");
    }
    SECTION("even as root: the descriptors are read-only") {
        const ProbeRun run = run_probe({}, {"attach:0", "map", "mprotect-producer", "mprotect-data", "write-data"});
        INFO(run.output());
        REQUIRE(run.get("map", "ok") == "1");
        CHECK(run.get("mprotect-producer", "err") == "EACCES");
        CHECK(run.get("mprotect-data", "err") == "EACCES");
        CHECK(WIFSIGNALED(run.status));
        CHECK(WTERMSIG(run.status) == SIGSEGV);
    }
}

TEST_CASE("permissions: the consumer page is writable by a consumer", "[permissions]") {
    auto shim = ShimProcess::start(with_groups());
    const ProbeRun run = run_probe(as_nobody({kAttachGid}), {"attach:0", "map", "write-consumer"});
    INFO(run.output());
    CHECK(run.exited_cleanly());
    CHECK(run.has_line("write-consumer ok=1"));
}

// Issue 40, fair sockets (docs/KMES-SHIM.md "Connections").
TEST_CASE("permissions: a connection that sends no request, or half of one, is closed after RequestTimeoutMs",
          "[permissions]") {
    auto shim = ShimProcess::start({.config = {{"RequestTimeoutMs", 500}, {"EmitGroup", kEmitGid}}, .cpus = 1});
    const ProbeRun run = run_probe(as_nobody({kEmitGid}), {"silent", "partial"});
    INFO(run.output());
    REQUIRE(run.exited_cleanly());
    for (const char* step : {"silent", "partial"}) {
        INFO(step);
        CHECK(run.get(step, "closed") == "1");
        const int after_ms = std::stoi(run.get(step, "after_ms"));
        CHECK(after_ms >= 450);
        CHECK(after_ms < 10'000);  // the default would have been 10 s
    }
}

TEST_CASE("permissions: an emit refused for want of the privilege ends its connection; another error does not",
          "[permissions]") {
    auto shim = ShimProcess::start(with_groups());
    const ProbeRun outsider = run_probe(as_nobody(), {"raw-emit:5000"});
    INFO(outsider.output());
    CHECK(outsider.get("raw-emit", "err") == "EPERM");
    CHECK(outsider.get("raw-emit", "closed") == "1");
    // A member of EmitGroup whose request is wrong (no descriptor table): an answer, and the
    // connection stays for the next request.
    const ProbeRun member = run_probe(as_nobody({kEmitGid}), {"raw-emit:1000"});
    INFO(member.output());
    CHECK(member.get("raw-emit", "err") != "EPERM");
    CHECK(member.get("raw-emit", "err") != "-");
    CHECK(member.get("raw-emit", "closed") == "0");
}
