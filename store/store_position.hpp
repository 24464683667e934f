// A position in a store's commit order, and its text form: the `cursor` of a resumable
// stream (issue 12; docs/QUERY-SERVER.md "Cursors").
//
// Within one shard file rows are committed in id order and ids are never reused, so "every row
// of file F up to id N has been delivered" is one number per file. A position is that number
// for every file a stream reads, each file named by its file id (the `file_id` metadata of the
// shard: it stays with the file when the file is quarantined under another name, and a new
// file under an old name gets a new one), and the store by its store id (so that a cursor is
// never applied to another store's files). A file missing from a position has had nothing
// delivered.
//
// Text form: "1." + base64url(store id[16], then per file: file id[16], last id as int64
// little-endian), files sorted by id. Clients treat it as opaque; the leading version lets a
// later eventd read older cursors.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <vector>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace eventd::store {

using StoreId = std::array<uint8_t, 16>;
using FileId = std::array<uint8_t, 16>;

struct StorePosition {
    StoreId store{};
    // Per file: every row up to this id has been delivered or examined and found not to match
    // (> 0). A file missing here has had nothing delivered.
    std::map<FileId, int64_t> last_id;

    bool operator==(const StorePosition&) const = default;
};

// The id of a file whose metadata has none — a file of an eventd from before file ids (a
// historical or quarantined file; active files get one when their writer opens them, and it is
// this same id): derived from its file name, which such a file never changes (quarantine renames
// only files that have an id). Files created since get a random one.
FileId legacy_file_id(std::string_view file_name);

// The body of the text form (store id, then file id and last id per file): what cursor_key.hpp
// seals, and reads back (the same checks and errors as decode_cursor).
std::vector<uint8_t> position_bytes(const StorePosition& position);
base::Result<StorePosition> position_from_bytes(std::span<const uint8_t> bytes);

// The clear form, "1." + base64url(position_bytes). Clients only ever see sealed cursors
// (cursor_key.hpp); this form is what is sealed, and what tests write.
std::string encode_cursor(const StorePosition& position);

// EINVAL with a message a person can act on ("not a cursor eventd wrote", "a cursor of a newer
// eventd") for anything encode_cursor did not produce.
base::Result<StorePosition> decode_cursor(std::string_view text);

}  // namespace eventd::store
