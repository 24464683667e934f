// Test-only knobs of the eventd process. They must not live in the production configuration
// (STYLE.md "test-only knobs do not live in the production configuration"), so they come from
// the environment and exist only in builds with sync points (meson option sync_points, off for
// release builds). docs/EVENTD.md "Test-only environment" lists them:
//
//   EVENTD_TEST_COMMIT_DELAY_FILE=<path>   before every COMMIT each writer sleeps the number of
//                                          milliseconds written in <path>, re-read every time
//                                          (absent or unreadable: 0) — a slow disk whose speed
//                                          a test changes while eventd runs (backpressure test).
//   EVENTD_TEST_SQLITE_FAULTS_FILE=<path>  every SQLite connection goes through a VFS whose
//                                          writes and syncs of database and WAL files fail
//                                          (SQLITE_FULL / SQLITE_IOERR) at the rate <path> holds,
//                                          re-read every 50 ms (store/fault_vfs.hpp)
//   EVENTD_TEST_INDEX_POLICY_INTERVAL_MS=<n>  the adaptive-index policy thread runs every n ms
//                                          instead of AdaptiveIndexPolicyIntervalMinutes (≥ 60 min)
//   EVENTD_TEST_INDEX_WINDOW_MS=<n>        the query-count window is n ms instead of
//                                          AdaptiveIndexWindowHours (≥ 1 h) — tests of the
//                                          §3.3.8 drop rule see a window end within seconds
//
// Implemented as callbacks on eventd's sync points (ShardWriter::commit_batch:before_commit)
// and, for the index policy, as overrides the daemon reads at startup.
#pragma once

#include <chrono>
#include <optional>

namespace eventd {

// Install the hooks the environment asks for; main calls it before Daemon::start. In a build
// without sync points a set variable is only warned about.
void install_test_hooks_from_environment();

// The EVENTD_TEST_INDEX_* overrides (nullopt: unset, invalid, or a build without sync points).
std::optional<std::chrono::milliseconds> test_index_policy_interval();
std::optional<std::chrono::milliseconds> test_index_window();

}  // namespace eventd
