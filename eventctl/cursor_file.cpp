#include "cursor_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <sstream>

#include "base/durable_file.hpp"

namespace eventctl {
namespace {

// Far above any cursor (a store of 65536 files would need ~2.2 MB; real ones are < 10 KB) and
// small enough that a wrong file (a log, a binary) is refused before it is sent anywhere.
constexpr size_t kMaxCursorFileBytes = 4 << 20;

base::Error not_a_cursor_file(const std::string& path, const std::string& why) {
    return base::Error{EINVAL, "the cursor file " + path + " " + why +
                                   "; is it the right file? (eventctl writes it; delete it to start from the oldest "
                                   "record)"};
}

base::Result<std::string> read_small_file(const std::string& path) {
    // Never through a link at FILE, nor another user's file in /tmp (durable_file.hpp).
    auto opened = base::open_own_file_to_read(path);
    if (!opened) return base::Error{opened.error().code, "cannot read the cursor file: " + opened.error().message};
    if (!*opened) return std::string();  // first run
    const int fd = **opened;
    std::string text;
    char chunk[65536];
    for (;;) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int e = errno;
            ::close(fd);
            return base::errno_error(e, "cannot read the cursor file " + path);
        }
        if (n == 0 || text.size() > kMaxCursorFileBytes) break;
        text.append(chunk, static_cast<size_t>(n));
    }
    ::close(fd);
    if (text.size() > kMaxCursorFileBytes) return not_a_cursor_file(path, "is larger than any cursor");
    return text;
}

}  // namespace

base::Result<SavedCursor> load_cursor(const std::string& path) {
    auto text = read_small_file(path);
    if (!text) return text.error();
    SavedCursor saved;
    std::istringstream lines(*text);
    std::getline(lines, saved.cursor);
    if (saved.cursor.find_first_of(" \t\r") != std::string::npos)
        return not_a_cursor_file(path, "does not start with a cursor");
    std::string line;
    if (std::getline(lines, line) && !line.empty()) {
        std::istringstream words(line);
        std::string word;
        unsigned long long dev = 0, ino = 0, size = 0;
        if (!(words >> word >> dev >> ino >> size) || word != "output" || (words >> word))
            return not_a_cursor_file(path, "has a second line that is not 'output <dev> <inode> <size>'");
        saved.output = OutputMark{static_cast<dev_t>(dev), static_cast<ino_t>(ino), size};
    }
    if (std::getline(lines, line) && !line.empty()) return not_a_cursor_file(path, "has more than two lines");
    return saved;
}

std::optional<OutputMark> output_mark(int fd) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    return OutputMark{st.st_dev, st.st_ino, static_cast<uint64_t>(st.st_size)};
}

base::Result<uint64_t> rewind_output(int fd, const SavedCursor& saved) {
    const auto now = output_mark(fd);
    if (!now || !saved.output || now->dev != saved.output->dev || now->ino != saved.output->ino) return uint64_t{0};
    if (now->size < saved.output->size)
        std::fprintf(stderr,
                     "eventctl: warning: the output file is shorter than when the cursor was saved (%llu < %llu "
                     "bytes): was it truncated or restored? Records before the cursor are not printed again\n",
                     static_cast<unsigned long long>(now->size), static_cast<unsigned long long>(saved.output->size));
    if (now->size <= saved.output->size) return uint64_t{0};
    if (::ftruncate(fd, static_cast<off_t>(saved.output->size)) != 0)
        return base::errno_error("cannot cut standard output back to where the saved cursor ends (" +
                                 std::to_string(saved.output->size) + " bytes)");
    // Without O_APPEND the next write would land at the old offset, leaving a hole.
    ::lseek(fd, static_cast<off_t>(saved.output->size), SEEK_SET);
    return now->size - saved.output->size;
}

base::Status prepare_cursor(const std::string& path, const std::string& cursor, const std::optional<OutputMark>& output) {
    std::string content = cursor + "\n";
    if (output)
        content += "output " + std::to_string(output->dev) + " " + std::to_string(output->ino) + " " +
                   std::to_string(output->size) + "\n";
    if (auto st = base::write_beside(path, content); !st)
        return base::Error{st.error().code, "cannot save the cursor: " + st.error().message};
    return {};
}

base::Status commit_cursor(const std::string& path) {
    if (auto st = base::replace_with_beside(path); !st)
        return base::Error{st.error().code, "cannot save the cursor: " + st.error().message};
    return {};
}

}  // namespace eventctl
