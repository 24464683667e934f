// [collector-rollback]: issue 28 item 5 end to end (docs/EVENTCTL.md "Against a collector") — a
// sealed host (a real kmes-shimd with generators, eventd with CheckpointIntervalSeconds 1 on a
// store set up by the real `eventctl seal --setup`, eventd-forward) → a real nats-server with
// JetStream → a collector eventd. The host's signed checkpoints travel with its other records.
// A copy of the host store taken at a clean stop, while eventd then goes on sealing the original,
// is what an attacker who rolls the host back puts in place: it verifies on its own (exit 0),
// and only `eventctl verify --against <collector>` shows it — the collector holds a newer
// checkpoint of each file than the copy has.
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/eventctl_runner.hpp"
#include "support/eventd_fixture.hpp"
#include "support/eventually.hpp"
#include "support/forward_process.hpp"
#include "support/nats_fixture.hpp"
#include "support/query_env.hpp"
#include "support/store_reader.hpp"
#include "support/temp_dir.hpp"

namespace eventd::query_it {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kCheckpoint = "synthetic.checkpoint";

// `eventctl seal --setup` on `store` (made first) with short epochs and a short horizon; the
// verification key, its last line of stdout.
std::string setup_sealing(const std::string& store) {
    const SealSetup setup = setup_sealing_keys(store);
    INFO(setup.error);
    REQUIRE(setup.error.empty());
    return setup.key;
}

// An eventd in collector mode on a store of its own (as in test_collector.cpp).
class Collector {
public:
    explicit Collector(const NatsService& nats) {
        eventd::it::write_json_file(
            config_path(),
            {{"EventStorePath", dir_ / "events"},
             {"QuerySocketPath", socket()},
             {"StorageShards", 2},
             {"MaxBatchLatencyMs", 20},
             {"EventRetentionDays", 3650},
             {"CollectorSource", {{"NatsUrl", nats.url()}, {"AckWaitSeconds", 2}, {"MaxBackoffMs", 500}}}});
    }
    std::string socket() const { return dir_ / "query.sock"; }
    std::string config_path() const { return dir_ / "eventd.json"; }
    void start() { process_ = eventd::it::EventdProcess::start(dir_.str(), config_path()); }
    void stop() { process_.reset(); }  // SIGTERM; the fixture CHECKs exit 0
    std::string log() const { return process_ ? process_->log() : ""; }

