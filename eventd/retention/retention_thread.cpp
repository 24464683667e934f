#include "eventd/retention/retention_thread.hpp"

#include <spdlog/spdlog.h>

#include "base/thread_boundary.hpp"
#include "protocol/status.hpp"

namespace eventd {
namespace {
uint64_t now_ns() {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
}
}  // namespace

RetentionThread::RetentionThread(store::RetentionShards shards, RetentionLimits limits,
                                 std::function<void(const std::string&)> on_fatal)
    : shards_(std::move(shards)), on_fatal_(std::move(on_fatal)), limits_(limits) {}

RetentionThread::~RetentionThread() { stop(); }

void RetentionThread::start() {
    thread_ = std::thread([this] {
        base::run_guarded(
            "the retention thread", [this] { loop(); },
            [this](const std::string& why) {
                if (on_fatal_) on_fatal_(why);
            });
    });
}

void RetentionThread::set_limits(RetentionLimits limits, bool run_now) {
    {
        std::lock_guard lock(mutex_);
        limits_ = limits;
        requested_ = requested_ || run_now;
    }
    wake_.notify_all();  // a new interval counts from now
}

void RetentionThread::request() {
    {
        std::lock_guard lock(mutex_);
        requested_ = true;
    }
    wake_.notify_all();
}

void RetentionThread::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_.store(true);
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void RetentionThread::loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait_for(lock, std::chrono::minutes(limits_.interval_minutes),
                       [&] { return stopping_.load() || requested_; });
        if (stopping_.load()) return;
        requested_ = false;
        const RetentionLimits limits = limits_;
        lock.unlock();
        // An unexpected exception gives up this pass only; the next interval tries again.
        base::run_guarded(
            "retention", [&] { run_pass(limits); }, [](const std::string&) {});
        lock.lock();
    }
}

void RetentionThread::run_pass(const RetentionLimits& limits) {
    store::RetentionOptions options;
    options.should_stop = [this] { return stopping_.load(); };
    const store::RetentionOutcome outcome =
        store::run_retention(shards_, {store::retention_cutoff(now_ns(), limits.days), limits.max_bytes}, options);
    if (outcome.deleted) spdlog::info("retention deleted {} rows", outcome.deleted);
    deleted_.fetch_add(outcome.deleted, std::memory_order_relaxed);
    runs_.fetch_add(1, std::memory_order_relaxed);
    last_run_ns_.store(now_ns(), std::memory_order_relaxed);
}

nlohmann::json RetentionThread::status_record() const {
    protocol::status::Retention r;
    r.runs = runs_.load(std::memory_order_relaxed);
    r.deleted_rows = deleted_.load(std::memory_order_relaxed);
    if (const uint64_t last = last_run_ns_.load(std::memory_order_relaxed)) r.last_run_ns = last;
    return protocol::status::to_record(r);
}

}  // namespace eventd
