// The store is private to eventd (issue 23 item 4): event payloads are as secret as the most
// restricted grant of the policy, so no file of the store may be readable by other users,
// whatever umask eventd was started with.
//
//   EventStorePath/          0750  (no access for others; the group is eventd's own)
//     shard-NNNN.db[-wal|-shm], shard-NNNN.quarantined-*.db, eventd-meta.db, store-id, …
//                            0640 at most (others nothing, the group never writes)
//
// Two halves: restrict_file_creation() makes every file eventd creates from then on private
// (it widens the umask, never narrows it: SQLite creates a database 0644 less the umask, and
// its -wal/-shm copy the database's mode), and make_store_private() creates the directory or
// tightens an existing one and everything in it, once, at startup.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace eventd::store {

// Bits no store file or directory may have: anything for others, write for the group.
inline constexpr unsigned kStoreForbiddenModeBits = 0027;

// umask |= 027 for this process (threads included): new files 0640, new directories 0750.
void restrict_file_creation();

// Create `dir` (and parents) when missing, then clear kStoreForbiddenModeBits on `dir` and on
// every entry directly inside it (relative to the directory, never through a symbolic link).
// Returns what had to be tightened, "path: 0644 -> 0640" each, for the caller to warn about.
// Run as root (eventd as root), it first refuses a directory others can write
// (refuse_shared_store_directory) and one that belongs to another user: SQLite opens the shard
// files by name, and that user could put links there.
// Errors: the directory cannot be created, listed or changed (named in the message).
base::Result<std::vector<std::string>> make_store_private(const std::filesystem::path& dir);

// Run as root (eventd, `eventctl seal --setup`), refuse a store directory that anyone but its
// owner can write — group or other write permission, sticky or not — or one inside a
// directory that anyone but its owner can write without the sticky bit (who could put another
// directory in its place). Its owner may be eventd's own user: root's files in it are made
// through base/durable_file.hpp, which never follows that user's links. Not root: nothing to
// check (the kernel's permissions already stop this user). The Error names the directory, its
// mode and owner, and the command that fixes it (docs/OPERATIONS.md "Files written as root").
base::Status refuse_shared_store_directory(const std::filesystem::path& dir);

}  // namespace eventd::store
