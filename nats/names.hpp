// Names NATS keeps as subject tokens and as directories on the server (stream and consumer
// names): no '.', '*', '>' (subject syntax), no '/' or '\' (paths), no spaces or control bytes.
// Shared by eventd-forward's `Stream` and the collector's `Stream` and `Durable`; subject
// prefixes below.
#pragma once

#include <string_view>

namespace eventd::nats {

inline bool valid_name(std::string_view s) {
    for (unsigned char c : s)
        if (c <= ' ' || c == '.' || c == '*' || c == '>' || c == '/' || c == '\\' || c >= 0x7f) return false;
    return !s.empty();
}

// A subject prefix: dot-separated non-empty tokens without wildcards or spaces (eventd-forward's
// and the collector's SubjectPrefix).
inline bool valid_subject_prefix(std::string_view s) {
    if (s.empty() || s.front() == '.' || s.back() == '.' || s.find("..") != std::string_view::npos) return false;
    for (unsigned char c : s)
        if (c <= ' ' || c == '*' || c == '>' || c >= 0x7f) return false;
    return true;
}

}  // namespace eventd::nats
