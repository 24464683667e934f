// The default view's layout for a terminal (eventctl/pretty_wrap.hpp): lines break between
// fields, further fields indented 4; only a field wider than a line is broken (after a comma,
// else after a space in a string, else between characters), its rest indented 8. And where the
// width comes from, and how wide text is (display_width.hpp).
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "eventctl/display_width.hpp"
#include "eventctl/pretty_wrap.hpp"
#include "wrapped_lines.hpp"

namespace eventctl::test {
namespace {

std::string wrapped(std::string_view line, std::size_t width) {
    std::string out;
    append_wrapped(out, line, width);
    return out;
}

}  // namespace

TEST_CASE("a line that fits its width is left as it is", "[wrap]") {
    const std::string line = R"(timestamp=2023-11-14T22:13:20.123000000Z event_type="app.login" user="alice" ok=true)";
    CHECK(wrapped(line, 120) == line);
    CHECK(wrapped(line, line.size()) == line);
    CHECK(wrapped(line, line.size() - 1) != line);
    CHECK(wrapped("", 40).empty());
}

TEST_CASE("lines break between fields, and the further fields are indented 4", "[wrap]") {
    const std::string line =
        R"(timestamp=2023-11-14T22:13:20.123000000Z event_type="audit.syscall" comm="true" exe="/usr/bin/true" pid=101)";
    CHECK(wrapped(line, 40) ==
          "timestamp=2023-11-14T22:13:20.123000000Z\n"  // 40 columns: fits exactly
          "    event_type=\"audit.syscall\"\n"
          "    comm=\"true\" exe=\"/usr/bin/true\"\n"
          "    pid=101");
    // A field that does not fit where the line is starts the next line, never broken.
    CHECK(wrapped(R"(first="abcdefghij" name="01234567890123456789012345")", 40) ==
          "first=\"abcdefghij\"\n"
          "    name=\"01234567890123456789012345\"");
}

TEST_CASE("a field wider than a line breaks after a comma, its rest indented 8, the next field below", "[wrap]") {
    const std::string line = R"(a=1 argv=["/bin/sh","-c","echo one","two three","/tmp/some/file"] b=2)";
    CHECK(wrapped(line, 40) ==
          "a=1\n"
          "    argv=[\"/bin/sh\",\"-c\",\"echo one\",\n"
          "        \"two three\",\"/tmp/some/file\"]\n"
          "    b=2");
    // Inside nested maps too.
    CHECK(wrapped(R"(paths=[{"item":0,"name":"/bin/true","mode":"0100755"},{"item":1}])", 40) ==
          "paths=[{\"item\":0,\"name\":\"/bin/true\",\n"
          "        \"mode\":\"0100755\"},{\"item\":1}]");
}

TEST_CASE("a string wider than a line breaks after a space, else after a slash, else between characters", "[wrap]") {
    CHECK(wrapped(R"(proctitle="python3 -m http.server --bind 127.0.0.1 8080 --directory /srv")", 40) ==
          "proctitle=\"python3 -m http.server \n"
          "        --bind 127.0.0.1 8080 \n"
          "        --directory /srv\"");
    CHECK(wrapped(R"(k="/usr/local/share/some/very/long/path/name/for/testing/purposes")", 40) ==
          "k=\"/usr/local/share/some/very/long/path/\n"
          "        name/for/testing/purposes\"");
    CHECK(wrapped(R"(k="0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")", 40) ==
          "k=\"0123456789abcdefghijklmnopqrstuvwxyzA\n"
          "        BCDEFGHIJKLMNOPQRSTUVWXYZ\"");
}

TEST_CASE("escapes, characters and combining marks are never split; wide characters count two", "[wrap]") {
    // 37 columns of 'x', then an escape that would straddle column 40.
    const std::string escape = "k=\"" + std::string(35, 'x') + R"(\u0085yz")";
    CHECK(wrapped(escape, 40) == "k=\"" + std::string(35, 'x') + "\n        \\u0085yz\"");
    // 東 is two columns: `k="` and 18 of them take 39, the 19th would end at 41.
    std::string wide = "k=\"";
    for (int i = 0; i < 19; ++i) wide += "\xe6\x9d\xb1";
    wide += "\"";
    std::string expected = "k=\"";
    for (int i = 0; i < 18; ++i) expected += "\xe6\x9d\xb1";
    expected += "\n        \xe6\x9d\xb1\"";
    CHECK(wrapped(wide, 40) == expected);
    // e + U+0301 (combining acute) stays together.
    const std::string combining = "k=\"" + std::string(36, 'x') + "e\xcc\x81z\"";
    CHECK(wrapped(combining, 40) == "k=\"" + std::string(36, 'x') + "e\xcc\x81\n        z\"");
}

