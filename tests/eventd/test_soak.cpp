// Crash soak (issue 11; DESIGN.md §3.1–§3.3, PSD-008 §10.2, §11.1): kmes-shimd and eventd under
// a mixed load — several rings, more shards than rings, live queries and streams, eventd
// configuration reloads, ring resizes, index builds and retention runs — and eventd SIGKILLed
// N times at random moments (sometimes during its startup, right after an index request or a
// retention trigger; sometimes the shim is killed too, which starts a new KMES boot). Then the
// store is audited:
//   - no (boot, cpu, sequence) stored twice, in any boot;
//   - the live boot: stored + Σ gap counts == highest sequence emitted, per CPU, and the
//     committed sequence_state covers exactly 1..highest;
//   - every earlier boot (a killed shim): stored + Σ gap counts == highest sequence accounted,
//     per CPU — no hole below it. When eventd ran as the shim was killed, that is also the
//     highest emitted (eventd drains the frozen rings before it exits). When it did not, what
//     the rings held beyond it is lost with the shim (EVENTD.md §13): reported, not a failure;
//   - every shard file passes PRAGMA integrity_check, and none was quarantined.
//
// Run by scripts/soak (see its --help, and docs/DEVELOPING.md "Soak"); its knobs come from the
// environment: EVENTD_SOAK_KILLS (default 20), EVENTD_SOAK_SEED (default: from the clock;
// always printed), EVENTD_SOAK_RATE (events/s per ring, default 1000), EVENTD_SOAK_FAULTS
// (default 0: with F > 0, half of the eventd runs also get SQLite write and fsync errors at F
// per million operations, sqlite_faults.hpp; the audit is the same).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <cstdlib>
#include <iostream>
#include <list>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "base/guid_text.hpp"
#include "pipeline.hpp"
#include "sqlite_faults.hpp"
#include "store/secondary_index.hpp"
#include "store/shard_db.hpp"
#include "store_fill.hpp"
#include "test_seed.hpp"

using namespace eventd::it;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr uint32_t kCpus = 3;
constexpr uint32_t kShards = 4;  // CPU 0 feeds shards 0 and 3 (DESIGN.md §8)
constexpr uint32_t kCapacities[] = {256u << 10, 512u << 10, 1u << 20, 4u << 20};
const char* const kIndexFields[] = {"event_type", "cpu_id", "origin_class", "user"};
// Boots of rows the soak writes itself: kept rows (index builds have work) and expired rows
// (retention has work). Their rows are checked for duplicates only.
const kmes::Guid kKeptBoot{{0x50, 0x4b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}};
const kmes::Guid kExpiredBoot{{0x50, 0x4b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}};

uint64_t env_number(const char* name, uint64_t fallback) {
    const char* text = std::getenv(name);
    if (!text || !*text) return fallback;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 10);
    if (*end != '\0') FAIL(name << "=" << text << " is not a number");
    return value;
}

// eventctl clients (one-shot queries and streams), launched with the test's one process
// launcher; their output goes to /dev/null. A client may fail when eventd is killed under it,
// but it must never die of a signal.
class Clients {
public:
    Clients(std::string dir, std::string socket) : dir_(std::move(dir)), socket_(std::move(socket)) {}
    ~Clients() { kill_all(); }

    void launch(const std::string& query, bool stream) {
        static int n = 0;
        ++n;
        running_.push_back(std::make_unique<kmes::it::DaemonProcess>(kmes::it::DaemonCommand{
            .name = "eventctl",
            .args = {kmes::it::path_from_env("EVENTCTL"), "--socket", socket_, "--format", "jsonl", query},
            .log_path = "/dev/null",
            .notify_path = dir_ + "/eventctl-notify-" + std::to_string(n) + ".sock",
            .withheld_env = {},
            .ready_timeout = milliseconds(0),
            .stop_timeout = std::chrono::seconds(5),
        }));
        (stream ? streams_ : queries_)++;
    }
    // Collect the clients that ended; count how.
    void reap() {
        for (auto it = running_.begin(); it != running_.end();) {
            auto status = (*it)->wait_exit(milliseconds(0));
            if (!status) {
                ++it;
                continue;
            }
            count(*status);
            it = running_.erase(it);
        }
    }
    void kill_all() {
        reap();
        for (auto& c : running_) {
            c->kill();
            ++killed_;
        }
        running_.clear();
    }
    uint64_t queries() const { return queries_; }
    uint64_t streams() const { return streams_; }
    uint64_t succeeded() const { return succeeded_; }
    uint64_t failed() const { return failed_; }
    const std::vector<std::string>& crashes() const { return crashes_; }

private:
    void count(int status) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            ++succeeded_;
        else if (WIFEXITED(status))
            ++failed_;
        else
            crashes_.push_back(kmes::it::describe_status(status));
    }

    std::string dir_;
    std::string socket_;
    std::list<std::unique_ptr<kmes::it::DaemonProcess>> running_;
    uint64_t queries_ = 0, streams_ = 0, succeeded_ = 0, failed_ = 0, killed_ = 0;
    std::vector<std::string> crashes_;
};

