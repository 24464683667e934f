// The real local users and groups of the access tests, created idempotently (groupadd/useradd
// --system): group eventd-auditors; eventd-adm (member of adm); eventd-auditor (member of
// eventd-auditors). `nobody` exists on every system.
#pragma once

namespace eventd::query_it {

// REQUIREs that the users exist afterwards (the tests run as root).
void ensure_test_users();

}  // namespace eventd::query_it
