#include "nats/subject.hpp"

#include <cstdio>

#include "base/fnv1a.hpp"

namespace eventd::nats {

std::string escape_token(std::string_view text) {
    if (text.empty()) return "%";
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text) {
        const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                           c == '_';
        if (plain) {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 15]);
        }
    }
    return out;
}

std::string subject_for(const std::string& prefix, const std::string& host, const std::string& event_type) {
    std::string subject = prefix + "." + escape_token(host);
    size_t start = 0;
    for (;;) {
        const size_t dot = event_type.find('.', start);
        subject += "." + escape_token(std::string_view(event_type).substr(start, dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    if (subject.size() <= kMaxSubjectBytes) return subject;
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx",
                  static_cast<unsigned long long>(base::fnv1a64(base::kFnv1aOffsetBasis, event_type)));
    return prefix + "." + escape_token(host) + ".%LONG." + hash;
}

}  // namespace eventd::nats
