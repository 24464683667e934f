// Test-only knobs of the eventd process. They must not live in the production configuration
// (STYLE.md "test-only knobs do not live in the production configuration"), so they come from
// the environment and exist only in builds with sync points (meson option sync_points, off for
// release builds). docs/EVENTD.md "Test-only environment" lists them:
//
//   EVENTD_TEST_COMMIT_DELAY_FILE=<path>   before every COMMIT each writer sleeps the number of
//                                          milliseconds written in <path>, re-read every time
//                                          (absent or unreadable: 0) — a slow disk whose speed
//                                          a test changes while eventd runs (backpressure test).
//
// Implemented as callbacks on eventd's sync points (ShardWriter::commit_batch:before_commit).
#pragma once

namespace eventd {

// Install the hooks the environment asks for; main calls it before Daemon::start. In a build
// without sync points a set variable is only warned about.
void install_test_hooks_from_environment();

}  // namespace eventd
