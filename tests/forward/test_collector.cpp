// [collector]: the fleet end to end (issue 12 part 3; docs/FORWARD.md "Collector") — two hosts
// (each a real kmes-shimd with generators, eventd and eventd-forward; distinct boot ids) → one
// real nats-server with JetStream → one eventd in collector mode. SIGKILLs of each forwarder,
// the nats-server and the collector at random moments under load; a host gap made by freezing
// a host's eventd on small rings. At the end every record of both hosts is in the collector's
// store exactly once with its host, every host gap is a gap there, and the per-(boot, cpu)
// audit (stored + lost == highest sequence) holds centrally.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include <catch2/catch.hpp>

#include "base/guid_text.hpp"
#include "nats/subject.hpp"
#include "support/accounting.hpp"
#include "support/eventctl_runner.hpp"
#include "support/eventd_fixture.hpp"
#include "support/eventually.hpp"
#include "support/forward_process.hpp"
#include "support/local_users.hpp"
#include "support/nats_fixture.hpp"
#include "support/query_env.hpp"
#include "support/shim_fixture.hpp"
#include "support/stream_helpers.hpp"
#include "support/temp_dir.hpp"
#include "test_seed.hpp"

namespace eventd::query_it {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// An eventd in collector mode, on a store of its own, restartable on it.
class CollectorEventd {
public:
    // `eventd_extra`: more keys of its eventd.json (e.g. Security).
    explicit CollectorEventd(const NatsService& nats, const json& eventd_extra = json::object()) {
        json config = {{"EventStorePath", dir_ / "events"},
                       {"QuerySocketPath", socket()},
                       {"StorageShards", 2},
                       {"MaxBatchLatencyMs", 20},
                       {"EventRetentionDays", 3650},
                       {"CollectorSource", {{"NatsUrl", nats.url()}, {"AckWaitSeconds", 2}, {"MaxBackoffMs", 500}}}};
        for (auto it = eventd_extra.begin(); it != eventd_extra.end(); ++it) config[it.key()] = it.value();
        eventd::it::write_json_file(config_path(), config);
    }
    std::string socket() const { return dir_ / "query.sock"; }
    std::string config_path() const { return dir_ / "eventd.json"; }
    void start() { process_ = eventd::it::EventdProcess::start(dir_.str(), config_path()); }
    void kill() {
        process_->kill();
        process_.reset();
    }
    void stop() { process_.reset(); }  // SIGTERM; the fixture CHECKs exit 0
    bool running() const { return process_ != nullptr; }
    // The raw wait status once eventd has exited by itself within `timeout`.
    std::optional<int> wait_exit(milliseconds timeout) { return process_->wait_exit(timeout); }
    std::string log() const { return process_ ? process_->log() : ""; }

