// Every file eventd, eventctl, eventd-forward and kmes-shimd create or replace outside SQLite
// (the store's small files, the sealing keys, cursors, the audit source's undo files) goes
// through here: one primitive that is safe when run as root in a directory another user can
// write (issue 39 "Files as root, safely"; docs/OPERATIONS.md "Files written as root").
//
//   open(parent, O_DIRECTORY)            the directory, held as a descriptor: every step below
//   │                                    is relative to it (openat, renameat, unlinkat)
//   openat(dir, "<name>.tmp",            never follows a link, never opens what someone planted:
//     O_CREAT|O_EXCL|O_NOFOLLOW)         a name already there (a crash's leftover or planted) is
//   │                                    unlinked — the name itself, never a link's target — and
//   │                                    the O_EXCL create tried again
//   write, fsync, fchown (when asked)    on the descriptor: ownership never changes by path
//   renameat(dir, tmp, dir, name)        one system call: the new content appears at once; a
//   │                                    link at `name` is replaced, not followed
//   fsync(dir)                           checked: a rename that may not survive a crash is an
//                                        error, not a success
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string_view>

#include "base/result.hpp"

namespace base {

// The user and group a new file is given (fchown on its descriptor, before it gets its name):
// root making a file for another user, e.g. the sealing keys for eventd's user.
struct FileOwner {
    uid_t uid = 0;
    gid_t gid = 0;
};

struct NewFile {
    unsigned mode = 0644;            // less the umask (0600 for a secret: never readable by others, even for a moment)
    std::optional<FileOwner> owner;  // nullopt: the caller's own user
};

// fsync the directory so that renames and creations in it survive a crash. An Error names the
// directory and says that what was renamed there may not survive a crash.
base::Status sync_directory(const std::filesystem::path& dir);

// `path` holds exactly `content` afterwards, or is unchanged: the steps drawn above. An Error
// names the step and the file.
base::Status write_file_atomically(const std::filesystem::path& path, std::string_view content, const NewFile& file);
base::Status write_file_atomically(const std::filesystem::path& path, std::string_view content, unsigned mode = 0644);

// The same in two steps, for a caller that must do something between the slow part and the
// switch: write_beside writes and fsyncs `<path>.tmp`; replace_with_beside renames it over
// `path` (one system call: the new content appears at once) and fsyncs the directory.
base::Status write_beside(const std::filesystem::path& path, std::string_view content, unsigned mode = 0644);
base::Status replace_with_beside(const std::filesystem::path& path);

// A file this program replaces through the steps above, opened to read it back (a cursor):
// never through a symbolic link at its name (the rename above replaces the link rather than
// writing through it, so a link there was not made by this program), and, in a sticky
// directory others can write (/tmp), never a file that belongs to another user than this one
// or the directory's owner — another user's file there may have been planted (the rule of
// fs.protected_regular). Returns the descriptor (O_RDONLY|O_CLOEXEC; the caller closes it), or
// nullopt when the file does not exist. An Error names the file and says what to do.
base::Result<std::optional<int>> open_own_file_to_read(const std::filesystem::path& path);

}  // namespace base