TEST_CASE("the layout is only layout: every line fits, and removing it gives the line back", "[wrap]") {
    const std::string line =
        R"(timestamp=2023-11-14T22:13:20.123000000Z "a key"="x, y" m={"k":[1,2,3],"s":"a b c d e f g h i j k l m n o p q r s t u v w x y z"} n=-1.5 b=bin:0123456789abcdef0123456789abcdef0123456789abcdef)";
    for (std::size_t width = kMinWidth; width <= line.size() + 1; ++width) {
        INFO("width " << width);
        const std::string out = wrapped(line, width);
        for (const std::string& l : lines_of(out)) CHECK(display_columns(l) <= width);
        CHECK(unwrapped(out) == line);
    }
}

TEST_CASE("widths below the minimum are taken as the minimum", "[wrap]") {
    const std::string line = R"(a="0123456789 0123456789" b="0123456789 0123456789")";
    CHECK(wrapped(line, 10) == wrapped(line, kMinWidth));
}

TEST_CASE("display columns: wide characters two, combining marks none", "[wrap]") {
    CHECK(display_columns("plain") == 5);
    CHECK(display_columns("caf\xc3\xa9") == 4);               // é
    CHECK(display_columns("e\xcc\x81") == 1);                 // e + combining acute
    CHECK(display_columns("\xe6\x9d\xb1\xe4\xba\xac") == 4);  // 東京
    CHECK(display_columns("\xed\x95\x9c") == 2);              // 한 (Hangul syllable)
    CHECK(display_columns("\xf0\x9f\x98\x80") == 2);          // 😀
    CHECK(display_columns("\xef\xbb\xbf") == 0);              // byte-order mark
    CHECK(display_columns("\xe2\x86\x92") == 1);              // → (the subject's arrow)
    CHECK(display_columns("\xff\x80") == 2);                  // not UTF-8: a column a byte
}

TEST_CASE("the width: --width, else the terminal's, else $COLUMNS, else 120", "[wrap]") {
    CHECK(LineWidth::fixed(0).columns() == 0);
    CHECK(LineWidth::fixed(100).columns() == 100);
    CHECK(LineWidth::fixed(10).columns() == kMinWidth);
    const int file = memfd_create("eventctl-out", 0);
    REQUIRE(file >= 0);
    CHECK(LineWidth::of_output(file, nullptr).columns() == 120);
    CHECK(LineWidth::of_output(file, "132").columns() == 132);
    CHECK(LineWidth::of_output(file, "20").columns() == kMinWidth);
    CHECK(LineWidth::of_output(file, "wide").columns() == 120);
    CHECK(LineWidth::of_output(file, "").columns() == 120);
    close(file);
}

TEST_CASE("on a terminal the width is the terminal's, followed when it is resized", "[wrap]") {
    const int master = posix_openpt(O_RDWR | O_NOCTTY);
    // Linux always has /dev/ptmx; a machine without one cannot check this and must say so.
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
        if (master >= 0) close(master);
        FAIL("no pseudo-terminal (posix_openpt): the terminal width cannot be checked here");
    }
    const int terminal = open(ptsname(master), O_RDWR | O_NOCTTY);
    REQUIRE(terminal >= 0);
    winsize size{};
    size.ws_row = 24;
    size.ws_col = 93;
    REQUIRE(ioctl(master, TIOCSWINSZ, &size) == 0);
    const LineWidth width = LineWidth::of_output(terminal, "200");  // $COLUMNS does not override a terminal
    CHECK(width.columns() == 93);
    size.ws_col = 150;
    REQUIRE(ioctl(master, TIOCSWINSZ, &size) == 0);
    CHECK(width.columns() == 150);
    size.ws_col = 0;  // a terminal that does not know: 120
    REQUIRE(ioctl(master, TIOCSWINSZ, &size) == 0);
    CHECK(width.columns() == 120);
    close(terminal);
    close(master);
}

}  // namespace eventctl::test
