#include "base/sync_point.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#ifdef KMES_SYNC_POINTS
#include <atomic>
#include <map>
#include <mutex>

namespace base::sync {
namespace {
// The one piece of process-global mutable state outside main: tests need to reach into code
// paths they do not own. It exists only in builds with sync points.
struct Registry {
    std::mutex mutex;
    std::map<std::string, std::function<void()>, std::less<>> callbacks;
    std::atomic<bool> any{false};  // fast path: relaxed is enough, a stale false only skips a test hook
};
Registry& registry() {
    static Registry r;
    return r;
}
}  // namespace

void process(std::string_view name) {
    Registry& r = registry();
    if (!r.any.load(std::memory_order_relaxed)) return;
    std::function<void()> callback;
    {
        std::lock_guard lock(r.mutex);
        auto it = r.callbacks.find(name);
        if (it == r.callbacks.end()) return;
        callback = it->second;
    }
    callback();
}

void set_callback(std::string_view name, std::function<void()> callback) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    if (callback)
        r.callbacks[std::string(name)] = std::move(callback);
    else
        r.callbacks.erase(std::string(name));
    r.any.store(!r.callbacks.empty(), std::memory_order_relaxed);
}

void clear_all() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.callbacks.clear();
    r.any.store(false, std::memory_order_relaxed);
}

void install_throw_from_environment() {
    const char* at = std::getenv("KMES_TEST_THROW_AT");
    if (!at || !*at) return;
    std::fprintf(stderr, "test-only KMES_TEST_THROW_AT=%s: that sync point throws\n", at);
    set_callback(at, [name = std::string(at)] { throw std::runtime_error("test: thrown at sync point " + name); });
}
}  // namespace base::sync
#else
namespace base::sync {
void install_throw_from_environment() {
    const char* at = std::getenv("KMES_TEST_THROW_AT");
    if (at && *at) std::fprintf(stderr, "KMES_TEST_THROW_AT ignored: built without sync points (test-only)\n");
}
}  // namespace base::sync
#endif
