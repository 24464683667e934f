#include "fault_vfs.hpp"

#ifdef KMES_SYNC_POINTS

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <fstream>
#include <mutex>
#include <random>
#include <string>

namespace eventd::store {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kName = "eventd-test-faults";

// The fault VFS: SQLite keeps a pointer to a registered sqlite3_vfs for the rest of the
// process, so this is allocated once and never freed. Reached through vfs.pAppData.
struct FaultState {
    sqlite3_vfs vfs{};
    sqlite3_vfs* real = nullptr;
    std::string control_file;
    std::function<void(const std::string&)> log;
    std::mutex mutex;  // guards what follows: any connection's thread may write or sync
    Clock::time_point next_read{};
    uint32_t per_million = 0;
    uint64_t seed = 0;
    std::mt19937_64 rng;
    FaultCounts counts;
};
FaultState* state_of(sqlite3_vfs* vfs) { return static_cast<FaultState*>(vfs->pAppData); }

// The file behind ours follows it in the same allocation (szOsFile is the sum of both).
struct FaultFile {
    sqlite3_file base;
    FaultState* state;
    bool faulty;  // a database or WAL file
    sqlite3_file* real() { return reinterpret_cast<sqlite3_file*>(this + 1); }
};
FaultFile* ours(sqlite3_file* f) { return reinterpret_cast<FaultFile*>(f); }

enum class Op { write, sync };

// SQLITE_OK, or the error to return instead of doing `op`.
int decide(Op op, const FaultFile& file) {
    if (!file.faulty) return SQLITE_OK;
    FaultState& s = *file.state;
    std::lock_guard lock(s.mutex);
    const auto now = Clock::now();
    if (now >= s.next_read) {
        s.next_read = now + std::chrono::milliseconds(50);
        uint32_t per_million = 0;
        uint64_t seed = 0;
        std::ifstream in(s.control_file);
        if (!(in >> per_million)) per_million = 0;
        if (!(in >> seed)) seed = 0;
        if (per_million != s.per_million || seed != s.seed) {
            s.log("test-only SQLite faults: " + std::to_string(per_million) + " per million writes and syncs (seed " +
                  std::to_string(seed) + ")");
            s.per_million = per_million;
            s.seed = seed;
            s.rng.seed(seed);
        }
    }
    if (s.per_million == 0 || s.rng() % 1'000'000 >= s.per_million) return SQLITE_OK;
    const bool full = s.rng() % 2 == 0;
    if (op == Op::write) {
        ++(full ? s.counts.write_full : s.counts.write_eio);
        return full ? SQLITE_FULL : SQLITE_IOERR_WRITE;
    }
    ++(full ? s.counts.sync_full : s.counts.sync_eio);
    return full ? SQLITE_FULL : SQLITE_IOERR_FSYNC;
}

// --- sqlite3_io_methods: forward to the real file, except for injected faults ---------------

int x_close(sqlite3_file* f) { return ours(f)->real()->pMethods->xClose(ours(f)->real()); }
int x_read(sqlite3_file* f, void* buffer, int amount, sqlite3_int64 offset) {
    return ours(f)->real()->pMethods->xRead(ours(f)->real(), buffer, amount, offset);
}
int x_write(sqlite3_file* f, const void* buffer, int amount, sqlite3_int64 offset) {
    if (const int rc = decide(Op::write, *ours(f)); rc != SQLITE_OK) return rc;
    return ours(f)->real()->pMethods->xWrite(ours(f)->real(), buffer, amount, offset);
}
int x_truncate(sqlite3_file* f, sqlite3_int64 size) {
    return ours(f)->real()->pMethods->xTruncate(ours(f)->real(), size);
}
int x_sync(sqlite3_file* f, int flags) {
    if (const int rc = decide(Op::sync, *ours(f)); rc != SQLITE_OK) return rc;
    return ours(f)->real()->pMethods->xSync(ours(f)->real(), flags);
}
int x_file_size(sqlite3_file* f, sqlite3_int64* size) {
    return ours(f)->real()->pMethods->xFileSize(ours(f)->real(), size);
}
int x_lock(sqlite3_file* f, int level) { return ours(f)->real()->pMethods->xLock(ours(f)->real(), level); }
int x_unlock(sqlite3_file* f, int level) { return ours(f)->real()->pMethods->xUnlock(ours(f)->real(), level); }
int x_check_reserved_lock(sqlite3_file* f, int* out) {
    return ours(f)->real()->pMethods->xCheckReservedLock(ours(f)->real(), out);
}
int x_file_control(sqlite3_file* f, int op, void* arg) {
    return ours(f)->real()->pMethods->xFileControl(ours(f)->real(), op, arg);
}
int x_sector_size(sqlite3_file* f) { return ours(f)->real()->pMethods->xSectorSize(ours(f)->real()); }
int x_device_characteristics(sqlite3_file* f) {
    return ours(f)->real()->pMethods->xDeviceCharacteristics(ours(f)->real());
}
int x_shm_map(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
    return ours(f)->real()->pMethods->xShmMap(ours(f)->real(), page, size, extend, out);
}
int x_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
    return ours(f)->real()->pMethods->xShmLock(ours(f)->real(), offset, n, flags);
}
void x_shm_barrier(sqlite3_file* f) { ours(f)->real()->pMethods->xShmBarrier(ours(f)->real()); }
int x_shm_unmap(sqlite3_file* f, int delete_flag) {
    return ours(f)->real()->pMethods->xShmUnmap(ours(f)->real(), delete_flag);
}
int x_fetch(sqlite3_file* f, sqlite3_int64 offset, int amount, void** out) {
    return ours(f)->real()->pMethods->xFetch(ours(f)->real(), offset, amount, out);
}
int x_unfetch(sqlite3_file* f, sqlite3_int64 offset, void* p) {
    return ours(f)->real()->pMethods->xUnfetch(ours(f)->real(), offset, p);
}

