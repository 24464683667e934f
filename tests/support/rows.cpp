#include "support/rows.hpp"

#include <utility>

namespace test_support {

kmes::Guid guid(uint8_t fill) {
    kmes::Guid g;
    g.fill(fill);
    return g;
}

eventd::store::EventRow event_row(RowSpec spec) {
    return eventd::store::EventRow{
        .boot_id = spec.boot,
        .timestamp = spec.timestamp,
        .cpu_id = spec.cpu,
        .sequence = spec.sequence,
        .origin_class = spec.origin_class,
        .event_type = std::move(spec.type),
        .effective_token = spec.effective_token,
        .true_token = spec.true_token,
        .process = spec.process,
        .payload = std::move(spec.payload),
    };
}

}  // namespace test_support