    RunResult run(const std::vector<std::string>& args) const {
        std::vector<std::string> argv = {eventctl_path(), "--socket", socket()};
        argv.insert(argv.end(), args.begin(), args.end());
        return run_command(argv, seconds(30));
    }
    std::vector<json> records(const std::string& query) const {
        const RunResult r = run({"--format", "jsonl", query});
        INFO(query << ": " << r.err);
        REQUIRE(r.exit_code == 0);
        return parse_jsonl(r.out);
    }
    int64_t count(const std::string& query) const {
        const RunResult r = run({"--format", "jsonl", query + " COUNT"});
        if (r.exit_code != 0) return -1;
        const auto rows = parse_jsonl(r.out);
        return rows.size() == 1 ? rows[0].value("count", int64_t(-1)) : -1;
    }

private:
    test_support::TempDir dir_;
    std::unique_ptr<eventd::it::EventdProcess> process_;
};

// What identifies a record across stores: (boot, cpu, sequence) of a KMES event, (boot, type,
// timestamp, cpu) of a synthetic one.
using RecordKey = std::tuple<std::string, std::string, int64_t, int64_t, int64_t>;
RecordKey key_of(const json& r) {
    auto number = [&](const char* k) { return r.value(k, json()).is_null() ? int64_t(-1) : r[k].get<int64_t>(); };
    if (!r["sequence"].is_null()) return {r["boot_id"], "", number("cpu_id"), number("sequence"), 0};
    return {r["boot_id"], r["event_type"], number("cpu_id"), -1, number("timestamp")};
}

// The host's record count once its eventd has accounted for every event its generators emit:
// `per_cpu` (their count=) on each of the host's two rings, stored or in a gap record.
int64_t settled_count(QueryEnv& host, uint64_t per_cpu) {
    const auto boot = base::parse_guid(status_of<protocol::status::Daemon>(host).boot_id);  // its shim's
    REQUIRE(boot);
    std::string progress;
    const bool done =
        eventd::it::wait_accounted(host.store(), *boot, {{0, per_cpu}, {1, per_cpu}}, seconds(120), &progress);
    INFO(progress);
    REQUIRE(done);
    return count(host, "EVENTS COUNT");
}

// Per (boot, cpu): stored KMES events, sequences lost in gaps, the highest sequence seen.
struct Audit {
    uint64_t stored = 0, lost = 0, highest = 0;
};
std::map<std::pair<std::string, int64_t>, Audit> audit(const std::vector<json>& records) {
    std::map<std::pair<std::string, int64_t>, Audit> out;
    for (const json& r : records) {
        if (r["cpu_id"].is_null()) continue;
        Audit& a = out[{r["boot_id"], r["cpu_id"].get<int64_t>()}];
        if (!r["sequence"].is_null()) {
            ++a.stored;
            a.highest = std::max(a.highest, r["sequence"].get<uint64_t>());
        } else if (r["event_type"] == "synthetic.gap") {
            a.lost += r["last_sequence"].get<uint64_t>() - r["first_sequence"].get<uint64_t>() + 1;
            a.highest = std::max(a.highest, r["last_sequence"].get<uint64_t>());
        }
    }
    return out;
}

// Every record of `hosts` (env, host name) is in `central` exactly once, and nothing else is:
// the host's record as it is — every header field (the token columns too) and payload key —
// with the host's name as its `host`.
void check_exactly_once(const std::vector<std::pair<QueryEnv*, std::string>>& hosts, const std::vector<json>& central) {
    std::map<RecordKey, json> expected;
    for (const auto& [env, name] : hosts) {
        const RunResult r = env->query("EVENTS");
        REQUIRE(r.exit_code == 0);
        for (json rec : parse_jsonl(r.out)) {
            INFO(rec.dump());
            REQUIRE(!rec.contains("host"));  // the generators' payloads have none (it would be event_host)
            rec["host"] = name;
            const RecordKey key = key_of(rec);
            REQUIRE(expected.emplace(key, std::move(rec)).second);  // distinct boots: no key twice
        }
    }
    std::map<RecordKey, int> seen;
    for (const json& rec : central) {
        INFO(rec.dump());
        const RecordKey key = key_of(rec);
        ++seen[key];
        const auto it = expected.find(key);
        REQUIRE(it != expected.end());  // nothing the hosts do not hold
        CHECK(rec == it->second);
    }
    size_t twice = 0, missing = 0;
    for (const auto& [key, n] : seen) twice += n > 1;
    for (const auto& [key, host] : expected) missing += seen.count(key) == 0;
    CHECK(twice == 0);
    CHECK(missing == 0);
    CHECK(central.size() == expected.size());
}

// count() of `query` on the collector until it is `expected` (90 s at most: unacknowledged
// messages come again after AckWaitSeconds, 2 s); the last count.
int64_t await_collected(const CollectorEventd& collector, const std::string& query, int64_t expected) {
    int64_t got = -1;
    test_support::eventually([&] { return (got = collector.count(query)) == expected; }, seconds(90),
                             milliseconds(500));
    return got;
}

}  // namespace

TEST_CASE("two hosts through JetStream into one collector: every record exactly once across kills", "[collector]") {
    test_support::TempDir nats_dir;
    NatsServer nats(nats_dir.str());
    // Host A on 64 KiB rings: freezing its eventd below overruns them (host gaps).
    const std::string load = "rate=800,payload=48,count=4000";  // per CPU: ~5 s
    QueryEnv host_a({.eventd = {{"MaxBatchLatencyMs", 20}}, .fixture = false, .generate = load,
                     .kmes_config = {{"BufferCapacity", 65536}}});
    QueryEnv host_b({.eventd = {{"MaxBatchLatencyMs", 20}}, .fixture = false, .generate = load});
    Forwarder forward_a(host_a, nats, {{"HostName", "host-a"}});
    Forwarder forward_b(host_b, nats, {{"HostName", "host-b"}});
    CollectorEventd collector(nats);
    forward_a.start();
    forward_b.start();
    collector.start();

    // The host gap: host A's eventd frozen while its generators run on past the rings' size.
    std::this_thread::sleep_for(milliseconds(500));
    host_a.eventd().freeze();
    std::this_thread::sleep_for(milliseconds(1500));
    host_a.eventd().thaw();

    // Kills at random moments while the load runs and the backlog drains.
    std::mt19937 rng(test_seed("EVENTD_COLLECTOR_SEED", "collector kills"));
    std::map<std::string, int> kills;
    for (int round = 0; round < 10; ++round) {
        std::this_thread::sleep_for(milliseconds(200 + rng() % 500));
        switch (rng() % 4) {
            case 0:
                forward_a.kill(), ++kills["forwarder a"];
                std::this_thread::sleep_for(milliseconds(rng() % 300));
                forward_a.start();
                break;
            case 1:
                forward_b.kill(), ++kills["forwarder b"];
                std::this_thread::sleep_for(milliseconds(rng() % 300));
                forward_b.start();
                break;
            case 2:
                nats.kill(), ++kills["nats-server"];
                std::this_thread::sleep_for(milliseconds(rng() % 1000));
                nats.start();
                break;
            default:
                collector.kill(), ++kills["collector"];
                std::this_thread::sleep_for(milliseconds(rng() % 300));
                collector.start();
        }
    }
    for (const auto& [who, n] : kills) UNSCOPED_INFO(who << " SIGKILLed " << n << " times");

    const int64_t total_a = settled_count(host_a, 4000);
    const int64_t total_b = settled_count(host_b, 4000);
    // Everything arrives, exactly once, record by record, with the right host.
    const int64_t got_a = await_collected(collector, "EVENTS WHERE host == \"host-a\"", total_a);
    const int64_t got_b = await_collected(collector, "EVENTS WHERE host == \"host-b\"", total_b);
    INFO("collector log:\n" << collector.log());
    CHECK(got_a == total_a);
    CHECK(got_b == total_b);
    const std::vector<json> central = collector.records("EVENTS WHERE host IS NOT NULL");
    check_exactly_once({{&host_a, "host-a"}, {&host_b, "host-b"}}, central);

    // Host gaps stay gaps, and the audit holds centrally exactly as on each host.
    const RunResult a_all = host_a.query("EVENTS");
    const RunResult b_all = host_b.query("EVENTS");
    auto host_audit = audit(parse_jsonl(a_all.out));
    const auto b_audit = audit(parse_jsonl(b_all.out));
    host_audit.insert(b_audit.begin(), b_audit.end());
    const auto central_audit = audit(central);
    uint64_t host_lost = 0;
    for (const auto& [key, a] : host_audit) {
        INFO("boot " << key.first << " cpu " << key.second);
        const auto it = central_audit.find(key);
        REQUIRE(it != central_audit.end());
        CHECK(it->second.stored == a.stored);
        CHECK(it->second.lost == a.lost);
        CHECK(it->second.highest == a.highest);
        CHECK(it->second.stored + it->second.lost == it->second.highest);
        host_lost += a.lost;
    }
    CHECK(host_lost > 0);  // the freeze did make gaps on host A
    std::string kill_text;
    for (const auto& [who, n] : kills) kill_text += " " + who + " x" + std::to_string(n);
    WARN("collector: " << central.size() << " records of 2 hosts exactly once (" << total_a << " + " << total_b
                       << "), " << host_lost << " sequences in host gaps; SIGKILLs:" << kill_text);

    // eventctl status shows the consumer instead of rings.
    const RunResult status = collector.run({"status"});
    REQUIRE(status.exit_code == 0);
    CHECK(status.out.find("Collector") != std::string::npos);
    CHECK(status.out.find("Rings") == std::string::npos);

    forward_a.stop();
    forward_b.stop();
    collector.stop();
}

}  // namespace eventd::query_it

