#include "hostile_env.hpp"

#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <regex>

#include <catch2/catch.hpp>

#include "support/eventually.hpp"
#include "support/wire_client.hpp"

namespace eventd::query_it {

using nlohmann::json;
using std::chrono::seconds;

namespace {

// The generator: 200 events/s on each of the two rings, small payloads.
constexpr const char* kGenerate = "rate=200,payload=48,types=hostile.tick";

}  // namespace

int64_t wire_count(const std::string& socket, const std::string& query) {
    WireClient client(socket);
    if (!client.send_query(query)) return -1;
    const auto frames = client.read_reply(seconds(10));
    const auto records = records_of(frames);
    if (frames.empty() || frames.back().value("status", "") != "end" || records.size() != 1) return -1;
    return records[0].value("count", int64_t(-1));
}

HostileEnv::HostileEnv(EnvOptions options) {
    options.generate = kGenerate;
    env_ = std::make_unique<QueryEnv>(std::move(options));
    socket_ = env_->socket();
    watch_ = std::make_unique<eventd::it::RingWatch>(2);
    // Warm up what eventd opens lazily (the writers' WAL files at their first commit, a
    // query's thread and read connections) before the baseline is taken.
    REQUIRE(test_support::eventually([&] { return wire_count(socket_, "EVENTS hostile.tick COUNT") > 0; }));
    check_still_serving();
    // The warm-up queries' threads joined: eventd holds no query connection any more (it
    // closes one only after joining its thread).
    REQUIRE(test_support::eventually([&] { return kmes::it::accepted_connections(eventd_pid(), socket_) == 0; }));
    eventd_base_ = kmes::it::process_usage(eventd_pid());
    eventd_base_retained_ = retained_shard_fds(eventd_pid());
    shim_base_ = kmes::it::process_usage(env_->shim().pid());
}

HostileEnv::~HostileEnv() {
    watch_.reset();
    env_.reset();
}

void check_still_serving(const std::string& socket) {
    WireClient client(socket);
    REQUIRE(client.send_query("EVENTS app.login COUNT"));
    const auto frames = client.read_reply(seconds(10));
    INFO("frames: " << json(frames).dump());
    REQUIRE(frames.size() == 2);
    CHECK(frames[0] == json({{"status", "ok"}, {"records", {{{"count", 10}}}}}));
    CHECK(frames[1] == json({{"status", "end"}}));
}

size_t retained_shard_fds(pid_t pid) {
    static const std::regex active_shard(R"(.*/shard-\d{4}\.db)");
    size_t n = 0;
    for (int fd : kmes::it::open_fds(pid)) {
        char target[512] = {};
        const std::string link = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
        const ssize_t len = ::readlink(link.c_str(), target, sizeof target - 1);
        if (len > 0 && std::regex_match(std::string(target, size_t(len)), active_shard)) ++n;
    }
    return n;
}

void HostileEnv::check_recovered(size_t concurrent_readers) {
    const pid_t eventd = eventd_pid();
    const pid_t shim = env_->shim().pid();
    REQUIRE(env_->eventd().running());
    REQUIRE(env_->shim().running());
    REQUIRE(kmes::it::process_state(eventd) != '?');
    REQUIRE(kmes::it::process_state(shim) != '?');
    check_still_serving();

    // Descriptors and threads exactly as before: no connection, worker or read connection
    // left behind. Finished workers are joined as they finish, so this may take a moment.
    // SQLite's parked descriptors (retained_shard_fds) are counted apart: at most one per
    // active shard (2) for each query that read at the same time, and one writer's each.
    kmes::it::ProcessUsage now;
    size_t retained = 0;
    const bool settled = test_support::eventually(
        [&] {
            now = kmes::it::process_usage(eventd);
            retained = retained_shard_fds(eventd);
            return now.fds - retained == eventd_base_.fds - eventd_base_retained_ &&
                   now.threads == eventd_base_.threads;
        },
        seconds(15));
    INFO("SQLite's parked shard descriptors: " << eventd_base_retained_ << " before, " << retained << " after");
    CHECK(retained <= 2 + 2 * std::max<size_t>(concurrent_readers, 1));
    INFO("eventd before: " << eventd_base_.fds << " fds, " << eventd_base_.threads << " threads, "
                           << eventd_base_.rss_kib << " KiB; after: " << now.fds << " fds, " << now.threads
                           << " threads, " << now.rss_kib << " KiB");
    INFO("eventd's descriptors now:\n" << kmes::it::describe_fds(eventd));
    CHECK(settled);
    CHECK(now.rss_kib <= eventd_base_.rss_kib + kRssSlackKib);
    kmes::it::ProcessUsage shim_now;
    const bool shim_settled = test_support::eventually(
        [&] {
            shim_now = kmes::it::process_usage(shim);
            return shim_now.fds == shim_base_.fds && shim_now.threads == shim_base_.threads;
        },
        seconds(5));
    INFO("kmes-shimd before: " << shim_base_.fds << " fds, " << shim_base_.threads << " threads, "
                               << shim_base_.rss_kib << " KiB; after: " << shim_now.fds << " fds, "
                               << shim_now.threads << " threads, " << shim_now.rss_kib << " KiB");
    CHECK(shim_settled);
    CHECK(shim_now.rss_kib <= shim_base_.rss_kib + kRssSlackKib);

    // The store audit: emission stops (the shim frozen), eventd catches up, and every
    // sequence of this boot is stored exactly once — no gap, no duplicate.
    const eventd::it::Guid boot = eventd::it::current_boot_id();
    eventd::it::ProcessFreeze freeze(shim);
    const eventd::it::Highest highest = watch_->highest();
    std::string status;
    const bool caught_up = eventd::it::wait_accounted(env_->store(), boot, highest, seconds(30), &status);
    INFO(status);
    REQUIRE(caught_up);
    auto store = eventd::it::read_store(env_->store());
    REQUIRE(store.unreadable.empty());
    // The fixture's rows belong to other boots (and some are deliberately odd, e.g. a KMES row
    // without a sequence): they are the query tests' data, not this pipeline's to audit.
    std::erase_if(store.rows, [&](const eventd::it::StoredRow& r) { return r.boot_id != boot; });
    const auto report = eventd::it::check_accounting(store, boot, highest);
    INFO(report.summary());
    CHECK(report.lost() == 0);
    CHECK(report.stored() > 0);
}

}  // namespace eventd::query_it
