// Reading what eventd stored, the way a query would (PSD-008 §3.2.5): every shard file in the
// store directory — active, historical and quarantined `shard-*.db` — opened read-only with
// plain sqlite3, independent of eventd's store/ code. Payloads are msgpack; synthetic ones are
// decoded with nlohmann::json::from_msgpack.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kmes/guid.hpp"

namespace eventd::it {

using kmes::Guid;

struct StoredRow {
    std::string file;  // shard file name, e.g. "shard-0001.db"
    int64_t id = 0;
    Guid boot_id{};
    uint64_t timestamp = 0;
    std::optional<uint16_t> cpu_id;
    std::optional<uint64_t> sequence;
    std::optional<int> origin_class;
    std::string event_type;
    bool identity_null = true;  // effective/true token and process GUID columns all NULL
    bool payload_null = true;
    nlohmann::json payload;  // decoded: synthetic rows always, KMES rows when asked

    bool synthetic() const { return event_type.rfind("synthetic.", 0) == 0; }
};

struct StoreReadOptions {
    bool decode_kmes_payloads = false;  // decoding a million payloads costs seconds
    bool kmes_rows = true;              // false: only synthetic.* rows (cheap polling)
};

struct StoreContents {
    std::vector<std::string> files;       // shard files read
    std::vector<std::string> unreadable;  // shard files that could not be read (with the reason)
    std::vector<StoredRow> rows;          // in file order, then id order

    std::vector<StoredRow> of_type(const std::string& type) const;
    std::vector<StoredRow> in_file(const std::string& file) const;
};

// Every `shard-*.db` in `dir`, sorted by name.
std::vector<std::string> shard_files(const std::string& dir);
StoreContents read_store(const std::string& dir, StoreReadOptions options = {});

// sequence_state of every readable shard file: (boot, cpu) → ranges, as stored (not merged).
using SequenceStateRows = std::map<std::pair<Guid, uint16_t>, std::vector<std::pair<uint64_t, uint64_t>>>;
SequenceStateRows read_sequence_state(const std::string& dir);

// One value from one file (e.g. "SELECT value FROM metadata WHERE key='schema_version'");
// nullopt when the file cannot be read or there is no row.
std::optional<std::string> query_text(const std::string& file, const std::string& sql);

}  // namespace eventd::it
