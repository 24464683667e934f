// The subjects eventd-forward publishes to (docs/FORWARD.md "Subjects, message ids, headers,
// body"), shared with the collector, which checks a message's subject against its headers:
//
//   <SubjectPrefix>.<host>.<event_type>   host and each dot-separated part of the type escaped:
//                                         bytes other than A-Z a-z 0-9 - _ become %XX (so '.',
//                                         '*', '>', spaces and '%' never reach NATS), an empty
//                                         part becomes "%"
//   <SubjectPrefix>.<host>.%LONG.<16 hex>  when that subject would pass kMaxSubjectBytes (issue
//                                         40: nats-server refuses a control line beyond 4 KiB, and
//                                         one such record stalled the forwarder for ever): the
//                                         FNV-1a 64 of the type; the full type is in the body.
//                                         Escaping never makes "%L", so no type's subject is it.
#pragma once

#include <string>
#include <string_view>

namespace eventd::nats {

// One subject token: every byte outside A-Z a-z 0-9 - _ as %XX; "" as "%".
std::string escape_token(std::string_view text);

// A subject's bytes at most: a PUB/HPUB line holds the subject, a reply inbox and two numbers,
// under nats-server's max_control_line (4096 by default).
inline constexpr size_t kMaxSubjectBytes = 1024;

std::string subject_for(const std::string& prefix, const std::string& host, const std::string& event_type);

}  // namespace eventd::nats
