// Which sanitizer this test build has — the daemons it starts come from the same build, so it
// is theirs too. GCC defines __SANITIZE_ADDRESS__; clang (the ASan lane's compiler) answers
// __has_feature(address_sanitizer) instead: a test that checked only the first read clang's
// ASan build as an unsanitized one.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_UNDER_ASAN 1
#endif
#endif
#ifndef TEST_UNDER_ASAN
#define TEST_UNDER_ASAN 0
#endif
