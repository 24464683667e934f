// What a fuzz target asserts beyond "no crash, no leak, no sanitizer report": a property of
// the code under test. A failed check aborts, which libFuzzer (and the corpus replay) report
// as a crash with the input that caused it. Checks stay on in every build type (no assert).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace eventd::fuzz {

[[noreturn]] inline void check_failed(const char* what, std::string_view detail, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", file, line, what);
    if (!detail.empty()) std::fprintf(stderr, "  %.*s\n", static_cast<int>(detail.size()), detail.data());
    std::abort();
}

}  // namespace eventd::fuzz

#define FUZZ_CHECK(condition) \
    ((condition) ? void() : ::eventd::fuzz::check_failed(#condition, {}, __FILE__, __LINE__))
#define FUZZ_CHECK_MSG(condition, detail) \
    ((condition) ? void() : ::eventd::fuzz::check_failed(#condition, (detail), __FILE__, __LINE__))
#define FUZZ_FAIL(what, detail) ::eventd::fuzz::check_failed((what), (detail), __FILE__, __LINE__)
