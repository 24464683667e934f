#include "eventd/index/policy_thread.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "base/thread_boundary.hpp"

namespace eventd::index {
namespace {

using SteadyClock = std::chrono::steady_clock;
using json = nlohmann::json;

std::string field_list(const std::vector<DesiredIndex>& set) {
    std::string out;
    for (const DesiredIndex& d : set) out += (out.empty() ? "" : ", ") + d.field_path;
    return out.empty() ? "(empty)" : out;
}

}  // namespace

PolicyThread::PolicyThread(Options options) : options_(std::move(options)), settings_(options_.settings) {}

std::unique_ptr<PolicyThread> PolicyThread::open(Options options) {
    std::unique_ptr<PolicyThread> p(new PolicyThread(std::move(options)));
    std::optional<std::string> admin_text = std::string(kDefaultAdminSd);
    auto opened = MetaDb::open(p->options_.store_dir, p->options_.now_ns());
    if (opened) {
        p->state_ = PolicyState(std::move(opened->contents.counters), opened->contents.desired);
        admin_text = opened->contents.admin_sd;
        p->db_.emplace(std::move(opened->db));
    } else {
        p->db_problem_ = opened.error().message;
        spdlog::error(
            "eventd-meta.db cannot be used: {}; adaptive indexing keeps its state in memory and tries again "
            "every interval; events are not affected",
            p->db_problem_);
    }
    {
        std::vector<std::string> warnings;
        auto sd = admin_text ? AdminSd::parse(*admin_text, warnings)
                             : base::Result<AdminSd>(base::Error{EINVAL, "admin_sd: the meta row is missing"});
        for (const std::string& w : warnings) spdlog::warn("eventd-meta.db {}", w);
        if (!sd) spdlog::error("eventd-meta.db {}; using the default {}", sd.error().message, kDefaultAdminSd);
        p->admin_sd_ = std::make_shared<const AdminSd>(sd ? std::move(*sd) : AdminSd::defaults());
    }
    p->roll_user_window(p->options_.settings.params, p->options_.now_ns());
    // §3.3.9: the persisted set is in force before any writer starts; nothing is built or
    // dropped because of it here — writers converge in their quiet periods.
    const std::vector<DesiredIndex> desired = p->state_.desired();
    p->options_.holder->publish(desired);
    spdlog::info("adaptive indexing: {} desired index(es) loaded: {}; {} counted field(s)", desired.size(),
                 field_list(desired), p->state_.counters().size());
    p->publish_status(p->options_.settings);
    return p;
}

PolicyThread::~PolicyThread() { stop(); }

void PolicyThread::start() {
    std::lock_guard lock(mutex_);
    if (running_ || stopping_) return;
    running_ = true;
    thread_ = std::thread([this] {
        base::run_guarded(
            "the index policy thread", [this] { run(); },
            [](const std::string&) {});  // adaptive indexing stops; ingestion and queries go on
        final_save();                    // on this thread: the only writer of eventd-meta.db
    });
}

void PolicyThread::final_save() {
    // Counters are kept across restarts (§3.3.9): what queries counted since the last pass.
    base::run_guarded(
        "the index policy (final save)",
        [this] {
            state_.add_counts(options_.counter->take(), options_.now_ns());
            (void)persist();
        },
        [](const std::string&) {});
}

void PolicyThread::stop() {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        stopping_ = true;
    }
    wake_.notify_all();
    bool started = false;
    {
        std::lock_guard lock(mutex_);
        started = running_;
    }
    if (thread_.joinable()) thread_.join();  // it saved the counters on its way out
    if (!started) final_save();              // never started (startup failed): no thread to race
    // INDEX requests that never got a pass are refused.
    std::vector<Request> left;
    {
        std::lock_guard lock(mutex_);
        left.swap(requests_);
    }
    for (Request& r : left) r.done.set_value(base::Error{base::ErrorCode::cancelled, "eventd is shutting down"});
}

void PolicyThread::configure(const PolicySettings& settings) {
    {
        std::lock_guard lock(mutex_);
        settings_ = settings;
        settings_changed_ = true;
    }
    wake_.notify_all();
}

