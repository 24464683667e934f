// The one escaper for text from events shown to a person (issue 39 part 5; docs/EVENTCTL.md
// "What reaches your terminal"). Event types and values come from emitters and from the kernel
// (a file name, an argument): on a terminal, a raw ESC or CSI sequence can move the cursor,
// rewrite earlier lines or set the window title, a CR or LF can forge a whole line, and a
// bidirectional override can make "exe.sh" read as "hs.exe". Every human view — eventctl's
// pretty, table and status views, `eventctl verify`'s findings, kmes-tail's text lines — writes
// such text through append_display_escaped(), which leaves nothing of that kind raw:
//
//   what                                              shown as
//   backslash                                         \\            (so every escape is unambiguous)
//   the quote character, when the caller asks         \"
//   newline, carriage return, tab                     \n \r \t
//   other C0 controls (U+0000–U+001F), DEL (U+007F)   \u00XX
//   C1 controls (U+0080–U+009F: CSI is U+009B)        \u00XX
//   bidirectional and line controls: U+061C, U+200E,  \uXXXX
//     U+200F, U+2028, U+2029, U+202A–U+202E,
//     U+2066–U+2069
//   a byte that is not part of valid UTF-8            \xNN
//   anything else (printable UTF-8)                   itself
//
// Machine formats keep values exact instead: JSON escapes control characters itself, and
// escape_json_invisibles() turns DEL and the raw C1 and bidi code points a JSON encoder leaves
// in its strings into \uXXXX — the same JSON value, nothing invisible on a terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace base {

// Appends `text` escaped as in the table above; `quote` (e.g. '"') is escaped as well when
// not 0 (the caller writes the surrounding quotes).
void append_display_escaped(std::string& out, std::string_view text, char quote = 0);
std::string display_escaped(std::string_view text, char quote = 0);

// True when append_display_escaped would change `text` (with `quote` 0).
bool needs_display_escape(std::string_view text);

// `json` is the text of a JSON document (an encoder's output); each raw DEL, C1 or
// bidirectional/line control inside it, which can only be in a string, becomes \uXXXX.
// Everything else is left as it is.
void escape_json_invisibles(std::string& json);

}  // namespace base
