// Issue 28 item 5: a store against the checkpoints it forwarded. A host's checkpoints travel
// with its other records (eventd-forward → JetStream → a collector eventd); a store rolled back
// to an older copy, or truncated back to a checkpoint with its metadata mended, verifies on its
// own — but no longer holds the newest checkpoint the collector has of it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "seal/checkpoint.hpp"
#include "seal/verify_store.hpp"

namespace eventd::seal {

struct CopyComparison {
    uint64_t forwarded = 0;     // checkpoints given with a valid signature
    uint64_t files = 0;         // of this store's files, those the forwarded checkpoints name
    // Given checkpoints that do not verify with this store's key: other hosts' (a collector holds
    // every host's), or forged — ignored either way.
    uint64_t other_key = 0;
    std::vector<Finding> findings;  // kind rolled_back, one per file at most
};

// For every file the forwarded checkpoints name: the newest of them must be in this store, as
// it was forwarded — unless retention has since deleted it (the file's chain starts after it).
base::Result<CopyComparison> compare_with_forwarded(const std::filesystem::path& dir,
                                                    const std::vector<Checkpoint>& forwarded, const PublicKey& key);

}  // namespace eventd::seal
