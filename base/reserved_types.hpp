// The event types only the product may write (issue 39 part 3; docs/ABI.md "Reserved
// namespaces"), and the origin a row of each must carry to be the product's own.
//
// One rule, read by every place that has to tell a product record from a forgery: the shim
// refuses an emitter's request for a reserved type (EPERM), eventctl marks a stored row whose
// origin does not fit its namespace, the verifier and retention accept a checkpoint only with
// eventd's own origin, and the collector applies the same to what hosts send.
//
//   namespace     written by                           origin_class of its rows
//   synthetic.*   eventd (gap, startup, checkpoint, …)  none (NULL: eventd's own records)
//   alert.*       eventd (detection, issue 41)          none
//   audit.*       kmes-shimd's audit source             4  KMES_ORIGIN_AUDIT
//   kmes.*        kmes-shimd's self-events              1  KMES_ORIGIN_KMES
//   bpf.*         a kernel source (issue 42)            any kernel class (not 0, not none)
//
// base/ does not include the ABI header: the numbers are KMES_ORIGIN_* of kmes/kmes.h, checked
// against it by tests/unit/abi_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace base {

enum class ReservedNamespace { none, synthetic, alert, audit, kmes, bpf };

inline constexpr uint8_t kOriginUserspace = 0;  // KMES_ORIGIN_USERSPACE
inline constexpr uint8_t kOriginKmes = 1;       // KMES_ORIGIN_KMES
inline constexpr uint8_t kOriginAudit = 4;      // KMES_ORIGIN_AUDIT

// The reserved namespace `type` falls in: its first dot-separated component, compared exactly
// (`audit.x` and `audit` are reserved; `auditx.y` and `Audit.x` are not — types are case-sensitive).
constexpr ReservedNamespace reserved_namespace(std::string_view type) {
    const std::string_view head = type.substr(0, type.find('.'));
    if (head == "synthetic") return ReservedNamespace::synthetic;
    if (head == "alert") return ReservedNamespace::alert;
    if (head == "audit") return ReservedNamespace::audit;
    if (head == "kmes") return ReservedNamespace::kmes;
    if (head == "bpf") return ReservedNamespace::bpf;
    return ReservedNamespace::none;
}

constexpr bool is_reserved_type(std::string_view type) { return reserved_namespace(type) != ReservedNamespace::none; }

// True when a row of `type` with this origin could have been written by the product: always
// for a type outside the reserved namespaces; otherwise only with the namespace's origin
// (`origin_class` empty = the row has none, as eventd's own records).
constexpr bool has_product_origin(std::string_view type, std::optional<uint8_t> origin_class) {
    switch (reserved_namespace(type)) {
        case ReservedNamespace::none:
            return true;
        case ReservedNamespace::synthetic:
        case ReservedNamespace::alert:
            return !origin_class.has_value();
        case ReservedNamespace::audit:
            return origin_class == kOriginAudit;
        case ReservedNamespace::kmes:
            return origin_class == kOriginKmes;
        case ReservedNamespace::bpf:
            return origin_class.has_value() && *origin_class != kOriginUserspace;
    }
    return false;
}

}  // namespace base