void PolicyThread::reload_admin_sd() {
    {
        std::lock_guard lock(mutex_);
        reread_admin_sd_ = true;
    }
    wake_.notify_all();
}

base::Status PolicyThread::index(const access::Caller& caller, const std::string& field,
                                 std::chrono::steady_clock::time_point deadline) {
    std::future<base::Status> done;
    {
        std::lock_guard lock(mutex_);
        if (!admin_sd_->allows(caller))
            return base::Error{base::ErrorCode::access_denied,
                               "access denied: INDEX needs administrator rights (root, or a principal of admin_sd "
                               "in eventd-meta.db; default group adm)"};
        if (stopping_) return base::Error{base::ErrorCode::cancelled, "eventd is shutting down"};
        requests_.push_back(Request{field, {}});
        done = requests_.back().done.get_future();
    }
    wake_.notify_all();
    if (done.wait_until(deadline) != std::future_status::ready)
        return base::Error{base::ErrorCode::timed_out,
                           "INDEX " + field + ": the desired set was not saved within the query timeout"};
    try {
        return done.get();
    } catch (const std::future_error&) {  // the pass failed unexpectedly (logged by run_guarded)
        return base::Error{base::ErrorCode::io, "INDEX " + field + ": the index policy failed; see eventd's log"};
    }
}

void PolicyThread::run() {
    auto last_scheduled = SteadyClock::now();
    for (;;) {
        std::vector<Request> requests;
        PolicySettings settings;
        bool reread = false;
        {
            std::unique_lock lock(mutex_);
            for (;;) {
                if (stopping_ || !requests_.empty() || reread_admin_sd_ || settings_changed_) break;
                if (SteadyClock::now() >= last_scheduled + settings_.interval) break;
                wake_.wait_until(lock, last_scheduled + settings_.interval);
            }
            if (stopping_) return;
            requests.swap(requests_);
            reread = std::exchange(reread_admin_sd_, false);
            settings_changed_ = false;
            settings = settings_;
        }
        if (reread)
            base::run_guarded(
                "the index policy (admin_sd)", [this] { read_admin_sd(); }, [](const std::string&) {});
        const bool due = SteadyClock::now() >= last_scheduled + settings.interval;
        if (due) last_scheduled = SteadyClock::now();
        if (due || !requests.empty()) {
            // An unexpected exception gives up this pass; its INDEX requests then get an error.
            base::run_guarded(
                "the index policy", [&] { pass(requests, settings); }, [](const std::string&) {});
        } else {
            base::run_guarded(
                "the index policy (status)", [&] { publish_status(settings); }, [](const std::string&) {});
        }
    }
}

void PolicyThread::roll_user_window(const PolicyParams& params, int64_t now_ns) {
    // A field's window overlaps at most two user windows of the same length: with this cap one
    // user alone brings a field at most to CreateThreshold − 1 (no index decided by one user).
    const uint64_t cap = params.create_threshold > 0 ? (params.create_threshold - 1) / 2 : 0;
    if (now_ns - user_window_start_ns_ < params.window_ns && options_.counter->per_user_field_cap() == cap) return;
    options_.counter->start_user_window(cap);
    user_window_start_ns_ = now_ns;
}

void PolicyThread::pass(std::vector<Request>& requests, const PolicySettings& settings) {
    const int64_t now = options_.now_ns();
    state_.add_counts(options_.counter->take(), now);
    roll_user_window(settings.params, now);
    for (const Request& r : requests) {
        spdlog::info("EVENTS INDEX {}: first in the desired index set", r.field);
        state_.add_manual(r.field, now);
    }
    const std::vector<DesiredIndex> before = options_.holder->current()->indexes;
    if (state_.recompute(settings.params, now) || !requests.empty()) {
        const std::vector<DesiredIndex> after = state_.desired();
        if (after != before) {
            options_.holder->publish(after);
            spdlog::info("desired index set: {} (was {})", field_list(after), field_list(before));
        }
    }
    last_pass_ns_ = now;
    const base::Status saved = persist();
    // Status first: whoever got the INDEX answer sees the field in `eventctl status` too.
    publish_status(settings);
    answer(requests, saved);
}

