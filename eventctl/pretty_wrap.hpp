// The default pretty view of whole records laid out for a terminal (issue 24 item 5): a record
// whose key=value line (pretty_format.hpp) is wider than the terminal continues on the lines
// below it, so that no line is wider than the terminal and a record still reads top to bottom:
//
//   timestamp=2023-11-14T22:13:20.123000000Z event_type="audit.syscall" subject="alice→root" a0="55d5"
//       a1="55d6" arch="x86_64" argv=["/bin/true","hello world"] audit_time=1700000000123000000 auid=1000
//       auid_name="alice" comm="true" cwd="/home/alice" egid=0 egid_name="root" euid=0 euid_name="root"
//       paths=[{"dev":"fe:01","inode":1234,"item":0,"mode":"0100755","name":"/bin/true","nametype":"NORMAL",
//           "ouid":0,"ouid_name":"root"},{"dev":"fe:01","inode":99,"item":1,"mode":"0100755",
//           "name":"/lib64/ld-linux-x86-64.so.2","nametype":"NORMAL","ouid":0,"ouid_name":"root"}]
//       proctitle="/bin/true hello world" record_types=["SYSCALL","EXECVE","CWD","PATH","PATH","PROCTITLE"]
//   ├──────┤
//   kFieldIndent: the record's further fields        kValueIndent: the rest of a value wider than a line
//
// - Lines break between fields, never inside a field that fits on a line of its own: a field
//   that does not fit where the line is starts the next line.
// - Only a field wider than a whole line is broken: after a comma between the elements of an
//   array or map or after a space inside a string, else after a '/' inside a string (a path),
//   else (a long word, a long number) between two characters — never inside an escape
//   (\u0085, \") or a character, nor between a character and its combining marks. Its rest is
//   indented kValueIndent, and the next field starts a line of its own.
// - A record that fits is one line, exactly as before; a record never ends in a blank line.
// The breaks and indents are layout, not part of the values: jsonl has the exact ones.
// Widths are display columns (display_width.hpp), so wide characters count twice.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace eventctl {

inline constexpr std::size_t kFieldIndent = 4;
inline constexpr std::size_t kValueIndent = 8;
inline constexpr std::size_t kDefaultWidth = 120;  // when no terminal says otherwise
inline constexpr std::size_t kMinWidth = 40;       // narrower terminals are taken as this wide

// `line`, one record's pretty text (append_pretty_record), laid out as above in lines of at most
// `width` columns (kMinWidth if it is less), appended to `out` with '\n' between the lines and
// none after the last.
void append_wrapped(std::string& out, std::string_view line, std::size_t width);

// How wide the default view's lines may be (EVENTCTL.md, "Line width"):
//   --width N                  N columns; 0 never wraps (one line per record, as --all-fields)
//   standard output a terminal its width (TIOCGWINSZ), asked again before each record, so that
//                              a stream follows a resized window
//   otherwise                  $COLUMNS when it is a number (`watch` sets it), else 120
class LineWidth {
public:
    static LineWidth fixed(std::size_t columns) { return LineWidth(columns, -1); }
    // For output to `fd`, `columns_env` being $COLUMNS (nullptr when unset).
    static LineWidth of_output(int fd, const char* columns_env);

    // 0: do not wrap; otherwise at least kMinWidth.
    std::size_t columns() const;

private:
    LineWidth(std::size_t columns, int terminal) : columns_(columns), terminal_(terminal) {}
    std::size_t columns_;
    int terminal_;  // a terminal whose width replaces columns_ while it has one; -1: none
};

}  // namespace eventctl
