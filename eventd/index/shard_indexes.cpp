#include "eventd/index/shard_indexes.hpp"

#include <algorithm>

namespace eventd::index {
namespace {
constexpr auto kFirstBackoff = std::chrono::seconds(1);
constexpr auto kMaxBackoff = std::chrono::seconds(60);
// §3.3.4: a batch counts as large above 75 % of MaxBatchSize.
constexpr uint64_t kLargeBatchPercent = 75;
}  // namespace

ShardIndexes::ShardIndexes(std::vector<std::string> material) : material_(material.begin(), material.end()) {}

std::vector<std::pair<std::string, store::SecondaryIndex>> ShardIndexes::named(const DesiredSet& desired) {
    std::vector<std::pair<std::string, store::SecondaryIndex>> out;
    for (const DesiredIndex& d : desired.indexes) {
        store::SecondaryIndex index{d.field_path, d.is_expression};
        if (!store::create_index_sql(index)) continue;  // not a candidate: never built
        out.emplace_back(store::index_name(index), std::move(index));
    }
    return out;
}

const char* why_text(IndexStep::Why why) {
    switch (why) {
        case IndexStep::Why::desired:
            return "desired";
        case IndexStep::Why::restore:
            return "restore after shedding";
        case IndexStep::Why::not_desired:
            return "no longer desired";
        case IndexStep::Why::graduated_shedding:
            return "graduated shedding";
        case IndexStep::Why::emergency_shedding:
            return "emergency shedding";
    }
    return "?";
}

std::optional<IndexStep> ShardIndexes::drop_step(const std::string& name, IndexStep::Why why) const {
    if (name == store::kTimestampIndex || !material_.contains(name)) return std::nullopt;
    return IndexStep{IndexStep::Kind::drop, why, name, store::drop_index_sql(name)};
}

std::optional<IndexStep> ShardIndexes::next_quiet_step(const DesiredSet& desired, Clock::time_point now) const {
    const auto wanted = named(desired);
    for (const std::string& name : material_) {
        const bool is_wanted =
            std::any_of(wanted.begin(), wanted.end(), [&](const auto& w) { return w.first == name; });
        if (!is_wanted) return drop_step(name, IndexStep::Why::not_desired);
    }
    if (now < quiet_after_ || now < retry_after_) return std::nullopt;
    for (const auto& [name, index] : wanted) {
        if (material_.contains(name)) continue;
        return IndexStep{IndexStep::Kind::create,
                         shed_.contains(name) ? IndexStep::Why::restore : IndexStep::Why::desired, name,
                         *store::create_index_sql(index)};
    }
    return std::nullopt;
}

void ShardIndexes::pressure_seen(const SheddingSettings& settings, Clock::time_point now) {
    // §3.3.5: shed indexes come back once the pressure is gone — no sooner than one shedding
    // window after it was last seen.
    quiet_after_ = std::max(quiet_after_, now + std::chrono::seconds(settings.window_seconds));
}

std::optional<IndexStep> ShardIndexes::on_commit(size_t batch, uint32_t max_batch, const SheddingSettings& settings,
                                                 const DesiredSet& desired, Clock::time_point now) {
    const bool large = uint64_t{batch} * 100 > uint64_t{max_batch} * kLargeBatchPercent;
    batches_.push_back(BatchMark{now, large});
    const auto window = std::chrono::seconds(settings.window_seconds);
    while (!batches_.empty() && now - batches_.front().at > window) batches_.pop_front();
    const auto large_batches = static_cast<uint64_t>(
        std::count_if(batches_.begin(), batches_.end(), [](const BatchMark& b) { return b.large; }));
    if (large_batches * 100 <= uint64_t{settings.batch_percent} * batches_.size()) return std::nullopt;

    pressure_seen(settings, now);
    if (material_.empty()) return std::nullopt;
    // The lowest priority first: an index no longer desired, else the last in the set.
    const auto wanted = named(desired);
    for (const std::string& name : material_) {
        if (std::none_of(wanted.begin(), wanted.end(), [&](const auto& w) { return w.first == name; }))
            return drop_step(name, IndexStep::Why::graduated_shedding);
    }
    for (auto it = wanted.rbegin(); it != wanted.rend(); ++it) {
        if (material_.contains(it->first)) return drop_step(it->first, IndexStep::Why::graduated_shedding);
    }
    return std::nullopt;
}

std::vector<IndexStep> ShardIndexes::emergency(const SheddingSettings& settings, Clock::time_point now) {
    pressure_seen(settings, now);
    std::vector<IndexStep> steps;
    for (const std::string& name : material_) {
        if (auto step = drop_step(name, IndexStep::Why::emergency_shedding)) steps.push_back(std::move(*step));
    }
    return steps;
}

void ShardIndexes::done(const IndexStep& step, Outcome outcome, Clock::time_point now) {
    const bool shedding =
        step.why == IndexStep::Why::graduated_shedding || step.why == IndexStep::Why::emergency_shedding;
    if (step.kind == IndexStep::Kind::drop) {
        if (outcome != Outcome::done) return;  // retried at the next decision
        material_.erase(step.name);
        if (shedding) {
            shed_.insert(step.name);
            ++(step.why == IndexStep::Why::emergency_shedding ? counters_.sheds_emergency : counters_.sheds_graduated);
        } else {
            shed_.erase(step.name);
            ++counters_.dropped;
        }
        return;
    }
    ++counters_.builds_started;
    switch (outcome) {
        case Outcome::done:
            material_.insert(step.name);
            if (shed_.erase(step.name) > 0) ++counters_.restored;
            ++counters_.builds_done;
            backoff_ = std::chrono::seconds(0);
            return;
        case Outcome::cancelled:
        case Outcome::failed:
            ++(outcome == Outcome::cancelled ? counters_.builds_cancelled : counters_.builds_failed);
            // Retried in a later quiet period, waiting longer after each cancel in a row so a
            // shard under steady load does not start and abandon the same build over and over.
            backoff_ = backoff_.count() == 0 ? kFirstBackoff : std::min(backoff_ * 2, kMaxBackoff);
            retry_after_ = now + backoff_;
            return;
    }
}

bool ShardIndexes::converged(const DesiredSet& desired) const {
    const auto wanted = named(desired);
    return wanted.size() == material_.size() &&
           std::all_of(wanted.begin(), wanted.end(), [&](const auto& w) { return material_.contains(w.first); });
}

std::vector<std::string> ShardIndexes::missing(const DesiredSet& desired) const {
    std::vector<std::string> out;
    for (const auto& [name, index] : named(desired))
        if (!material_.contains(name)) out.push_back(name);
    return out;
}

}  // namespace eventd::index
