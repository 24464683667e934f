// Reads the query text and checks it is UTF-8 (the request carries it as a msgpack string,
// PSD-008 §8.8), so a bad byte is reported here with its offset instead of by eventd.
#include "query_input.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "utf8.hpp"

namespace eventctl {
namespace {

constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

base::Result<std::string> read_all(const std::string& path) {
    if (path == "-") {
        std::ostringstream text;
        text << std::cin.rdbuf();
        if (std::cin.bad()) return base::Error{EIO, "cannot read the query from standard input"};
        return text.str();
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return base::Error{errno, "cannot read the query file " + path + ": " + std::strerror(errno)};
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return base::Error{EIO, "cannot read the query file " + path + ": read error"};
    return text;
}

}  // namespace

base::Result<std::string> load_query(const std::optional<std::string>& argument,
                                     const std::optional<std::string>& file) {
    std::string text;
    std::string origin;
    std::size_t skipped = 0;  // a dropped byte-order mark, so offsets still count from the file's start
    const bool from_stream = file || (argument && *argument == "-");
    if (from_stream) {
        const std::string path = file ? *file : "-";
        auto read = read_all(path);
        if (!read) return read.error();
        text = std::move(read.value());
        origin = path == "-" ? "the query on standard input" : "the query file " + path;
        if (text.compare(0, kByteOrderMark.size(), kByteOrderMark) == 0) {
            text.erase(0, kByteOrderMark.size());
            skipped = kByteOrderMark.size();
        }
    } else {
        text = *argument;
        origin = "the query argument";
    }
    if (auto bad = find_invalid_utf8(text)) {
        return base::Error{EILSEQ, origin + " is not valid UTF-8 at byte offset " +
                                       std::to_string(bad->offset + skipped) + ": " + bad->what +
                                       (from_stream ? "; save it as UTF-8" : "")};
    }
    return text;
}

}  // namespace eventctl
