// FileWatch: notices changes to one configuration file through inotify on its directory, so
// editors that replace the file (write a temp file, rename it over) are seen too. Used by
// kmes-shimd and eventd for "reload on file change" next to SIGHUP.
#pragma once

#include <string>

namespace base {

class FileWatch {
public:
    explicit FileWatch(const std::string& path);  // logs nothing; fd() < 0 if inotify failed
    ~FileWatch();
    FileWatch(const FileWatch&) = delete;
    FileWatch& operator=(const FileWatch&) = delete;

    int fd() const { return fd_; }  // poll for POLLIN
    bool watching() const { return watching_; }
    // Drain pending notifications; true if one concerned the file.
    bool changed();

private:
    int fd_ = -1;
    bool watching_ = false;
    std::string name_;
};

}  // namespace base
