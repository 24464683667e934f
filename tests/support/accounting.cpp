#include "support/accounting.hpp"

#include "base/guid_text.hpp"

#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <algorithm>
#include <set>
#include <sstream>
#include <tuple>

#include <catch2/catch.hpp>

#include "kmes/kmes.h"
#include "support/eventd_fixture.hpp"
#include "support/eventually.hpp"

namespace eventd::it {
namespace {

constexpr size_t kMaxErrors = 200;

class Errors {
public:
    explicit Errors(std::vector<std::string>& out) : out_(out) {}
    template <class... A>
    void add(const A&... parts) {
        if (out_.size() >= kMaxErrors) return;
        std::ostringstream s;
        (s << ... << parts);
        out_.push_back(s.str());
    }

private:
    std::vector<std::string>& out_;
};

std::string where(const StoredRow& r) { return r.file + " id " + std::to_string(r.id); }

// A synthetic.gap payload: exactly the six keys of issue 3, consistent with its row.
std::optional<GapRecord> parse_gap(const StoredRow& r, Errors& errors) {
    static const std::set<std::string> keys{"cpu_id", "first_sequence",      "last_sequence",
                                            "count",  "last_seen_timestamp", "revealing_timestamp"};
    const nlohmann::json& p = r.payload;
    if (!p.is_object()) {
        errors.add("gap ", where(r), ": payload is not a msgpack map");
        return std::nullopt;
    }
    std::set<std::string> present;
    for (auto it = p.begin(); it != p.end(); ++it) present.insert(it.key());
    if (present != keys) errors.add("gap ", where(r), ": payload keys ", p.dump());
    for (const char* k : {"cpu_id", "first_sequence", "last_sequence", "count", "revealing_timestamp"}) {
        if (!p.contains(k) || !p[k].is_number_unsigned()) {
            errors.add("gap ", where(r), ": ", k, " missing or not an unsigned integer in ", p.dump());
            return std::nullopt;
        }
    }
    GapRecord g;
    g.first = p["first_sequence"].get<uint64_t>();
    g.last = p["last_sequence"].get<uint64_t>();
    g.count = p["count"].get<uint64_t>();
    g.revealing_timestamp = p["revealing_timestamp"].get<uint64_t>();
    g.recorded_at = r.timestamp;
    g.file = r.file;
    if (p.contains("last_seen_timestamp")) {
        if (p["last_seen_timestamp"].is_number_unsigned())
            g.last_seen_timestamp = p["last_seen_timestamp"].get<uint64_t>();
        else if (!p["last_seen_timestamp"].is_null())
            errors.add("gap ", where(r), ": last_seen_timestamp neither nil nor a timestamp: ", p.dump());
    }
    if (!r.cpu_id || *r.cpu_id != p["cpu_id"].get<uint64_t>())
        errors.add("gap ", where(r), ": cpu_id column ", r.cpu_id ? std::to_string(*r.cpu_id) : "NULL",
                   " differs from the payload's ", p["cpu_id"].dump());
    if (g.first == 0 || g.first > g.last)
        errors.add("gap ", where(r), ": bad range ", g.first, "..", g.last);
    else if (g.count != g.last - g.first + 1)
        errors.add("gap ", where(r), ": count ", g.count, " for range ", g.first, "..", g.last);
    return g;
}

}  // namespace

uint64_t AccountingReport::stored() const {
    uint64_t n = 0;
    for (const auto& [cpu, a] : cpus) n += a.stored;
    return n;
}

uint64_t AccountingReport::lost() const {
    uint64_t n = 0;
    for (const auto& [cpu, a] : cpus) n += a.lost;
    return n;
}

size_t AccountingReport::gap_records() const {
    size_t n = 0;
    for (const auto& [cpu, a] : cpus) n += a.gaps.size();
    return n;
}

std::string AccountingReport::summary() const {
    std::ostringstream s;
    for (const auto& [cpu, a] : cpus)
        s << "cpu " << cpu << ": highest " << a.highest << ", stored " << a.stored << ", lost " << a.lost << " in "
          << a.gaps.size() << " gap record(s)\n";
    return s.str();
}

AccountingReport account(const StoreContents& store, const Guid& boot, const Highest& highest, bool keep_timestamps) {
    AccountingReport report;
    Errors errors(report.errors);
    // Per CPU of `boot`: 0 = unaccounted, 1 = stored row, 2 = inside a gap record.
    std::map<uint16_t, std::vector<uint8_t>> seen;
    for (const auto& [cpu, top] : highest) {
        report.cpus[cpu].highest = top;
        seen[cpu].assign(top + 1, 0);
    }
    std::set<std::tuple<Guid, uint16_t, uint64_t>> other_boots;

    for (const StoredRow& r : store.rows) {
        if (r.synthetic()) {
            if (r.sequence || r.origin_class || !r.identity_null)
                errors.add(r.event_type, " ", where(r), ": sequence, origin_class and identity must be NULL");
            if (r.event_type != "synthetic.gap") {
                if (r.cpu_id) errors.add(r.event_type, " ", where(r), ": cpu_id must be NULL for daemon-wide records");
                continue;
            }
            if (r.boot_id != boot) continue;
            auto gap = parse_gap(r, errors);
            if (!gap || !r.cpu_id) continue;
            auto it = report.cpus.find(*r.cpu_id);
            if (it == report.cpus.end()) {
                errors.add("gap ", where(r), " on cpu ", *r.cpu_id, ", which emitted nothing");
                continue;
            }
            it->second.gaps.push_back(*gap);
            it->second.lost += gap->count;
            continue;
        }
        if (!r.sequence || !r.cpu_id) {
            errors.add("KMES row ", where(r), " (", r.event_type, ") without sequence or cpu_id");
            continue;
        }
        if (r.boot_id != boot) {
            if (!other_boots.emplace(r.boot_id, *r.cpu_id, *r.sequence).second)
                errors.add("duplicate row of another boot: cpu ", *r.cpu_id, " sequence ", *r.sequence, " at ",
                           where(r));
            continue;
        }
        auto it = seen.find(*r.cpu_id);
        if (it == seen.end()) {
            errors.add("row ", where(r), " on cpu ", *r.cpu_id, ", which emitted nothing");
            continue;
        }
        const uint64_t seq = *r.sequence;
        if (seq == 0 || seq >= it->second.size()) {
            errors.add("row ", where(r), " cpu ", *r.cpu_id, " sequence ", seq, " outside 1..", it->second.size() - 1);
            continue;
        }
        if (it->second[seq]) errors.add("duplicate: cpu ", *r.cpu_id, " sequence ", seq, " stored again at ", where(r));
        it->second[seq] = 1;
        CpuAccount& a = report.cpus[*r.cpu_id];
        ++a.stored;
        if (keep_timestamps) a.timestamp_of[seq] = r.timestamp;
    }

    for (auto& [cpu, a] : report.cpus) {
        std::vector<uint8_t>& marks = seen[cpu];
        for (const GapRecord& g : a.gaps) {
            if (g.last >= marks.size()) {
                errors.add("cpu ", cpu, ": gap ", g.first, "..", g.last, " beyond the highest emitted ", a.highest);
                continue;
            }
            for (uint64_t s = g.first; s <= g.last && g.first != 0; ++s) {
                if (marks[s] == 1)
                    errors.add("cpu ", cpu, ": gap ", g.first, "..", g.last, " holds stored sequence ", s);
                else if (marks[s] == 2)
                    errors.add("cpu ", cpu, ": gap ", g.first, "..", g.last, " overlaps another gap at ", s);
                marks[s] = 2;
            }
        }
        if (a.stored + a.lost != a.highest)
            errors.add("cpu ", cpu, ": stored ", a.stored, " + lost ", a.lost, " = ", a.stored + a.lost,
                       " != highest emitted ", a.highest);
        uint64_t first_missing = 0, missing = 0;
        for (uint64_t s = 1; s < marks.size(); ++s)
            if (!marks[s] && missing++ == 0) first_missing = s;
        if (missing)
            errors.add("cpu ", cpu, ": ", missing, " sequence(s) neither stored nor in a gap, first ", first_missing);
    }
    return report;
}

AccountingReport check_accounting(const StoreContents& store, const Guid& boot, const Highest& highest,
                                  bool keep_timestamps) {
    AccountingReport report = account(store, boot, highest, keep_timestamps);
    std::ostringstream text;
    for (const std::string& e : report.errors) text << "  " << e << '\n';
    INFO("accounting of boot " << base::guid_text(boot) << ":\n" << report.summary() << "violations:\n" << text.str());
    CHECK(report.errors.empty());
    CHECK(report.stored() + report.lost() > 0);
    if (std::getenv("EVENTD_IT_VERBOSE"))  // numbers for a person reading the run
        std::cout << Catch::getResultCapture().getCurrentTestName() << ":\n" << report.summary() << std::flush;
    return report;
}

void check_sequence_state(const std::string& store_dir, const Guid& boot, const Highest& highest) {
    std::map<uint16_t, std::vector<std::pair<uint64_t, uint64_t>>> per_cpu;
    for (const auto& [key, ranges] : read_sequence_state(store_dir))
        if (key.first == boot) per_cpu[key.second].insert(per_cpu[key.second].end(), ranges.begin(), ranges.end());
    for (const auto& [cpu, top] : highest) {
        auto ranges = per_cpu[cpu];
        std::sort(ranges.begin(), ranges.end());
        std::ostringstream text;
        for (auto [first, last] : ranges) text << first << ".." << last << ' ';
        INFO("cpu " << cpu << " sequence_state ranges: " << text.str());
        std::vector<std::pair<uint64_t, uint64_t>> merged;
        bool overlap = false;
        for (auto [first, last] : ranges) {
            if (!merged.empty() && first <= merged.back().second) overlap = true;
            if (!merged.empty() && first <= merged.back().second + 1)
                merged.back().second = std::max(merged.back().second, last);
            else
                merged.emplace_back(first, last);
        }
        CHECK_FALSE(overlap);
        const uint64_t low = cpu == 0 ? 0 : 1;
        CHECK(merged == std::vector<std::pair<uint64_t, uint64_t>>{{low, top}});
    }
}

RingWatch::RingWatch(uint32_t cpus) {
    for (uint32_t cpu = 0; cpu < cpus; ++cpu) {
        auto reader = kmes::RingReader::open(cpu);
        if (!reader) FAIL("RingWatch: cannot open ring " << cpu << ": " << reader.error().message);
        readers_.push_back(std::move(*reader));
        highest_[static_cast<uint16_t>(cpu)] = 0;
    }
}

Highest RingWatch::highest() {
    for (kmes::RingReader& reader : readers_) {
        for (;;) {
            auto next = reader.next();
            if (!next) FAIL("RingWatch: ring " << reader.cpu() << ": " << next.error().message);
            if (!*next) break;
        }
        uint64_t& top = highest_[static_cast<uint16_t>(reader.cpu())];
        top = std::max(top, reader.last_sequence());
    }
    return highest_;
}

uint64_t RingWatch::bytes_written() const {
    uint64_t total = 0;
    for (const kmes::RingReader& reader : readers_) total += reader.write_pos_now();
    return total;
}

void RingWatch::wake_consumers() {
    for (kmes::RingReader& reader : readers_) {
        // interrupt() wakes the futex word this reader last waited on; a wait that returns at
        // once (highest() read everything, and the shim is frozen) gives it that word.
        (void)reader.wait(std::chrono::nanoseconds(0));
        reader.interrupt();
    }
}

ProcessFreeze::ProcessFreeze(pid_t pid) : pid_(pid) { stop_process(pid_); }
ProcessFreeze::~ProcessFreeze() { continue_process(pid_); }

std::map<uint16_t, uint64_t> accounted_per_cpu(const std::string& store_dir, const Guid& boot, const Highest& highest) {
    std::map<uint16_t, uint64_t> out;
    for (const auto& [key, ranges] : read_sequence_state(store_dir)) {
        if (key.first != boot || !highest.count(key.second)) continue;
        const uint64_t top = highest.at(key.second);
        for (auto [first, last] : ranges) {
            first = std::max<uint64_t>(first, 1);  // sequence 0 of CPU 0 marks a started boot
            last = std::min(last, top);
            if (first <= last) out[key.second] += last - first + 1;
        }
    }
    return out;
}

bool wait_accounted(const std::string& store_dir, const Guid& boot, const Highest& highest,
                    std::chrono::milliseconds timeout, std::string* status, const std::function<void()>& each_poll) {
    const auto all_accounted = [&] {
        if (each_poll) each_poll();
        const auto accounted = accounted_per_cpu(store_dir, boot, highest);
        bool done = true;
        std::ostringstream s;
        for (const auto& [cpu, top] : highest) {
            const uint64_t have = accounted.count(cpu) ? accounted.at(cpu) : 0;
            s << "cpu " << cpu << ": " << have << " of " << top << " accounted\n";
            if (have < top) done = false;
        }
        if (status) *status = s.str();
        return done;
    };
    return test_support::eventually(all_accounted, timeout, std::chrono::milliseconds(100));
}

Guid current_boot_id() {
    Guid boot{};
    if (kmes_boot_id(boot.data()) != 0) FAIL("kmes_boot_id failed: errno " << errno);
    return boot;
}

uint64_t wall_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

}  // namespace eventd::it
