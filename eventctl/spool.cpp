#include "spool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace eventctl {
namespace {

constexpr std::size_t kChunk = 64 * 1024;  // file reads and writes
constexpr std::size_t kHeaderSize = 4;     // u32 LE length before each record

uint32_t read_length(const uint8_t* p) {
    return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

std::string temp_directory() {
    const char* dir = std::getenv("TMPDIR");
    return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

base::Error spool_error(const std::string& dir, int code, const std::string& what) {
    return base::Error{code, "cannot " + what + " the temporary spool file in " + dir + ": " + std::strerror(code) +
                                 "; set TMPDIR to a writable directory with free space"};
}

}  // namespace

Spool::~Spool() {
    if (fd_ >= 0) close(fd_);
}

base::Status Spool::create_file() {
    directory_ = temp_directory();
    fd_ = open(directory_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd_ >= 0) return {};
    // Filesystems without O_TMPFILE: a named file, unlinked at once so nothing is left behind.
    std::string name = directory_ + "/eventctl-spool-XXXXXX";
    fd_ = mkostemp(name.data(), O_CLOEXEC);
    if (fd_ < 0) return spool_error(directory_, errno, "create");
    unlink(name.c_str());
    return {};
}

base::Status Spool::write_out() {
    std::size_t done = 0;
    while (done < pending_.size()) {
        const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return spool_error(directory_, n < 0 ? errno : EIO, "write");
        done += static_cast<std::size_t>(n);
    }
    pending_.clear();
    return {};
}

// The records held in memory go to a new file; from then on pending_ only buffers writes.
base::Status Spool::spill() {
    if (auto st = create_file(); !st) return st;
    if (auto st = write_out(); !st) return st;
    pending_.shrink_to_fit();  // give the 8 MiB back
    return {};
}

base::Status Spool::append(std::span<const uint8_t> record) {
    if (fd_ < 0 && pending_.size() + kHeaderSize + record.size() > kMemoryLimit) {
        if (auto st = spill(); !st) return st;
    }
    const auto len = static_cast<uint32_t>(record.size());
    const uint8_t header[kHeaderSize] = {static_cast<uint8_t>(len), static_cast<uint8_t>(len >> 8),
                                         static_cast<uint8_t>(len >> 16), static_cast<uint8_t>(len >> 24)};
    pending_.insert(pending_.end(), header, header + kHeaderSize);
    pending_.insert(pending_.end(), record.begin(), record.end());
    ++count_;
    if (fd_ >= 0 && pending_.size() >= kChunk) return write_out();
    return {};
}

base::Status Spool::drain(const std::function<base::Status(std::span<const uint8_t>)>& sink) {
    return fd_ < 0 ? drain_memory(sink) : drain_file(sink);
}

base::Status Spool::drain_memory(const std::function<base::Status(std::span<const uint8_t>)>& sink) {
    std::size_t at = 0;
    for (uint64_t i = 0; i < count_; ++i) {
        const uint32_t len = read_length(pending_.data() + at);
        at += kHeaderSize;
        if (auto st = sink(std::span<const uint8_t>(pending_.data() + at, len)); !st) return st;
        at += len;
    }
    pending_.clear();
    count_ = 0;
    return {};
}

base::Status Spool::drain_file(const std::function<base::Status(std::span<const uint8_t>)>& sink) {
    if (auto st = write_out(); !st) return st;
    if (lseek(fd_, 0, SEEK_SET) != 0) return spool_error(directory_, errno, "rewind");

    // buf[begin, end) holds bytes read but not yet handed out.
    std::vector<uint8_t> buf(kChunk);
    std::size_t begin = 0, end = 0;
    bool eof = false;
    auto need = [&](std::size_t n) -> base::Result<bool> {
        while (end - begin < n) {
            if (eof) return false;
            if (begin > 0) {
                std::memmove(buf.data(), buf.data() + begin, end - begin);
                end -= begin;
                begin = 0;
            }
            if (buf.size() < n) buf.resize(n);
            const ssize_t r = ::read(fd_, buf.data() + end, buf.size() - end);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return spool_error(directory_, errno, "read");
            if (r == 0) eof = true;
            end += static_cast<std::size_t>(r);
        }
        return true;
    };
    for (uint64_t i = 0; i < count_; ++i) {
        auto have = need(kHeaderSize);
        if (!have) return have.error();
        if (!have.value()) return spool_error(directory_, EIO, "read back");
        const uint32_t len = read_length(buf.data() + begin);
        begin += kHeaderSize;
        have = need(len);
        if (!have) return have.error();
        if (!have.value()) return spool_error(directory_, EIO, "read back");
        if (auto st = sink(std::span<const uint8_t>(buf.data() + begin, len)); !st) return st;
        begin += len;
    }
    close(fd_);
    fd_ = -1;
    count_ = 0;
    return {};
}

}  // namespace eventctl
