// The detection thread; see detector.hpp.
#include "eventd/detect/detector.hpp"

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <chrono>
#include <map>

#include "base/durable_file.hpp"
#include "base/thread_boundary.hpp"
#include "eventd/access/policy.hpp"
#include "eventd/detect/alert.hpp"
#include "eventd/query/executor.hpp"
#include "eventd/query/live_feed.hpp"
#include "eventd/query_language/parser.hpp"
#include "store/store_position.hpp"

namespace eventd::detect {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kPositionFile = "detection.position";
constexpr const char* kAuditEvents = "EVENTS audit.*";
// The position is written at most this often while events flow (and at stop): a crash
// evaluates at most this much again, and the duplicate check absorbs it.
constexpr auto kPersistEvery = std::chrono::seconds(2);

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

access::CallerAccess root_access() {
    return access::CallerAccess(access::Caller{}, access::Policy::parse(nullptr).value());
}

}  // namespace

// The detector thread's own state: the feed and what was persisted last.
class EvaluationState {
public:
    EvaluationState(const query::Query& q, const std::filesystem::path& store_dir, store::StorePosition start)
        : feed(q, store_dir, start), persisted(std::move(start)) {}
    query::LiveFeed feed;
    access::CallerAccess access = root_access();
    store::StorePosition persisted;
    Clock::time_point persisted_at = Clock::now();
    // Alerts of rows the feed has passed were not all committed (stopped while waiting): the
    // position must not be written past them; the next run reads from the last one written.
    bool behind_alerts = false;
};

Detector::Detector(Options options)
    : options_(std::move(options)),
      position_file_(options_.store_dir / kPositionFile),
      rules_(std::make_shared<const RuleSet>(std::move(options_.rules))) {}

void Detector::set_rules(RuleSet rules) {
    auto next = std::make_shared<const RuleSet>(std::move(rules));
    std::lock_guard lock(mutex_);
    rules_ = std::move(next);
}

base::Result<std::unique_ptr<Detector>> Detector::start(Options options) {
    std::unique_ptr<Detector> d(new Detector(std::move(options)));
    Detector* raw = d.get();
    d->thread_ = std::thread([raw] {
        base::run_guarded(
            "detection", [raw] { raw->run(); },
            [raw](const std::string& why) {
                std::lock_guard lock(raw->mutex_);
                raw->last_error_ = why;
            });
    });
    return d;
}

Detector::~Detector() { stop(); }

void Detector::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void Detector::on_commit(uint32_t shard) {
    {
        std::lock_guard lock(mutex_);
        dirty_.insert(shard);
    }
    wake_.notify_all();
}

base::Result<bool> Detector::stored_already(store::ShardDb& db, const HandoffItem& item) const {
    // Any boot id: an alert carries its trigger's, and the trigger is evaluated again after a
    // restart on a new KMES boot too.
    return db.contains_same(item.row, true);
}

void Detector::settled(const std::vector<uint64_t>& receipt_ids, bool committed) {
    {
        std::lock_guard lock(mutex_);
        for (uint64_t id : receipt_ids) outcomes_.emplace_back(id, committed);
    }
    wake_.notify_all();
}

void Detector::run() {
    auto q = query::parse(kAuditEvents, now_ns());
    if (!q) throw std::runtime_error("detection: the feed's query does not parse: " + q.error().message);
    // Where to start: the persisted position, or (first start) the store's end now.
    store::StorePosition start;
    auto opened = base::open_own_file_to_read(position_file_);
    if (!opened) throw std::runtime_error("detection: " + opened.error().message);
    if (*opened) {
        std::string text;
        char buffer[4096];
        for (ssize_t n; (n = ::read(**opened, buffer, sizeof buffer)) > 0;) text.append(buffer, size_t(n));
        ::close(**opened);
        while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
        auto decoded = store::decode_cursor(text);
        if (!decoded)
            throw std::runtime_error("detection: " + position_file_.string() + ": " + decoded.error().message);
        start = std::move(*decoded);
        spdlog::info("detection: {} rule(s) loaded, evaluating audit events after the last run's position",
                     rules_->rules.size());
    } else {
        auto now_query = query::parse(std::string(kAuditEvents) + " TAKE 0 STREAM", now_ns());
        if (!now_query) throw std::runtime_error("detection: " + now_query.error().message);
        access::CallerAccess access = root_access();
        std::atomic<bool> cancelled{false};
        query::ExecutionContext ctx;
        ctx.store_dir = options_.store_dir;
        ctx.access = &access;
        ctx.deadline = Clock::now() + std::chrono::minutes(1);
        ctx.timeout_ms = 60000;
        ctx.cancelled = &cancelled;
        auto end = query::execute(*now_query, ctx, [](std::span<const uint8_t>) { return base::Status{}; });
        if (!end) throw std::runtime_error("detection: cannot find the store's end: " + end.error().message);
        start = end->position;
        spdlog::info("detection: {} rule(s) loaded, evaluating audit events from now on (first start)",
                     rules_->rules.size());
    }
    EvaluationState state(*q, options_.store_dir, start);
    persist_position(state, true);
    // Every shard once at start: what was committed since the position was written.
    for (uint32_t s = 0; s < options_.shard_count; ++s) on_commit(s);

    bool retry = false;  // a shard failed: again after a pause, not in a hot loop
    for (;;) {
        std::set<uint32_t> dirty;
        std::shared_ptr<const RuleSet> rules;
        {
            std::unique_lock lock(mutex_);
            // Idle: asleep until a commit (no periodic wake-up). The pending position is
            // written by the turn after kPersistEvery, or at stop.
            const auto pending = [this] { return stopping_ || !dirty_.empty(); };
            if (retry)
                wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
            else if (state.feed.position() != state.persisted)
                wake_.wait_for(lock, kPersistEvery, pending);
            else
                wake_.wait(lock, pending);
            if (stopping_) break;
            dirty.swap(dirty_);
            rules = rules_;
        }
        retry = false;
        for (uint32_t shard : dirty)
            if (!evaluate_shard(shard, *rules, state)) {
                std::lock_guard lock(mutex_);
                if (stopping_) break;
                dirty_.insert(shard);  // again (the error is in the status record)
                retry = true;
            }
        persist_position(state, false);
    }
    persist_position(state, true);
}

