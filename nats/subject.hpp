// The subjects eventd-forward publishes to (docs/FORWARD.md "Subjects, message ids, headers,
// body"), shared with the collector, which checks a message's subject against its headers:
//
//   <SubjectPrefix>.<host>.<event_type>   host and each dot-separated part of the type escaped:
//                                         bytes other than A-Z a-z 0-9 - _ become %XX (so '.',
//                                         '*', '>', spaces and '%' never reach NATS), an empty
//                                         part becomes "%"
#pragma once

#include <string>
#include <string_view>

namespace eventd::nats {

// One subject token: every byte outside A-Z a-z 0-9 - _ as %XX; "" as "%".
std::string escape_token(std::string_view text);

std::string subject_for(const std::string& prefix, const std::string& host, const std::string& event_type);

}  // namespace eventd::nats
