// Cursors that reveal nothing (issue 23 item 6). A cursor names row ids of every shard file a
// stream has read past — hidden rows included — so in the clear it would tell a caller how many
// rows it may not see were written, and a caller could write one of its own. On the wire a
// cursor is therefore sealed with the store's secret key:
//
//   "2." base64url( store id [16] | nonce [24] | XChaCha20-Poly1305( position [n] ) + tag [16] )
//
//   store id   in the clear, authenticated: a cursor of another store is recognised as such
//              and refused with that message (its key is not this store's key either)
//   nonce      random per cursor (libsodium randombytes), so equal positions look unrelated
//   position   the body of store_position.hpp's text form (store id, then file id and last
//              id per file); the associated data is "eventd-cursor-2" and the store id
//
// The key is 32 random bytes in the file `cursor.key` of the store directory (0600, created
// at the first start like `store-id`): copying the store along with it keeps its cursors
// valid; a new key makes every issued cursor unreadable (clients then start again).
#pragma once

#include <array>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "store_position.hpp"

namespace eventd::store {

inline constexpr const char* kCursorKeyFileName = "cursor.key";

class CursorKey {
public:
    // The key of `dir`, created (atomically, durably, mode 0600) when the file does not exist.
    // Errors: the file cannot be read or written, or does not hold a key (EIO, naming it).
    static base::Result<CursorKey> load_or_create(const std::filesystem::path& dir);
    // A key held only in memory (tests, benchmarks).
    static CursorKey random();

    std::string seal(const StorePosition& position) const;
    // The position a cursor of seal() names, for the store `here`. A cursor naming another
    // store: a position naming that store and no file (the caller refuses it with the store
    // ids). EINVAL with the reason for anything else: not a cursor, an older form, altered or
    // forged (it does not authenticate under this store's key).
    base::Result<StorePosition> open(std::string_view text, const StoreId& here) const;

private:
    CursorKey() = default;
    std::array<unsigned char, 32> key_{};
};

}  // namespace eventd::store
