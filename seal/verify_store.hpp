// `eventctl verify` (issue 28; docs/EVENTCTL.md "Verifying a store"): recompute every shard's
// hash chain (store/row_chain.hpp) and check every checkpoint (checkpoint.hpp) against the
// verification key, on a store directory — eventd's own or a copy. Reports, per file, the first
// place where what is stored differs from what was sealed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "seal/sealing_key.hpp"

namespace eventd::seal {

enum class FindingKind {
    changed_row,        // a row's columns differ from what was chained
    missing_rows,       // ids absent inside the chain, or at its end
    inserted_row,       // a row with an id eventd never issued
    reordered_rows,     // two rows in each other's place
    rechained_rows,     // rows changed and the chain recomputed: the next checkpoint's head differs
    changed_segment,    // a segment of the chain (store/row_chain.hpp) changed: its head or tags
    bad_checkpoint,     // a checkpoint row that is not one, or names another file or row
    broken_sequence,    // a checkpoint that does not follow the previous one (removed or replaced)
    bad_signature,      // the signature or the epoch key's certificate does not verify
    later_epoch,        // signed with the key of an epoch later than its time, or dated in the future
    sealing_gap,        // no checkpoint for longer than eventd writes them, without a shutdown between
    unsealed_rows,      // rows after the last checkpoint: chained, but not yet sealed
    not_chained,        // a file without a chain (never opened by an eventd that chains)
    rolled_back,        // a checkpoint kept off the host is not in the store (compare_copies.hpp)
    unreadable,         // the file could not be read (the last: kind_named counts up to it)
};

// A finding's time as the verifier words it: UTC to the second, "2026-11-27T23:55:35Z".
std::string finding_time(uint64_t ns);

const char* kind_name(FindingKind kind);
std::optional<FindingKind> kind_named(const std::string& name);  // kind_name's inverse

struct Finding {
    FindingKind kind;
    std::string file;  // the file's name in the store directory
    int64_t row = 0;   // the first row concerned (0: the file as a whole)
    uint64_t time_ns = 0;  // that row's timestamp, when there is one
    std::string what;  // one sentence for the operator
};

struct FileReport {
    std::string file;
    uint64_t rows = 0;             // rows read
    uint64_t pre_chain_rows = 0;   // rows from before the file had a chain (not protected)
    // Rows before retention's anchor that its cut has not deleted yet (eventd stopped between two
    // batches; the next pass deletes them). Not protected either: the chain no longer covers them.
    uint64_t awaiting_retention_rows = 0;
    uint64_t checkpoints = 0;      // valid checkpoints
    int64_t sealed_through = 0;    // the last row a valid checkpoint covers
    std::optional<Finding> broken;  // the first break; nothing after it in this file is trusted
    std::optional<Finding> unsealed;  // rows after the last checkpoint
};

struct StoreReport {
    std::vector<FileReport> files;
    bool intact() const;        // no file broken
    bool fully_sealed() const;  // intact and no unsealed rows
};

struct VerifyOptions {
    PublicKey key{};
    uint64_t now_ns = 0;  // checkpoints dated after now (+ 5 min for clock steps) are from a later epoch
    // Called about every 100 000 rows and at each file's end: (file, rows of it so far).
    std::function<void(const std::string&, uint64_t)> progress;
};

base::Result<StoreReport> verify_store(const std::filesystem::path& dir, const VerifyOptions& options);

}  // namespace eventd::seal