namespace eventd::query_it {

TEST_CASE("NATS down for 30 s while a host ingests: nothing lost; policy and live streams work centrally",
          "[collector]") {
    ensure_test_users();
    const auto auditor = lookup_user("eventd-auditor");
    REQUIRE(auditor);
    test_support::TempDir nats_dir;
    NatsServer nats(nats_dir.str());
    // About 40 s of events on each of two rings: before, during and after the outage.
    QueryEnv host({.eventd = {{"MaxBatchLatencyMs", 20}}, .fixture = false,
                   .generate = "rate=200,payload=32,count=8000,types=app.login:1+kernel.exec:3"});
    Forwarder forward(host, nats, {{"HostName", "web-3"}});
    // The collector's own policy: auditors read app.login, three fields of it.
    const json policy = {{"Events",
                          {{"*", json::array({{{"allow", {"group:adm"}}}})},
                           {"app.login", json::array({{{"allow", {"group:eventd-auditors"}},
                                                       {"fields", {"timestamp", "event_type", "host"}}}})}}}};
    CollectorEventd collector(nats, {{"Security", policy}});
    forward.start();
    collector.start();
    // A live stream of the auditor on the collector, from before the outage to the end.
    Child live(command_as(auditor, {eventctl_path(), "--socket", collector.socket(), "--format", "jsonl",
                                    "EVENTS STREAM"}));
    // Read as it comes, as a client that keeps up does: eventd drops a stream whose client
    // stops reading (a pipe left unread fills in a burst after the outage).
    std::mutex live_mutex;
    std::vector<std::string> live_lines;
    std::atomic<bool> live_done{false};
    std::thread live_reader([&] {
        while (!live_done.load()) {
            if (auto line = live.read_line(milliseconds(200))) {
                std::lock_guard lock(live_mutex);
                live_lines.push_back(std::move(*line));
            }
        }
    });
    struct JoinReader {
        std::atomic<bool>& done;
        std::thread& thread;
        ~JoinReader() {
            done.store(true);
            if (thread.joinable()) thread.join();
        }
    } join_reader{live_done, live_reader};

    // The outage begins once records flow through to the collector.
    REQUIRE(
        test_support::eventually([&] { return collector.count("EVENTS WHERE host == \"web-3\"") > 0; }, seconds(30)));
    nats.stop();
    const int64_t host_at_stop = count(host, "EVENTS COUNT");
    // Both sides notice: they retry. What the collector held before is committed by then.
    auto retrying = [](const std::string& status) {
        return status.find("backing off") != std::string::npos || status.find("connecting") != std::string::npos;
    };
    REQUIRE(test_support::eventually([&] { return retrying(collector.run({"status"}).out); }, seconds(30)));
    REQUIRE(test_support::eventually([&] { return retrying(forward.status()); }, seconds(30)));
    const int64_t collected_at_stop = collector.count("EVENTS WHERE host == \"web-3\"");
    // The host goes on ingesting through the outage (5000 records: 12 s at its rate).
    CHECK(test_support::eventually([&] { return count(host, "EVENTS COUNT") > host_at_stop + 5000; }, seconds(60)));
    CHECK(collector.count("EVENTS WHERE host == \"web-3\"") == collected_at_stop);  // nothing came
    // What both do through an outage: attempt ("connecting", until the attempt fails), then
    // wait ("backing off", with the attempt's error), again and again. Each shows the wait
    // with its reason before long, whatever moment the status is read at first.
    std::string forward_status;
    CHECK(test_support::eventually(
        [&] {
            forward_status = forward.status();
            return forward_status.find("backing off") != std::string::npos &&
                   forward_status.find("cannot connect to NATS") != std::string::npos;
        },
        seconds(30)));
    INFO("forwarder status: " << forward_status);
    CHECK(test_support::eventually(
        [&] { return collector.run({"status"}).out.find("backing off") != std::string::npos; }, seconds(30)));
    nats.start();

    const int64_t total = settled_count(host, 8000);
    INFO("collector log:\n" << collector.log());
    CHECK(await_collected(collector, "EVENTS WHERE host == \"web-3\"", total) == total);
    const std::vector<json> central = collector.records("EVENTS WHERE host IS NOT NULL");
    check_exactly_once({{&host, "web-3"}}, central);

    // The auditor sees through the collector what the policy grants: every app.login record of
    // the host, three fields each — in a query and in the live stream that lived through it all.
    const int64_t host_logins = count(host, "EVENTS app.login COUNT");
    REQUIRE(host_logins > 0);
    const RunResult mine = run_command(command_as(auditor, {eventctl_path(), "--socket", collector.socket(),
                                                            "--format", "jsonl", "EVENTS"}),
                                       seconds(30));
    REQUIRE(mine.exit_code == 0);
    const auto visible = parse_jsonl(mine.out);
    CHECK(int64_t(visible.size()) == host_logins);
    for (const json& r : visible) {
        INFO(r.dump());
        CHECK(r.size() == 3);
        CHECK(r["event_type"] == "app.login");
        CHECK(r["host"] == "web-3");
    }
    // (Records of one generator batch may share a timestamp: counted, not compared.)
    auto streamed_now = [&] {
        std::lock_guard lock(live_mutex);
        return int64_t(live_lines.size());
    };
    CHECK(test_support::eventually([&] { return streamed_now() >= host_logins; }, seconds(30)));
    std::this_thread::sleep_for(milliseconds(1000));  // and nothing twice: no more comes after
    live_done.store(true);
    live_reader.join();
    const int64_t streamed = streamed_now();
    for (const std::string& line : live_lines) CHECK(json::parse(line)["event_type"] == "app.login");
    INFO("the auditor's stream, stderr: " << live.err_so_far());
    CHECK(streamed == host_logins);

    forward.stop();
    collector.stop();
}

}  // namespace eventd::query_it

