// A test that cannot do its job on this machine says why and ends as meson's "skipped" (exit
// status 77, shown as SKIP with the reason in the test's log) — never a warning and a pass.
// It ends the whole test executable, so it is for a meson test whose cases all need what is
// missing (one file's tag, one area); and it runs nobody's destructors: call it before the
// test has made anything that needs cleaning up.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

[[noreturn]] inline void skip_test(const std::string& reason) {
    std::fprintf(stderr, "SKIP: %s\n", reason.c_str());
    std::fflush(nullptr);
    std::_Exit(77);
}
