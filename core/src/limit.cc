// Placeholder; implemented with issue 2.
#include "rl/limit.h"