namespace eventd::query_it {

TEST_CASE("messages that are not a host's own records are refused; the rest is stored once, however packed",
          "[collector]") {
    test_support::TempDir nats_dir;
    NatsServer nats(nats_dir.str());
    // 5 s of the host's records: most of them are published after the refused messages.
    // A type whose subject nats-server would refuse (issue 40: it stalled the forwarder for ever)
    // among them: published under a bounded subject, stored exactly once like the rest.
    const std::string long_type = "app." + std::string(6000, 'x');
    QueryEnv host({.eventd = {{"MaxBatchLatencyMs", 20}}, .fixture = false,
                   .generate = "rate=100,payload=32,count=500,types=app.login:20+" + long_type + ":1"});
    Forwarder forward(host, nats, {{"HostName", "host-a"}});
    CollectorEventd collector(nats);
    forward.start();
    collector.start();
    // Into the forwarders' stream, beside host-a's records: what a broken or hostile publisher
    // with permission on host-a's subjects could send.
    const json record = {{"boot_id", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"},
                         {"timestamp", 1795493460061943023ull},
                         {"cpu_id", 0},
                         {"sequence", 1},
                         {"event_type", "app.login"}};
    const auto body = json::to_msgpack(record);
    const std::string subject = "eventd.host-a.app.login";
    // The forwarder has created the stream once its first records are in it.
    REQUIRE(test_support::eventually([&] { return nats.count("EVENTD") > 0; }, seconds(30)));
    // Issue 40, poison messages: each once made the collector fail and JetStream deliver it
    // again after every restart (or would have, without the bound of the bytes it holds).
    const std::vector<std::vector<uint8_t>> poison = {
        {0xdd, 0xff, 0xff, 0xff, 0xff},                           // an array header of 4 G records
        std::vector<uint8_t>(body.begin(), body.begin() + body.size() / 2),  // a truncated map
        {0x81, 0xa7, 'b', 'o', 'o', 't', '_', 'i', 'd', 0xdb, 0x00, 0xa0, 0x00, 0x00, 'x'},  // a 10 MB string
        [] {
            std::vector<uint8_t> deep(10'000, 0x91);  // arrays nested 10,000 deep
            deep.push_back(0xc0);
            return deep;
        }(),
    };
    for (const auto& bytes : poison) nats.publish(subject, {{"Eventd-Host", "host-a"}}, bytes);
    nats.publish(subject, {{"Eventd-Host", "host-b"}}, body);  // posing as another host
    nats.publish(subject, {}, body);                            // no Eventd-Host
    nats.publish(subject, {{"Eventd-Host", "host-a"}}, {0xc1});  // not msgpack
    nats.publish("eventd.host-a.other", {{"Eventd-Host", "host-a"}}, body);  // subject and type differ
    // Packed messages (docs/FORWARD.md "Packed messages") of another boot, as a forwarder's
    // resends after crashes could cut them: each record is stored once, whatever the messages.
    const std::string packed_boot = "1f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    auto packed = [&](std::vector<int> sequences, bool one_bad = false) {
        json records = json::array();
        for (int seq : sequences)
            records.push_back({{"boot_id", packed_boot}, {"timestamp", 1795493460061943023ull + seq}, {"cpu_id", 0},
                               {"sequence", seq}, {"event_type", "app.login"}, {"n", seq}});
        if (one_bad) records.push_back({{"boot_id", packed_boot}, {"event_type", "app.login"}});  // no timestamp
        nats.publish(subject, {{"Eventd-Host", "host-a"}}, json::to_msgpack(records));
    };
    packed({1, 2, 3});
    packed({2, 3, 4, 5});  // cut differently: 2 and 3 are stored already, 4 and 5 complete it
    packed({7});
    packed({6});           // a late record fills its gap
    packed({1, 2, 3});     // the same again (beyond the stream's duplicate window)
    packed({8}, true);     // a bad record refuses its whole message: 8 is not stored
    nats.publish(subject, {{"Eventd-Host", "host-a"}}, json::to_msgpack(json::array()));  // no records
    // The product's namespaces from an emitter (issue 39: an old host shim let them through):
    // refused like any record that is no host's own. The audit source's own record is stored.
    const std::string audit_boot = "2f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    auto audit_record = [&](std::string type, int origin, int seq) {
        return json{{"boot_id", audit_boot}, {"timestamp", 1795493460061943023ull + seq}, {"cpu_id", 0},
                    {"sequence", seq},       {"origin_class", origin},                     {"event_type", type},
                    {"uid", 0},              {"exe", "/usr/bin/sudo"}};
    };
    nats.publish("eventd.host-a.audit.syscall", {{"Eventd-Host", "host-a"}},
                 json::to_msgpack(json::array({audit_record("audit.syscall", 4, 1), audit_record("audit.syscall", 0, 2)})));
    nats.publish("eventd.host-a.synthetic.checkpoint", {{"Eventd-Host", "host-a"}},
                 json::to_msgpack(audit_record("synthetic.checkpoint", 0, 3)));
    nats.publish("eventd.host-a.audit.syscall", {{"Eventd-Host", "host-a"}},
                 json::to_msgpack(audit_record("audit.syscall", 4, 4)));

    const int64_t total = settled_count(host, 500);
    INFO("collector log:\n" << collector.log());
    const std::string hosts_own = "EVENTS WHERE host IS NOT NULL AND boot_id != \"" + packed_boot +
                                  "\" AND boot_id != \"" + audit_boot + "\"";
    CHECK(await_collected(collector, hosts_own, total) == total);
    check_exactly_once({{&host, "host-a"}}, collector.records(hosts_own));
    CHECK(collector.count("EVENTS WHERE boot_id == \"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\"") == 0);
    REQUIRE(await_collected(collector, "EVENTS WHERE boot_id == \"" + packed_boot + "\"", 7) == 7);
    std::vector<int64_t> sequences;
    for (const json& r : collector.records("EVENTS WHERE boot_id == \"" + packed_boot + "\" SORT sequence")) {
        sequences.push_back(r["sequence"].get<int64_t>());
        CHECK(r["host"] == "host-a");
        CHECK(r["n"] == r["sequence"]);
    }
    CHECK(sequences == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7});
    REQUIRE(await_collected(collector, "EVENTS WHERE boot_id == \"" + audit_boot + "\"", 1) == 1);
    CHECK(collector.records("EVENTS WHERE boot_id == \"" + audit_boot + "\"").at(0)["sequence"] == 4);
    const std::string status = collector.run({"status"}).out;
    INFO(status);
    CHECK(std::regex_search(status, std::regex(R"(refused \(not eventd records\) +12\b)")));
    // Each refused message is a record of the collector's own, stored once: what it was, where
    // it came from and why it was refused.
    const auto rejections = collector.records("EVENTS synthetic.collector_rejected SORT stream_sequence");
    REQUIRE(rejections.size() == 12);
    std::set<uint64_t> rejected_sequences;
    for (const json& r : rejections) {
        INFO(r.dump());
        CHECK(r["stream"] == "EVENTD");
        CHECK(r["size"].get<uint64_t>() > 0);
        CHECK_FALSE(r["reason"].get<std::string>().empty());
        CHECK(r["head"].get<std::string>().size() == 2 * std::min<uint64_t>(r["size"].get<uint64_t>(), 64));
        CHECK_FALSE(r.contains("host"));  // the collector's own record, not a host's
        rejected_sequences.insert(r["stream_sequence"].get<uint64_t>());
    }
    CHECK(rejected_sequences.size() == 12);
    CHECK(rejections.at(0)["head"] == "ddffffffff");
    CHECK(rejections.at(0)["subject"] == subject);
    CHECK(rejections.at(4)["claimed_host"] == "host-b");
    CHECK(rejections.at(5)["reason"] == "no Eventd-Host header");
    CHECK(rejections.at(5)["claimed_host"] == "");
    // The host's records went on flowing after the poison: at least 200 of them (checked
    // exactly once above) were published after the last refused message.
    uint64_t records_after = 0;
    for (const StoredMessage& m : nats.messages("EVENTD")) {
        if (m.sequence <= *rejected_sequences.rbegin() || m.subject != subject) continue;
        const json records = json::from_msgpack(m.data);
        records_after += records.is_array() ? records.size() : 1;
    }
    CHECK(records_after >= 200);
    // The long type's records: under their bounded subject, stored with their whole type.
    const std::string long_subject = nats::subject_for("eventd", "host-a", long_type);
    CHECK(long_subject.size() <= nats::kMaxSubjectBytes);
    size_t long_messages = 0;
    for (const StoredMessage& m : nats.messages("EVENTD")) long_messages += m.subject == long_subject;
    CHECK(long_messages > 0);
    const std::string of_long_type = "EVENTS app.* WHERE event_type != \"app.login\"";  // (a query of 6 KB is refused)
    const int64_t long_records = count(host, of_long_type + " COUNT");
    CHECK(long_records > 0);
    CHECK(collector.count(of_long_type) == long_records);
    std::string reasons;
    for (const json& r : rejections) reasons += r["reason"].get<std::string>() + "\n";
    INFO(reasons);
    CHECK_THAT(reasons, Catch::Contains("is not eventd.<Eventd-Host>.<event_type> of the record (Eventd-Host host-b)"));
    CHECK_THAT(reasons, Catch::Contains("no Eventd-Host header"));
    CHECK_THAT(reasons,
               Catch::Contains("record 1 (audit.syscall) has origin class 0: only the product writes that namespace"));
    CHECK_THAT(reasons, Catch::Contains("record 0 (synthetic.checkpoint) has origin class 0"));
    CHECK_THAT(reasons, Catch::Contains("not an eventd record"));
    // The log names the first ten refusals, not a hostile publisher's every message.
    const std::string log = collector.log();
    size_t refusal_lines = 0;
    for (size_t at = log.find(" refused: "); at != std::string::npos; at = log.find(" refused: ", at + 1))
        ++refusal_lines;
    CHECK(refusal_lines == 10);
    // Each refusal names its message by its stream sequence (never 0: JetStream counts from 1).
    CHECK(std::regex_search(log, std::regex(R"(message [1-9][0-9]* of stream EVENTD \(subject)")));
    CHECK_FALSE(std::regex_search(log, std::regex(R"(message 0 of stream)")));

