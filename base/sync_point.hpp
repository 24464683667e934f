// Test-only sync points (after RocksDB's SyncPoint): named places in concurrent code where a
// test can run a callback, to force an interleaving that a stress test would hit only by luck.
// Compiled to nothing unless the build defines KMES_SYNC_POINTS (meson option sync_points).
#pragma once

#include <functional>
#include <string_view>

namespace base::sync {

#ifdef KMES_SYNC_POINTS
// Run the callback registered for `name`, if any. Cheap when nothing is registered.
void process(std::string_view name);
// Register (or with an empty function, clear) the callback for `name`.
void set_callback(std::string_view name, std::function<void()> callback);
void clear_all();
#define KMES_SYNC_POINT(name) ::base::sync::process(name)
#else
#define KMES_SYNC_POINT(name) ((void)0)
#endif

// KMES_TEST_THROW_AT=<sync point name> in the environment makes that point throw a
// std::runtime_error ("test: thrown at sync point <name>"), every time it is passed: the
// unexpected error that the daemons' thread boundaries must contain (base/thread_boundary.hpp).
// Each daemon's main calls this first. A build without sync points only says it ignores it.
void install_throw_from_environment();

}  // namespace base::sync