base::Status PolicyThread::persist() {
    if (!db_) {
        auto opened = MetaDb::open(options_.store_dir, options_.now_ns());
        if (opened) {
            spdlog::info("eventd-meta.db is usable again; the state in memory is saved to it");
            db_.emplace(std::move(opened->db));
            db_problem_.clear();
        } else {
            db_problem_ = opened.error().message;
        }
    }
    base::Status saved =
        db_ ? db_->save(state_.counters(), state_.desired())
            : base::Status(base::Error{base::ErrorCode::io, "eventd-meta.db is not usable: " + db_problem_});
    if (!saved) spdlog::warn("adaptive indexing state not saved: {}", saved.error().message);
    return saved;
}

void PolicyThread::answer(std::vector<Request>& requests, const base::Status& saved) {
    for (Request& r : requests) {
        if (saved)
            r.done.set_value({});
        else
            r.done.set_value(base::Error{saved.error().code, "INDEX " + r.field +
                                                                 ": in the desired set now, but it could not be "
                                                                 "saved to eventd-meta.db: " +
                                                                 saved.error().message});
    }
    requests.clear();
}

void PolicyThread::read_admin_sd() {
    if (!db_) return;  // keeps the one in force
    auto text = db_->read_admin_sd();
    std::vector<std::string> warnings;
    base::Result<AdminSd> sd = base::Error{EINVAL, "admin_sd: the meta row is missing"};
    if (!text)
        sd = text.error();
    else if (*text)
        sd = AdminSd::parse(**text, warnings);
    for (const std::string& w : warnings) spdlog::warn("eventd-meta.db {}", w);
    if (!sd) spdlog::error("eventd-meta.db {}; using the default {}", sd.error().message, kDefaultAdminSd);
    auto next = std::make_shared<const AdminSd>(sd ? std::move(*sd) : AdminSd::defaults());
    std::lock_guard lock(mutex_);
    admin_sd_ = std::move(next);
}

void PolicyThread::publish_status(const PolicySettings& settings) {
    protocol::status::IndexPolicy record;
    const auto& members = state_.members();
    for (size_t i = 0; i < members.size(); ++i)
        record.desired.push_back({members[i].field, i, members[i].is_expression, members[i].manual});
    for (const auto& [field, w] : state_.counters()) record.counters.push_back({field, w.count, w.window_start_ns});
    if (db_) record.meta_db = db_->path().string();
    if (!db_problem_.empty()) record.meta_db_problem = db_problem_;
    if (last_pass_ns_) record.last_recompute_ns = last_pass_ns_;
    record.interval_s = std::chrono::duration<double>(settings.interval).count();
    record.window_s = double(settings.params.window_ns) / 1e9;
    record.create_threshold = settings.params.create_threshold;
    record.drop_threshold = settings.params.drop_threshold;
    std::lock_guard lock(mutex_);
    status_ = std::move(record);
}

std::vector<json> PolicyThread::status_records() const {
    protocol::status::IndexPolicy record;
    {
        std::lock_guard lock(mutex_);
        record = status_;
    }
    // Counts not yet taken by a pass are part of the window too.
    auto& fields = record.counters;
    std::unordered_map<std::string, size_t> at;
    for (size_t i = 0; i < fields.size(); ++i) at.emplace(fields[i].field, i);
    for (const auto& [field, n] : options_.counter->peek()) {
        const auto it = at.find(field);
        if (it == at.end())
            fields.push_back({field, n.count, std::nullopt});
        else
            fields[it->second].query_count += n.count;
    }
    std::stable_sort(fields.begin(), fields.end(),
                     [](const auto& a, const auto& b) { return a.query_count > b.query_count; });
    record.counted_fields = fields.size();
    record.not_counted = options_.counter->overflowed();
    if (fields.size() > kStatusFields) fields.resize(kStatusFields);
    return {protocol::status::to_record(record)};
}

}  // namespace eventd::index