    forward.stop();
    collector.stop();
}

// Issue 40 item 2: a record nats-server must refuse (over its max_payload, 1 MiB) goes out as
// the forwarder's synthetic.forward_rejected with the record's boot, cpu and sequence. At the
// collector it takes the record's place: every sequence of the host's rings is there once —
// stored, or that record saying why not — with no gap and nothing refused.
TEST_CASE("a record too large for NATS is accounted for centrally: its forward_rejected in its place, no gap",
          "[collector]") {
    test_support::TempDir nats_dir;
    NatsServer nats(nats_dir.str());
    const json big = {{"Rate", 10}, {"PayloadSize", 1048576}, {"Count", 1}, {"Types", {{"app.big", 1}}}};
    QueryEnv host({.eventd = {{"MaxBatchLatencyMs", 20}}, .fixture = false,
                   .generate = "rate=200,payload=32,count=200,types=app.login:1",
                   .kmes_config = {{"Generators", json::array({big})}}});
    Forwarder forward(host, nats, {{"HostName", "host-a"}});
    CollectorEventd collector(nats);
    forward.start();
    collector.start();
    // On the host: 200 small and 1 big record per CPU (2 CPUs), and eventd's startup record.
    REQUIRE(await_count(host, "EVENTS COUNT", 403, seconds(30)) == 403);
    REQUIRE(count(host, "EVENTS app.big COUNT") == 2);
    const std::string of_host = "EVENTS WHERE host == \"host-a\"";
    INFO("collector log:\n" << collector.log());
    REQUIRE(await_collected(collector, of_host, 403) == 403);
    std::map<std::pair<std::string, int64_t>, std::set<uint64_t>> sequences;  // by (boot, cpu)
    size_t rejected = 0;
    for (const json& r : collector.records(of_host)) {
        INFO(r.dump());
        CHECK(r.value("event_type", "") != "app.big");  // never sent whole
        if (r.value("event_type", "") == "synthetic.forward_rejected") {
            ++rejected;
            CHECK(r.at("rejected_event_type") == "app.big");
            CHECK(r.at("rejected_bytes").get<uint64_t>() > 1048576);
        }
        if (r["cpu_id"].is_null() || r["sequence"].is_null()) continue;
        CHECK(sequences[{r["boot_id"], r["cpu_id"].get<int64_t>()}].insert(r["sequence"].get<uint64_t>()).second);
    }
    CHECK(rejected == 2);
    REQUIRE(sequences.size() == 2);
    for (const auto& [ring, seen] : sequences) {
        INFO("cpu " << ring.second << ": " << seen.size() << " sequences, " << *seen.begin() << " … " << *seen.rbegin());
        CHECK(*seen.rbegin() - *seen.begin() + 1 == seen.size());  // no hole
        CHECK(seen.size() == 201);
    }
    CHECK(collector.count("EVENTS synthetic.gap") == 0);
    CHECK(collector.count("EVENTS synthetic.collector_rejected") == 0);
    forward.stop();
    collector.stop();
}

