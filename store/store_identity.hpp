// The store's identity (store_position.hpp): 16 random bytes, kept in the file `store-id` of
// the store directory as the GUID text form (base/guid_text.hpp) and a newline. eventd creates
// it at startup when it is missing; a cursor names it so that it is never applied to another
// store's files (a copied or recreated store directory gets a new one only if the file is not
// copied with it — copying `store-id` along means "the same store").
#pragma once

#include <filesystem>

#include "base/result.hpp"
#include "store_position.hpp"

namespace eventd::store {

inline constexpr const char* kStoreIdFileName = "store-id";

// The store id of `dir`, created (atomically, durably) when the file does not exist yet. EIO
// naming the file when it exists but does not hold a store id.
base::Result<StoreId> load_or_create_store_id(const std::filesystem::path& dir);

// The store id of `dir` without creating it: ENOENT when eventd has not created it yet.
base::Result<StoreId> read_store_id(const std::filesystem::path& dir);

}  // namespace eventd::store