// Drop the secondary indexes of one shard with eventd stopped — through the store's own code —
// so that the next eventd finds them missing from the desired set and builds them again
// (PSD-008 §3.3.9): index builds keep happening, and keep being killed, for the whole soak.
size_t drop_secondary_indexes(const std::string& store_dir, uint32_t shard) {
    auto db = eventd::store::ShardDb::open(store_dir, shard);
    REQUIRE(db.ok());
    auto names = (*db)->secondary_indexes();
    REQUIRE(names.ok());
    for (const std::string& name : *names)
        REQUIRE((*db)->run_index_statement(eventd::store::drop_index_sql(name), [] { return false; }).ok());
    return names->size();
}

// The first kills go through each kind of event once, whatever the seed: a soak that never
// did one would report zero of it and prove nothing about it (issue 25 item 2). After them,
// chance decides.
enum class Forced { none, index_kill, retention_kill, startup_kill, shim_under_eventd, long_downtime, shim_while_down };
constexpr uint64_t kForcedKills = 6;
Forced forced_for(uint64_t kill) { return kill <= kForcedKills ? Forced(kill) : Forced::none; }

struct Tally {
    uint64_t kills = 0, startup_kills = 0, index_kills = 0, retention_kills = 0, long_downtimes = 0;
    uint64_t shim_restarts = 0, shim_restarts_under_eventd = 0;
    uint64_t reloads = 0, resizes = 0, index_requests = 0, indexes_dropped = 0, expired_rows_written = 0;
};

// Highest accounted sequence per CPU of `boot`: the top of its stored rows and gap records.
Highest accounted_top(const StoreContents& store, const kmes::Guid& boot) {
    Highest top;
    for (const StoredRow& r : store.rows) {
        if (r.boot_id != boot || !r.cpu_id) continue;
        uint64_t last = r.sequence.value_or(0);
        if (r.event_type == "synthetic.gap" && r.payload.contains("last_sequence") &&
            r.payload["last_sequence"].is_number_unsigned())
            last = r.payload["last_sequence"].get<uint64_t>();
        uint64_t& t = top[*r.cpu_id];
        t = std::max(t, last);
    }
    return top;
}

}  // namespace