#ifdef KMES_SYNC_POINTS
// Issue 40 item 2: a refused message is terminated only once its rejection record is committed.
// A collector that dies between the two (thrown at that sync point: eventd exits) has the
// message delivered again after AckWaitSeconds, and the next run finds the record stored — once,
// though another run stored it — and terminates the message.
TEST_CASE("a collector that dies between a rejection's commit and its TERM stores the rejection once",
          "[collector]") {
    test_support::TempDir nats_dir;
    NatsServer nats(nats_dir.str());
    QueryEnv host({.eventd = {{"MaxBatchLatencyMs", 20}}, .fixture = false,
                   .generate = "rate=100,payload=32,count=100,types=app.login:1"});
    Forwarder forward(host, nats, {{"HostName", "host-a"}});
    forward.start();
    REQUIRE(test_support::eventually([&] { return nats.count("EVENTD") > 0; }, seconds(30)));
    CollectorEventd collector(nats);
    setenv("KMES_TEST_THROW_AT", "Collector::send_settled:before_term", 1);
    collector.start();
    unsetenv("KMES_TEST_THROW_AT");
    nats.publish("eventd.host-a.app.login", {{"Eventd-Host", "host-a"}}, {0xdd, 0xff, 0xff, 0xff, 0xff});
    const std::optional<int> status = collector.wait_exit(milliseconds(30000));
    INFO("first run's log:\n" << collector.log());
    REQUIRE(status);
    CHECK_THAT(collector.log(), Catch::Contains("thrown at sync point Collector::send_settled:before_term"));
    collector.stop();
    collector.start();
    const std::regex refused_once(R"(refused \(not eventd records\) +1\b)");
    CHECK(test_support::eventually([&] { return std::regex_search(collector.run({"status"}).out, refused_once); },
                                   seconds(60), milliseconds(250)));
    INFO("second run's log:\n" << collector.log());
    const auto rejections = collector.records("EVENTS synthetic.collector_rejected");
    REQUIRE(rejections.size() == 1);
    CHECK(rejections[0]["head"] == "ddffffffff");
    // The host's records all arrived too, each once.
    const int64_t total = settled_count(host, 100);
    CHECK(await_collected(collector, "EVENTS WHERE host == \"host-a\"", total) == total);
    forward.stop();
    collector.stop();
}
#endif

