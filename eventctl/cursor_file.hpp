// eventctl --cursor-file FILE (docs/EVENTCTL.md "Resuming"): the cursor of the last stream frame
// whose records reached standard output, kept across runs so that a restarted eventctl resumes
// exactly there (docs/QUERY-SERVER.md "Cursors").
//
// FILE holds the cursor on its first line and, when standard output is a regular file, a second
// line `output <dev> <inode> <size>`: where that file ended once the batch was written. A run
// killed after writing a batch but before saving its cursor leaves the file longer than that;
// the next run cuts it back (rewind_output) and resumes at the saved cursor, so the file gets
// every record exactly once. Through a pipe nothing can be taken back: the new cursor is
// written and fsync'd beside FILE before the batch goes out and renamed over FILE right after,
// so only a kill within those few system calls repeats the batch.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.hpp"

namespace eventctl {

// Where standard output (a regular file) ended.
struct OutputMark {
    dev_t dev = 0;
    ino_t ino = 0;
    uint64_t size = 0;
    bool operator==(const OutputMark&) const = default;
};

struct SavedCursor {
    std::string cursor;                 // "": from the oldest record (FILE did not exist yet)
    std::optional<OutputMark> output;  // standard output's end when it was saved
};

// The saved cursor. Errors name the file: unreadable, larger than any cursor, or not in the
// format above.
base::Result<SavedCursor> load_cursor(const std::string& path);

// Standard output's mark when `fd` is a regular file; nullopt otherwise (a pipe, a terminal).
std::optional<OutputMark> output_mark(int fd);

// Cut `fd` (standard output) back to saved.output's size when it is the same regular file and
// it is longer: the bytes a killed run wrote after its last saved cursor. Returns the bytes cut.
base::Result<uint64_t> rewind_output(int fd, const SavedCursor& saved);

// Saving one cursor: prepare() writes and fsyncs it beside FILE, commit() renames it over FILE.
base::Status prepare_cursor(const std::string& path, const std::string& cursor, const std::optional<OutputMark>& output);
base::Status commit_cursor(const std::string& path);

}  // namespace eventctl
