#include "base/file_watch.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <filesystem>

namespace base {

FileWatch::FileWatch(const std::string& path) : name_(std::filesystem::path(path).filename()) {
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    auto dir = std::filesystem::path(path).parent_path();
    if (dir.empty()) dir = ".";
    watching_ = fd_ >= 0 && inotify_add_watch(fd_, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE) >= 0;
}

FileWatch::~FileWatch() {
    if (fd_ >= 0) close(fd_);
}

bool FileWatch::changed() {
    alignas(inotify_event) char buffer[4096];
    bool hit = false;
    ssize_t n;
    while (fd_ >= 0 && (n = read(fd_, buffer, sizeof buffer)) > 0) {
        for (char* p = buffer; p < buffer + n;) {
            auto* ev = reinterpret_cast<inotify_event*>(p);
            if (ev->len && name_ == ev->name) hit = true;
            p += sizeof(inotify_event) + ev->len;
        }
    }
    return hit;
}

}  // namespace base