TEST_CASE("the collector over TLS trusts only the configured CA and collects everything exactly once", "[collector]") {
    test_support::TempDir nats_dir;
    const NatsTls tls = make_test_certificates(nats_dir.str());
    NatsServer nats(nats_dir.str(), tls);
    QueryEnv host({.eventd = {{"MaxBatchLatencyMs", 20}}, .fixture = false,
                   .generate = "rate=500,payload=32,count=300,types=app.login:1"});
    Forwarder forward(host, nats, {{"HostName", "host-a"}, {"TlsCaFile", tls.ca_file}});
    forward.start();
    const int64_t total = settled_count(host, 300);
    auto source = [&](const std::string& ca) {
        return json{{"CollectorSource",
                     {{"NatsUrl", nats.url()}, {"AckWaitSeconds", 2}, {"MaxBackoffMs", 500}, {"TlsCaFile", ca}}}};
    };
    {
        // An unrelated CA: the handshake fails, nothing is stored, the status says why.
        CollectorEventd untrusting(nats, source(nats_dir / "other.pem"));
        untrusting.start();
        std::string status;
        const bool says_ssl = test_support::eventually(
            [&] {
                status = untrusting.run({"status"}).out;
                return status.find("SSL") != std::string::npos || status.find("certificate") != std::string::npos;
            },
            seconds(20));
        INFO(status << "\nlog:\n" << untrusting.log());
        CHECK(says_ssl);
        CHECK(untrusting.count("EVENTS WHERE host IS NOT NULL") == 0);
        untrusting.stop();
    }
    CollectorEventd collector(nats, source(tls.ca_file));
    collector.start();
    INFO("collector log:\n" << collector.log());
    CHECK(await_collected(collector, "EVENTS WHERE host IS NOT NULL", total) == total);
    check_exactly_once({{&host, "host-a"}}, collector.records("EVENTS WHERE host IS NOT NULL"));
    forward.stop();
    collector.stop();
}

}  // namespace eventd::query_it

