// Placeholder; implemented with issue 2.
#include "rl/policy_registry.h"
