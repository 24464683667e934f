// Test-side tools that need the store's own code (store/), beside the plain-sqlite3 reader
// of store_reader.hpp.
//
// Rows of an earlier, made-up KMES boot written straight into a shard file with one SQL
// statement (the C++ insert path of a debug build would take a minute for millions): what the
// index tests build indexes over, and what the soak's retention runs delete. eventd must not
// be running on the store (or must not use that shard) while this writes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "kmes/guid.hpp"

namespace eventd::it {

struct OldRows {
    uint32_t shard = 0;                     // shard-NNNN.db; created by the store's own code if absent
    uint64_t rows = 0;                      // events of type test.old, payload {"user": "uNNNNNN"}
    kmes::Guid boot{{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}};
    uint16_t cpu = 0;
    uint64_t first_sequence = 1;            // sequences first..first+rows-1, accounted in sequence_state
    std::chrono::nanoseconds age = std::chrono::hours(1);  // the oldest row's age; 1 µs apart
};

// REQUIREs success.
void prefill_shard(const std::string& store_dir, const OldRows& old);

// PRAGMA integrity_check of one shard file (read-only; msgpack_extract registered, which the
// payload expression indexes need): "ok", or every message it gave, or why it could not run.
std::string integrity_check(const std::string& file);

}  // namespace eventd::it
