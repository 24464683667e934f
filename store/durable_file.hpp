// Durable file-system steps the store takes outside SQLite: a rename made durable, and a small
// file replaced atomically (written beside, fsync'd, renamed over, directory fsync'd).
#pragma once

#include <filesystem>
#include <string_view>

#include "base/result.hpp"

namespace eventd::store::detail {

// fsync the directory so that renames and creations in it survive a crash. Best effort: a
// directory that cannot be opened is left as it is (the caller's next step reports the cause).
void sync_directory(const std::filesystem::path& dir);

// `path` holds exactly `content` afterwards, or is unchanged: `<path>.tmp` is written and
// fsync'd, renamed over `path`, and the directory fsync'd. An Error names the step and the file.
kmes::Status write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace eventd::store::detail
