#include "pretty_wrap.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

#include "display_width.hpp"

namespace eventctl {
namespace {

// The fields of a pretty line. It separates them with single spaces, and writes a space nowhere
// else outside its quoted strings (a key with a space is quoted too); inside them a backslash
// escapes the next character.
std::vector<std::string_view> fields_of(std::string_view line) {
    std::vector<std::string_view> fields;
    bool quoted = false;
    std::size_t start = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                quoted = false;
            }
        } else if (c == '"') {
            quoted = true;
        } else if (c == ' ') {
            fields.push_back(line.substr(start, i - start));
            start = i + 1;
        }
    }
    fields.push_back(line.substr(start));
    return fields;
}

// Where a field wider than a line may break, best first.
enum class Break {
    none,
    after_slash,  // a '/' inside a string: a path breaks between its directories
    preferred,    // a comma between elements, or a space inside a string
};

// The smallest pieces a field wider than a line is broken between: a character with its
// combining marks, or an escape inside a string.
struct Piece {
    std::size_t end;  // byte offset in the field, one past the piece
    std::size_t columns;
    Break after;
};

// The length of the escape at field[i] (a backslash inside a string): \uXXXX, \xNN, or \ and one
// character (\n, \", \\ …).
std::size_t escape_length(std::string_view field, std::size_t i) {
    const char kind = i + 1 < field.size() ? field[i + 1] : '\0';
    const std::size_t length = kind == 'u' ? 6 : kind == 'x' ? 4 : 2;
    return std::min(length, field.size() - i);
}

std::vector<Piece> pieces_of(std::string_view field) {
    std::vector<Piece> pieces;
    bool quoted = false;
    for (std::size_t i = 0; i < field.size();) {
        const char c = field[i];
        std::size_t bytes = 1, columns = 1;
        Break after = Break::none;
        if (quoted && c == '\\') {
            bytes = columns = escape_length(field, i);
        } else {
            const CharColumns ch = char_columns_at(field, i);
            bytes = ch.bytes;
            columns = static_cast<std::size_t>(ch.columns);
            if (c == '"') {
                quoted = !quoted;
            } else if (quoted ? c == ' ' : c == ',') {
                after = Break::preferred;
            } else if (quoted && c == '/') {
                after = Break::after_slash;
            }
        }
        if (columns == 0 && !pieces.empty()) {
            pieces.back().end = i + bytes;  // a combining mark stays with its character
        } else {
            pieces.push_back({i + bytes, columns, after});
        }
        i += bytes;
    }
    return pieces;
}

void new_line(std::string& out, std::size_t indent) {
    out += '\n';
    out.append(indent, ' ');
}

// Writes `field`, wider than a line, from column `column` on, broken as the header says; returns
// the column its last line ends at.
std::size_t append_broken(std::string& out, std::string_view field, std::size_t column, std::size_t width) {
    const std::vector<Piece> pieces = pieces_of(field);
    std::size_t first = 0;  // the first piece not written yet
    while (first < pieces.size()) {
        const std::size_t room = width - column;
        std::size_t used = 0, next = first;
        std::optional<std::size_t> last_preferred, last_slash;
        while (next < pieces.size() && used + pieces[next].columns <= room) {
            used += pieces[next].columns;
            if (pieces[next].after == Break::preferred) last_preferred = next;
            if (pieces[next].after == Break::after_slash) last_slash = next;
            ++next;
        }
        const std::size_t from = first == 0 ? 0 : pieces[first - 1].end;
        if (next == pieces.size()) {
            out.append(field.substr(from));
            return column + used;
        }
        // At least one piece a line, so that every line makes progress.
        const std::size_t stop = last_preferred ? *last_preferred + 1
                                 : last_slash   ? *last_slash + 1
                                                : std::max(next, first + 1);
        out.append(field.substr(from, pieces[stop - 1].end - from));
        new_line(out, kValueIndent);
        column = kValueIndent;
        first = stop;
    }
    return column;
}

}  // namespace

void append_wrapped(std::string& out, std::string_view line, std::size_t width) {
    width = std::max(width, kMinWidth);
    std::size_t column = 0;
    bool line_has_field = false;
    bool after_broken = false;  // the last field was broken: its rest is on a value-indented line
    for (const std::string_view field : fields_of(line)) {
        const std::size_t columns = display_columns(field);
        if (!after_broken && column + (line_has_field ? 1 : 0) + columns <= width) {
            if (line_has_field) out += ' ';
            out.append(field);
            column += (line_has_field ? 1 : 0) + columns;
            line_has_field = true;
            continue;
        }
        if (line_has_field) {
            new_line(out, kFieldIndent);
            column = kFieldIndent;
        }
        after_broken = false;
        line_has_field = true;
        if (column + columns <= width) {
            out.append(field);
            column += columns;
            continue;
        }
        column = append_broken(out, field, column, width);
        after_broken = true;
    }
}

LineWidth LineWidth::of_output(int fd, const char* columns_env) {
    if (isatty(fd)) return LineWidth(kDefaultWidth, fd);
    if (columns_env != nullptr) {
        const std::string_view text(columns_env);
        std::size_t columns = 0;
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), columns);
        if (error == std::errc() && end == text.data() + text.size() && columns > 0) return fixed(columns);
    }
    return fixed(kDefaultWidth);
}

std::size_t LineWidth::columns() const {
    std::size_t columns = columns_;
    winsize size{};
    if (terminal_ >= 0 && ioctl(terminal_, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) columns = size.ws_col;
    return columns == 0 ? 0 : std::max(columns, kMinWidth);
}

}  // namespace eventctl