namespace eventd::query_it {

// Issue 27 item 3 (docs/FORWARD.md "Clustered JetStream"): the stream replicated on three
// nats-servers; its leader, and later a follower, SIGKILLed while a host's events flow, each
// restarted once the other two carried on. The forwarder and the collector connect to whichever
// server of the list answers; exactly once holds through the stream's replicated duplicate
// window and the collector's per-record check.
TEST_CASE(
    "a host through a 3-node JetStream cluster: exactly once across the loss of the stream's leader and of a "
    "follower",
    "[collector]") {
    test_support::TempDir nats_dir;
    NatsCluster nats(nats_dir.str());
    const auto began = std::chrono::steady_clock::now();
    // Per CPU: ~45 s, through both losses (they take 15 to 25 s here, mostly elections).
    QueryEnv host(
        {.eventd = {{"MaxBatchLatencyMs", 20}}, .fixture = false, .generate = "rate=200,payload=48,count=9000"});
    Forwarder forward(host, nats, {{"HostName", "host-a"}, {"Replicas", 3}});
    CollectorEventd collector(nats);
    forward.start();
    collector.start();
    const std::string mine = "EVENTS WHERE host == \"host-a\"";
    REQUIRE(test_support::eventually([&] { return collector.count(mine) > 0; }, seconds(30)));

    // The forwarder created the stream with three replicas: a leader and two followers.
    const auto created = nats.replication("EVENTD");
    REQUIRE(created);
    CHECK(created->configured == 3);
    CHECK(created->followers.size() == 2);

    // The stream and the collector keep growing without node `lost` (a new leader elected when
    // it led); then it comes back and catches up.
    auto carry_on_without = [&](size_t lost) {
        nats.kill(lost);
        std::optional<size_t> leader;
        const bool elected = test_support::eventually(
            [&] { return (leader = nats.leader_of("EVENTD")) && *leader != lost; }, seconds(30), milliseconds(100));
        const uint64_t stored = nats.count("EVENTD");
        const int64_t collected = collector.count(mine);
        const bool stores =
            test_support::eventually([&] { return nats.count("EVENTD") > stored; }, seconds(30), milliseconds(100));
        const bool collects =
            test_support::eventually([&] { return collector.count(mine) > collected; }, seconds(30), milliseconds(100));
        INFO("without " << nats.name(lost) << ": forwarder status\n" << forward.status() << "\n" << nats.logs());
        REQUIRE(elected);
        CHECK(stores);
        CHECK(collects);
        nats.start(lost);
    };
    const auto leader = nats.leader_of("EVENTD");
    REQUIRE(leader);
    carry_on_without(*leader);
    const auto new_leader = nats.leader_of("EVENTD");
    REQUIRE(new_leader);
    // A follower, the one that has not been lost yet.
    size_t follower = 0;
    while (follower == *new_leader || follower == *leader) ++follower;
    carry_on_without(follower);
    const auto losses_done = std::chrono::steady_clock::now();

    const int64_t total = settled_count(host, 9000);
    INFO("collector log:\n" << collector.log() << "\nforwarder log:\n" << forward.log());
    CHECK(await_collected(collector, mine, total) == total);
    const std::vector<json> central = collector.records("EVENTS WHERE host IS NOT NULL");
    check_exactly_once({{&host, "host-a"}}, central);
    // Both restarted nodes hold their copy again.
    std::optional<StreamReplication> after;
    CHECK(test_support::eventually(
        [&] {
            after = nats.replication("EVENTD");
            if (!after || after->followers.size() != 2) return false;
            for (const auto& [name, current] : after->followers)
                if (!current) return false;
            return true;
        },
        seconds(30)));
    // JetStream dropped every message it already held, across both elections: no Nats-Msg-Id
    // twice (however the forwarder packs records into messages).
    const std::vector<StoredMessage> stored = nats.messages("EVENTD");
    std::set<std::string> message_ids;
    for (const StoredMessage& m : stored) message_ids.insert(m.headers.at("Nats-Msg-Id"));
    CHECK(message_ids.size() == stored.size());
    // What the losses cost: the forwarder's new sessions and replays, the collector's copies.
    const std::regex replays(R"((reconnects|duplicates) +\d+)"), copies(R"(already stored[^\n]*?\d+)");
    std::string cost;
    const std::string forward_status = forward.status(), collector_status = collector.run({"status"}).out;
    for (std::sregex_iterator m(forward_status.begin(), forward_status.end(), replays), end; m != end; ++m)
        cost += " " + m->str() + ";";
    for (std::sregex_iterator m(collector_status.begin(), collector_status.end(), copies), end; m != end; ++m)
        cost += " " + m->str();
    WARN("cluster: " << central.size() << " records exactly once; lost the stream leader " << nats.name(*leader)
                     << ", then follower " << nats.name(follower) << " within "
                     << std::chrono::duration_cast<milliseconds>(losses_done - began).count() << " ms; leader now "
                     << (after ? after->leader : std::string("unknown")) << ";"
                     << std::regex_replace(cost, std::regex(" +"), " "));

    forward.stop();
    collector.stop();
}

}  // namespace eventd::query_it