const sqlite3_io_methods kMethods = {
    3,           x_close,       x_read,      x_write,     x_truncate,          x_sync,
    x_file_size, x_lock,        x_unlock,    x_check_reserved_lock,            x_file_control,
    x_sector_size,              x_device_characteristics, x_shm_map,           x_shm_lock,
    x_shm_barrier,              x_shm_unmap, x_fetch,     x_unfetch,
};

// --- sqlite3_vfs: open wraps; everything else is the real VFS's --------------------------------

int x_open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
    FaultFile* file = ours(f);
    file->base.pMethods = nullptr;  // SQLite calls xClose only if this is set
    file->state = state_of(vfs);
    file->faulty = (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL)) != 0;
    sqlite3_vfs* real = file->state->real;
    const int rc = real->xOpen(real, name, file->real(), flags, out_flags);
    if (rc != SQLITE_OK) return rc;
    // The unix VFS's files are version 3 (shared memory, memory-mapped reads); ours forward all.
    file->base.pMethods = &kMethods;
    return SQLITE_OK;
}
int x_delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
    return state_of(vfs)->real->xDelete(state_of(vfs)->real, name, sync_dir);
}
int x_access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
    return state_of(vfs)->real->xAccess(state_of(vfs)->real, name, flags, out);
}
int x_full_pathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
    return state_of(vfs)->real->xFullPathname(state_of(vfs)->real, name, n, out);
}
void* x_dl_open(sqlite3_vfs* vfs, const char* name) { return state_of(vfs)->real->xDlOpen(state_of(vfs)->real, name); }
void x_dl_error(sqlite3_vfs* vfs, int n, char* out) { state_of(vfs)->real->xDlError(state_of(vfs)->real, n, out); }
void (*x_dl_sym(sqlite3_vfs* vfs, void* handle, const char* symbol))(void) {
    return state_of(vfs)->real->xDlSym(state_of(vfs)->real, handle, symbol);
}
void x_dl_close(sqlite3_vfs* vfs, void* handle) { state_of(vfs)->real->xDlClose(state_of(vfs)->real, handle); }
int x_randomness(sqlite3_vfs* vfs, int n, char* out) { return state_of(vfs)->real->xRandomness(state_of(vfs)->real, n, out); }
int x_sleep(sqlite3_vfs* vfs, int micros) { return state_of(vfs)->real->xSleep(state_of(vfs)->real, micros); }
int x_current_time(sqlite3_vfs* vfs, double* out) { return state_of(vfs)->real->xCurrentTime(state_of(vfs)->real, out); }
int x_get_last_error(sqlite3_vfs* vfs, int n, char* out) { return state_of(vfs)->real->xGetLastError(state_of(vfs)->real, n, out); }
int x_current_time_int64(sqlite3_vfs* vfs, sqlite3_int64* out) {
    return state_of(vfs)->real->xCurrentTimeInt64(state_of(vfs)->real, out);
}

}  // namespace

base::Status install_fault_vfs(const std::string& control_file, std::function<void(const std::string&)> log) {
    if (sqlite3_vfs_find(kName)) return base::Error{EEXIST, "the SQLite fault VFS is installed already"};
    sqlite3_vfs* real = sqlite3_vfs_find(nullptr);
    if (!real) return base::Error{ENOENT, "no default SQLite VFS to wrap"};
    auto* s = new FaultState();  // lives as long as the process: SQLite keeps pointing at it
    s->real = real;
    s->control_file = control_file;
    s->log = std::move(log);
    s->vfs.iVersion = 2;
    s->vfs.szOsFile = static_cast<int>(sizeof(FaultFile)) + real->szOsFile;
    s->vfs.mxPathname = real->mxPathname;
    s->vfs.zName = kName;
    s->vfs.pAppData = s;
    s->vfs.xOpen = x_open;
    s->vfs.xDelete = x_delete;
    s->vfs.xAccess = x_access;
    s->vfs.xFullPathname = x_full_pathname;
    s->vfs.xDlOpen = x_dl_open;
    s->vfs.xDlError = x_dl_error;
    s->vfs.xDlSym = x_dl_sym;
    s->vfs.xDlClose = x_dl_close;
    s->vfs.xRandomness = x_randomness;
    s->vfs.xSleep = x_sleep;
    s->vfs.xCurrentTime = x_current_time;
    s->vfs.xGetLastError = x_get_last_error;
    s->vfs.xCurrentTimeInt64 = x_current_time_int64;
    if (const int rc = sqlite3_vfs_register(&s->vfs, 1); rc != SQLITE_OK)
        return base::Error{EIO, std::string("sqlite3_vfs_register: ") + sqlite3_errstr(rc)};
    return {};
}

FaultCounts injected_faults() {
    sqlite3_vfs* vfs = sqlite3_vfs_find(kName);
    if (!vfs) return {};
    std::lock_guard lock(state_of(vfs)->mutex);
    return state_of(vfs)->counts;
}

}  // namespace eventd::store

#endif  // KMES_SYNC_POINTS
