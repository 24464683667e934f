// VERIFY (issue 28; `eventctl verify` without --store): seal every shard, then verify the whole
// store with the key the operator gives — the same check as `eventctl verify --store`, run by
// eventd, which can read its store while the operator may not.
#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>

#include "daemon.hpp"
#include "eventd/ingest/synthetic.hpp"
#include "seal/verify_report.hpp"

namespace eventd {
namespace {
// How long VERIFY waits for every shard's checkpoint before checking what is there (a shard
// that cannot commit now then shows an unsealed tail).
constexpr auto kSealWait = std::chrono::seconds(5);
}  // namespace

base::Result<std::vector<nlohmann::json>> Daemon::verify_records(const std::string& key_text) {
    auto key = seal::parse_verification_key(key_text);
    if (!key) return key.error();
    if (sealer_in_use_.load(std::memory_order_acquire)) {
        // Everything committed so far gets sealed: a verification now reports no unsealed tail.
        std::vector<uint64_t> before;
        for (auto& w : writers_) {
            before.push_back(w->stats().checkpoints.load(std::memory_order_relaxed));
            w->seal_now();
        }
        const auto deadline = std::chrono::steady_clock::now() + kSealWait;
        for (size_t i = 0; i < writers_.size(); ++i) {
            while (writers_[i]->stats().checkpoints.load(std::memory_order_relaxed) == before[i] &&
                   std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
    seal::VerifyOptions options;
    options.key = *key;
    options.now_ns = synthetic::now_ns();
    auto report = seal::verify_store(config_.event_store_path, options);
    if (!report) return report.error();
    std::vector<nlohmann::json> records;
    for (const auto& file : report->files) records.push_back(seal::report_record(file));
    spdlog::info("VERIFY: {} files, {}", report->files.size(),
                 !report->intact() ? "BROKEN" : report->fully_sealed() ? "verified" : "intact, unsealed rows");
    return records;
}

}  // namespace eventd
