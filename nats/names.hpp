// Names NATS keeps as subject tokens and as directories on the server (stream and consumer
// names): no '.', '*', '>' (subject syntax), no '/' or '\' (paths), no spaces or control bytes.
// Shared by eventd-forward's `Stream` and the collector's `Stream` and `Durable`.
#pragma once

#include <string_view>

namespace eventd::nats {

inline bool valid_name(std::string_view s) {
    for (unsigned char c : s)
        if (c <= ' ' || c == '.' || c == '*' || c == '>' || c == '/' || c == '\\' || c >= 0x7f) return false;
    return !s.empty();
}

}  // namespace eventd::nats
