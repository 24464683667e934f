// The shard schema (drawn in shard_db.hpp; PSD-008 §3.1): creating it in the §3.2 order,
// verifying an existing file against it, and reading its sequence_state table.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <optional>
#include <string>

#include "base/result.hpp"
#include "sequence_ranges.hpp"
#include "store_position.hpp"

namespace eventd::store::detail {

// True when the file holds no table at all: a fresh file, or one whose creation transaction
// never committed (crash between `PRAGMA journal_mode=WAL` and COMMIT) — both safe to create.
base::Result<bool> has_no_tables(sqlite3* db, const std::filesystem::path& file);

// §3.2 creation: journal_mode=WAL, synchronous=FULL, then — in one transaction, so a crash
// never leaves half a shard — events, metadata, idx_events_timestamp, the metadata rows and
// sequence_state.
base::Status create_schema(sqlite3* db, const std::filesystem::path& file);

// §3.2 opening checks, read-only: schema_version must be 1 (else EPROTO), and events,
// metadata, sequence_state and idx_events_timestamp must match the drawing (else EIO).
base::Status verify_schema(sqlite3* db, const std::filesystem::path& file);

// journal_mode=WAL (checked: a filesystem without shared memory refuses it) and
// synchronous=FULL (§2.4.1).
base::Status set_durability(sqlite3* db, const std::filesystem::path& file);

base::Result<bool> has_table(sqlite3* db, const char* name, const std::filesystem::path& file);

// All rows of sequence_state; a malformed row (boot_id not 16 bytes, cpu_id out of range,
// first > last) is an EIO Error naming the row.
base::Result<SequenceState> read_sequence_state(sqlite3* db, const std::filesystem::path& file);

// Gives the file its file_id (metadata, store_position.hpp) unless it has one: files created
// before file ids existed get theirs when the writer first opens them — legacy_file_id of its
// name, the id readers already used for it. A write.
base::Status ensure_file_id(sqlite3* db, const std::filesystem::path& file);

// The file's file_id; nullopt for a file no writer has opened since file ids exist (a
// historical or quarantined file of an older eventd). EIO when the value is malformed.
base::Result<std::optional<FileId>> read_file_id(sqlite3* db, const std::filesystem::path& file);

// The largest row id the file ever had: metadata `max_id_issued` (written by the writer's
// commits) or max(id) of `events`, whichever is larger; 0 for a file that never had a row.
// One `metadata` value; nullopt when the key is absent.
base::Result<std::optional<std::string>> read_metadata(sqlite3* db, const char* key, const std::filesystem::path& file);
base::Status write_metadata(sqlite3* db, const char* key, const std::string& value, const std::filesystem::path& file);

// Create chain_segments (row_chain.hpp) if the file has none: it was made before chains.
base::Status ensure_chain_segments(sqlite3* db, const std::filesystem::path& file);

base::Result<int64_t> max_id_issued(sqlite3* db, const std::filesystem::path& file);

}  // namespace eventd::store::detail