TEST_CASE("crash soak: eventd SIGKILLed at random moments under mixed load; the store audit holds", "[soak]") {
    const uint64_t kills = env_number("EVENTD_SOAK_KILLS", 20);
    const uint64_t seed = test_seed("EVENTD_SOAK_SEED", "soak");  // scripts/soak --seed sets it
    const uint64_t rate = env_number("EVENTD_SOAK_RATE", 1000);
    const uint64_t fault_rate = env_number("EVENTD_SOAK_FAULTS", 0);
    std::cout << "soak: (./scripts/soak --seed " << seed << "), " << kills << " kills, " << kCpus
              << " rings at " << rate << " events/s each, " << kShards << " shards";
    if (fault_rate) std::cout << ", SQLite faults at " << fault_rate << " per million in half the runs";
    std::cout << std::endl;
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
    auto between = [&](int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(rng); };

    nlohmann::json tuning = {{"StorageShards", kShards},
                             {"MaxBatchSize", 1000},
                             {"EventRetentionDays", 30},
                             {"RetentionCheckIntervalMinutes", 1}};
    Pipeline p({.cpus = kCpus,
                .generate = "rate=" + std::to_string(rate) + ",payload=64,types=soak.a:3+soak.b:1",
                .kmes_config = {{"BufferCapacity", 1u << 20}},
                .eventd = tuning});
    // Work for index builds (kept, 1 h old) and for retention (expired, 40 days old).
    uint64_t kept_next = 1, expired_next = 1;
    Tally tally;
    prefill_shard(p.store(), {.shard = 2, .rows = 200'000, .boot = kKeptBoot, .first_sequence = kept_next});
    kept_next += 200'000;
    prefill_shard(p.store(), {.shard = 1, .rows = 50'000, .boot = kExpiredBoot, .age = std::chrono::hours(24 * 40)});
    expired_next += 50'000;
    tally.expired_rows_written += 50'000;

    Clients clients(p.dir(), p.dir() + "/query.sock");
    std::optional<SqliteFaults> faults;
    if (fault_rate) faults.emplace(p.dir() + "/sqlite-faults");  // before the first eventd: it inherits the variable
    uint64_t faulty_runs = 0;
    std::map<kmes::Guid, Highest> old_boots;  // boots of killed shims → their rings' highest sequences
    std::set<kmes::Guid> old_boots_with_eventd;  // boots whose shim died while eventd ran
    const auto started = Clock::now();
    auto last_progress = started;

    // A ring swap must be over before the shim is frozen (Pipeline::restart_shim): the RingWatch
    // follows it while the shim runs.
    auto last_resize = Clock::now() - std::chrono::hours(1);
    auto settle_resize = [&] {
        std::this_thread::sleep_until(last_resize + std::chrono::seconds(1));
        p.watch().highest();
    };
    auto reload = [&](bool retention) {
        tuning["MaxBatchSize"] = between(1, 50) * 100;
        tuning["MaxBatchLatencyMs"] = between(10, 200);
        if (retention) tuning["EventRetentionDays"] = tuning["EventRetentionDays"] == 30 ? 31 : 30;  // runs at once
        p.write_eventd_config(tuning);  // eventd sees the rename (inotify); sometimes SIGHUP as well
        if (chance(0.5)) p.eventd().signal(SIGHUP);
        ++tally.reloads;
    };
    auto eventd_died = [&]() -> std::string {
        std::ostringstream s;
        s << "eventd exited by itself (" << kmes::it::describe_status(*p.eventd().wait_exit(milliseconds(0)))
          << "); log:\n"
          << p.eventd().log();
        return s.str();
    };

    for (uint64_t kill = 1; kill <= kills; ++kill) {
        const Forced forced = forced_for(kill);
        // With eventd stopped: give retention and the index builds something to do.
        if (chance(1.0 / 30)) {
            const uint64_t rows = 20'000;
            prefill_shard(p.store(), {.shard = uint32_t(between(0, kShards - 1)),
                                      .rows = rows,
                                      .boot = kExpiredBoot,
                                      .first_sequence = expired_next,
                                      .age = std::chrono::hours(24 * 40)});
            expired_next += rows;
            tally.expired_rows_written += rows;
        }
        if (chance(1.0 / 15)) tally.indexes_dropped += drop_secondary_indexes(p.store(), uint32_t(between(0, kShards - 1)));

        if (chance(0.05) || forced == Forced::long_downtime) {
            // A long downtime: the smaller rings overrun meanwhile, so the restart records gaps.
            std::this_thread::sleep_for(milliseconds(between(500, 3000)));
            ++tally.long_downtimes;
        }
        if (faults) {
            const bool on = chance(0.5);
            faults->set(on ? uint32_t(fault_rate) : 0, rng());
            faulty_runs += on;
        }
        if (forced == Forced::startup_kill || (forced == Forced::none && kill > 1 && chance(0.15))) {
            // Killed anywhere in its startup, before or after READY=1.
            p.spawn_eventd();
            std::this_thread::sleep_for(milliseconds(between(0, 300)));
            ++tally.startup_kills;
        } else {
            p.start_eventd();
            // The run: a random life with random things happening in it.
            // A number of steps, not a duration, so that the seed alone fixes every choice
            // (only the processes' own timing differs between two runs of one seed).
            const int64_t steps = between(1, 28);  // ~50 ms each: runs of 50–1500 ms
            int64_t streams_this_run = 0;
            bool shim_killed = false;
            for (int64_t step = 0; step < steps && p.eventd().running(); ++step) {
                int what = int(between(0, 99));
                if (step == 0 && forced == Forced::index_kill) what = 30;
                if (step == 0 && forced == Forced::retention_kill) what = 33;
                if (step == 0 && forced == Forced::shim_under_eventd) what = 36;
                if (what < 15) {
                    static const char* const kQueries[] = {
                        "EVENTS TAKE 50", "EVENTS soak.a WHERE cpu_id == 1 TAKE 200", "EVENTS COUNT BY event_type",
                        "EVENTS WHERE user == \"u000042\"", "EVENTS synthetic.gap", "STATUS"};
                    clients.launch(kQueries[between(0, 5)], false);
                } else if (what < 22 && streams_this_run < 3) {
                    ++streams_this_run;
                    static const char* const kStreams[] = {"EVENTS STREAM soak.b", "EVENTS STREAM WHERE cpu_id == 2",
                                                           "EVENTS STREAM synthetic.*"};
                    clients.launch(kStreams[between(0, 2)], true);
                } else if (what < 27) {
                    reload(false);
                } else if (what < 30) {
                    p.shim().write_config({{"BufferCapacity", kCapacities[between(0, 3)]}});  // a ring swap
                    last_resize = Clock::now();
                    ++tally.resizes;
                } else if (what < 33) {
                    // An index request, then the kill while the quiet-period build runs (§3.3.3).
                    clients.launch(std::string("EVENTS INDEX ") + kIndexFields[between(0, 3)], false);
                    ++tally.index_requests;
                    std::this_thread::sleep_for(milliseconds(between(20, 400)));
                    ++tally.index_kills;
                    break;
                } else if (what < 36) {
                    // A retention run (a changed retention key runs it at once, docs/EVENTD.md §8), killed.
                    reload(true);
                    std::this_thread::sleep_for(milliseconds(between(0, 150)));
                    ++tally.retention_kills;
                    break;
                } else if (what < 37 &&
                           (forced == Forced::shim_under_eventd || (forced == Forced::none && chance(0.5)))) {
                    // The shim dies under a running eventd: eventd drains and exits by itself (1).
                    // Not by chance in a forced kill: it skips the rest of the kill (`continue`
                    // below), which would skip the kind forced there (seed 346344805 lost the
                    // shim's death while eventd is down that way).
                    settle_resize();
                    const kmes::Guid boot = p.boot();
                    old_boots_with_eventd.insert(boot);
                    old_boots[boot] = p.restart_shim();
                    ++tally.shim_restarts;
                    ++tally.shim_restarts_under_eventd;
                    shim_killed = true;
                    const auto status = p.eventd().wait_exit(std::chrono::seconds(60));
                    INFO("eventd log:\n" << p.eventd().log());
                    REQUIRE(status);
                    CHECK((WIFEXITED(*status) && WEXITSTATUS(*status) == 1));
                    CHECK_THAT(p.eventd().log(), Catch::Contains("lost the KMES ring"));
                    break;
                }
                std::this_thread::sleep_for(milliseconds(between(5, 100)));
            }
            if (shim_killed) continue;
        }
        if (!p.eventd().running()) FAIL(eventd_died());
        p.kill_eventd();
        ++tally.kills;
        clients.kill_all();  // what eventd's death left hanging
        if (chance(0.01) || forced == Forced::shim_while_down) {  // the shim too, while eventd is down
            settle_resize();
            const kmes::Guid boot = p.boot();
            old_boots[boot] = p.restart_shim();
            ++tally.shim_restarts;
        }

        if (kill == kills || Clock::now() - last_progress >= std::chrono::seconds(10) || kill % 50 == 0) {
            last_progress = Clock::now();
            uint64_t events = 0;
            for (const auto& [cpu, top] : p.watch().highest()) events += top;
            for (const auto& [boot, highest] : old_boots)
                for (const auto& [cpu, top] : highest) events += top;
            std::cout << "soak: " << kill << "/" << kills << " kills, " << events << " events emitted, "
                      << tally.shim_restarts << " shim restarts, "
                      << std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started).count() << " s"
                      << std::endl;
        }
    }

    // The last eventd runs to the end, without faults: everything still in the rings is stored.
    // It also has an index to build and expired rows to delete, whatever the kills left undone,
    // and is seen doing both: the builds and retention runs the report counts are asserted, not
    // left to how long the runs happened to live (issue 25).
    if (faults) faults->set(0, 0);
    for (uint32_t shard = 0; shard < kShards; ++shard) tally.indexes_dropped += drop_secondary_indexes(p.store(), shard);
    prefill_shard(p.store(), {.shard = 0,
                              .rows = 20'000,
                              .boot = kExpiredBoot,
                              .first_sequence = expired_next,
                              .age = std::chrono::hours(24 * 40)});
    expired_next += 20'000;
    tally.expired_rows_written += 20'000;
    // The batch limits of the start, not the last random reload's: with MaxBatchSize 100 a busy
    // run's batches count as pressure (> 75 % full), which holds index builds off (§3.3.5).
    tuning["MaxBatchSize"] = 1000;
    tuning.erase("MaxBatchLatencyMs");
    p.write_eventd_config(tuning);
    p.start_eventd();
    clients.launch(std::string("EVENTS INDEX ") + kIndexFields[0], false);  // desired already, or now
    ++tally.index_requests;
    {
        const bool retained = p.eventd().wait_log("retention deleted ", std::chrono::seconds(120));
        const bool built = p.eventd().wait_log(" built (", std::chrono::seconds(120));
        INFO("the last eventd's log:\n" << p.eventd().log());
        CHECK(retained);
        CHECK(built);
    }
    settle_resize();
    clients.reap();
    clients.kill_all();
    const Highest highest = p.finish(std::chrono::seconds(300));
    const auto soak_seconds = std::chrono::duration<double>(Clock::now() - started).count();

    // The audit.
    const auto audit_started = Clock::now();
    const StoreContents store = read_store(p.store());
    INFO("unreadable shard files: " << store.unreadable.size());
    CHECK(store.unreadable.empty());
    std::set<std::string> problems_seen;  // account() reports other boots' duplicates on every call
    std::vector<std::string> problems;
    auto problem = [&](const std::string& text) {
        if (problems_seen.insert(text).second) problems.push_back(text);
    };
    size_t integrity_ok = 0, quarantined = 0;
    for (const std::string& file : store.files) {
        if (file.find(".quarantined-") != std::string::npos) {
            ++quarantined;
            problem(file + ": quarantined during the soak");
        }
        const std::string result = integrity_check(p.store() + "/" + file);
        if (result == "ok")
            ++integrity_ok;
        else
            problem(file + ": integrity_check says " + result);
    }

    uint64_t stored = 0, lost = 0, gap_records = 0, duplicates = 0, unaccounted = 0, tail_lost = 0;
    std::ostringstream per_boot;
    auto audit = [&](const kmes::Guid& boot, const Highest& top, const char* what) {
        const AccountingReport report = account(store, boot, top);
        stored += report.stored();
        lost += report.lost();
        gap_records += report.gap_records();
        for (const auto& [cpu, a] : report.cpus)
            if (a.stored + a.lost < a.highest) unaccounted += a.highest - a.stored - a.lost;
        for (const std::string& e : report.errors) {
            // Rows of other boots are checked on every call: say those once, without a boot.
            const bool other = e.rfind("duplicate row of another boot", 0) == 0;
            if (other && problems_seen.count(e)) continue;
            if (e.rfind("duplicate", 0) == 0) ++duplicates;
            problem(other ? e : base::guid_text(boot) + ": " + e);
        }
        per_boot << "  boot " << base::guid_text(boot) << " (" << what << "): stored " << report.stored() << ", lost "
                 << report.lost() << " in " << report.gap_records() << " gap record(s)\n";
    };
    audit(p.boot(), highest, "live");
    for (const auto& [boot, emitted] : old_boots) {
        const Highest top = accounted_top(store, boot);
        uint64_t tail = 0;
        for (const auto& [cpu, last] : emitted) {
            const uint64_t have = top.count(cpu) ? top.at(cpu) : 0;
            if (have > last) problem(base::guid_text(boot) + ": accounted beyond the highest emitted");
            tail += last > have ? last - have : 0;
        }
        tail_lost += tail;
        // A shim killed under a running eventd: eventd drained its frozen rings before it left.
        if (tail && old_boots_with_eventd.count(boot))
            problem(base::guid_text(boot) + ": " + std::to_string(tail) +
                    " event(s) left unread in the rings of a shim killed under a running eventd");
        audit(boot, top, old_boots_with_eventd.count(boot) ? "shim killed under eventd" : "shim killed");
        per_boot << "    unread when its shim was killed: " << tail << "\n";
    }
    check_sequence_state(p.store(), p.boot(), highest);
    const auto audit_seconds = std::chrono::duration<double>(Clock::now() - audit_started).count();

    // What the eventd logs say happened: failed commits, index builds done and cancelled,
    // retention runs that deleted rows.
    uint64_t failed_commits = 0, builds_done = 0, builds_cancelled = 0, retention_runs = 0;
    for (const auto& entry : std::filesystem::directory_iterator(p.dir())) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("eventd-", 0) != 0 || entry.path().extension() != ".log") continue;
        std::ifstream in(entry.path());
        for (std::string line; std::getline(in, line);) {
            failed_commits += line.find("records failed: ") != std::string::npos;
            builds_done += line.find(" built (") != std::string::npos;
            builds_cancelled += line.find(" cancelled after ") != std::string::npos;
            retention_runs += line.find("retention deleted ") != std::string::npos;
        }
    }
    uint64_t expired_left = 0;
    for (const StoredRow& r : store.rows) expired_left += r.boot_id == kExpiredBoot;

    std::ostringstream report;
    report << "soak report (seed " << seed << "):\n"
           << "  eventd SIGKILLs: " << tally.kills << " (" << tally.startup_kills << " during startup, "
           << tally.index_kills << " after an index request, " << tally.retention_kills
           << " after a retention trigger)\n"
           << "  shim SIGKILLs: " << tally.shim_restarts << " (" << tally.shim_restarts_under_eventd
           << " under a running eventd); boots audited: " << old_boots.size() + 1 << "\n"
           << "  eventd reloads: " << tally.reloads << ", ring resizes: " << tally.resizes
           << ", index requests: " << tally.index_requests << ", secondary indexes dropped while down: "
           << tally.indexes_dropped << ", expired rows written for retention: " << tally.expired_rows_written << "\n"
           << "  eventd logs: " << builds_done << " index builds completed, " << builds_cancelled
           << " cancelled; " << retention_runs << " retention runs deleted rows ("
           << tally.expired_rows_written - expired_left << " of the " << tally.expired_rows_written
           << " expired rows written are gone); " << tally.long_downtimes << " long downtimes (0.5-3 s)\n"
           << "  SQLite faults: " << (fault_rate ? std::to_string(fault_rate) + " per million writes and syncs in " +
                                                        std::to_string(faulty_runs) + " runs"
                                                  : std::string("none"))
           << "; failed commits logged: " << failed_commits << "\n"
           << "  clients: " << clients.queries() << " queries, " << clients.streams() << " streams; "
           << clients.succeeded() << " ended 0, " << clients.failed() << " ended with an error (eventd killed under them), "
           << clients.crashes().size() << " crashed\n"
           << "  events audited: " << stored << " stored + " << lost << " in " << gap_records << " gap record(s)\n"
           << per_boot.str() << "  duplicates: " << duplicates << ", unaccounted: " << unaccounted
           << ", unread in killed shims' rings: " << tail_lost << "\n"
           << "  shard files: " << store.files.size() << ", integrity_check ok: " << integrity_ok
           << ", quarantined: " << quarantined << "\n"
           << "  wall time: " << int(soak_seconds) << " s soak + " << int(audit_seconds) << " s audit\n";
    for (const std::string& c : clients.crashes()) problem("eventctl crashed: " + c);
    if (!problems.empty()) {
        report << "AUDIT FAILED: " << problems.size() << " problem(s)";
        if (problems.size() >= 200) report << " (the first 200 per boot)";
        report << "\n";
        for (size_t i = 0; i < problems.size() && i < 50; ++i) report << "  " << problems[i] << "\n";
    } else {
        report << "audit passed\n";
    }
    std::cout << report.str() << std::flush;
    INFO(report.str());
    CHECK(problems.empty());
    CHECK(stored > 0);
    CHECK(builds_done > 0);
    CHECK(retention_runs > 0);
    CHECK(expired_left < tally.expired_rows_written);
    if (kills >= kForcedKills) {
        // Each kind the report counts happened (forced in the first kills).
        CHECK(tally.index_kills > 0);
        CHECK(tally.retention_kills > 0);
        CHECK(tally.startup_kills > 0);
        CHECK(tally.shim_restarts_under_eventd > 0);
        CHECK(tally.shim_restarts > tally.shim_restarts_under_eventd);  // one while eventd was down
        CHECK(tally.long_downtimes > 0);
        CHECK(tally.kills > 0);
    }
}
