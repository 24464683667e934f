// Durable file-system steps outside SQLite (the store's files, eventctl's cursor file): a
// rename made durable, and a small file replaced atomically (written beside, fsync'd, renamed
// over, directory fsync'd).
#pragma once

#include <filesystem>
#include <string_view>

#include "base/result.hpp"

namespace base {

// fsync the directory so that renames and creations in it survive a crash. Best effort: a
// directory that cannot be opened is left as it is (the caller's next step reports the cause).
void sync_directory(const std::filesystem::path& dir);

// `path` holds exactly `content` afterwards, or is unchanged: `<path>.tmp` is written and
// fsync'd, renamed over `path`, and the directory fsync'd. An Error names the step and the file.
// `mode`: of the new file, less the umask (0600 for a secret: never readable by others, even
// for a moment).
base::Status write_file_atomically(const std::filesystem::path& path, std::string_view content, unsigned mode = 0644);

// The same in two steps, for a caller that must do something between the slow part and the
// switch: write_beside writes and fsyncs `<path>.tmp`; replace_with_beside renames it over
// `path` (one system call: the new content appears at once) and fsyncs the directory.
base::Status write_beside(const std::filesystem::path& path, std::string_view content, unsigned mode = 0644);
base::Status replace_with_beside(const std::filesystem::path& path);

}  // namespace base
