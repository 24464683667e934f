#include "test_hooks.hpp"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "base/sync_point.hpp"
#include "store/fault_vfs.hpp"

namespace eventd {

namespace {

std::optional<std::chrono::milliseconds> milliseconds_from(const char* variable) {
    const char* text = std::getenv(variable);
    if (!text) return std::nullopt;
#ifdef KMES_SYNC_POINTS
    char* end = nullptr;
    const long long ms = std::strtoll(text, &end, 10);
    if (end == text || *end != '\0' || ms <= 0) {
        spdlog::warn("test-only {}={} ignored: not a positive number of milliseconds", variable, text);
        return std::nullopt;
    }
    spdlog::warn("test-only {}={} in force", variable, text);
    return std::chrono::milliseconds(ms);
#else
    spdlog::warn("{} ignored: this eventd is built without sync points (test-only)", variable);
    return std::nullopt;
#endif
}

}  // namespace

std::optional<std::chrono::milliseconds> test_index_policy_interval() {
    return milliseconds_from("EVENTD_TEST_INDEX_POLICY_INTERVAL_MS");
}
std::optional<std::chrono::milliseconds> test_index_window() {
    return milliseconds_from("EVENTD_TEST_INDEX_WINDOW_MS");
}

void install_test_hooks_from_environment() {
    if (const char* faults_file = std::getenv("EVENTD_TEST_SQLITE_FAULTS_FILE")) {
#ifdef KMES_SYNC_POINTS
        spdlog::warn("test-only EVENTD_TEST_SQLITE_FAULTS_FILE={}: SQLite writes and syncs fail at the rate it holds",
                     faults_file);
        if (auto s = store::install_fault_vfs(faults_file, [](const std::string& m) { spdlog::warn("{}", m); }); !s)
            spdlog::error("test-only SQLite fault VFS not installed: {}", s.error().message);
#else
        spdlog::warn("EVENTD_TEST_SQLITE_FAULTS_FILE ignored: this eventd is built without sync points (test-only)");
#endif
    }
    const char* delay_file = std::getenv("EVENTD_TEST_COMMIT_DELAY_FILE");
    if (!delay_file) return;
#ifdef KMES_SYNC_POINTS
    spdlog::warn("test-only EVENTD_TEST_COMMIT_DELAY_FILE={}: every COMMIT waits the milliseconds it holds",
                 delay_file);
    base::sync::set_callback("ShardWriter::commit_batch:before_commit", [path = std::string(delay_file)] {
        uint32_t ms = 0;
        std::ifstream(path) >> ms;
        if (ms) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    });
#else
    spdlog::warn("EVENTD_TEST_COMMIT_DELAY_FILE ignored: this eventd is built without sync points (test-only)");
#endif
}

}  // namespace eventd