bool Detector::evaluate_shard(uint32_t shard, const RuleSet& rules, EvaluationState& state) {
    // The feed's position moves as it reads; the position persisted stays behind every alert
    // not yet committed (post_and_wait returns only when they are).
    std::vector<store::EventRow> alerts;
    std::map<std::string, uint64_t> matched;
    int64_t newest = 0;
    const base::Status read = state.feed.read_new(
        shard, state.access, [&](std::span<const uint8_t> bytes, const query::StoredAt&) -> base::Status {
            const json record = json::from_msgpack(bytes.begin(), bytes.end(), true, false);
            if (record.is_discarded()) return {};  // not ours to judge: the stored row is as it is
            evaluated_.fetch_add(1, std::memory_order_relaxed);
            newest = std::max<int64_t>(newest, record.value("timestamp", int64_t{0}));
            const detection::EventView view(record);  // flattened once for every rule
            for (const LoadedRule& rule : rules.rules) {
                if (!rule.rule.matches(view)) continue;
                auto alert = make_alert(rule, record);
                if (!alert) continue;
                alerts.push_back(std::move(*alert));
                ++matched[rule.rule.info().id];
            }
            return {};
        });
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, n] : matched) {
            matches_[id] += n;
            matches_total_ += n;
        }
        last_evaluated_ns_ = std::max(last_evaluated_ns_, newest);
    }
    if (!read) {
        std::lock_guard lock(mutex_);
        last_error_ = "shard " + std::to_string(shard) + ": " + read.error().message;
        spdlog::warn("detection: reading shard {}: {}", shard, read.error().message);
    }
    const bool posted = alerts.empty() || post_and_wait(shard, std::move(alerts));
    if (!posted) state.behind_alerts = true;
    return read.ok() && posted;
}

bool Detector::post_and_wait(uint32_t shard, std::vector<store::EventRow> alerts) {
    // Post every alert with a receipt; those whose batch rolled back are posted again (the
    // same rows: the duplicate check keeps what a partial commit stored).
    std::map<uint64_t, store::EventRow> waiting;
    for (auto& row : alerts) waiting.emplace(next_receipt_.fetch_add(1), std::move(row));
    std::vector<uint64_t> to_post;
    for (const auto& [id, row] : waiting) to_post.push_back(id);
    while (!waiting.empty()) {
        for (uint64_t id : to_post) {
            HandoffItem item;
            item.row = waiting.at(id);
            item.receipt = {this, id};
            options_.post(shard, std::move(item));
        }
        to_post.clear();
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || !outcomes_.empty(); });
        if (stopping_) return false;
        for (const auto& [id, committed] : outcomes_) {
            auto it = waiting.find(id);
            if (it == waiting.end()) continue;
            if (committed) {
                waiting.erase(it);
            } else {
                to_post.push_back(id);
            }
        }
        outcomes_.clear();
        if (!to_post.empty()) {
            lock.unlock();
            std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a failed commit: not in a hot loop
        }
    }
    return true;
}

void Detector::persist_position(EvaluationState& state, bool force) {
    if (state.behind_alerts) return;
    const store::StorePosition& now = state.feed.position();
    if (now == state.persisted && !force) return;
    if (!force && Clock::now() - state.persisted_at < kPersistEvery) return;
    // 0600: the store is private (store/store_privacy.hpp).
    if (auto st = base::write_file_atomically(position_file_, store::encode_cursor(now), 0600); !st) {
        std::lock_guard lock(mutex_);
        last_error_ = "cannot write " + position_file_.string() + ": " + st.error().message;
        spdlog::error("detection: {}", last_error_);
        return;
    }
    state.persisted = now;
    state.persisted_at = Clock::now();
}

json Detector::status_record() const {
    std::lock_guard lock(mutex_);
    json loaded = json::array();
    for (const LoadedRule& r : rules_->rules) {
        const auto it = matches_.find(r.rule.info().id);
        loaded.push_back({{"id", r.rule.info().id},
                          {"title", r.rule.info().title},
                          {"level", r.rule.info().level},
                          {"file", r.file},
                          {"matches", it == matches_.end() ? 0 : it->second}});
    }
    json refused = json::array();
    for (const RefusedRule& r : rules_->refused) refused.push_back({{"file", r.file}, {"reason", r.reason}});
    return {{"kind", "detection"},
            {"rules_loaded", rules_->rules.size()},
            {"rules_refused", rules_->refused.size()},
            {"evaluated", evaluated_.load()},
            {"matches", matches_total_},
            {"last_evaluated_ns", last_evaluated_ns_},
            {"last_error", last_error_},
            {"rules", std::move(loaded)},
            {"refused", std::move(refused)}};
}

}  // namespace eventd::detect
