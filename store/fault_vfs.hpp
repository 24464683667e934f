// Test-only storage faults (issue 11): a SQLite VFS that wraps the default one ("unix") and
// makes xWrite and xSync of database and WAL files fail at random — SQLITE_FULL (ENOSPC) or
// SQLITE_IOERR_WRITE / SQLITE_IOERR_FSYNC (EIO) — with a seeded probability that a control
// file sets and a test changes while eventd runs. A failed xWrite writes nothing; a failed
// xSync does not sync (what was written stays in the page cache, as after a real fsync error).
//
//   control file: "<faults per million operations> <seed>", e.g. "20000 7"; "0", an empty,
//   missing or unreadable file: no faults. Re-read at most every 50 ms.
//
// Registered as the default VFS, so every connection of the process (writers, retention,
// index builds, eventd-meta.db, read-only queries) goes through it. Exists only in builds with
// sync points (KMES_SYNC_POINTS); eventd installs it from EVENTD_TEST_SQLITE_FAULTS_FILE
// (eventd/test_hooks.hpp). Never in production.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/result.hpp"

namespace eventd::store {

struct FaultCounts {
    uint64_t write_full = 0, write_eio = 0, sync_full = 0, sync_eio = 0;
    uint64_t total() const { return write_full + write_eio + sync_full + sync_eio; }
};

#ifdef KMES_SYNC_POINTS
// Register the fault VFS as the default; call before any connection is opened. Once only.
// `log` hears of every change of the control file's settings.
base::Status install_fault_vfs(const std::string& control_file, std::function<void(const std::string&)> log);
// Faults injected so far.
FaultCounts injected_faults();
#endif

}  // namespace eventd::store