    // The records of `query` (REQUIREs success).
    std::vector<json> records(const std::string& query) const {
        const RunResult r =
            run_command({eventctl_path(), "--socket", socket(), "--format", "jsonl", query}, seconds(30));
        INFO(query << ": exit " << r.exit_code << ": " << r.err);
        REQUIRE(r.exit_code == 0);
        return parse_jsonl(r.out);
    }
    // Its STATUS record of kind "collector" (null when there is none).
    json status() const {
        const RunResult r =
            run_command({eventctl_path(), "--socket", socket(), "--format", "jsonl", "status"}, seconds(30));
        if (r.exit_code != 0) return nullptr;
        for (const json& rec : parse_jsonl(r.out))
            if (rec.value("kind", "") == "collector") return rec;
        return nullptr;
    }

private:
    test_support::TempDir dir_;
    std::unique_ptr<eventd::it::EventdProcess> process_;
};

// The checkpoints a collector holds of `host`: how many, and per file (its file_id) the row of
// the newest one (its last_row + 1: the checkpoint's own row in the host's file).
struct Forwarded {
    size_t count = 0;
    std::map<std::string, int64_t> newest;
    std::map<std::string, size_t> per_file;
};
Forwarded forwarded(const Collector& collector, const std::string& host) {
    Forwarded out;
    for (const json& r :
         collector.records(std::string("EVENTS ") + kCheckpoint + " WHERE host == " + json(host).dump())) {
        INFO(r.dump());
        REQUIRE(r["host"] == host);
        const std::string file_id = r.at("file_id");
        const int64_t row = r.at("last_row").get<int64_t>() + 1;
        ++out.count;
        ++out.per_file[file_id];
        out.newest[file_id] = std::max(out.newest[file_id], row);
    }
    return out;
}

// A stopped host store as the test needs it: per shard file, its file id (from its
// checkpoints), its last row, and the rows of its checkpoints.
struct HostFile {
    std::string file_id;
    int64_t last_row = 0;
    std::set<int64_t> checkpoints;
};
std::map<std::string, HostFile> host_files(const std::string& store) {
    std::map<std::string, HostFile> out;
    const eventd::it::StoreContents contents = eventd::it::read_store(store, {.kmes_rows = false});
    INFO(store);
    REQUIRE(contents.unreadable.empty());
    for (const eventd::it::StoredRow& row : contents.of_type(kCheckpoint)) {
        HostFile& f = out[row.file];
        const std::string id = row.payload.at("file_id");
        REQUIRE((f.file_id.empty() || f.file_id == id));
        f.file_id = id;
        f.checkpoints.insert(row.id);
    }
    for (auto& [file, f] : out) {
        const auto last = eventd::it::query_text(store + "/" + file, "SELECT max(id) FROM events");
        REQUIRE(last);
        f.last_row = std::stoll(*last);
    }
    return out;
}

// Every file and directory of `from` copied into `to` (made): the store as `cp -a` copies it.
void copy_store(const std::string& from, const std::string& to) { fs::copy(from, to, fs::copy_options::recursive); }

RunResult verify(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {eventctl_path(), "verify"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, seconds(60));
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// The "<file>: BROKEN: rolled back at row R (…)" lines of verify --against: file → R.
std::map<std::string, int64_t> rolled_back(const std::string& out) {
    static const std::regex line(R"(^(\S+): BROKEN: rolled back at row (\d+) \(.*)");
    std::map<std::string, int64_t> found;
    for (const std::string& l : lines_of(out)) {
        std::smatch m;
        if (std::regex_match(l, m, line)) found[m[1]] = std::stoll(m[2]);
    }
    return found;
}

std::string last_line(const std::string& out) {
    const auto lines = lines_of(out);
    return lines.empty() ? "" : lines.back();
}

}  // namespace

TEST_CASE("a host store rolled back to an older copy verifies on its own, but not against the collector",
          "[collector-rollback]") {
    test_support::TempDir nats_dir;
    NatsServer nats(nats_dir.str());
    std::string key;
    // Generators without end: rows (and so checkpoints) on both rings of the host throughout.
    QueryEnv host({.eventd = {{"MaxBatchLatencyMs", 20}, {"CheckpointIntervalSeconds", 1}},
                   .fixture = false,
                   .generate = "rate=100,payload=32",
                   .before_eventd = [&](const std::string& store) { key = setup_sealing(store); }});
    const std::string host_name = kForwardTestHost;  // the forwarder's HostName: "web 3.example"
    Forwarder forward(host, nats);
    Collector collector(nats);
    forward.start();
    collector.start();

    // The collector holds at least 2 checkpoints of each of the host's 2 shard files.
    Forwarded at_collector;
    const bool two_each = test_support::eventually(
        [&] {
            at_collector = forwarded(collector, host_name);
            if (at_collector.per_file.size() != 2) return false;
            for (const auto& [file, n] : at_collector.per_file)
                if (n < 2) return false;
            return true;
        },
        seconds(30), milliseconds(200));
    {
        INFO("forwarder status:\n" << forward.status() << "\ncollector log:\n" << collector.log());
        REQUIRE(two_each);
    }
    // A collector that cannot be asked is an error (2), also beside a store that is intact but
    // not sealed to its end yet (3: eventd runs on it) — not a comparison that passed.
    {
        const RunResult r =
            verify({"--store", host.store(), "--key", key, "--against", host.dir() + "/no-collector.sock"});
        INFO("verify --against a socket nobody listens on: exit " << r.exit_code << "\nstdout:\n"
                                                                  << r.out << "stderr:\n"
                                                                  << r.err);
        CHECK(r.exit_code == 2);
        CHECK_THAT(r.err, Catch::Contains("eventctl verify: the collector at " + host.dir() + "/no-collector.sock"));
        CHECK(r.out.find("against the collector") == std::string::npos);
    }

    // The older copy: the host store at a clean stop (every file ends with its final checkpoint).
    host.stop_eventd();
    test_support::TempDir copy_dir;
    const std::string older = copy_dir / "events";
    copy_store(host.store(), older);
    const std::map<std::string, HostFile> copy_files = host_files(older);
    REQUIRE(copy_files.size() == 2);
    for (const auto& [file, f] : copy_files) {
        INFO(file);
        CHECK(f.checkpoints.count(f.last_row) == 1);  // its last row is a checkpoint
    }

    // eventd goes on with the original store: the collector receives a checkpoint of each file
    // that seals rows beyond where the copy ends (its last_row past the copy's last row).
    host.start_eventd();
    const bool newer = test_support::eventually(
        [&] {
            at_collector = forwarded(collector, host_name);
            for (const auto& [file, f] : copy_files) {
                const auto it = at_collector.newest.find(f.file_id);
                if (it == at_collector.newest.end() || it->second - 1 <= f.last_row) return false;
            }
            return true;
        },
        seconds(30), milliseconds(200));
    {
        INFO("forwarder status:\n" << forward.status() << "\nhost eventd log:\n" << host.eventd().log());
        REQUIRE(newer);
    }
    host.stop_eventd();
    const int64_t stopped_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();

    // Let everything the forwarder read before the stop settle, so that every verification below
    // sees the same checkpoints at the collector: the forwarder's session with eventd has ended
    // with nothing left unacknowledged (then it is stopped: JetStream's stream is final), and the
    // collector has committed and acknowledged every message of it.
    const std::string forward_status_file = forward.state_dir() + "/status.json";
    json fstatus;
    const bool forwarder_done = test_support::eventually(
        [&] {
            const std::string text = kmes::it::read_text(forward_status_file);
            fstatus = json::parse(text, nullptr, false);
            return fstatus.is_object() && fstatus.value("updated_ns", int64_t(0)) > stopped_ns &&
                   fstatus.value("state", "") != "forwarding" && fstatus.value("pending", uint64_t(1)) == 0;
        },
        seconds(30), milliseconds(200));
    {
        INFO("forwarder status.json: " << fstatus.dump());
        REQUIRE(forwarder_done);
    }
    forward.stop();
    const uint64_t messages = nats.count("EVENTD");
    json cstatus;
    const bool collected = test_support::eventually(
        [&] {
            cstatus = collector.status();
            return cstatus.is_object() && cstatus.value("acked", uint64_t(0)) >= messages &&
                   cstatus.value("uncommitted", uint64_t(1)) == 0;
        },
        seconds(30), milliseconds(200));
    {
        INFO("collector status: " << cstatus.dump() << " (the stream holds " << messages << " messages)");
        REQUIRE(collected);
    }
    at_collector = forwarded(collector, host_name);

    const std::map<std::string, HostFile> current = host_files(host.store());
    REQUIRE(current.size() == 2);
    size_t current_checkpoints = 0;
    for (const auto& [file, f] : current) {
        INFO(file);
        const auto copy = copy_files.find(file);
        REQUIRE(copy != copy_files.end());
        CHECK(f.file_id == copy->second.file_id);  // the same files, grown
        CHECK(f.last_row > copy->second.last_row);
        const auto n = at_collector.newest.find(f.file_id);
        REQUIRE(n != at_collector.newest.end());
        CHECK(f.checkpoints.count(n->second) == 1);  // the newest forwarded is one of the store's
        current_checkpoints += f.checkpoints.size();
    }
    // The final checkpoints of both stops came after eventd stopped answering queries: the first
    // stop's were forwarded after the restart, the second's are not.
    CHECK(at_collector.count < current_checkpoints);

    const std::string consistent =
        "against the collector: " + std::to_string(at_collector.count) +
        " forwarded checkpoints of 2 files of this store: the store holds the newest of each";
    // The current store against the collector: intact, sealed to its last row, and it holds the
    // newest checkpoint of each file that the collector has.
    const RunResult ok = verify({"--store", host.store(), "--key", key, "--against", collector.socket()});
    {
        INFO("verify --against of the current store: exit " << ok.exit_code << "\nstdout:\n"
                                                            << ok.out << "stderr:\n"
                                                            << ok.err);
        CHECK(ok.exit_code == 0);
        CHECK(last_line(ok.out) == consistent);
        CHECK_THAT(ok.out, Catch::Contains("verify: OK: "));
        CHECK(ok.out.find("BROKEN") == std::string::npos);
    }
    // Only this host's checkpoints (the name quoted in the collector's query): the same.
    const RunResult ok_host =
        verify({"--store", host.store(), "--key", key, "--against", collector.socket(), "--host", host_name});
    {
        INFO("verify --against --host of the current store: exit " << ok_host.exit_code << "\nstdout:\n"
                                                                   << ok_host.out << "stderr:\n"
                                                                   << ok_host.err);
        CHECK(ok_host.exit_code == ok.exit_code);
        CHECK(ok_host.out == ok.out);
    }

    // The rollback: the older copy in the store's place.
    fs::rename(host.store(), host.dir() + "/events.newer");
    copy_store(older, host.store());

    // On its own the rolled-back store verifies: sealed to its last row, nothing to see.
    const RunResult alone = verify({"--store", host.store(), "--key", key});
    {
        INFO("verify of the rolled-back store: exit " << alone.exit_code << "\nstdout:\n"
                                                      << alone.out << "stderr:\n"
                                                      << alone.err);
        CHECK(alone.exit_code == 0);
        CHECK_THAT(last_line(alone.out), Catch::StartsWith("verify: OK: "));
    }
    // Against the collector each file is rolled back at the newest checkpoint the collector holds
    // of it, which the copy does not have.
    const RunResult caught = verify({"--store", host.store(), "--key", key, "--against", collector.socket()});
    {
        INFO("verify --against of the rolled-back store: exit " << caught.exit_code << "\nstdout:\n"
                                                                << caught.out << "stderr:\n"
                                                                << caught.err);
        CHECK(caught.exit_code == 1);
        CHECK(last_line(caught.out) == "against the collector: " + std::to_string(at_collector.count) +
                                           " forwarded checkpoints of 2 files of this store: FAILED");
        CHECK(caught.out.find(alone.out) == 0);  // the offline part unchanged: intact on its own
        const std::map<std::string, int64_t> broken = rolled_back(caught.out);
        CHECK(broken.size() == 2);
        for (const auto& [file, f] : copy_files) {
            INFO(file << ": the copy ends at row " << f.last_row);
            const auto it = broken.find(file);
            REQUIRE(it != broken.end());
            CHECK(it->second - 1 > f.last_row);  // it seals rows the copy never had
            CHECK(it->second == at_collector.newest.at(f.file_id));
            CHECK(current.at(file).checkpoints.count(it->second) == 1);
            CHECK_THAT(caught.out, Catch::Contains("(it ends at row " + std::to_string(f.last_row) +
                                                   "): rolled back to an older copy or truncated"));
        }
    }
    const RunResult caught_host =
        verify({"--store", host.store(), "--key", key, "--against", collector.socket(), "--host", host_name});
    {
        INFO("verify --against --host of the rolled-back store: exit " << caught_host.exit_code << "\nstdout:\n"
                                                                       << caught_host.out << "stderr:\n"
                                                                       << caught_host.err);
        CHECK(caught_host.exit_code == caught.exit_code);
        CHECK(caught_host.out == caught.out);
    }
    // Another host's checkpoints (none): nothing to compare, nothing found.
    const RunResult other =
        verify({"--store", host.store(), "--key", key, "--against", collector.socket(), "--host", "nosuchhost"});
    {
        INFO("verify --against --host nosuchhost: exit " << other.exit_code << "\nstdout:\n"
                                                         << other.out << "stderr:\n"
                                                         << other.err);
        CHECK(other.exit_code == 0);
        CHECK(last_line(other.out) ==
              "against the collector: 0 forwarded checkpoints of 0 files of this store: the store holds the newest of "
              "each");
        CHECK(other.out.find("BROKEN") == std::string::npos);
    }

    std::string summary;
    for (const auto& [file, f] : copy_files)
        summary += " " + file + ": the copy ends at row " + std::to_string(f.last_row) + ", the collector's newest " +
                   std::to_string(at_collector.newest.at(f.file_id)) + ";";
    WARN("rollback caught against " << at_collector.count << " forwarded checkpoints;" << summary);
    collector.stop();
}

}  // namespace eventd::query_it
