#include "test_hooks.hpp"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "base/sync_point.hpp"

namespace eventd {

void install_test_hooks_from_environment() {
    const char* delay_file = std::getenv("EVENTD_TEST_COMMIT_DELAY_FILE");
    if (!delay_file) return;
#ifdef KMES_SYNC_POINTS
    spdlog::warn("test-only EVENTD_TEST_COMMIT_DELAY_FILE={}: every COMMIT waits the milliseconds it holds",
                 delay_file);
    kmes::sync::set_callback("ShardWriter::commit_batch:before_commit", [path = std::string(delay_file)] {
        uint32_t ms = 0;
        std::ifstream(path) >> ms;
        if (ms) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    });
#else
    spdlog::warn("EVENTD_TEST_COMMIT_DELAY_FILE ignored: this eventd is built without sync points (test-only)");
#endif
}

}  // namespace eventd
